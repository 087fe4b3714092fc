#!/usr/bin/env bash
# The whole GPU check, in one command on a GPU host, from a bundle made by
# scripts/gpu_bundle.sh on a build host (the GPU host needs the NVIDIA driver, the CUDA
# toolkit's compute-sanitizer, and Python with torch; no Debian packages, no network):
#   scripts/gpu_check.sh BUNDLE.tar.gz [OUT_DIR]      (default OUT_DIR: ./gpu-check)
#   1. the copy kernels: scripts/cuda_gpu_check.sh on the bundle's binaries (every kernel
#      against its CPU reference, memcheck, racecheck, kvstash_cuda_bench);
#   2. PagedTransfer end to end: tests/gpu/paged_e2e.py --bench with the bundle's kvstashd
#      and torch caches on the GPU;
#   3. KvstashConnector's device path: tests/gpu/vllm_worker_gpu.py (the chunk codec in every
#      vLLM 0.32 layout on CUDA tensors, copy ordering under a busy compute stream, staging
#      bandwidth against torch's own copies).
# Logs, JSON lines and summary.txt go to OUT_DIR; the exit status is non-zero when a step
# failed. Environment: E2E_ARGS (extra paged_e2e.py flags), KVSTASH_E2E_SEED.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bundle_tar=$(realpath "${1:?usage: scripts/gpu_check.sh BUNDLE.tar.gz [OUT_DIR]}")
out=$(mkdir -p "${2:-gpu-check}" && cd "${2:-gpu-check}" && pwd)
bundle=$(mktemp -d)
trap 'rm -rf "$bundle"' EXIT
tar -C "$bundle" -xzf "$bundle_tar" || exit 1
export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export UCX_MODULE_DIR=$bundle/lib/ucx
python=${PYTHON:-python3}

CUDA_BIN_DIR=$bundle/bin "$top/scripts/cuda_gpu_check.sh" "$out"
failed=$?

# run_script NAME SCRIPT ARGS...: one Python check, its log in OUT_DIR/NAME.log, its
# verdict in summary.txt.
run_script() {
  local name=$1 script=$2 start=$SECONDS rc
  shift 2
  echo "== $name" | tee -a "$out/summary.txt"
  PYTHONUNBUFFERED=1 "$python" "$script" "$@" >"$out/$name.log" 2>&1
  rc=$?
  echo "   rc=$rc ($((SECONDS - start)) s, log $out/$name.log)" | tee -a "$out/summary.txt"
  if [[ $rc -ne 0 ]]; then
    failed=1
    grep -E '^FAIL|Error|error' "$out/$name.log" | head -n 40
  fi
  tail -n 2 "$out/$name.log"
}

# shellcheck disable=SC2086
run_script paged_e2e "$top/tests/gpu/paged_e2e.py" --kvstashd "$bundle/bin/kvstashd" \
  --capi "$bundle/lib/libkvstash_paged_capi.so" --out "$out" --bench ${E2E_ARGS:-}
run_script vllm_worker_gpu "$top/tests/gpu/vllm_worker_gpu.py" --out "$out"
echo "gpu_check: $([[ $failed -eq 0 ]] && echo all passed || echo FAILURES) (logs in $out)"
exit $failed
