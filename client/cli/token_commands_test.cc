#include "client/cli/token_commands.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "client/cli/commands.h"
#include "common/bearer_token.h"

namespace kvstash::cli {
namespace {

constexpr char kAbcDigest[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

CliArgs Parsed(std::vector<std::string> argv) {
  absl::StatusOr<CliArgs> a = ParseArgs(argv);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *a : CliArgs();
}

TEST(TokenCommandsTest, ParseTokenCommands) {
  CliArgs a = Parsed({"token", "new", "--name", "team-a", "--tenants", "team-a, *", "--admin"});
  EXPECT_EQ(a.command, Command::kTokenNew);
  EXPECT_TRUE(IsLocalCommand(a.command));
  EXPECT_EQ(a.principal_name, "team-a");
  EXPECT_EQ(a.tenants, (std::vector<std::string>{"team-a", "*"}));
  EXPECT_TRUE(a.admin);
  EXPECT_FALSE(a.trusted);
  EXPECT_EQ(Parsed({"token", "hash"}).command, Command::kTokenHash);
  EXPECT_FALSE(IsLocalCommand(Parsed({"health"}).command));

  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"token"},
           {"token", "frob"},
           {"token", "new", "extra"},
           {"token", "new", "--name", "has space"},
           {"token", "new", "--name", "anonymous"},
           {"token", "new", "--tenants", "a,,b"},
           {"token", "hash", "--name", "x"},   // --name is token new's
           {"token", "new", "--tenant", "a"},  // the namespace flag
           {"health", "--trusted"},
       }) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseArgs(bad).status())) << absl::StrJoin(bad, " ");
  }
}

TEST(TokenCommandsTest, PrincipalEntry) {
  CliArgs a =
      Parsed({"token", "new", "--name", "ops", "--tenants", "t1,*", "--admin", "--trusted"});
  EXPECT_EQ(PrincipalEntry(a, kAbcDigest),
            absl::StrCat("  - name: ops\n    token_sha256: ", kAbcDigest,
                         "\n    read: [\"t1\", \"*\"]\n    write: [\"t1\", \"*\"]\n"
                         "    admin: [\"t1\", \"*\"]\n    trusted: true\n"));
  // Defaults: a name from the digest, the default tenant, no admin, not trusted.
  EXPECT_EQ(PrincipalEntry(Parsed({"token", "new"}), kAbcDigest),
            absl::StrCat("  - name: client-ba7816bf\n    token_sha256: ", kAbcDigest,
                         "\n    read: [\"default\"]\n    write: [\"default\"]\n"));
  a.tenants = {"quote\"back\\slash"};
  EXPECT_TRUE(absl::StrContains(PrincipalEntry(a, kAbcDigest), R"(["quote\"back\\slash"])"));
}

TEST(TokenCommandsTest, TokenNewPrintsTokenAndEntryApart) {
  std::istringstream in;
  std::ostringstream out, err;
  ASSERT_EQ(RunLocalCommand(Parsed({"token", "new", "--name", "e1"}), in, out, err), kExitOk);
  const std::string token(absl::StripSuffix(out.str(), "\n"));
  EXPECT_TRUE(absl::StartsWith(token, "kvs_")) << out.str();
  EXPECT_EQ(token.find('\n'), std::string::npos);
  EXPECT_TRUE(absl::StrContains(err.str(), "  - name: e1\n")) << err.str();
  EXPECT_TRUE(absl::StrContains(err.str(), "token_sha256: " + HashToken(token))) << err.str();
  EXPECT_FALSE(absl::StrContains(err.str(), token));  // the secret goes to stdout only
}

TEST(TokenCommandsTest, TokenHashReadsStdin) {
  const CliArgs hash = Parsed({"token", "hash"});
  for (const char* input : {"abc", "abc\n", "  abc \r\n"}) {
    std::istringstream in(input);
    std::ostringstream out, err;
    EXPECT_EQ(RunLocalCommand(hash, in, out, err), kExitOk);
    EXPECT_EQ(out.str(), absl::StrCat(kAbcDigest, "\n"));
  }
  for (const char* input : {"", " \n", "two tokens\n", "a\nb\n"}) {
    std::istringstream in(input);
    std::ostringstream out, err;
    EXPECT_EQ(RunLocalCommand(hash, in, out, err), kExitUsage) << input;
    EXPECT_EQ(out.str(), "");
    EXPECT_TRUE(absl::StartsWith(err.str(), "kvstash: token hash: ")) << err.str();
  }
}

}  // namespace
}  // namespace kvstash::cli
