#!/usr/bin/env bash
# Builds kvstash_bench in Release and runs it; arguments go to the benchmark
# (e.g. scripts/bench.sh --quick, scripts/bench.sh --json results.jsonl).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KVSTASH_BENCH_BUILD_DIR:-${root}/build-bench}"
cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVSTASH_BUILD_TESTS=OFF \
  > /dev/null
cmake --build "${build}" --target kvstash_bench -j "${KVSTASH_BENCH_JOBS:-2}"
exec "${build}/bench/kvstash_bench" "$@"
