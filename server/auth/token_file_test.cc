#include "server/auth/token_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/bearer_token.h"

namespace kvstash::server::auth {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kDigestA = HashToken("kvs_token-a");
const std::string kDigestB = HashToken("kvs_token-b");
const std::string kDigestC = HashToken("kvs_token-c");

TokenTable MustParse(const std::string& yaml) {
  absl::StatusOr<TokenTable> t = ParseTokenFile(yaml);
  EXPECT_TRUE(t.ok()) << t.status() << "\n" << yaml;
  return t.ok() ? *std::move(t) : TokenTable{};
}

// The message of a file that must be refused.
std::string ErrorOf(const std::string& yaml) {
  absl::StatusOr<TokenTable> t = ParseTokenFile(yaml);
  EXPECT_FALSE(t.ok()) << "accepted:\n" << yaml;
  if (t.ok()) return "";
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(t.status().message());
}

TEST(TokenFileTest, FullExample) {
  const TokenTable t = MustParse(absl::StrCat(R"(
principals:
  - name: team-a-engine
    token_sha256: [)",
                                              kDigestA, ", ", kDigestB, R"(]
    read: [team-a, public]
    write: [team-a]
    admin: []
    trusted: true
    calls_per_s: 500
    bytes_per_s: 2GiB
    max_concurrent_calls: 64
  - name: ops
    token_sha256: )",
                                              kDigestC, R"(
    admin: "*"
anonymous:
  read: [public]
  calls_per_s: 10
)"));
  ASSERT_EQ(t.principals.size(), 2u);
  const Principal& a = *t.principals[0];
  EXPECT_EQ(a.name, "team-a-engine");
  EXPECT_TRUE(a.May(Access::kRead, "public"));
  EXPECT_TRUE(a.May(Access::kWrite, "team-a"));
  EXPECT_FALSE(a.May(Access::kWrite, "public"));
  EXPECT_TRUE(a.admin.empty());
  EXPECT_TRUE(a.trusted);
  EXPECT_EQ(a.limits.calls_per_s, 500);
  EXPECT_EQ(a.limits.bytes_per_s, 2.0 * (1 << 30));
  EXPECT_EQ(a.limits.max_concurrent_calls, 64u);

  const Principal& ops = *t.principals[1];
  EXPECT_TRUE(ops.MayAll(Access::kAdmin));
  EXPECT_FALSE(ops.trusted);
  EXPECT_EQ(ops.limits.calls_per_s, 0);

  ASSERT_EQ(t.by_digest.size(), 3u);
  EXPECT_EQ(t.by_digest.at(kDigestA), t.principals[0]);
  EXPECT_EQ(t.by_digest.at(kDigestB), t.principals[0]);
  EXPECT_EQ(t.by_digest.at(kDigestC), t.principals[1]);

  ASSERT_NE(t.anonymous, nullptr);
  EXPECT_EQ(t.anonymous->name, kAnonymousPrincipal);
  EXPECT_TRUE(t.anonymous->May(Access::kRead, "public"));
  EXPECT_FALSE(t.anonymous->May(Access::kWrite, "public"));
  EXPECT_FALSE(t.anonymous->trusted);
  EXPECT_EQ(t.anonymous->limits.calls_per_s, 10);
}

TEST(TokenFileTest, EmptyListRevokesEverything) {
  const TokenTable t = MustParse("principals: []\n");
  EXPECT_TRUE(t.principals.empty());
  EXPECT_TRUE(t.by_digest.empty());
  EXPECT_EQ(t.anonymous, nullptr);
}

TEST(TokenFileTest, UppercaseDigestIsStoredLowercase) {
  std::string upper = kDigestA;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const TokenTable t =
      MustParse(absl::StrCat("principals:\n  - name: a\n    token_sha256: ", upper));
  EXPECT_EQ(t.by_digest.count(kDigestA), 1u);
}

TEST(TokenFileTest, EmptyFileIsRefused) {
  EXPECT_THAT(ErrorOf(""), HasSubstr("principals: required"));
  EXPECT_THAT(ErrorOf("anonymous:\n  read: [x]\n"), HasSubstr("principals: required"));
}

TEST(TokenFileTest, SyntaxErrorNamesLineAndColumn) {
  EXPECT_THAT(ErrorOf("principals:\n  - name: [unclosed\n"), HasSubstr("line 3"));
}

TEST(TokenFileTest, ErrorsNameLineAndField) {
  const std::string head =
      absl::StrCat("principals:\n  - name: a\n    token_sha256: ", kDigestA, "\n");
  EXPECT_EQ(ErrorOf(head + "    colour: blue\n"),
            "line 4: principals[0].colour: unknown key (known keys here: name, token_sha256, "
            "read, write, admin, trusted, calls_per_s, bytes_per_s, max_concurrent_calls)");
  EXPECT_THAT(ErrorOf(head + "    read: {a: b}\n"),
              HasSubstr("line 4: principals[0].read: expected a tenant name or a list"));
  EXPECT_THAT(ErrorOf(head + "    write: [ok, [nested]]\n"),
              HasSubstr("line 4: principals[0].write: expected a tenant name"));
  EXPECT_THAT(ErrorOf(head + "    admin: ['']\n"), HasSubstr("line 4: principals[0].admin: "));
  EXPECT_THAT(ErrorOf(head + "    trusted: yes\n"),
              HasSubstr("line 4: principals[0].trusted: expected one of true|false"));
  EXPECT_THAT(ErrorOf(head + "    calls_per_s: -1\n"),
              HasSubstr("line 4: principals[0].calls_per_s: expected an integer"));
  EXPECT_THAT(ErrorOf(head + "    bytes_per_s: lots\n"),
              HasSubstr("line 4: principals[0].bytes_per_s: expected a byte size"));
  EXPECT_THAT(ErrorOf(head + "    max_concurrent_calls: 5000000000\n"),
              HasSubstr("line 4: principals[0].max_concurrent_calls: expected an integer"));
  EXPECT_THAT(ErrorOf(head + "    read: [a]\n    read: [b]\n"),
              HasSubstr("line 5: principals[0].read: given twice"));
  EXPECT_THAT(ErrorOf("principals: []\nextra: 1\n"), HasSubstr("line 2: extra: unknown key"));
  EXPECT_THAT(ErrorOf("principals: {a: 1}\n"), HasSubstr("line 1: principals: expected a list"));
  EXPECT_THAT(ErrorOf("principals:\n  - just-a-string\n"),
              HasSubstr("line 2: principals[0]: expected a mapping"));
  EXPECT_THAT(ErrorOf("- a\n- b\n"), HasSubstr("top level: expected a mapping"));
}

TEST(TokenFileTest, NameIsRequiredNonEmptyAndUnique) {
  const std::string digest = absl::StrCat("    token_sha256: ", kDigestA, "\n");
  EXPECT_THAT(ErrorOf("principals:\n  - read: [a]\n" + digest),
              HasSubstr("line 2: principals[0].name: required"));
  EXPECT_THAT(ErrorOf("principals:\n  - name: ''\n" + digest),
              HasSubstr("line 2: principals[0].name: expected 1 to 128"));
  EXPECT_THAT(ErrorOf("principals:\n  - name: has space\n" + digest),
              HasSubstr("principals[0].name: expected"));
  EXPECT_THAT(ErrorOf("principals:\n  - name: anonymous\n" + digest),
              HasSubstr("\"anonymous\" is reserved"));
  EXPECT_THAT(ErrorOf("principals:\n  - name: open\n" + digest), HasSubstr("\"open\" is reserved"));
  EXPECT_EQ(ErrorOf(absl::StrCat("principals:\n  - name: a\n", digest,
                                 "  - name: a\n    token_sha256: ", kDigestB, "\n")),
            "line 4: principals[1].name: \"a\" is already the name of the principal at line 2");
}

TEST(TokenFileTest, DigestsAreCheckedAndNeverEchoed) {
  const std::string head = "principals:\n  - name: a\n    token_sha256: ";
  EXPECT_THAT(ErrorOf("principals:\n  - name: a\n"),
              HasSubstr("line 2: principals[0].token_sha256: required"));
  EXPECT_THAT(ErrorOf(head + "[]\n"), HasSubstr("expected at least one digest"));
  const std::string wrong_length = ErrorOf(head + "abc123\n");
  EXPECT_THAT(wrong_length, HasSubstr("line 3: principals[0].token_sha256: expected the 64 hex"));
  EXPECT_THAT(wrong_length, HasSubstr("got 6 characters"));
  EXPECT_THAT(wrong_length, Not(HasSubstr("abc123")));
  const std::string not_hex = ErrorOf(head + std::string(64, 'g') + "\n");
  EXPECT_THAT(not_hex, HasSubstr("not all hex"));
  EXPECT_THAT(ErrorOf(head + "{a: b}\n"), HasSubstr("expected a SHA-256 digest or a list"));

  const std::string token = NewToken();
  const std::string plaintext = ErrorOf(head + token + "\n");
  EXPECT_THAT(plaintext, HasSubstr("this is a token, not its digest"));
  EXPECT_THAT(plaintext, Not(HasSubstr(token)));
  EXPECT_THAT(plaintext, Not(HasSubstr(token.substr(4))));
}

TEST(TokenFileTest, DuplicateDigestsAreRefused) {
  EXPECT_EQ(ErrorOf(absl::StrCat("principals:\n  - name: a\n    token_sha256: ", kDigestA,
                                 "\n  - name: b\n    token_sha256: [", kDigestB, ",\n      ",
                                 kDigestA, "]\n")),
            "line 6: principals[1].token_sha256: digest already listed for principal \"a\"");
  EXPECT_THAT(ErrorOf(absl::StrCat("principals:\n  - name: a\n    token_sha256: [", kDigestA, ", ",
                                   kDigestA, "]\n")),
              HasSubstr("already listed for principal \"a\""));
}

TEST(TokenFileTest, AnonymousSection) {
  EXPECT_THAT(ErrorOf("principals: []\nanonymous:\n  trusted: true\n"),
              HasSubstr("line 3: anonymous.trusted: unknown key"));
  EXPECT_THAT(ErrorOf("principals: []\nanonymous:\n  name: x\n"),
              HasSubstr("anonymous.name: unknown key"));
  EXPECT_THAT(ErrorOf("principals: []\nanonymous: [read]\n"),
              HasSubstr("line 2: anonymous: expected a mapping"));
  EXPECT_THAT(ErrorOf("principals: []\nanonymous:\n"), HasSubstr("anonymous: expected a mapping"));
  const TokenTable t = MustParse("principals: []\nanonymous: {}\n");
  ASSERT_NE(t.anonymous, nullptr);  // an anonymous caller with no rights at all
  EXPECT_FALSE(t.anonymous->May(Access::kRead, "default"));
}

TEST(TokenFileTest, OddInputIsRefusedNotCrashed) {
  const std::string inputs[] = {
      std::string("\0\xff\xfe", 3),
      "principals: &a [*a]\n",
      "principals:\n  - &p {name: a, token_sha256: " + kDigestA + "}\n  - *p\n",
      std::string(5000, '[') + std::string(5000, ']'),
      "principals: [{name: a, token_sha256: !!binary aGVsbG8=}]\n",
      "? [a, b]\n: c\n",
      "principals:\n  - {? [x]: y}\n",
      "principals: []\n---\nprincipals: []\n",
      "principals: [~]\n",
      "principals: [{name: ~, token_sha256: ~}]\n",
      std::string(",\xff\xff\x02", 4),  // yaml-cpp's LoadAll never returns on this
  };
  for (const std::string& input : inputs) {
    absl::StatusOr<TokenTable> t = ParseTokenFile(input);
    ASSERT_FALSE(t.ok()) << input.substr(0, 80);
    EXPECT_TRUE(absl::IsInvalidArgument(t.status())) << t.status();
    EXPECT_FALSE(t.status().message().empty());
  }
  EXPECT_THAT(ErrorOf("principals: []\n---\nprincipals: []\n"),
              HasSubstr("line 2: top level: expected one YAML document"));
}

}  // namespace
}  // namespace kvstash::server::auth
