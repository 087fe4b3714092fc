#!/usr/bin/env bash
# Builds kvstashd and the integration tests labelled `tsan` (tests/CMakeLists.txt) with
# ThreadSanitizer and runs them; any report fails the step: a report in a test process
# through its exit code (66), one in a daemon through the daemon log, which the test
# fixture scans (tests/daemon_process.cc). Suppressions: tests/tsan.supp.
#   scripts/tsan.sh [BUILD_DIR]      (default BUILD_DIR: build-tsan)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build-tsan}
[[ "$dir" = /* ]] || dir="$top/$dir"

echo "== build $dir (ThreadSanitizer)"
cmake -S "$top" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVSTASH_BUILD_TESTS=ON \
  -DKVSTASH_BUILD_BENCH=OFF -DKVSTASH_SANITIZE=thread >/dev/null
cmake --build "$dir" -j"$(nproc)" --target kvstash_tsan_tests

echo "== test $dir (ctest -L tsan)"
# halt_on_error=0: a daemon keeps serving after a report, so one race does not turn into
# a cascade of unrelated failures; every report still fails its test.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=0:exitcode=66:second_deadlock_stack=1:suppressions=$top/tests/tsan.supp}
# UCX's malloc and mmap hooks run inside ThreadSanitizer's interceptors and crash exiting
# threads; the daemon turns them off itself, the test processes (UCX clients) need this.
export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_EVENTS=no
# Two UCX workers, so the request layer runs on two of kvstash's own threads at once: the
# gRPC callback paths are ordered by gRPC's uninstrumented core (tests/tsan.supp).
export KVSTASH_TEST_DAEMON_SET=${KVSTASH_TEST_DAEMON_SET:-ucx.worker_threads=2}
cd "$dir" && ctest -L tsan --output-on-failure --timeout 300 -j"$(nproc)"
