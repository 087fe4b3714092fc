#include "server/log.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvstash::server {
namespace {

using ::testing::MatchesRegex;

const absl::Time kTs = absl::FromUnixMillis(1714564800123);  // 2024-05-01T12:00:00.123Z

TEST(LogFormatTest, Logfmt) {
  std::string line =
      Logger::FormatLine(LogFormat::kLogfmt, kTs, LogLevel::kInfo, "kvstashd serving",
                         {{"port", 7070}, {"addr", "127.0.0.1"}, {"ok", true}});
  EXPECT_EQ(line,
            "ts=2024-05-01T12:00:00.123Z level=info msg=\"kvstashd serving\" port=7070 "
            "addr=127.0.0.1 ok=true\n");
}

TEST(LogFormatTest, LogfmtQuotesAndEscapes) {
  std::string line = Logger::FormatLine(LogFormat::kLogfmt, kTs, LogLevel::kWarn, "x",
                                        {{"empty", ""},
                                         {"eq", "a=b"},
                                         {"quote", "say \"hi\"\n"},
                                         {"status", absl::NotFoundError("gone")}});
  EXPECT_EQ(line,
            "ts=2024-05-01T12:00:00.123Z level=warn msg=x empty=\"\" eq=\"a=b\" "
            "quote=\"say \\\"hi\\\"\\n\" status=\"NOT_FOUND: gone\"\n");
}

TEST(LogFormatTest, Json) {
  std::string line = Logger::FormatLine(LogFormat::kJson, kTs, LogLevel::kError, "bad \"x\"",
                                        {{"n", uint64_t{5}}, {"s", "a\tb"}, {"f", false}});
  EXPECT_EQ(line,
            "{\"ts\":\"2024-05-01T12:00:00.123Z\",\"level\":\"error\",\"msg\":\"bad \\\"x\\\"\","
            "\"n\":5,\"s\":\"a\\tb\",\"f\":false}\n");
}

TEST(LogFormatTest, JsonEscapesControlBytes) {
  std::string line = Logger::FormatLine(LogFormat::kJson, kTs, LogLevel::kDebug, "m",
                                        {{"c", std::string("\x01", 1)}});
  EXPECT_THAT(line, ::testing::HasSubstr("\"c\":\"\\u0001\""));
}

TEST(LoggerTest, FiltersByLevelAndStampsTime) {
  std::vector<std::string> lines;
  Logger log(LogConfig{LogLevel::kWarn, LogFormat::kLogfmt},
             [&lines](absl::string_view line) { lines.emplace_back(line); });
  log.Debug("d");
  log.Info("i");
  log.Warn("w", {{"k", 1}});
  log.Error("e");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], MatchesRegex("ts=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
                                     "\\.[0-9]{3}Z level=warn msg=w k=1\n"));
  EXPECT_THAT(lines[1], ::testing::HasSubstr("level=error msg=e"));
  EXPECT_FALSE(log.Enabled(LogLevel::kInfo));
  EXPECT_TRUE(log.Enabled(LogLevel::kError));
}

TEST(LoggerTest, ConcurrentLinesStayWhole) {
  std::string out;  // the sink runs under the logger's lock
  Logger log(LogConfig{LogLevel::kInfo, LogFormat::kLogfmt},
             [&out](absl::string_view line) { out.append(line.data(), line.size()); });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&log, t] {
      for (int i = 0; i < 500; ++i) log.Info("tick", {{"thread", t}, {"i", i}});
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<std::string> lines = absl::StrSplit(out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2000u);
  for (const std::string& line : lines) {
    ASSERT_THAT(line, MatchesRegex("ts=\\S+ level=info msg=tick thread=[0-3] i=[0-9]+"));
  }
}

}  // namespace
}  // namespace kvstash::server
