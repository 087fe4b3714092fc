#!/usr/bin/env bash
# Regenerates the option documentation from the schemas: README.md's "Configuration
# reference" and deploy/kvstashd.yaml from the daemon's (server/config_schema.h), and
# client/README.md's "Options" from the client's (client/include/kvstash/
# client_options_schema.h). CI fails while a checked-in copy differs from what its schema
# generates (ConfigDocsTest, ClientOptionsTest.ReadmeTableIsGenerated).
#   scripts/config_docs.sh [BUILD_DIR]   (default: build, configured with tests on)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
cmake --build "$top/$build" --target server_config_test client_unit_test
export KVSTASH_UPDATE_GENERATED=1
"$top/$build/server/server_config_test" --gtest_brief=1 \
  --gtest_filter='ConfigDocsTest.ReadmeReferenceIsGenerated:ConfigDocsTest.DeployConfigIsTheDefault'
"$top/$build/client/client_unit_test" --gtest_brief=1 \
  --gtest_filter='ClientOptionsTest.ReadmeTableIsGenerated'
git -C "$top" diff --stat -- README.md deploy/kvstashd.yaml client/README.md
