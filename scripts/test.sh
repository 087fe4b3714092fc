#!/usr/bin/env bash
# Installs what is missing, checks that the sources are clang-format clean, builds kvstash
# twice (optimised, and with AddressSanitizer + UndefinedBehaviorSanitizer) and runs the
# whole test suite on each build; then fuzzes the decoders of untrusted input for a minute
# each (scripts/fuzz.sh), and runs the daemon and the concurrency-heavy integration tests
# with ThreadSanitizer (scripts/tsan.sh).
# Then the Python package's suite (scripts/python_test.sh) against the optimised build, and
# last the engine adapters against real engines from PyPI (scripts/engine_test.sh).
#   scripts/test.sh                 everything
#   scripts/test.sh --fast          the optimised build and the Python suite only
#   scripts/test.sh --no-engines    everything but the engine suites
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"
"$top/scripts/format_check.sh"

run_suite() {
  local dir=$1
  shift
  echo "== build $dir ($*)"
  "$top/scripts/build.sh" "$dir" -DKVSTASH_BUILD_TESTS=ON -DKVSTASH_BUILD_BENCH=OFF "$@"
  echo "== test $dir"
  (cd "$top/$dir" && ctest --output-on-failure --timeout 300 -j2)
}

run_suite build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVSTASH_SANITIZE=OFF
"$top/scripts/python_test.sh" build
mode=${1:-}
if [[ "$mode" != "--fast" ]]; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  run_suite build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVSTASH_SANITIZE=ON
  echo "== fuzz build-fuzz"
  "$top/scripts/fuzz.sh"
  "$top/scripts/tsan.sh" build-tsan
fi
if [[ "$mode" == "" ]]; then
  "$top/scripts/engine_test.sh" build
fi
