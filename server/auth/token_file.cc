#include "server/auth/token_file.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "common/bearer_token.h"
#include "server/config_reader.h"

namespace kvstash::server::auth {
namespace {

constexpr size_t kDigestHexChars = 64;
constexpr int64_t kMaxCallsPerS = 1'000'000'000;

constexpr absl::string_view kTopKeys[] = {"principals", "anonymous"};
constexpr absl::string_view kPrincipalKeys[] = {
    "name",        "token_sha256",        "read", "write", "admin", "trusted", "calls_per_s",
    "bytes_per_s", "max_concurrent_calls"};
// The anonymous caller has no name or token, and never direct access.
constexpr absl::string_view kAnonymousKeys[] = {
    "read", "write", "admin", "calls_per_s", "bytes_per_s", "max_concurrent_calls"};

// 1-based line of `node` (0 when yaml-cpp knows none).
int LineOf(const YAML::Node& node) { return node.Mark().line + 1; }

absl::Status ErrorAt(const YAML::Node& at, absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("line ", LineOf(at), ": ", field, ": ", message));
}

// The value under `key`; undefined when absent (a const lookup never inserts the key).
YAML::Node Child(const YAML::Node& map, const std::string& key) {
  const YAML::Node& self = map;
  return self[key];
}

std::string FieldName(absl::string_view path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

// Every key of `map` is a known name, given once.
absl::Status CheckKeys(const YAML::Node& map, absl::string_view path,
                       absl::Span<const absl::string_view> known) {
  absl::flat_hash_set<std::string> seen;
  for (const auto& entry : map) {
    if (!entry.first.IsScalar()) {
      return ErrorAt(entry.first, path.empty() ? "top level" : path, "keys must be names");
    }
    const std::string& key = entry.first.Scalar();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return ErrorAt(
          entry.first, FieldName(path, key),
          absl::StrCat("unknown key (known keys here: ", absl::StrJoin(known, ", "), ")"));
    }
    if (!seen.insert(key).second) return ErrorAt(entry.first, FieldName(path, key), "given twice");
  }
  return absl::OkStatus();
}

// A scalar or a list of scalars, as the list of their texts (nodes kept for their lines).
absl::StatusOr<std::vector<YAML::Node>> ScalarList(const YAML::Node& node, const std::string& field,
                                                   const char* what) {
  std::vector<YAML::Node> items;
  if (node.IsScalar()) {
    items.push_back(node);
  } else if (node.IsSequence()) {
    for (const YAML::Node& item : node) {
      if (!item.IsScalar()) return ErrorAt(item, field, absl::StrCat("expected ", what));
      items.push_back(item);
    }
  } else if (!node.IsNull()) {
    return ErrorAt(node, field, absl::StrCat("expected ", what, " or a list of them"));
  }
  return items;
}

// A tenant list: names, or kAnyTenant for every tenant.
absl::Status ReadTenants(const YAML::Node& map, const std::string& path, const char* key,
                         absl::flat_hash_set<std::string>* out) {
  const YAML::Node node = Child(map, key);
  if (!node.IsDefined()) return absl::OkStatus();
  const std::string field = FieldName(path, key);
  absl::StatusOr<std::vector<YAML::Node>> items = ScalarList(node, field, "a tenant name");
  if (!items.ok()) return items.status();
  for (const YAML::Node& item : *items) {
    const std::string& tenant = item.Scalar();
    if (tenant.empty()) {
      return ErrorAt(item, field,
                     absl::StrCat("empty tenant name (\"", kDefaultTenant,
                                  "\" is the tenant of namespaces registered without one, \"",
                                  kAnyTenant, "\" every tenant)"));
    }
    out->insert(tenant);
  }
  return absl::OkStatus();
}

bool IsHexDigest(absl::string_view s) {
  if (s.size() != kDigestHexChars) return false;
  for (char c : s) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// The digests under token_sha256, lowercased. Values are never echoed: a token pasted here
// by mistake must not reach the logs too.
absl::Status ReadDigests(const YAML::Node& entry, const std::string& path,
                         std::vector<std::pair<std::string, YAML::Node>>* out) {
  const std::string field = FieldName(path, "token_sha256");
  const YAML::Node node = Child(entry, "token_sha256");
  if (!node.IsDefined()) return ErrorAt(entry, field, "required");
  absl::StatusOr<std::vector<YAML::Node>> items = ScalarList(node, field, "a SHA-256 digest");
  if (!items.ok()) return items.status();
  if (items->empty()) return ErrorAt(node, field, "expected at least one digest");
  for (const YAML::Node& item : *items) {
    const std::string& text = item.Scalar();
    if (absl::StartsWith(text, "kvs_")) {
      return ErrorAt(item, field,
                     "this is a token, not its digest: store the output of `kvstash token hash` "
                     "instead, and issue a new token, since this one was written in the clear");
    }
    if (!IsHexDigest(text)) {
      return ErrorAt(item, field,
                     absl::StrCat("expected the ", kDigestHexChars,
                                  " hex digits of a token's SHA-256 (`kvstash token hash`), got ",
                                  text.size(), " characters",
                                  text.size() == kDigestHexChars ? " that are not all hex" : ""));
    }
    out->emplace_back(absl::AsciiStrToLower(text), item);
  }
  return absl::OkStatus();
}

// Prefixes the line of `map`'s value under `key` (or of `map`) to a reader's failure.
absl::Status AtLineOf(const YAML::Node& map, const char* key, const absl::Status& s) {
  if (s.ok()) return s;
  const YAML::Node value = Child(map, key);
  return absl::InvalidArgumentError(
      absl::StrCat("line ", LineOf(value.IsDefined() ? value : map), ": ", s.message()));
}

absl::Status ReadLimits(const YAML::Node& map, const std::string& path, PrincipalLimits* limits) {
  ConfigReader r(map, path);
  int64_t calls_per_s = 0;
  r.Int("calls_per_s", 0, kMaxCallsPerS, &calls_per_s);
  if (absl::Status s = AtLineOf(map, "calls_per_s", r.status()); !s.ok()) return s;
  uint64_t bytes_per_s = 0;
  r.Size("bytes_per_s", 0, std::numeric_limits<uint64_t>::max(), &bytes_per_s);
  if (absl::Status s = AtLineOf(map, "bytes_per_s", r.status()); !s.ok()) return s;
  r.Int("max_concurrent_calls", 0, std::numeric_limits<uint32_t>::max(),
        &limits->max_concurrent_calls);
  if (absl::Status s = AtLineOf(map, "max_concurrent_calls", r.status()); !s.ok()) return s;
  limits->calls_per_s = static_cast<double>(calls_per_s);
  limits->bytes_per_s = static_cast<double>(bytes_per_s);
  return absl::OkStatus();
}

// Rights and limits, the fields a principal and the anonymous caller share.
absl::Status ReadGrants(const YAML::Node& map, const std::string& path, Principal* p) {
  for (auto [key, tenants] : {std::pair{"read", &p->read}, std::pair{"write", &p->write},
                              std::pair{"admin", &p->admin}}) {
    if (absl::Status s = ReadTenants(map, path, key, tenants); !s.ok()) return s;
  }
  return ReadLimits(map, path, &p->limits);
}

absl::Status ReadName(const YAML::Node& entry, const std::string& path, std::string* name) {
  const std::string field = FieldName(path, "name");
  const YAML::Node node = Child(entry, "name");
  if (!node.IsDefined() || node.IsNull()) return ErrorAt(entry, field, "required");
  if (!node.IsScalar()) return ErrorAt(node, field, "expected a name");
  *name = node.Scalar();
  if (absl::Status s = CheckPrincipalName(*name); !s.ok()) return ErrorAt(node, field, s.message());
  return absl::OkStatus();
}

// Names and digests already taken, for the duplicate checks.
struct Seen {
  absl::flat_hash_map<std::string, int> name_lines;
  absl::flat_hash_map<std::string, std::string> digest_owners;
};

absl::Status AddPrincipal(const YAML::Node& entry, const std::string& path, Seen* seen,
                          TokenTable* table) {
  if (!entry.IsMap()) return ErrorAt(entry, path, "expected a mapping of a principal's fields");
  if (absl::Status s = CheckKeys(entry, path, kPrincipalKeys); !s.ok()) return s;
  auto p = std::make_shared<Principal>();
  if (absl::Status s = ReadName(entry, path, &p->name); !s.ok()) return s;
  const YAML::Node name_node = Child(entry, "name");
  if (auto [it, fresh] = seen->name_lines.emplace(p->name, LineOf(name_node)); !fresh) {
    return ErrorAt(name_node, FieldName(path, "name"),
                   absl::StrCat("\"", p->name, "\" is already the name of the principal at line ",
                                it->second));
  }
  std::vector<std::pair<std::string, YAML::Node>> digests;
  if (absl::Status s = ReadDigests(entry, path, &digests); !s.ok()) return s;
  if (absl::Status s = ReadGrants(entry, path, p.get()); !s.ok()) return s;
  ConfigReader r(entry, path);
  r.Choice<bool>("trusted", {{"true", true}, {"false", false}}, &p->trusted);
  if (absl::Status s = AtLineOf(entry, "trusted", r.status()); !s.ok()) return s;

  PrincipalPtr shared = std::move(p);
  for (const auto& [digest, node] : digests) {
    if (auto [it, fresh] = seen->digest_owners.emplace(digest, shared->name); !fresh) {
      return ErrorAt(node, FieldName(path, "token_sha256"),
                     absl::StrCat("digest already listed for principal \"", it->second, "\""));
    }
    table->by_digest.emplace(digest, shared);
  }
  table->principals.push_back(std::move(shared));
  return absl::OkStatus();
}

absl::Status ReadAnonymous(const YAML::Node& node, TokenTable* table) {
  const std::string path(kAnonymousPrincipal);
  if (node.IsNull()) return ErrorAt(node, path, "expected a mapping of rights (or no section)");
  if (!node.IsMap()) return ErrorAt(node, path, "expected a mapping of rights");
  if (absl::Status s = CheckKeys(node, path, kAnonymousKeys); !s.ok()) return s;
  auto p = std::make_shared<Principal>();
  p->name = std::string(kAnonymousPrincipal);
  if (absl::Status s = ReadGrants(node, path, p.get()); !s.ok()) return s;
  table->anonymous = std::move(p);
  return absl::OkStatus();
}

absl::StatusOr<TokenTable> ReadTable(const YAML::Node& root) {
  if (!root.IsDefined() || root.IsNull()) {
    return absl::InvalidArgumentError(
        "principals: required (an empty file is refused so that a half-written file never "
        "revokes every token; write `principals: []` for that)");
  }
  if (!root.IsMap()) return ErrorAt(root, "top level", "expected a mapping (principals: ...)");
  if (absl::Status s = CheckKeys(root, "", kTopKeys); !s.ok()) return s;
  TokenTable table;
  const YAML::Node principals = Child(root, "principals");
  if (!principals.IsDefined()) {
    return ErrorAt(root, "principals", "required (`principals: []` revokes every token)");
  }
  if (!principals.IsSequence()) return ErrorAt(principals, "principals", "expected a list");
  Seen seen;
  size_t index = 0;
  for (const YAML::Node& entry : principals) {
    const std::string path = absl::StrCat("principals[", index++, "]");
    if (absl::Status s = AddPrincipal(entry, path, &seen, &table); !s.ok()) return s;
  }
  if (const YAML::Node anonymous = Child(root, "anonymous"); anonymous.IsDefined()) {
    if (absl::Status s = ReadAnonymous(anonymous, &table); !s.ok()) return s;
  }
  return table;
}

// Notes where each document starts; builds nothing.
class DocumentMarks final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  std::vector<YAML::Mark> starts;
};

// Where a second document starts, if the text has one: files concatenated by mistake would
// otherwise lose every principal after the first document. Reads at most two documents,
// since yaml-cpp's LoadAll never ends on some malformed input.
std::optional<YAML::Mark> SecondDocument(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentMarks marks;
  if (!parser.HandleNextDocument(marks) || !parser.HandleNextDocument(marks)) return std::nullopt;
  if (marks.starts.size() < 2) return YAML::Mark();
  return marks.starts[1];
}

}  // namespace

absl::StatusOr<TokenTable> ParseTokenFile(absl::string_view yaml_text) {
  try {
    const std::string text(yaml_text);
    if (std::optional<YAML::Mark> second = SecondDocument(text)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", second->line + 1, ": top level: expected one YAML document, found a second"));
    }
    return ReadTable(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return absl::InvalidArgumentError(e.msg);
    return absl::InvalidArgumentError(
        absl::StrCat("line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg));
  }
}

}  // namespace kvstash::server::auth
