#!/usr/bin/env bash
# Configures and builds kvstash into a build directory.
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]    (default BUILD_DIR: build)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
shift || true
[[ "$dir" = /* ]] || dir="$top/$dir"
cmake -S "$top" -B "$dir" -G Ninja "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
