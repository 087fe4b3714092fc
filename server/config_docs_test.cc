// The schema's documentation: README.md's configuration reference and deploy/kvstashd.yaml
// must be what the schema generates (scripts/config_docs.sh rewrites them), and the
// documented config reads back as the config it documents.
#include <yaml-cpp/yaml.h>

#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/config.h"
#include "server/config_file.h"
#include "server/config_schema.h"
#include "server/config_test_util.h"
#include "testing/generated_text.h"

namespace kvstash::server {
namespace {

using ::testing::HasSubstr;

std::string SourcePath(const std::string& relative) {
  return std::string(KVSTASH_SOURCE_DIR) + "/" + relative;
}

TEST(ConfigDocsTest, ReadmeReferenceIsGenerated) {
  const absl::Status s = CheckGeneratedPart(SourcePath("README.md"), kGeneratedBegin, kGeneratedEnd,
                                            ConfigReferenceTable() + "\n", kRegenerate);
  EXPECT_TRUE(s.ok()) << s;
}

// deploy/kvstashd.yaml: its own comment block, a blank line, then the default config.
TEST(ConfigDocsTest, DeployConfigIsTheDefault) {
  const absl::Status s = CheckGeneratedPart(SourcePath("deploy/kvstashd.yaml"), "\n\n", "",
                                            DefaultConfigYaml(), kRegenerate);
  EXPECT_TRUE(s.ok()) << s;
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
