#!/usr/bin/env python3
"""Records the cells that show drift between landings: gRPC get and put of 256 KiB and
4 MiB chunks with 1 and 4 clients next to Redis, and the 1,000-chunk lookup, measured by
kvstash_bench in one run. Appends one line to a JSON-lines record (default
bench/results/landings.jsonl) and prints each cell next to the range of the last lines.

Ratios to Redis come from the same run, so lines from different hosts stay comparable;
absolute numbers (GB/s, microseconds) are kept too but only compare on one host.

Usage: landing_cells.py [--bench PATH] [--kvstashd PATH] [--commit REV] [--record FILE]
                        [--from-json FILE]
       landing_cells.py --self-test
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_ARGS = ["--sizes", "256KiB,4MiB", "--clients", "1,4", "--rounds", "3", "--seconds", "1",
              "--budget", "2GiB", "--systems", "kvstash,redis"]
# A cell is marked when it lies outside the range of the last HISTORY lines by more than
# MARGIN: one commit's runs on one 2-core host spread by 5-55% depending on the cell
# (results/2026-11-29-regression-bisect), so a fixed step from one line would mark noise.
HISTORY = 4
MARGIN = 0.10
# Targets on the same-run ratios (">=") and the lookup latency ("<=", microseconds).
TARGETS = {"get 4MiB x4 / redis": (">=", 1.2), "put 4MiB x4 / redis": (">=", 0.8),
           "lookup p50 us x1": ("<=", 150.0)}


def size_name(size: int) -> str:
    """256KiB, 4MiB: the bench's own spelling of a chunk size."""
    return f"{size >> 20}MiB" if size % (1 << 20) == 0 else f"{size >> 10}KiB"


def cells_of(rows: List[dict]) -> Dict[str, float]:
    """The record's cells from kvstash_bench --json rows: for each get/put cell, kvstash's
    GB/s and its ratio to Redis; for each lookup cell, kvstash's p50 and its ratio to
    Redis's p50 for the same prompt (below 1 is faster)."""
    by = {(r["system"], r["op"], r["chunk_bytes"], r["clients"]): r for r in rows}
    cells: Dict[str, float] = {}
    for (system, op, size, clients), r in sorted(by.items(), key=lambda kv: str(kv[0])):
        if system != "kvstash" or op not in ("get", "put", "lookup"):
            continue
        peer = by.get(("redis", op, size, clients))
        if op == "lookup":
            cells[f"lookup p50 us x{clients}"] = round(r["p50_us"], 1)
            if peer and peer["p50_us"] > 0:
                cells[f"lookup p50 x{clients} / redis"] = round(r["p50_us"] / peer["p50_us"], 3)
            continue
        name = f"{op} {size_name(size)} x{clients}"
        cells[f"{name} GB/s"] = round(r["gbps"], 3)
        if peer and peer["gbps"] > 0:
            cells[f"{name} / redis"] = round(r["gbps"] / peer["gbps"], 3)
    return cells


def verdicts(cells: Dict[str, float]) -> Dict[str, str]:
    """MET, MISSED or NOT MEASURED for each target."""
    out = {}
    for name, (sense, limit) in TARGETS.items():
        value = cells.get(name)
        if value is None:
            out[name] = "NOT MEASURED"
        else:
            met = value >= limit if sense == ">=" else value <= limit
            out[name] = f"{'MET' if met else 'MISSED'} ({value} {sense} {limit})"
    return out


def drift_lines(previous: List[dict], cells: Dict[str, float]) -> List[str]:
    """One line per cell: the value, the range of the `previous` lines, and a DRIFT mark
    outside that range widened by MARGIN."""
    lines = []
    for name, value in cells.items():
        seen = [p["cells"][name] for p in previous if name in p.get("cells", {})]
        if not seen:
            lines.append(f"  {name:30s} {value:10.3f}")
            continue
        lo, hi = min(seen), max(seen)
        mark = "  DRIFT" if value < lo * (1 - MARGIN) or value > hi * (1 + MARGIN) else ""
        lines.append(f"  {name:30s} {value:10.3f}  last {len(seen)}: {lo:.3f}-{hi:.3f}{mark}")
    return lines


def last_lines(path: str, n: int) -> List[dict]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        lines = [line for line in f if line.strip()]
    return [json.loads(line) for line in lines[-n:]]


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", ROOT, *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def host() -> Dict[str, object]:
    cpu = "unknown"
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {"cpu": cpu, "cores": os.cpu_count()}


def run_bench(bench: str, kvstashd: Optional[str], out: str) -> None:
    cmd = [bench, *BENCH_ARGS, "--json", out]
    if kvstashd:
        cmd += ["--kvstashd", kvstashd]
    print("$", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, stdout=sys.stderr)


def read_rows(path: str) -> List[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def record(args: argparse.Namespace) -> int:
    if args.from_json:
        rows = read_rows(args.from_json)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "cells.jsonl")
            run_bench(args.bench, args.kvstashd, out)
            rows = read_rows(out)
    cells = cells_of(rows)
    if not any(k.endswith("/ redis") for k in cells):
        print("landing_cells: no kvstash cell with a Redis peer in the run", file=sys.stderr)
        return 1
    commit = args.commit or git("rev-parse", "--short", "HEAD")
    dirty = not args.commit and bool(git("status", "--porcelain", "--untracked-files=no"))
    source = ("from " + os.path.relpath(args.from_json, ROOT) if args.from_json else
              os.path.relpath(args.bench, ROOT))
    line = {"date": datetime.date.today().isoformat(), "commit": commit, "dirty": dirty,
            "host": host(), "bench_args": " ".join(BENCH_ARGS), "bench": source,
            "cells": cells, "targets": verdicts(cells)}
    previous = last_lines(args.record, HISTORY)
    print(f"landing cells at {commit}{' (dirty)' if dirty else ''}; against: "
          f"{', '.join(p['commit'] for p in previous) or 'none'}")
    print("\n".join(drift_lines(previous, cells)))
    for name, verdict in line["targets"].items():
        print(f"  target {name}: {verdict}")
    with open(args.record, "a", encoding="utf-8") as f:
        f.write(json.dumps(line, sort_keys=True) + "\n")
    print(f"appended to {args.record}")
    return 0


def self_test() -> int:
    def row(system: str, op: str, size: int, clients: int, gbps: float, p50: float) -> dict:
        return {"system": system, "op": op, "chunk_bytes": size, "clients": clients,
                "gbps": gbps, "p50_us": p50}

    rows = [row("kvstash", "get", 4 << 20, 4, 3.0, 1), row("redis", "get", 4 << 20, 4, 2.5, 1),
            row("kvstash", "put", 256 << 10, 1, 0.5, 1), row("redis", "put", 256 << 10, 1, 2.0, 1),
            row("kvstash", "lookup", 16384, 1, 0, 300), row("redis", "lookup", 16384, 1, 0, 400),
            row("kvstash", "rss", 4 << 20, 4, 2.0, 0), row("memcached", "get", 4 << 20, 4, 9, 1)]
    cells = cells_of(rows)
    expected = {"get 4MiB x4 GB/s": 3.0, "get 4MiB x4 / redis": 1.2, "put 256KiB x1 GB/s": 0.5,
                "put 256KiB x1 / redis": 0.25, "lookup p50 us x1": 300.0,
                "lookup p50 x1 / redis": 0.75}
    failures = []
    if cells != expected:
        failures.append(f"cells_of: {cells} != {expected}")
    v = verdicts(cells)
    if not (v["get 4MiB x4 / redis"].startswith("MET") and v["lookup p50 us x1"].startswith(
            "MISSED") and v["put 4MiB x4 / redis"] == "NOT MEASURED"):
        failures.append(f"verdicts: {v}")
    history = [{"cells": {"get 4MiB x4 / redis": 0.9, "lookup p50 us x1": 250.0}},
               {"cells": {"get 4MiB x4 / redis": 1.05, "lookup p50 us x1": 310.0}}]
    lines = drift_lines(history, cells)
    marked = [line.split()[0:4] for line in lines if line.endswith("DRIFT")]
    if marked != [["get", "4MiB", "x4", "/"]]:
        failures.append(f"drift marks: {lines}")
    if size_name(256 << 10) != "256KiB" or size_name(32 << 20) != "32MiB":
        failures.append("size_name")
    print("\n".join(failures) or "self-test passed")
    return 1 if failures else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bench", default=os.path.join(ROOT, "build-bench/bench/kvstash_bench"))
    p.add_argument("--kvstashd", help="daemon binary (default: the bench's own)")
    p.add_argument("--commit", help="revision to record (default: HEAD of this checkout)")
    p.add_argument("--record", default=os.path.join(ROOT, "bench/results/landings.jsonl"))
    p.add_argument("--from-json", help="record an existing kvstash_bench --json file instead")
    p.add_argument("--self-test", action="store_true")
    args = p.parse_args()
    return self_test() if args.self_test else record(args)


if __name__ == "__main__":
    sys.exit(main())
