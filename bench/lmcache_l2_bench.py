#!/usr/bin/env python3
"""kvstash against LMCache's own L2 adapters, through LMCache's harness (`lmcache bench l2`):
the kvstash adapter on a DRAM-only daemon and on DRAM+NVMe (DRAM smaller than the data),
LMCache's `resp` adapter over a local Redis, its `fs` adapter on the same disk, and its
in-process `mock` as the ceiling. Same chunks, one run, sweeps interleaved, medians.

Run with the Python that has LMCache and kvstash-client (scripts/engine_test.sh builds one):

    VENV/bin/python bench/lmcache_l2_bench.py --kvstashd build-bench/server/kvstashd \\
        [--sizes-mib 1,4,32] [--reps 3] [--adapters A,B] [--separate-load] [--out DIR]

--separate-load stores in one `lmcache bench l2` process and loads in a new one (except the
in-process mock), so the load is measured alone, as an engine started later meets it.
Targets (benchmark, not test): kvstash DRAM load >= 2x resp at every size, >= 1.2x fs and
>= 0.8x mock at 4 and 32 MiB; store >= resp and >= fs.
Writes DIR/lmcache_l2.jsonl (one line per adapter and size) and prints a table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

from kvstash.testing import Daemon

ENV = dict(os.environ, LMCACHE_DISABLE_BANNER="1", LMCACHE_TRACK_USAGE="false")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def harness(adapter: Dict, size_mib: int, keys: int, in_flight: int, scratch: str,
            only: str = "") -> Dict:
    """One `lmcache bench l2` invocation (`only`: just "store" or "load"); its operations."""
    out = os.path.join(scratch, "result.json")
    lmcache = os.path.join(os.path.dirname(sys.executable), "lmcache")
    cmd = [lmcache, "bench", "l2", "--l2-adapter", json.dumps(adapter), "--num-keys", str(keys),
           "--in-flight", str(in_flight), "--data-size-kb", str(size_mib * 1024), "--rounds", "3",
           "--warmup-rounds", "1", "--l1-align-bytes", "4096", "--format", "json", "--output",
           out, "-q"] + (["--only", only] if only else [])
    subprocess.run(cmd, check=True, env=ENV, cwd=scratch, timeout=900,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    metrics = json.load(open(out))["metrics"]
    return {m["operation"]: m for k, m in metrics.items() if k.startswith("op_")}


def run_bench(adapter: Dict, size_mib: int, keys: int, in_flight: int, scratch: str,
              separate_load: bool) -> Dict:
    """Store and load in one invocation, or (separate_load) the load in a process of its
    own, as an engine started after the store meets the backend."""
    if separate_load:
        ops = {**harness(adapter, size_mib, keys, in_flight, scratch, "store"),
               **harness(adapter, size_mib, keys, in_flight, scratch, "load")}
    else:
        ops = harness(adapter, size_mib, keys, in_flight, scratch)
    return {"store_mbps": ops["Store"]["throughput_avg_mbps"],
            "load_mbps": ops["Load"]["throughput_avg_mbps"],
            "store_ok": ops["Store"]["total_success"] == ops["Store"]["total_keys"],
            "load_ok": ops["Load"]["total_success"] == ops["Load"]["total_keys"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kvstashd", required=True)
    ap.add_argument("--redis-server", default=shutil.which("redis-server"))
    ap.add_argument("--sizes-mib", default="1,4,32")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--adapters", default=None, help="comma-separated subset to run")
    ap.add_argument("--out", default=None)
    ap.add_argument("--separate-load", action="store_true",
                    help="load in a new process after the store (not for the in-process mock)")
    args = ap.parse_args()
    out_dir = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                       f"{datetime.date.today()}-lmcache-l2")
    os.makedirs(out_dir, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="kvstash-l2bench-")
    redis_port = free_port()
    redis = subprocess.Popen([args.redis_server, "--port", str(redis_port), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no", "--protected-mode", "no"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dram = Daemon({"storage.dram.capacity_bytes": "4GiB"}, kvstashd=args.kvstashd,
                  local_socket=True)
    # Puts wait for demotion rather than drop evicted chunks, so every chunk reaches NVMe.
    nvme = Daemon({"storage.dram.capacity_bytes": "256MiB", "storage.nvme.enabled": "true",
                   "storage.nvme.capacity_bytes": "16GiB", "storage.nvme.demotion_wait_ms": "5000"},
                  kvstashd=args.kvstashd)
    time.sleep(0.5)
    try:
        def plugin(uri: str) -> Dict:
            return {"type": "native_plugin", "module_path": "kvstash.integrations.lmcache",
                    "class_name": "KvstashL2Adapter", "adapter_params": {"uri": uri}}
        adapters = {
            "kvstash-dram-ucx": plugin(dram.ucx_uri),
            "kvstash-dram-grpc": plugin(dram.grpc_uri),
            # unix:// to the local socket: loads from and stores into the mapped arena.
            "kvstash-dram-local": plugin(dram.local_uri),
            "kvstash-dram+nvme-ucx": plugin(nvme.ucx_uri),
            "resp-redis": {"type": "resp", "host": "127.0.0.1", "port": redis_port,
                           "num_workers": 4},
            "fs": {"type": "fs", "base_path": os.path.join(scratch, "fs")},
            "mock": {"type": "mock", "max_size_gb": 8, "mock_bandwidth_gb": 1000},
        }
        if args.adapters:
            adapters = {k: v for k, v in adapters.items() if k in args.adapters.split(",")}
        samples: Dict[tuple, List[Dict]] = {}
        for rep in range(args.reps):
            for size in (int(s) for s in args.sizes_mib.split(",")):
                keys = max(2, 64 // size)  # ~64 MiB per submit, 4 submits in flight
                for name, adapter in adapters.items():
                    if name == "fs":
                        shutil.rmtree(adapter["base_path"], ignore_errors=True)
                    if "adapter_params" in adapter:
                        # LMCache's harness names keys the same in every run: a namespace
                        # per run and adapter keeps a run from finding another's chunks (its
                        # stores would then only answer "already present").
                        adapter["adapter_params"]["model"] = f"l2bench-{name}-{rep}-{size}"
                    r = run_bench(adapter, size, keys, 4, scratch,
                                  args.separate_load and name != "mock")
                    samples.setdefault((name, size), []).append(r)
                    print(f"rep {rep} {size:>3} MiB {name:22} store {r['store_mbps']:8.0f} MB/s  "
                          f"load {r['load_mbps']:8.0f} MB/s", flush=True)
        rows = []
        for (name, size), rs in samples.items():
            rows.append({"adapter": name, "size_mib": size,
                         "store_mbps": statistics.median(r["store_mbps"] for r in rs),
                         "load_mbps": statistics.median(r["load_mbps"] for r in rs),
                         "all_keys_ok": all(r["store_ok"] and r["load_ok"] for r in rs),
                         "store_samples": [r["store_mbps"] for r in rs],
                         "load_samples": [r["load_mbps"] for r in rs]})
        with open(os.path.join(out_dir, "lmcache_l2.jsonl"), "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        print(f"wrote {out_dir}/lmcache_l2.jsonl")
    finally:
        dram.close()
        nvme.close()
        redis.terminate()
        redis.wait()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
