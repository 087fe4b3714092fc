#!/usr/bin/env python3
"""Seconds from spawning kvstashd to its ready file, with DRAM tiers of 1, 4 and 8 GiB
(defaults otherwise: storage.dram.prefault true, UCX direct access sharing the arena),
alternating two daemons; prints one JSON line per start.

    python startup.py BEFORE_KVSTASHD AFTER_KVSTASHD [ROUNDS]
"""
import json
import sys
import time

from kvstash.testing import Daemon


def main() -> None:
    before, after = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    for r in range(rounds):
        for cap in ("1GiB", "4GiB", "8GiB"):
            for label, binary in (("before", before), ("after", after)):
                t = time.perf_counter()
                with Daemon({"storage.dram.capacity_bytes": cap}, kvstashd=binary):
                    ready = time.perf_counter() - t
                print(json.dumps({"round": r, "daemon": label, "dram": cap,
                                  "ready_s": round(ready, 3)}), flush=True)


if __name__ == "__main__":
    main()
