#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/, clang with ASan + UBSan) into build-fuzz and
# runs each for FUZZ_SECONDS over a copy of its seed corpus (tests/fuzz/corpus/<target>;
# the repository is never written). Fails on any crash, leak, timeout or out-of-memory;
# the input that caused it is saved under build-fuzz/artifacts/. Two targets run at a time.
#   scripts/fuzz.sh [TARGET...]      (default: every target of build-fuzz/fuzz_targets.txt)
#   FUZZ_SECONDS=60 FUZZ_JOBS=2      seconds per target, targets run at once
# Reproduce a failure: build-fuzz/tests/fuzz/TARGET build-fuzz/artifacts/TARGET-crash-...
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build="$top/build-fuzz"
seconds=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-2}

start=$(date +%s)
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DKVSTASH_BUILD_FUZZ=ON \
  -DKVSTASH_BUILD_TESTS=OFF -DKVSTASH_BUILD_BENCH=OFF -DKVSTASH_WITH_CUDA=OFF >/dev/null
if [[ $# -gt 0 ]]; then targets=("$@"); else mapfile -t targets < "$build/fuzz_targets.txt"; fi
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
built=$(date +%s)
echo "== fuzz: built ${#targets[@]} targets in $((built - start)) s"

# Longest input each target is given: a few frames or a config file, not megabytes.
max_len() {
  case "$1" in
    config_fuzz | token_file_fuzz) echo 8192 ;;
    put_stream_fuzz | frame_codec_fuzz) echo 4096 ;;
    *) echo 1024 ;;
  esac
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
runs="$build/fuzz-runs"
rm -rf "$runs"
mkdir -p "$runs" "$build/artifacts"

# Runs one target over a scratch copy of its corpus; the log holds libFuzzer's output.
run_one() {
  local t=$1 dir="$runs/$1"
  mkdir -p "$dir/corpus"
  if [[ -d "$top/tests/fuzz/corpus/$t" ]]; then cp "$top/tests/fuzz/corpus/$t/"* "$dir/corpus/"; fi
  local dict=()
  if [[ -f "$top/tests/fuzz/$t.dict" ]]; then dict=(-dict="$top/tests/fuzz/$t.dict"); fi
  "$build/tests/fuzz/$t" -max_total_time="$seconds" -max_len="$(max_len "$t")" \
    -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$t-" "${dict[@]}" "$dir/corpus" >"$dir/log" 2>&1
}

declare -A pid_of
failed=()
for t in "${targets[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n || true; done
  run_one "$t" &
  pid_of[$t]=$!
done
summary=()
for t in "${targets[@]}"; do
  status=ok
  wait "${pid_of[$t]}" || status=FAILED
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$runs/$t/log" | grep -o '[0-9]*$' || true)
  summary+=("$t=${execs:-?}")
  echo "fuzz: $t ${seconds}s ${execs:-?} execs $status"
  if [[ $status != ok ]]; then
    failed+=("$t")
    tail -n 40 "$runs/$t/log" | sed "s/^/  $t| /"
  fi
done
echo "fuzz summary: ${summary[*]} (${seconds}s each; step $(($(date +%s) - start)) s)"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: FAILED ${failed[*]}; inputs in $build/artifacts/, logs in $runs/"
  exit 1
fi
