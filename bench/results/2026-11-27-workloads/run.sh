#!/bin/bash
# The runs of SUMMARY.md, in this order: the four targets (three repetitions each), the
# throttled-NVMe fetch-or-recompute demonstration, then policies x hints x capacities.
#   bench/results/2026-11-27-workloads/run.sh [BINARY [KVSTASHD]]   (from the repository root)
set -u
W=${1:-build/bench/workload/kvstash_workload}
D=${2:-}  # kvstashd binary; default: the one built with W
KVSTASHD=()
[ -n "$D" ] && KVSTASHD=(--kvstashd "$D")
OUT=bench/results/2026-11-27-workloads
mkdir -p "$OUT/logs"
run() {  # run NAME ARGS...: JSON lines, CSV and the table of one invocation
  local name=$1
  shift
  echo "== $name: $W $*" | tee "$OUT/logs/$name.log"
  "$W" "$@" "${KVSTASHD[@]}" --json "$OUT/$name.jsonl" --csv "$OUT/$name.csv" >> "$OUT/logs/$name.log" 2>&1
  echo "exit $?" >> "$OUT/logs/$name.log"
}
for rep in 1 2 3; do
  # Target 1: chat, 64 users, engine cache 10%: kvstash (DRAM+NVMe) vs none and Redis
  # (the first repetition also without the advisor).
  advisor=on
  [ $rep = 1 ] && advisor=off,on
  run "t1_chat_r$rep" --workloads chat --users 64 --engine_cache_fraction 0.1 \
    --store none,kvstash-nvme,kvstash-nvme-ucx,redis --advisor $advisor
  # Target 2: analytics within 5% of the engine cache alone.
  run "t2_analytics_r$rep" --workloads analytics --store none,kvstash,kvstash-ucx
  # Target 3: chat at 25%: chain + session hints vs LRU without hints (every hit fetched,
  # so the hit ratio is the store's).
  run "t3_chat_policy_r$rep" --workloads chat --store none,kvstash --speedup 20 --capacity_fraction 0.25 \
    --policies lru,chain --hints none,session+parent --advisor off
  # Target 4: agents at 25%: TTL hints vs none.
  run "t4_agents_ttl_r$rep" --workloads agents --store none,kvstash --capacity_fraction 0.25 \
    --hints none,ttl --advisor off,on
done
# Fetch or recompute: NVMe reads paced to 100 MB/s, DRAM 5% of the working set, no
# promotion, so most hits come from the slow NVMe; a GPU of 150 TFLOP/s so that DRAM hits
# over gRPC are worth fetching and throttled NVMe hits are not.
run advisor_throttled_nvme --workloads chat --store none,kvstash-nvme --capacity_fraction 0.05 \
  --advisor off,on --gpu_tflops 150 --kvstash_set storage.nvme.read_bytes_per_s=100000000 \
  --kvstash_set storage.nvme.promote_on_hit=false --plots "$OUT/plots_advisor"
# Policies x hints x capacities (DRAM only, every hit fetched: hit ratios are the store's).
for w in chat agents; do
  run "policies_$w" --workloads $w --store none,kvstash --speedup 20 \
    --capacity_fraction 0.1,0.25,0.5 --policies lru,s3fifo,tinylfu,chain \
    --hints none,session+parent,all --advisor off --plots "$OUT/plots_policies"
done
