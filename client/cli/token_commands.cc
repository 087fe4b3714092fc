#include "client/cli/token_commands.h"

#include <iterator>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/cli/commands.h"
#include "common/bearer_token.h"

namespace kvstash::cli {
namespace {

// A YAML double-quoted scalar: tenants may hold characters YAML gives a meaning ("*",
// ":", "#"); control characters were refused when the flag was parsed.
std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string TenantList(const std::vector<std::string>& tenants) {
  std::vector<std::string> quoted;
  for (const std::string& t : tenants) quoted.push_back(Quoted(t));
  return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
}

int RunTokenNew(const CliArgs& args, std::ostream& out, std::ostream& err) {
  const std::string token = NewToken();
  const std::string digest = HashToken(token);
  out << token << "\n" << std::flush;  // before the entry, when both go to one terminal
  err << "# The token above is shown once: give it to the client (ClientOptions::token or $"
      << kTokenEnvVar << ").\n"
      << "# Add this entry under `principals:` in the daemon's token file (it holds only the\n"
      << "# token's SHA-256); the daemon picks the change up without a restart.\n"
      << PrincipalEntry(args, digest);
  return kExitOk;
}

int RunTokenHash(std::istream& in, std::ostream& out, std::ostream& err) {
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const absl::string_view token = absl::StripAsciiWhitespace(text);
  if (token.empty()) {
    err << "kvstash: token hash: no token on stdin\n";
    return kExitUsage;
  }
  for (char c : token) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      err << "kvstash: token hash: expected one token on stdin, found white space inside\n";
      return kExitUsage;
    }
  }
  out << HashToken(token) << "\n";
  return kExitOk;
}

}  // namespace

std::string PrincipalEntry(const CliArgs& args, const std::string& digest) {
  const std::string name = args.principal_name.empty()
                               ? absl::StrCat("client-", digest.substr(0, 8))
                               : args.principal_name;
  const std::string tenants =
      TenantList(args.tenants.empty() ? std::vector<std::string>{"default"} : args.tenants);
  std::string entry = absl::StrCat("  - name: ", name, "\n    token_sha256: ", digest,
                                   "\n    read: ", tenants, "\n    write: ", tenants, "\n");
  if (args.admin) absl::StrAppend(&entry, "    admin: ", tenants, "\n");
  if (args.trusted) absl::StrAppend(&entry, "    trusted: true\n");
  return entry;
}

int RunLocalCommand(const CliArgs& args, std::istream& in, std::ostream& out, std::ostream& err) {
  if (args.command == Command::kTokenNew) return RunTokenNew(args, out, err);
  return RunTokenHash(in, out, err);
}

}  // namespace kvstash::cli
