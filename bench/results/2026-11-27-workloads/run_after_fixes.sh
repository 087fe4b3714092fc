#!/bin/bash
# Targets 3 and 4 again on main's storage fixes of 14:44 (366dd1d: a chunk lends its parent
# its TTL and session protection; a lookup and its fetch count one use), 3 repetitions.
#   bench/results/2026-11-27-workloads/run_after_fixes.sh [BINARY [KVSTASHD]]
set -u
W=${1:-build/bench/workload/kvstash_workload}
D=${2:-}
KVSTASHD=()
[ -n "$D" ] && KVSTASHD=(--kvstashd "$D")
OUT=bench/results/2026-11-27-workloads
mkdir -p "$OUT/logs"
run() {
  local name=$1
  shift
  echo "== $name: $W $*" | tee "$OUT/logs/$name.log"
  "$W" "$@" "${KVSTASHD[@]}" --json "$OUT/$name.jsonl" --csv "$OUT/$name.csv" >> "$OUT/logs/$name.log" 2>&1
  echo "exit $?" >> "$OUT/logs/$name.log"
}
for rep in 1 2 3; do
  run "fixes_t3_chat_policy_r$rep" --workloads chat --store none,kvstash --speedup 20 \
    --capacity_fraction 0.25 --policies lru,chain --hints none,session+parent --advisor off
  run "fixes_t4_agents_ttl_r$rep" --workloads agents --store none,kvstash --capacity_fraction 0.25 \
    --hints none,ttl --advisor off,on
done
