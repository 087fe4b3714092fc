#include "common/ready_file.h"

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "testing/temp_dir.h"

namespace kvstash {
namespace {

TEST(ReadyFileTest, FormatThenParseRoundTrips) {
  const ReadyInfo info{"127.0.0.1:7070", 42, "127.0.0.1:9090", "127.0.0.1:7071"};
  const std::string text = FormatReadyFile(info);
  EXPECT_EQ(text, "grpc=127.0.0.1:7070\npid=42\nmetrics=127.0.0.1:9090\nucx=127.0.0.1:7071\n");
  absl::StatusOr<ReadyInfo> parsed = ParseReadyFile(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->grpc, info.grpc);
  EXPECT_EQ(parsed->pid, 42);
  EXPECT_EQ(parsed->metrics, info.metrics);
  EXPECT_EQ(parsed->ucx, info.ucx);
}

TEST(ReadyFileTest, LocalSocketRoundTrips) {
  ReadyInfo info{"127.0.0.1:7070", 42, "", ""};
  info.local = "/run/kvstash/kvstash.sock";
  const std::string text = FormatReadyFile(info);
  EXPECT_EQ(text, "grpc=127.0.0.1:7070\npid=42\nlocal=/run/kvstash/kvstash.sock\n");
  absl::StatusOr<ReadyInfo> parsed = ParseReadyFile(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->local, info.local);
}

TEST(ReadyFileTest, ListenersNotServedAreLeftOut) {
  EXPECT_EQ(FormatReadyFile({"[::1]:1", 7, "", ""}), "grpc=[::1]:1\npid=7\n");
}

TEST(ReadyFileTest, ParseToleratesSpacesBlankLinesAndUnknownKeys) {
  absl::StatusOr<ReadyInfo> parsed = ParseReadyFile("\n grpc = h:1 \nfuture=x=y\n\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->grpc, "h:1");
  EXPECT_EQ(parsed->pid, 0);
  EXPECT_EQ(parsed->ucx, "");
}

TEST(ReadyFileTest, ParseRejectsMalformedFiles) {
  EXPECT_FALSE(ParseReadyFile("").ok());
  EXPECT_FALSE(ParseReadyFile("metrics=h:1\n").ok());
  EXPECT_FALSE(ParseReadyFile("grpc=h:1\npid=abc\n").ok());
  EXPECT_FALSE(ParseReadyFile("grpc=h:1\nnonsense\n").ok());
}

TEST(ReadyFileTest, PortOf) {
  EXPECT_EQ(PortOf("127.0.0.1:7070"), 7070);
  EXPECT_EQ(PortOf("[::1]:80"), 80);
  EXPECT_EQ(PortOf("host"), 0);
  EXPECT_EQ(PortOf("host:0"), 0);
  EXPECT_EQ(PortOf("host:x"), 0);
}

TEST(ReadyFileTest, WaitReadsAFileThatExists) {
  auto dir = TempDir::Create("ready-file-test");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string path = (*dir)->Sub("ready");
  std::ofstream(path) << FormatReadyFile({"h:5", getpid(), "", "u:6"});
  absl::StatusOr<ReadyInfo> info = WaitForReadyFile(path, getpid(), absl::Now());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->ucx, "u:6");
}

TEST(ReadyFileTest, WaitGivesUpAtTheDeadline) {
  auto dir = TempDir::Create("ready-file-test");
  ASSERT_TRUE(dir.ok()) << dir.status();
  absl::StatusOr<ReadyInfo> info =
      WaitForReadyFile((*dir)->Sub("missing"), getpid(), absl::Now() + absl::Milliseconds(30));
  EXPECT_TRUE(absl::IsDeadlineExceeded(info.status())) << info.status();
}

TEST(ReadyFileTest, WaitStopsWhenTheProcessHasExited) {
  const pid_t child = fork();
  if (child == 0) _exit(3);
  ASSERT_GT(child, 0);
  auto dir = TempDir::Create("ready-file-test");
  ASSERT_TRUE(dir.ok()) << dir.status();
  absl::StatusOr<ReadyInfo> info =
      WaitForReadyFile((*dir)->Sub("missing"), child, absl::Now() + absl::Seconds(60));
  EXPECT_TRUE(absl::IsUnavailable(info.status())) << info.status();
  // The child was left for its parent to reap.
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(WEXITSTATUS(status), 3);
}

}  // namespace
}  // namespace kvstash
