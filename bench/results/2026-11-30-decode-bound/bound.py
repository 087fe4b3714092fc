"""How fast could KvstashConnector's load on vLLM's CPU backend be if its gets decoded
straight out of the daemon's arena into the pages (no staging pass)?

One invocation prints JSON lines: the connector's load as it is (``load_path``), then, on
the same 2,048 tokens, the cells that bound a fused get:

- ``page-cached files``: the reference, as in ``load_path``;
- ``one copy``: a 64 MiB copy of contiguous staging into the pages (page objects' floor);
- ``decode, 1 thread``: the codec's strided copies from an arena-like buffer (objects
  spread over 128 MiB, caches flushed first) into the pages: what a fused get does at best;
- ``decode, 2 threads``: the same objects split over two threads (copy_strided releases
  the GIL), as the client's two async threads would run them.

Run from bench/: ``PYTHONPATH=. VLLM_VENV/bin/python results/2026-11-30-decode-bound/bound.py
KVSTASHD``. Every cell's pages are checked against the source.
"""

import json
import os
import sys
import tempfile
import threading
import time

import torch

import vllm_ttft_bench as b

REPS = 7
CHUNK = 128


def cells(tokens: int = 2048):
    codec = b.cpu_page_codec(torch.float32)
    chunks = tokens // CHUNK
    pages = [torch.zeros(chunks, b.KV_HEADS, b.BLOCK, 2 * b.HEAD_DIM) for _ in range(b.LAYERS)]
    src = [torch.randn(p.shape) for p in pages]
    objs = [(c, layer) for c in range(chunks) for layer in range(b.LAYERS)]
    n = codec.spec.layer_bytes(CHUNK)
    arena = torch.empty(2 * n * len(objs), dtype=torch.uint8)
    held = [arena[2 * i * n:(2 * i + 1) * n] for i in range(len(objs))]
    for buf, (c, layer) in zip(held, objs):
        codec.gather(src[layer], [c], CHUNK, buf)
    flat = torch.cat([p.view(-1) for p in src]).view(torch.uint8)
    dst_flat = torch.empty_like(flat)
    d = tempfile.mkdtemp()
    paths = []
    for c, layer in objs:
        paths.append(os.path.join(d, f"{c}-{layer}"))
        src[layer][c].view(torch.uint8).numpy().tofile(paths[-1])

    def files():
        for path, (c, layer) in zip(paths, objs):
            with open(path, "rb", buffering=0) as f:
                f.readinto(pages[layer][c].view(torch.uint8).numpy())

    def decode(idx):
        for i in idx:
            c, layer = objs[i]
            codec.scatter(held[i], pages[layer], [c], CHUNK)

    def two():
        ts = [threading.Thread(target=decode, args=(range(k, len(objs), 2),)) for k in (0, 1)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    def one_copy():
        dst_flat.copy_(flat)

    flush = torch.empty(256 << 20, dtype=torch.uint8)
    todo = {"page-cached files": files, "one copy": one_copy,
            "decode, 1 thread": lambda: decode(range(len(objs))), "decode, 2 threads": two}
    for rep in range(REPS):
        for what, fn in todo.items():
            flush.fill_(rep)
            for p in pages:
                p.zero_()
            t0 = time.perf_counter()
            fn()
            ms = (time.perf_counter() - t0) * 1e3
            ok = torch.equal(dst_flat, flat) if what == "one copy" else all(
                torch.equal(p, s) for p, s in zip(pages, src))
            yield {"kind": "decode_bound", "what": what, "tokens": tokens,
                   "bytes": flat.numel(), "ms": ms, "ok": ok, "rep": rep}


if __name__ == "__main__":
    for r in b.load_path(sys.argv[1], REPS, 2048, "float32"):
        print(json.dumps(r), flush=True)
    for r in cells():
        print(json.dumps(r), flush=True)
