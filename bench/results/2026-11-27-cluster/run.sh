#!/bin/sh
# The recorded cluster runs (bench/cluster.md): the placement study, then the cluster
# benchmark with etcd and 1, 2, 3 daemons on loopback. BUILD: a build directory configured
# with -DKVSTASH_BUILD_BENCH=ON (default build-bench).
set -e
BUILD=${BUILD:-build-bench}
OUT=$(dirname "$0")
cmake --build "$BUILD" --target kvstash_placement_study kvstash_bench kvstashd
rm -f "$OUT/placement.jsonl" "$OUT/cluster.jsonl"
"$BUILD/bench/workload/kvstash_placement_study" --json "$OUT/placement.jsonl" | tee "$OUT/placement.txt"
"$BUILD/bench/kvstash_bench" --cluster --rounds 7 --json "$OUT/cluster.jsonl" | tee "$OUT/cluster.txt"
