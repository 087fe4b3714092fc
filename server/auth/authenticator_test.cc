#include "server/auth/authenticator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/bearer_token.h"
#include "server/log.h"
#include "testing/temp_dir.h"

namespace kvstash::server::auth {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A token file with one principal per token, each reading and writing its own tenant.
std::string FileFor(const std::vector<std::pair<std::string, std::string>>& name_tokens,
                    const std::string& extra = "") {
  std::string yaml = "principals:\n";
  for (const auto& [name, token] : name_tokens) {
    absl::StrAppend(&yaml, "  - name: ", name, "\n    token_sha256: ", HashToken(token),
                    "\n    read: [", name, "]\n    write: [", name, "]\n");
  }
  return yaml + extra;
}

class AuthenticatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::Create("kvstash-auth-test");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *std::move(dir);
    path_ = dir_->Sub("tokens.yaml");
  }

  // Replaces the file by a rename, as editors and secret mounts do (a new inode).
  void WriteFile(const std::string& text) {
    const std::string tmp = path_ + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << text;
    }
    ASSERT_EQ(std::rename(tmp.c_str(), path_.c_str()), 0);
  }

  std::unique_ptr<Authenticator> MustCreate(AuthOptions options, Logger* log = nullptr) {
    absl::StatusOr<std::unique_ptr<Authenticator>> a = Authenticator::Create(options, log);
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? *std::move(a) : nullptr;
  }

  AuthOptions Options(bool required) {
    AuthOptions o;
    o.token_file = path_;
    o.required = required;
    o.reload_interval_ms = 0;  // reloads only when a test asks
    return o;
  }

  std::unique_ptr<TempDir> dir_;
  std::string path_;
};

TEST_F(AuthenticatorTest, NoTokenFileIsOpen) {
  AuthOptions o;
  std::unique_ptr<Authenticator> a = MustCreate(o);
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(a->enabled());
  for (const char* token : {"", "kvs_anything"}) {
    absl::StatusOr<PrincipalPtr> p = a->Authenticate(token);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(*p, OpenPrincipal());
  }
  EXPECT_TRUE(a->Reload().ok());
}

TEST_F(AuthenticatorTest, ValidAndInvalidTokens) {
  WriteFile(FileFor({{"team-a", "kvs_a"}, {"team-b", "kvs_b"}}));
  std::unique_ptr<Authenticator> a = MustCreate(Options(/*required=*/true));
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->enabled());
  absl::StatusOr<PrincipalPtr> p = a->Authenticate("kvs_a");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->name, "team-a");
  EXPECT_TRUE((*p)->May(Access::kWrite, "team-a"));
  EXPECT_FALSE((*p)->May(Access::kRead, "team-b"));
  EXPECT_EQ((*a->Authenticate("kvs_b"))->name, "team-b");

  const std::string wrong = "kvs_wrong-secret-value";
  absl::StatusOr<PrincipalPtr> bad = a->Authenticate(wrong);
  ASSERT_TRUE(absl::IsUnauthenticated(bad.status())) << bad.status();
  EXPECT_EQ(bad.status().message(), "unknown or revoked token");
  // The digest is not a token: presenting what the file stores proves nothing.
  EXPECT_TRUE(absl::IsUnauthenticated(a->Authenticate(HashToken("kvs_a")).status()));
  EXPECT_EQ(a->stats().principals, 2u);
}

TEST_F(AuthenticatorTest, RequiredRefusesCallsWithoutToken) {
  WriteFile(FileFor({{"team-a", "kvs_a"}}, "anonymous:\n  read: [public]\n"));
  std::unique_ptr<Authenticator> a = MustCreate(Options(/*required=*/true));
  ASSERT_NE(a, nullptr);
  absl::StatusOr<PrincipalPtr> p = a->Authenticate("");
  ASSERT_TRUE(absl::IsUnauthenticated(p.status())) << p.status();
  EXPECT_EQ(p.status().message(), "no token");
}

TEST_F(AuthenticatorTest, RequiredWithoutTokenFileIsRefused) {
  AuthOptions o;
  o.required = true;
  absl::StatusOr<std::unique_ptr<Authenticator>> a = Authenticator::Create(o);
  ASSERT_TRUE(absl::IsInvalidArgument(a.status())) << a.status();
  EXPECT_EQ(a.status().message(), "auth.required: needs auth.token_file");
}

TEST_F(AuthenticatorTest, NotRequiredGivesAnonymousOrEveryRightUntrusted) {
  WriteFile(FileFor({{"team-a", "kvs_a"}}, "anonymous:\n  read: [public]\n"));
  std::unique_ptr<Authenticator> with_anonymous = MustCreate(Options(/*required=*/false));
  ASSERT_NE(with_anonymous, nullptr);
  absl::StatusOr<PrincipalPtr> p = with_anonymous->Authenticate("");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->name, kAnonymousPrincipal);
  EXPECT_TRUE((*p)->May(Access::kRead, "public"));
  EXPECT_FALSE((*p)->May(Access::kWrite, "public"));
  // A token, when presented, must still be valid.
  EXPECT_TRUE(absl::IsUnauthenticated(with_anonymous->Authenticate("kvs_nope").status()));

  WriteFile(FileFor({{"team-a", "kvs_a"}}));
  std::unique_ptr<Authenticator> without = MustCreate(Options(/*required=*/false));
  ASSERT_NE(without, nullptr);
  absl::StatusOr<PrincipalPtr> open = without->Authenticate("");
  ASSERT_TRUE(open.ok()) << open.status();
  EXPECT_EQ(*open, MigrationPrincipal());
  EXPECT_TRUE((*open)->MayAll(Access::kAdmin));
  // Direct access always needs a token once a token file exists.
  EXPECT_FALSE((*open)->trusted);
}

TEST_F(AuthenticatorTest, ReloadRevokesAToken) {
  WriteFile(FileFor({{"team-a", "kvs_a"}, {"team-b", "kvs_b"}}));
  std::unique_ptr<Authenticator> a = MustCreate(Options(true));
  ASSERT_NE(a, nullptr);
  absl::StatusOr<PrincipalPtr> held = a->Authenticate("kvs_a");
  ASSERT_TRUE(held.ok());

  WriteFile(FileFor({{"team-b", "kvs_b"}}));
  ASSERT_TRUE(a->Reload().ok());
  EXPECT_TRUE(absl::IsUnauthenticated(a->Authenticate("kvs_a").status()));
  EXPECT_TRUE(a->Authenticate("kvs_b").ok());
  EXPECT_EQ((*held)->name, "team-a");  // a call in flight keeps its principal
  EXPECT_EQ(a->stats().reloads_ok, 1u);
  EXPECT_EQ(a->stats().principals, 1u);
}

TEST_F(AuthenticatorTest, BrokenFileOnReloadKeepsTheOldTable) {
  WriteFile(FileFor({{"team-a", "kvs_a"}}));
  std::vector<std::string> lines;
  absl::Mutex mu;
  Logger log(LogConfig{}, [&](absl::string_view line) {
    absl::MutexLock lock(&mu);
    lines.emplace_back(line);
  });
  std::unique_ptr<Authenticator> a = MustCreate(Options(true), &log);
  ASSERT_NE(a, nullptr);

  WriteFile("principals:\n  - name: team-a\n    token_sha256: kvs_a\n");
  absl::Status s = a->Reload();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(path_));
  EXPECT_THAT(s.message(), HasSubstr("line 3"));
  EXPECT_TRUE(a->Authenticate("kvs_a").ok());

  ASSERT_EQ(std::remove(path_.c_str()), 0);
  EXPECT_TRUE(absl::IsNotFound(a->Reload()));
  EXPECT_TRUE(a->Authenticate("kvs_a").ok());
  EXPECT_EQ(a->stats().reloads_failed, 2u);
  EXPECT_EQ(a->stats().reloads_ok, 0u);
  absl::MutexLock lock(&mu);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("token file reload failed"));
  EXPECT_THAT(lines[0], Not(HasSubstr("kvs_a")));
}

TEST_F(AuthenticatorTest, PollingNoticesAChangedFile) {
  WriteFile(FileFor({{"team-a", "kvs_a"}}));
  AuthOptions o = Options(true);
  o.reload_interval_ms = 10;
  std::unique_ptr<Authenticator> a = MustCreate(o);
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->Authenticate("kvs_a").ok());

  WriteFile(FileFor({{"team-c", "kvs_c"}}));
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!a->Authenticate("kvs_c").ok() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_TRUE(a->Authenticate("kvs_c").ok()) << "the change was not noticed in 30 s";
  EXPECT_TRUE(absl::IsUnauthenticated(a->Authenticate("kvs_a").status()));
  EXPECT_EQ(a->stats().reloads_ok, 1u);

  // A broken file is read once (it failed), and the table stays in force.
  WriteFile("principals: oops\n");
  while (a->stats().reloads_failed == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(a->stats().reloads_failed, 1u);
  EXPECT_TRUE(a->Authenticate("kvs_c").ok());
}

TEST_F(AuthenticatorTest, MissingOrBadFileFailsTheStart) {
  absl::StatusOr<std::unique_ptr<Authenticator>> missing = Authenticator::Create(Options(true));
  ASSERT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_THAT(missing.status().message(), HasSubstr(path_));

  WriteFile("principals:\n  - name: a\n");
  absl::StatusOr<std::unique_ptr<Authenticator>> bad = Authenticator::Create(Options(true));
  ASSERT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  EXPECT_THAT(bad.status().message(), HasSubstr("line 2: principals[0].token_sha256: required"));

  AuthOptions negative = Options(true);
  negative.reload_interval_ms = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(Authenticator::Create(negative).status()));
}

}  // namespace
}  // namespace kvstash::server::auth
