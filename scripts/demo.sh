#!/usr/bin/env bash
# Sets up, builds and starts kvstashd on its embedded default config (1 GiB DRAM tier
# above a RocksDB tier in ./var/kvstash/nvme), then shows it serving: put, lookup and get
# with the CLI and the daemon's stats. The daemon keeps running in the background.
#   scripts/demo.sh          set up, build, start (or reuse) the daemon, run the demo
#   scripts/demo.sh stop     stop the daemon started by this script
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
var="$top/var"
pidfile="$var/kvstashd.pid"
mkdir -p "$var"

if [[ "${1:-}" == "stop" ]]; then
  if [[ -f "$pidfile" ]] && kill "$(cat "$pidfile")" 2>/dev/null; then
    echo "kvstashd stopping (pid $(cat "$pidfile"))"
  fi
  rm -f "$pidfile"
  exit 0
fi

"$top/scripts/setup.sh"
if [[ -f "$top/build/CMakeCache.txt" ]]; then
  # An existing build keeps its configuration (tests, sanitizers); only the two programs are built.
  cmake --build "$top/build" -j"$(nproc)" --target kvstashd kvstash
else
  "$top/scripts/build.sh" build -DKVSTASH_BUILD_TESTS=OFF -DKVSTASH_BUILD_BENCH=OFF
fi
daemon="$top/build/server/kvstashd"
cli="$top/build/client/kvstash"

if [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  echo "kvstashd already running (pid $(cat "$pidfile"))"
else
  rm -f "$var/ready"
  (cd "$top" && exec setsid "$daemon" --ready_file "$var/ready" >"$var/kvstashd.log" 2>&1) &
  echo $! >"$pidfile"
  for _ in $(seq 100); do [[ -f "$var/ready" ]] && break; sleep 0.1; done
  [[ -f "$var/ready" ]] || { echo "kvstashd did not start:"; cat "$var/kvstashd.log"; exit 1; }
  echo "kvstashd started (pid $(cat "$pidfile")), log: var/kvstashd.log"
fi
addr=$(sed -n 's/^grpc=//p' "$var/ready")
ucx=$(sed -n 's/^ucx=//p' "$var/ready")
kv() { echo "\$ kvstash $*"; "$cli" --server "grpc://$addr" "$@"; echo; }

kv health
kv put --tokens 0-511 --size 32MiB --all-chunks
kv lookup --tokens 0-1023
kv get --tokens 0-255
if [[ -n $ucx ]]; then
  echo "\$ kvstash --server ucx://$ucx get --tokens 0-255"
  "$cli" --server "ucx://$ucx" get --tokens 0-255
  echo
fi
kv stats
echo "kvstashd is serving grpc://$addr${ucx:+ and ucx://$ucx}; stop it with: scripts/demo.sh stop"
