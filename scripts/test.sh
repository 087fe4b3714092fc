#!/usr/bin/env bash
# Installs what is missing, checks that the sources are clang-format clean, builds kvstash
# twice (optimised, and with AddressSanitizer + UndefinedBehaviorSanitizer) and runs the
# whole test suite on each build; then fuzzes the decoders of untrusted input for a minute
# each (scripts/fuzz.sh), and runs the daemon and the concurrency-heavy integration tests
# with ThreadSanitizer (scripts/tsan.sh).
# Then the Python package's suite (scripts/python_test.sh, which builds the package's wheel
# once into build/wheel) against the optimised build, and last the engine adapters against
# real engines from PyPI (scripts/engine_test.sh, installing that same wheel).
# Every step's time is printed at the end (`== timing`), also when a step failed.
#   scripts/test.sh                 everything
#   scripts/test.sh --fast          the optimised build and the Python suite only
#   scripts/test.sh --no-engines    everything but the engine suites
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-}

# ccache: paths under the checkout hashed relative to it, and the working directory left
# out of the hash of -g compiles, so a clone in another folder still hits; room for the five
# builds (plain, ASan, TSan, fuzz, the wheel).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$top}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-25G}

timing=()
run_start=$SECONDS
# step NAME COMMAND...: runs COMMAND and records how long it took.
step() {
  local name=$1 start=$SECONDS status=0
  shift
  "$@" || status=$?
  timing+=("$(printf '%-22s %6d s%s' "$name" $((SECONDS - start)) "$([[ $status == 0 ]] || echo "  FAILED ($status)")")")
  return $status
}
print_timing() {
  echo "== timing"
  printf '%s\n' "${timing[@]}"
  printf '%-22s %6d s\n' "total" $((SECONDS - run_start))
}
trap print_timing EXIT

build_suite() {
  local dir=$1
  shift
  echo "== build $dir ($*)"
  "$top/scripts/build.sh" "$dir" -DKVSTASH_BUILD_TESTS=ON -DKVSTASH_BUILD_BENCH=OFF "$@"
}
test_suite() {
  echo "== test $1"
  (cd "$top/$1" && ctest --output-on-failure --timeout 300 -j2)
}

# A whole run's build trees take about 8 GiB beside the checkout; a full disk would stop the
# first link with a bare ENOSPC, so say it before building.
check_disk() {
  local need_gib=${KVSTASH_MIN_FREE_GIB:-10} free_gib
  free_gib=$(( $(df -Pk "$top" | awk 'NR == 2 { print $4 }') / 1024 / 1024 ))
  if (( free_gib < need_gib )); then
    echo "test.sh: $free_gib GiB free under $top; the builds and tests need $need_gib GiB" \
      "(KVSTASH_MIN_FREE_GIB sets the limit)" >&2
    return 1
  fi
}

step disk check_disk
step setup "$top/scripts/setup.sh"
step format "$top/scripts/format_check.sh"
step "build plain" build_suite build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVSTASH_SANITIZE=OFF
step "test plain" test_suite build
step python "$top/scripts/python_test.sh" build
if [[ "$mode" != "--fast" ]]; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  step "build asan" build_suite build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVSTASH_SANITIZE=ON
  step "test asan" test_suite build-asan
  echo "== fuzz build-fuzz"
  step fuzz "$top/scripts/fuzz.sh"
  step tsan "$top/scripts/tsan.sh" build-tsan
fi
if [[ "$mode" == "" ]]; then
  step engines "$top/scripts/engine_test.sh" build
fi
