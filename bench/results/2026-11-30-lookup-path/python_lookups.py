#!/usr/bin/env python3
"""p50/p99/mean of 1000-key lookups (90% present) through the Python package."""
import json, sys, time
import kvstash
from kvstash.testing import Daemon
kvstashd, version = sys.argv[1], sys.argv[2]
with Daemon({"storage.dram.capacity_bytes": "1GiB"}, kvstashd=kvstashd) as d:
    for transport in ("grpc", "ucx"):
        with kvstash.Client(getattr(d, transport + "_uri")) as c:
            ns = c.namespace(model="lookup-path", num_layers=0, kv_heads=0, head_dim=0)
            keys = [bytes([0xFE, i & 255, (i >> 8) & 255]) + bytes(12) + b"\x43" for i in range(1000)]
            assert all(c.put(ns, keys[:900], [bytes(4096)] * 900))
            for _ in range(50): c.lookup(ns, keys)
            ts = []
            for _ in range(500):
                t = time.perf_counter(); r = c.lookup(ns, keys); ts.append(time.perf_counter() - t)
                assert r.hit_count == 900
            ts.sort()
            print(json.dumps({"kind": "python_lookup", "version": version, "transport": transport,
                              "keys": 1000, "p50_us": ts[250] * 1e6, "p99_us": ts[495] * 1e6,
                              "mean_us": sum(ts) / len(ts) * 1e6}))
