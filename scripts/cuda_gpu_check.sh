#!/usr/bin/env bash
# GPU check of the CUDA paged copy kernels, for a GPU host that has only the CUDA toolkit,
# CMake and a C++ compiler (no gRPC, absl, RocksDB, GoogleTest or network needed):
# builds the standalone cuda/ project, runs its tests (the GPU test must not skip), runs
# the GPU test under compute-sanitizer memcheck and racecheck, and runs kvstash_cuda_bench.
#   scripts/cuda_gpu_check.sh [OUT_DIR]        (default: ./cuda-gpu-check)
# Environment: CUDA_ARCHS (default "80;90"), BUILD_DIR (default build-cuda-gpu),
# BENCH_ARGS (extra kvstash_cuda_bench flags), CUDA_BIN_DIR (a directory already holding
# paged_gpu_test and kvstash_cuda_bench, as scripts/gpu_bundle.sh packs them: nothing is
# built), STEP_TIMEOUT_S (default 1800: a step running longer fails with rc 124). Logs and a
# summary go to OUT_DIR; the exit status is non-zero when any step failed.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-cuda-gpu-check}" && cd "${1:-cuda-gpu-check}" && pwd)
build=${BUILD_DIR:-$top/build-cuda-gpu}
archs=${CUDA_ARCHS:-80;90}
for d in /usr/local/cuda/bin /usr/local/cuda/compute-sanitizer /usr/local/cuda-*/bin \
  /usr/local/cuda-*/compute-sanitizer /opt/cuda/bin; do
  [[ -d $d ]] && PATH="$PATH:$d"
done
export PATH
summary=$out/summary.txt
: >"$summary"
failed=0

# step NAME LOG COMMAND...: runs COMMAND with its output in OUT_DIR/LOG, records the result.
step() {
  local name=$1 log=$out/$2
  shift 2
  echo "== $name: $*" | tee -a "$summary"
  local start=$SECONDS
  timeout "${STEP_TIMEOUT_S:-1800}" "$@" >"$log" 2>&1
  local rc=$?
  echo "   rc=$rc ($((SECONDS - start)) s, log $log)" | tee -a "$summary"
  if [[ $rc -ne 0 ]]; then
    failed=1
    tail -n 30 "$log"
  fi
  return $rc
}

{
  date -u
  uname -a
  command -v nvidia-smi >/dev/null && nvidia-smi
  nvcc --version
  cmake --version | head -1
  c++ --version | head -1
} >"$out/environment.txt" 2>&1

if [[ -n ${CUDA_BIN_DIR:-} ]]; then
  gpu_test=$CUDA_BIN_DIR/paged_gpu_test
  cuda_bench=$CUDA_BIN_DIR/kvstash_cuda_bench
else
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  step configure configure.log cmake -S "$top/cuda" -B "$build" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=$archs" || exit 1
  step build build.log cmake --build "$build" -j"$(nproc)" || exit 1
  step ctest ctest.log ctest --test-dir "$build" --output-on-failure
  gpu_test=$build/tests/paged_gpu_test
  cuda_bench=$build/bench/kvstash_cuda_bench
fi
step gpu_test gpu_test.log "$gpu_test" --require_gpu
if command -v compute-sanitizer >/dev/null; then
  step memcheck memcheck.log compute-sanitizer --tool memcheck --leak-check full \
    --error-exitcode 1 "$gpu_test" --require_gpu
  step racecheck racecheck.log compute-sanitizer --tool racecheck --racecheck-report all \
    --error-exitcode 1 "$gpu_test" --require_gpu
else
  echo "== memcheck, racecheck: compute-sanitizer not found" | tee -a "$summary"
  failed=1
fi
# shellcheck disable=SC2086
step bench bench.txt "$cuda_bench" --max_ctas 8 --json "$out/bench.jsonl" ${BENCH_ARGS:-}
step bench_all_layouts bench_all_layouts.txt "$cuda_bench" --layouts all \
  --reps 3 --max_ctas 8 --json "$out/bench_all_layouts.jsonl"
cat "$out/bench.txt" 2>/dev/null
echo "summary: $summary ($([[ $failed -eq 0 ]] && echo all passed || echo FAILURES))"
exit $failed
