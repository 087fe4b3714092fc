#include "testing/subprocess.h"

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "testing/temp_dir.h"

namespace kvstash {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[256];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, n);
  return out;
}

TEST(SubprocessTest, OutputToAFileWithExtraEnvironment) {
  auto dir = TempDir::Create("subprocess-test");
  ASSERT_TRUE(dir.ok()) << dir.status();
  SpawnOptions options;
  options.argv = {"sh", "-c", "echo out $KVSTASH_SUBPROCESS_TEST; echo err >&2; exit 4"};
  options.env = {"KVSTASH_SUBPROCESS_TEST=value"};
  options.output_path = (*dir)->Sub("log");
  auto child = Subprocess::Spawn(options);
  ASSERT_TRUE(child.ok()) << child.status();
  absl::StatusOr<ExitInfo> exit = (*child)->Wait(absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_TRUE(exit->exited);
  EXPECT_EQ(exit->code, 4);
  EXPECT_EQ(exit->ToString(), "exited with code 4");
  EXPECT_EQ((*child)->pid(), -1);
  EXPECT_EQ(ReadFile(options.output_path), "out value\nerr\n");
}

TEST(SubprocessTest, OutputToAPipe) {
  SpawnOptions options;
  options.argv = {"sh", "-c", "echo hello; echo world >&2"};
  auto child = Subprocess::Spawn(options);
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_GE((*child)->output_fd(), 0);
  EXPECT_EQ(ReadAll((*child)->output_fd()), "hello\nworld\n");
  absl::StatusOr<ExitInfo> exit = (*child)->Wait(absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->code, 0);
}

TEST(SubprocessTest, WaitTimesOutThenKill) {
  SpawnOptions options;
  options.argv = {"sleep", "600"};
  auto child = Subprocess::Spawn(options);
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_TRUE((*child)->Running());
  absl::StatusOr<ExitInfo> exit = (*child)->Wait(absl::Now() + absl::Milliseconds(20));
  EXPECT_TRUE(absl::IsDeadlineExceeded(exit.status())) << exit.status();
  EXPECT_TRUE((*child)->Running());
  const ExitInfo killed = (*child)->Kill();
  EXPECT_TRUE(killed.signaled);
  EXPECT_EQ(killed.signal, SIGKILL);
  EXPECT_FALSE((*child)->Running());
  EXPECT_FALSE((*child)->Signal(SIGTERM).ok());
}

TEST(SubprocessTest, StopSendsSigtermFirst) {
  SpawnOptions options;
  options.argv = {"sleep", "600"};
  auto child = Subprocess::Spawn(options);
  ASSERT_TRUE(child.ok()) << child.status();
  const ExitInfo stopped = (*child)->Stop(absl::Seconds(60));
  EXPECT_TRUE(stopped.signaled);
  EXPECT_EQ(stopped.signal, SIGTERM);
}

TEST(SubprocessTest, MissingProgramIsNotFound) {
  SpawnOptions options;
  options.argv = {"kvstash-no-such-program"};
  EXPECT_TRUE(absl::IsNotFound(Subprocess::Spawn(options).status()));
  options.argv = {"/nonexistent/program"};
  EXPECT_TRUE(absl::IsNotFound(Subprocess::Spawn(options).status()));
  options.argv = {};
  EXPECT_FALSE(Subprocess::Spawn(options).ok());
}

TEST(SubprocessTest, FindExecutable) {
  EXPECT_NE(FindExecutable("sh"), "");
  EXPECT_EQ(FindExecutable("/bin/sh"), "/bin/sh");
  EXPECT_EQ(FindExecutable("kvstash-no-such-program"), "");
}

}  // namespace
}  // namespace kvstash
