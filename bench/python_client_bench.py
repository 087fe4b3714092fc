#!/usr/bin/env python3
"""The Python package against the C++ client: 4 MiB put and get, 1 and 4 threads, over gRPC
and UCX shared memory, on one kvstashd in one run (target: Python >= 0.95x of C++); and
lookups of a 1,000-key prompt (90% present), lookups/s.

    python bench/python_client_bench.py --kvstashd build-bench/server/kvstashd \\
        --loop build-bench/bench/kvstash_client_loop [--rounds 5] [--seconds 1.5] [--out DIR]

Each cell alternates C++ and Python rounds and reports medians; the C++ cell is
kvstash_client_loop (bench/client_loop.cc), the same calls from the same number of threads
with one connection per thread. Writes DIR/python_client.jsonl and DIR/SUMMARY.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import mmap
import os
import statistics
import subprocess
import threading
import time
from typing import Callable

import numpy as np

import kvstash
from kvstash.testing import Daemon

MIB = 1 << 20


def huge_buffer(size: int) -> np.ndarray:
    """`size` bytes on 2 MiB boundaries, madvise'd for huge pages: what client_loop.cc uses."""
    huge = 2 * MIB
    m = mmap.mmap(-1, size + 2 * huge)
    m.madvise(mmap.MADV_HUGEPAGE)
    base = np.frombuffer(m, np.uint8)
    skip = (-base.ctypes.data) % huge
    buf = base[skip:skip + size]
    buf[:] = 7
    return buf


def python_cell(uri: str, op: str, size: int, threads: int, seconds: float, keys: int = 8) -> float:
    """GB/s of `threads` Python threads doing one-chunk calls, as client_loop.cc does."""
    with kvstash.Client(uri, connections=threads) as client:
        ns = client.namespace(model="bench/python-loop", num_layers=0, kv_heads=0, head_dim=0)
        bufs = [huge_buffer(size) for _ in range(threads)]
        key = lambda t, i: bytes([t, i & 255, (i >> 8) & 255]) + bytes(12) + b"\x43"  # noqa: E731
        if op == "get":
            for t in range(threads):
                for i in range(keys):
                    assert client.put(ns, [key(t, i)], [bufs[t]]) == [True]

        def call(t: int, i: int) -> None:
            if op == "get":
                assert client.get_into(ns, [key(t, i % keys)], [bufs[t]]) == [size]
            else:
                assert client.put(ns, [key(t, 1000 + i)], [bufs[t]]) == [True]
        return calls_per_second(call, threads, seconds) * size / 1e9


def python_lookups(uri: str, prompt: int, threads: int, seconds: float) -> float:
    """Lookups/s of `threads` Python threads each looking up the same prompt of `prompt`
    keys, the first 90% present, as client_loop.cc does."""
    with kvstash.Client(uri, connections=threads) as client:
        ns = client.namespace(model="bench/python-loop", num_layers=0, kv_heads=0, head_dim=0)
        keys = [bytes([0xFE, i & 255, (i >> 8) & 255]) + bytes(12) + b"\x43"
                for i in range(prompt)]
        present = prompt * 9 // 10
        assert all(client.put(ns, keys[:present], [bytes(4096)] * present))

        def call(t: int, i: int) -> None:
            assert client.lookup(ns, keys).hit_count == present
        return calls_per_second(call, threads, seconds)


def calls_per_second(call: Callable[[int, int], None], threads: int, seconds: float) -> float:
    """Calls/s of `threads` threads each calling ``call(thread, i)`` for i = 0, 1, ...
    until `seconds` have passed."""
    calls = [0] * threads
    end = time.perf_counter() + seconds

    def work(t: int) -> None:
        i = 0
        while time.perf_counter() < end:
            call(t, i)
            i += 1
        calls[t] = i

    start = time.perf_counter()
    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sum(calls) / (time.perf_counter() - start)


def cpp_cell(loop: str, uri: str, op: str, size: int, threads: int, seconds: float) -> float:
    """GB/s of a get or put cell; lookups/s of a lookup cell (`size`: the prompt's keys)."""
    out = subprocess.run([loop, uri, op, str(size), str(threads), str(seconds)],
                         capture_output=True, text=True, check=True, timeout=300)
    row = json.loads(out.stdout)
    return row["calls_per_s"] if op == "lookup" else row["gbps"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kvstashd", required=True)
    ap.add_argument("--loop", required=True, help="kvstash_client_loop")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--size", type=int, default=4 * MIB)
    ap.add_argument("--prompt", type=int, default=1000, help="keys per lookup")
    ap.add_argument("--out", default=None, help="results folder (default bench/results/DATE-python-client)")
    args = ap.parse_args()
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                   f"{datetime.date.today()}-python-client")
    os.makedirs(out, exist_ok=True)
    rows = []
    with Daemon({"storage.dram.capacity_bytes": "2GiB"}, kvstashd=args.kvstashd) as d:
        for transport, uri in (("grpc", d.grpc_uri), ("ucx", d.ucx_uri)):
            for op in ("get", "put", "lookup"):
                for threads in (1, 4):
                    size = args.prompt if op == "lookup" else args.size
                    cpp, py = [], []
                    for _ in range(args.rounds):
                        cpp.append(cpp_cell(args.loop, uri, op, size, threads, args.seconds))
                        py.append(python_lookups(uri, size, threads, args.seconds)
                                  if op == "lookup" else
                                  python_cell(uri, op, size, threads, args.seconds))
                    unit = "lookups_per_s" if op == "lookup" else "gbps"
                    row = {"transport": transport, "op": op, "threads": threads, "size": size,
                           f"cpp_{unit}": statistics.median(cpp),
                           f"python_{unit}": statistics.median(py),
                           "cpp_rounds": cpp, "python_rounds": py,
                           "ratio": statistics.median(py) / statistics.median(cpp)}
                    rows.append(row)
                    print(f"{transport:4} {op:6} {threads}t  C++ {statistics.median(cpp):.2f}  "
                          f"Python {statistics.median(py):.2f} {unit}  ratio {row['ratio']:.2f}",
                          flush=True)
    with open(os.path.join(out, "python_client.jsonl"), "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    print(f"wrote {out}/python_client.jsonl")


if __name__ == "__main__":
    main()
