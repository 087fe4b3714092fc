#!/usr/bin/env bash
# Regenerates the daemon config's documentation from its schema (server/config_schema.h):
# README.md's "Configuration reference" and deploy/kvstashd.yaml. CI fails while either
# differs from what the schema generates (server_config_test, ConfigDocsTest).
#   scripts/config_docs.sh [BUILD_DIR]   (default: build, configured with tests on)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
cmake --build "$top/$build" --target server_config_test
KVSTASH_UPDATE_CONFIG_DOCS=1 "$top/$build/server/server_config_test" \
  --gtest_filter='ConfigDocsTest.*Generated:ConfigDocsTest.*IsTheDefault' --gtest_brief=1
git -C "$top" diff --stat -- README.md deploy/kvstashd.yaml
