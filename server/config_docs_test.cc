// The checked-in copies of the schema's documentation: README.md's configuration reference
// and deploy/kvstashd.yaml must be what the schema generates. With
// KVSTASH_UPDATE_CONFIG_DOCS=1 the tests rewrite them instead (scripts/config_docs.sh).
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/config.h"
#include "server/config_schema.h"
#include "server/config_test_util.h"

namespace kvstash::server {
namespace {

using ::testing::HasSubstr;

constexpr char kRegenerate[] = "run scripts/config_docs.sh to regenerate it from the schema";

std::string SourcePath(const std::string& relative) {
  return std::string(KVSTASH_SOURCE_DIR) + "/" + relative;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path << " not found";
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool Updating() {
  const char* v = std::getenv("KVSTASH_UPDATE_CONFIG_DOCS");
  return v != nullptr && std::string(v) == "1";
}

// Replaces [begin, end) of the file at `path` with `generated` when updating; otherwise
// expects that range to be `generated`.
void CheckGenerated(const std::string& path, const std::string& text, size_t begin, size_t end,
                    const std::string& generated) {
  const std::string current = text.substr(begin, end - begin);
  if (current == generated) return;
  if (!Updating()) {
    ADD_FAILURE() << path << " drifted from the config schema; " << kRegenerate;
    EXPECT_EQ(current, generated);
    return;
  }
  std::ofstream out(path, std::ios::trunc);
  out << text.substr(0, begin) << generated << text.substr(end);
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

// README.md: from the line after "### Configuration reference" and its blank line to the
// end of the table.
TEST(ConfigDocsTest, ReadmeReferenceIsGenerated) {
  const std::string path = SourcePath("README.md");
  const std::string text = ReadFile(path);
  const std::string heading = "### Configuration reference\n\n";
  const size_t begin = text.find(heading);
  ASSERT_NE(begin, std::string::npos) << "README.md has no \"### Configuration reference\"";
  const size_t table = text.find("\n|", begin);
  ASSERT_NE(table, std::string::npos);
  size_t end = text.find("\n\n", table);
  end = end == std::string::npos ? text.size() : end + 1;
  CheckGenerated(path, text, begin + heading.size(), end, ConfigReferenceTable());
}

// deploy/kvstashd.yaml: its own comment block, a blank line, then the default config.
TEST(ConfigDocsTest, DeployConfigIsTheDefault) {
  const std::string path = SourcePath("deploy/kvstashd.yaml");
  const std::string text = ReadFile(path);
  const size_t header_end = text.find("\n\n");
  ASSERT_NE(header_end, std::string::npos) << path << " has no header comment";
  CheckGenerated(path, text, header_end + 2, text.size(), DefaultConfigYaml());
}

TEST(ConfigDocsTest, DocumentedConfigReadsBackTheSame) {
  ServerConfig c =
      MustParse("storage: {dram: {capacity_bytes: 2GiB}}\ncluster: {zone: \"a:\\\"b\"}");
  const std::string documented = EmitConfig(c, /*documented=*/true);
  EXPECT_EQ(EmitConfig(MustParse(documented)), EmitConfig(c));
  EXPECT_THAT(documented, HasSubstr("    # hard budget of the DRAM tier, reserved up front\n"
                                    "    capacity_bytes: 2GiB\n"));
}

TEST(ConfigDocsTest, EveryKeyIsDocumented) {
  for (const ConfigEntry& e : ConfigEntries(ServerConfig{})) {
    if (!e.section) {
      EXPECT_FALSE(e.doc.empty()) << e.key;
    }
    EXPECT_EQ(e.doc.find('|'), std::string::npos) << e.key << ": a | would split its table row";
    EXPECT_EQ(e.doc.find('\n'), std::string::npos) << e.key << ": docs are one line";
  }
}

// Markdown becomes plain comment text, wrapped at 100 columns.
TEST(ConfigDocsTest, CommentsArePlainTextWithinTheWidth) {
  const std::string yaml = DefaultConfigYaml();
  EXPECT_THAT(yaml,
              HasSubstr("# gRPC listen address ([::]:7070 for all interfaces, unix:/path)\n"));
  EXPECT_THAT(yaml, HasSubstr("see docs/security.md)"));
  EXPECT_THAT(yaml, HasSubstr("(see Fetch or recompute (README.md))"));
  EXPECT_EQ(yaml.find('`'), std::string::npos);
  std::istringstream lines(yaml);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
}

}  // namespace
}  // namespace kvstash::server
