#!/bin/bash
# What target 1 looks like where a fetch beats recomputing on this host: the same chat
# trace on a modelled GPU of 150 TFLOP/s (prefill ~3,000 tokens/s, i.e. ~0.4 GB/s of
# Llama-3-8B KV instead of the H100's ~2.6 GB/s). Two repetitions.
#   bench/results/2026-11-27-workloads/run_whatif.sh [BINARY [KVSTASHD]]
set -u
W=${1:-build/bench/workload/kvstash_workload}
D=${2:-}
KVSTASHD=()
[ -n "$D" ] && KVSTASHD=(--kvstashd "$D")
OUT=bench/results/2026-11-27-workloads
mkdir -p "$OUT/logs"
for rep in 1 2; do
  name="whatif_chat_150tflops_r$rep"
  args=(--workloads chat --users 64 --engine_cache_fraction 0.1 --gpu_tflops 150
        --store none,kvstash-nvme,kvstash-nvme-ucx,redis --advisor on)
  echo "== $name: $W ${args[*]}" | tee "$OUT/logs/$name.log"
  "$W" "${args[@]}" "${KVSTASHD[@]}" --json "$OUT/$name.jsonl" --csv "$OUT/$name.csv" \
    >> "$OUT/logs/$name.log" 2>&1
  echo "exit $?" >> "$OUT/logs/$name.log"
done
