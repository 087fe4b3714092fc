"""Puts and gets of 128 x 512 KiB numpy buffers in one call over `unix://` (the local
arena), 10 measured calls each after 2 warm-ups, medians in GB/s. The daemon (2 GiB DRAM)
is left 8 s to finish faulting its arena in first: on two cores that fault-in competes
with the client's copy helper. Usage: local_batch.py KVSTASHD (one JSON line).
"""
import sys, time, statistics, json
import numpy as np, kvstash
from kvstash.testing import Daemon
n, size = 128, 512 << 10
bufs = [np.random.randint(0, 255, size, dtype=np.uint8) for _ in range(n)]
with Daemon({"storage.dram.capacity_bytes": "2GiB"}, kvstashd=sys.argv[1], local_socket=True) as d:
    time.sleep(8)  # the arena fault-in finishes
    c = kvstash.Client(d.local_uri)
    ns = c.namespace(model="putbatch", num_layers=1, kv_heads=1, head_dim=128, dtype="float16", chunk_tokens=128)
    ts = []
    for r in range(12):
        keys = [ns.key_from_engine_hash(b"%d-%d" % (r, i)) for i in range(n)]
        t = time.perf_counter(); assert all(c.put(ns, keys, bufs)); ts.append(time.perf_counter() - t)
    gs = []
    dst = [np.empty(size, np.uint8) for _ in range(n)]
    for r in range(12):
        keys = [ns.key_from_engine_hash(b"%d-%d" % (r, i)) for i in range(n)]
        t = time.perf_counter(); c.get_into(ns, keys, dst); gs.append(time.perf_counter() - t)
        assert all((a == b).all() for a, b in zip(dst, bufs))
    c.close()
print(json.dumps({"put_gbps": n * size / statistics.median(ts[2:]) / 1e9, "get_gbps": n * size / statistics.median(gs[2:]) / 1e9}))
