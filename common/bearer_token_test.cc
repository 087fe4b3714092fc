#include "common/bearer_token.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "absl/strings/match.h"

namespace kvstash {
namespace {

TEST(BearerTokenTest, HashIsLowercaseHexSha256) {
  // FIPS 180-4 test vectors.
  EXPECT_EQ(HashToken("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(HashToken(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(BearerTokenTest, NewTokenFormat) {
  const std::string token = NewToken();
  ASSERT_EQ(token.size(), 4u + 43u) << token;
  EXPECT_TRUE(absl::StartsWith(token, "kvs_")) << token;
  for (char c : token.substr(4)) {
    const bool base64url = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                           (c >= '0' && c <= '9') || c == '-' || c == '_';
    EXPECT_TRUE(base64url) << "'" << c << "' in " << token;
  }
  EXPECT_EQ(HashToken(token).size(), 64u);
}

TEST(BearerTokenTest, NewTokensDiffer) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(seen.insert(NewToken()).second);
}

TEST(BearerTokenTest, PrincipalNames) {
  EXPECT_TRUE(CheckPrincipalName("team-a_engine.1@host:7").ok());
  EXPECT_TRUE(CheckPrincipalName(std::string(kMaxPrincipalNameChars, 'x')).ok());
  for (absl::string_view bad : {"", "has space", "caf\xc3\xa9", "a/b", "quote\""}) {
    EXPECT_TRUE(absl::IsInvalidArgument(CheckPrincipalName(bad))) << bad;
  }
  EXPECT_FALSE(CheckPrincipalName(std::string(kMaxPrincipalNameChars + 1, 'x')).ok());
  EXPECT_EQ(CheckPrincipalName("anonymous").message(), "\"anonymous\" is reserved");
  EXPECT_FALSE(CheckPrincipalName("open").ok());
}

}  // namespace
}  // namespace kvstash
