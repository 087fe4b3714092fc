#!/usr/bin/env python3
"""kvstash's SGLang HiCache backend loading pages into a real host pool (SGLang's
``MHATokenToKVPoolHost``) through ``batch_get_v1``, the zero-copy path SGLang's cache
controller calls, against a memcpy of the same bytes into the same page buffers.

Run with the Python that has SGLang and kvstash-client (scripts/engine_test.sh builds one):

    VENV/bin/python bench/sglang_hicache_bench.py --kvstashd build-bench/server/kvstashd \\
        [--layouts page_first,layer_first] [--pages 32] [--reps 7] [--out DIR]

One batch is --pages pages of 64 tokens of a Llama-3-8B-shaped KV cache (32 layers, 8 KV
heads, head dimension 128, bf16: 8 MiB a page). Per layout and transport (UCX, gRPC), the
batch is stored once from pages [0, N) and then, per repetition, loaded into pages
[N, 2N) by ``batch_get_v1`` and copied there from pages [0, N) by ``ctypes.memmove`` over
the same page buffers (one call per buffer, one thread), alternating; every load is
checked byte for byte once. Medians of the repetitions; target: load >= 0.8x memcpy.
Writes DIR/sglang_hicache.jsonl (one line per layout and transport) and prints a table.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import hashlib
import json
import os
import statistics
import sys
import time
from typing import Dict, List, Tuple

import torch
from sglang.srt.mem_cache.hicache_storage import HiCacheStorageConfig
from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool
from sglang.srt.mem_cache.pool_host.mha import MHATokenToKVPoolHost
from sglang.srt.mem_cache.storage import StorageBackendFactory

from kvstash.testing import Daemon

PAGE, LAYERS, HEADS, HEAD_DIM = 64, 32, 8, 128
TARGET = 0.8


def host_pool(layout: str, pages: int) -> MHATokenToKVPoolHost:
    """A host pool of 2 * pages pages, made as SGLang makes one from its device pool (of
    half that: SGLang wants the host pool the larger)."""
    tokens = 2 * pages * PAGE
    dev = MHATokenToKVPool(tokens // 2, PAGE, torch.bfloat16, HEADS, HEAD_DIM, LAYERS, "cpu", False,
                           start_layer=0, end_layer=LAYERS)
    return MHATokenToKVPoolHost(dev.get_device_pool_infos()[0].buffer_info, 2.0, 0, PAGE, layout,
                                device_capacity_tokens=dev.size, start_layer=0, end_layer=LAYERS,
                                pin_memory=False, device="cpu", host_token_capacity=tokens)


def backend(uri: str, pool: MHATokenToKVPoolHost, model: str):
    """The backend SGLang's factory makes from ``--hicache-storage-backend dynamic``."""
    extra = {"backend_name": "kvstash", "module_path": "kvstash.integrations.sglang",
             "class_name": "KvstashHiCacheStorage", "interface_v1": 1, "uri": uri}
    config = HiCacheStorageConfig(
        tp_rank=0, tp_size=1, pp_rank=0, pp_size=1, attn_cp_rank=0, attn_cp_size=1,
        is_mla_model=False, enable_storage_metrics=False,
        is_page_first_layout=pool.layout == "page_first", model_name=model, extra_config=extra)
    b = StorageBackendFactory.create_backend("dynamic", config, pool)
    b.register_mem_pool_host(pool)
    return b


def indices(first: int, count: int) -> torch.Tensor:
    return torch.arange(first * PAGE, (first + count) * PAGE, dtype=torch.int64)


def page_keys(n: int, salt: str) -> List[str]:
    out, prev = [], salt.encode()
    for i in range(n):
        prev = hashlib.sha256(prev + i.to_bytes(4, "little")).digest()
        out.append(prev.hex())
    return out


def page_bytes(pool: MHATokenToKVPoolHost, first: int, count: int) -> List[bytes]:
    ptrs, sizes = pool.get_page_buffer_meta(indices(first, count))
    return [ctypes.string_at(int(p), int(s)) for p, s in zip(ptrs, sizes)]


def measure(pool: MHATokenToKVPoolHost, uri: str, pages: int, reps: int, name: str) -> Dict:
    """Medians of batch_get_v1 and of the memcpy, alternating, in seconds."""
    b = backend(uri, pool, f"hicache-bench-{name}")
    keys = page_keys(pages, name)
    if b.batch_set_v1(keys, indices(0, pages)) != [True] * pages:
        raise RuntimeError(f"{name}: batch_set_v1 did not store every page")
    src_ptrs, sizes = pool.get_page_buffer_meta(indices(0, pages))
    dst_ptrs, _ = pool.get_page_buffer_meta(indices(pages, pages))
    copies: List[Tuple[int, int, int]] = [(int(d), int(s), int(n))
                                          for d, s, n in zip(dst_ptrs, src_ptrs, sizes)]
    want = page_bytes(pool, 0, pages)
    for d, _, n in copies:  # so that only a load can make the first check pass
        ctypes.memset(d, 0, n)
    loads, memcpys = [], []
    for rep in range(reps + 1):  # the first of each is a warm-up
        for kind in ("load", "memcpy"):
            start = time.perf_counter()
            if kind == "load":
                ok = b.batch_get_v1(keys, indices(pages, pages))
            else:
                for d, s, n in copies:
                    ctypes.memmove(d, s, n)
                ok = [True] * pages
            elapsed = time.perf_counter() - start
            if ok != [True] * pages:
                raise RuntimeError(f"{name}: {kind} missed pages")
            if kind == "load" and rep == 0 and page_bytes(pool, pages, pages) != want:
                raise RuntimeError(f"{name}: loaded pages differ from the stored ones")
            if rep > 0:
                (loads if kind == "load" else memcpys).append(elapsed)
    b.close()
    total = sum(int(n) for n in sizes)
    return {"bytes": total, "buffers": len(sizes), "load_s": loads, "memcpy_s": memcpys,
            "load_gbps": total / statistics.median(loads) / 1e9,
            "memcpy_gbps": total / statistics.median(memcpys) / 1e9}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kvstashd", required=True)
    ap.add_argument("--layouts", default="page_first,layer_first")
    ap.add_argument("--pages", type=int, default=32)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    out_dir = args.out or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "results",
        f"{datetime.date.today().isoformat()}-sglang-hicache")
    os.makedirs(out_dir, exist_ok=True)
    batch = args.pages * PAGE * LAYERS * HEADS * HEAD_DIM * 2 * 2  # K and V, bf16
    capacity = 4 * batch + (256 << 20)  # every batch of the run stays in DRAM
    rows = []
    with Daemon({"storage.dram.capacity_bytes": str(capacity)}, kvstashd=args.kvstashd,
                local_socket=True) as d:
        for layout in args.layouts.split(","):
            pool = host_pool(layout, args.pages)
            g = torch.Generator().manual_seed(1)
            raw = pool.kv_buffer.view(torch.uint8)
            raw.copy_(torch.randint(0, 256, raw.shape, dtype=torch.uint8, generator=g))
            # local: unix:// to the local socket, gets from the mapped arena.
            for transport, uri in (("ucx", d.ucx_uri), ("grpc", d.grpc_uri),
                                   ("local", d.local_uri)):
                r = measure(pool, uri, args.pages, args.reps, f"{layout}-{transport}")
                row = {"layout": layout, "transport": transport, "pages": args.pages,
                       "page_tokens": PAGE, "ratio": r["load_gbps"] / r["memcpy_gbps"], **r}
                rows.append(row)
                print(f"{layout:12} {transport:5} {r['buffers']:5} buffers "
                      f"{r['bytes'] / 2**20:6.0f} MiB  batch_get_v1 {r['load_gbps']:6.2f} GB/s  "
                      f"memcpy {r['memcpy_gbps']:6.2f} GB/s  {row['ratio']:5.2f}x "
                      f"({'MET' if row['ratio'] >= TARGET else 'MISSED'} >= {TARGET}x)",
                      flush=True)
            del pool
    with open(os.path.join(out_dir, "sglang_hicache.jsonl"), "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    print(f"wrote {out_dir}/sglang_hicache.jsonl")


if __name__ == "__main__":
    sys.exit(main())
