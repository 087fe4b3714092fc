#!/usr/bin/env python3
"""kvstash_client_loop lookup cells (1000 keys, 90% present) against one kvstashd."""
import json, subprocess, sys
from kvstash.testing import Daemon
kvstashd, loop, version = sys.argv[1], sys.argv[2], sys.argv[3]
with Daemon({"storage.dram.capacity_bytes": "1GiB"}, kvstashd=kvstashd) as d:
    for transport in ("grpc", "ucx"):
        for threads in (1, 4):
            out = subprocess.run([loop, getattr(d, transport + "_uri"), "lookup", "1000", str(threads), "2"],
                                 capture_output=True, text=True, check=True).stdout
            row = json.loads(out)
            row.update(kind="cpp_lookup", version=version, transport=transport,
                       mean_us=1e6 * threads / row["calls_per_s"])
            print(json.dumps(row))
