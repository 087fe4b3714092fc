#!/usr/bin/env python3
"""Gets into caller buffers that start at different offsets within a 4 KiB page, against one
kvstashd, over unix:// (local arena) and ucx:// (shared memory): GB/s, medians of 9 calls.
numpy places a large array's data 16 bytes into a page; torch 64 bytes.

    python alias.py KVSTASHD [--json FILE] [--label NAME]
"""
import argparse
import json
import statistics
import time

import numpy as np

import kvstash
from kvstash.testing import Daemon


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kvstashd")
    ap.add_argument("--json")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    rows = []
    with Daemon({"storage.dram.capacity_bytes": "2GiB"}, kvstashd=a.kvstashd,
                local_socket=True) as d:
        for uri in (d.local_uri, d.ucx_uri):
            c = kvstash.Client(uri)
            ns = c.namespace(model="m", num_layers=0, kv_heads=0, head_dim=0, dtype="opaque",
                             chunk_tokens=1, kv_layout="x")
            for n, size in ((512, 128 << 10), (16, 4 << 20)):
                keys = [kvstash.key_from_engine_hash(f"{n}-{i}") for i in range(n)]
                c.put(ns, keys, [np.full(size, i % 251, np.uint8) for i in range(n)])
                pool = np.ones(n * size + 8192, np.uint8)
                for offset in (0, 16, 64):
                    k = (offset - pool.ctypes.data) % 4096
                    bufs = [pool[k + i * size:k + (i + 1) * size] for i in range(n)]
                    ts = []
                    for _ in range(9):
                        t = time.perf_counter()
                        c.get_into(ns, keys, bufs)
                        ts.append(time.perf_counter() - t)
                    assert all(b[0] == i % 251 and b[-1] == i % 251 for i, b in enumerate(bufs))
                    row = {"label": a.label, "transport": uri.split(":")[0], "items": n,
                           "item_bytes": size, "page_offset": offset,
                           "gbps": round(n * size / statistics.median(ts) / 1e9, 3)}
                    rows.append(row)
                    print(json.dumps(row))
            c.close()
    if a.json:
        with open(a.json, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
