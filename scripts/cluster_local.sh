#!/usr/bin/env bash
# A kvstash cluster on this host's loopback (docs/cluster.md, "Local cluster"): one etcd and
# three kvstashd, each with its own data directory and free ports, registered as members
# local-1..3 of cluster "local". Prints the cluster URI and `kvstash cluster` output.
#   scripts/cluster_local.sh [--etcd-port N] [--daemons N]   start; Ctrl-C stops everything
#   scripts/cluster_local.sh start -d [...]                  start and leave running
#   scripts/cluster_local.sh stop                            stop what -d left running
# Binaries: $KVSTASH_BUILD (default build/) holds server/kvstashd and client/kvstash;
# etcd is $KVSTASH_ETCD or /usr/bin/etcd. State lives in $KVSTASH_CLUSTER_DIR (var/cluster).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${KVSTASH_BUILD:-$top/build}
etcd_bin=${KVSTASH_ETCD:-/usr/bin/etcd}
dir=${KVSTASH_CLUSTER_DIR:-$top/var/cluster}
name=local
daemons=3
etcd_port=
detach=0

# SIGTERM to the processes recorded in pid files matching $1, then waits for them to exit.
stop_matching() {
  local pids=() f pid
  for f in "$dir"/$1; do
    [[ -f $f ]] || continue
    pid=$(cat "$f")
    kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
    rm -f "$f"
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
}

# The daemons first (each withdraws its registration from etcd, which must still be up),
# then etcd.
stop_all() {
  stop_matching 'kvstashd-*.pid'
  stop_matching 'etcd.pid'
  echo "cluster stopped"
}

cmd=start
if [[ ${1:-} == stop || ${1:-} == start ]]; then cmd=$1; shift; fi
while [[ $# -gt 0 ]]; do
  case $1 in
    -d | --detach) detach=1 ;;
    --etcd-port) etcd_port=$2; shift ;;
    --daemons) daemons=$2; shift ;;
    -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [[ $cmd == stop ]]; then stop_all; exit 0; fi

daemon="$build/server/kvstashd"
cli="$build/client/kvstash"
for bin in "$daemon" "$cli" "$etcd_bin"; do
  [[ -x $bin ]] || { echo "missing $bin (build kvstash; apt install etcd-server)" >&2; exit 1; }
done
if ls "$dir"/*.pid >/dev/null 2>&1; then
  echo "a local cluster is already running from $dir; stop it with: $0 stop" >&2
  exit 1
fi

# A free loopback port (the kernel's pick; released before etcd binds it).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

mkdir -p "$dir"
[[ $detach == 1 ]] || trap 'echo; stop_all; exit 0' INT TERM
etcd_port=${etcd_port:-$(free_port)}
peer_port=$(free_port)
rm -rf "$dir/etcd"
setsid "$etcd_bin" --name local --data-dir "$dir/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" \
  --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-cluster "local=http://127.0.0.1:$peer_port" >"$dir/etcd.log" 2>&1 &
echo $! >"$dir/etcd.pid"
for _ in $(seq 100); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$etcd_port/health', timeout=1)" \
    2>/dev/null && break
  sleep 0.2
done
echo "etcd on 127.0.0.1:$etcd_port (log: $dir/etcd.log)"

for i in $(seq "$daemons"); do
  d="$dir/kvstashd-$i"
  mkdir -p "$d"
  rm -f "$d/ready"
  setsid "$daemon" --ready_file "$d/ready" --listen 127.0.0.1:0 \
    --set data_dir="$d/data" --set storage.dram.capacity_bytes=256MiB \
    --set storage.dram.prefault=false --set storage.nvme.capacity_bytes=1GiB \
    --set metrics.listen=127.0.0.1:0 --set ucx.listen=127.0.0.1:0 \
    --set cluster.enabled=true --set cluster.name=$name \
    --set cluster.etcd_endpoints="127.0.0.1:$etcd_port" --set cluster.member_id="local-$i" \
    --set cluster.lease_ttl_s=5 --set cluster.peer_probe_interval_ms=1000 \
    >"$d/kvstashd.log" 2>&1 &
  echo $! >"$dir/kvstashd-$i.pid"
done
for i in $(seq "$daemons"); do
  d="$dir/kvstashd-$i"
  for _ in $(seq 200); do [[ -f $d/ready ]] && break; sleep 0.1; done
  [[ -f $d/ready ]] || { echo "kvstashd $i did not start:"; tail "$d/kvstashd.log"; stop_all; exit 1; }
  echo "local-$i: grpc=$(sed -n 's/^grpc=//p' "$d/ready") ucx=$(sed -n 's/^ucx=//p' "$d/ready")" \
    "metrics=$(sed -n 's/^metrics=//p' "$d/ready") (log: $d/kvstashd.log)"
done

uri="etcd://127.0.0.1:$etcd_port/$name"
echo
echo "cluster URI: $uri"
# Registration follows the ports' binding; give the members a moment to appear.
for _ in $(seq 50); do
  out=$("$cli" cluster "$uri" 2>&1) && [[ $(grep -c 'local-' <<<"$out") -ge $daemons ]] && break
  sleep 0.2
done
echo "\$ kvstash cluster $uri"
echo "$out"
echo
if [[ $detach == 1 ]]; then
  echo "running in the background; stop with: $0 stop"
  exit 0
fi
echo "Ctrl-C stops etcd and the daemons"
while true; do sleep 1; done
