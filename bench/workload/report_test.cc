#include "bench/workload/report.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace kvstash::bench::workload {
namespace {

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(ReporterTest, EveryRowHasEveryColumn) {
  const std::string dir = testing::TempDir();
  const std::string json = dir + "/report_test.jsonl", csv = dir + "/report_test.csv";
  Reporter reporter;
  ASSERT_TRUE(reporter.Open(json, csv).ok());
  ResultRow none;
  none.workload = "chat";
  none.store = "none";
  none.sim.ttft_s = {0.1, 0.2};
  ResultRow kvstash = none;
  kvstash.store = "kvstash";
  kvstash.advisor = "on";
  kvstash.sim.declined_chunks = 7;
  kvstash.advisor_dram_bytes_per_s = 1.5e9;
  std::ostringstream table;
  reporter.Add(table, none);
  reporter.Add(table, kvstash);

  const std::vector<std::string> rows = Lines(csv);
  ASSERT_EQ(rows.size(), 3u);
  const size_t columns = std::vector<std::string>(absl::StrSplit(rows[0], ',')).size();
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(std::vector<std::string>(absl::StrSplit(rows[i], ',')).size(), columns) << rows[i];
  }
  EXPECT_NE(rows[2].find(",on,"), std::string::npos) << rows[2];
  EXPECT_NE(rows[2].find(",1500000000,"), std::string::npos) << rows[2];

  const std::vector<std::string> objects = Lines(json);
  ASSERT_EQ(objects.size(), 2u);
  EXPECT_NE(objects[1].find(R"("advisor":"on")"), std::string::npos) << objects[1];
  EXPECT_NE(objects[1].find(R"("declined_chunks":7,)"), std::string::npos) << objects[1];
  EXPECT_NE(table.str().find("decl"), std::string::npos);
}

}  // namespace
}  // namespace kvstash::bench::workload
