"""PagedTransfer end to end with real torch paged KV caches and a real kvstashd.

  python3 tests/gpu/paged_e2e.py --kvstashd build/server/kvstashd \
      --capi build/tests/libkvstash_paged_capi.so [--device cuda|cpu] [--out DIR] [--bench]

Checks, over grpc:// and ucx:// (shared memory, direct access):
  - put from every engine layout, get into another layout and block size (GetPaged, an
    async get ordered on a torch stream by StreamWait, a layer-wise get), compared byte for
    byte through torch indexing, every byte outside the request left as it was;
  - a layer-wise get overlapping a stand-in compute stream that reads each layer right
    after StreamWaitLayer (its results prove the order);
  - a client killed (SIGKILL) in the middle of puts and of gets: the daemon serves on, and
    every chunk it serves is whole and right.
--bench also times the transfers against torch's own copies (JSON lines in --out).
Prints "N passed, M failed"; exit status 1 when a check failed.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kvstash_capi import (GET, GET_LAYERWISE, NOT_FOUND, OK, PUT, Client, Daemon, Layout,  # noqa
                          Transfer)
from torch_layouts import Cache  # noqa: E402

POISON = 0x5A
DTYPE_NAMES = {1: "fp8", 2: "bf16", 4: "fp32"}
results = {"passed": 0, "failed": 0}


def check(name: str, ok: bool, detail: str = "") -> bool:
    results["passed" if ok else "failed"] += 1
    print(f"{'PASS' if ok else 'FAIL'} {name}{'' if ok else ': ' + detail}", flush=True)
    return ok


def scheme(uri: str) -> str:
    return uri.split(":")[0]


def keys_for(*parts) -> list[bytes]:
    """Distinct 16-byte keys, deterministic in `parts` (the last part is the count)."""
    *tag, n = parts
    return [hashlib.blake2b(f"{tag}/{i}".encode(), digest_size=16).digest() for i in range(n)]


class Engine:
    """A cache, its transfer and a stream: one engine's side of the tests."""

    def __init__(self, client: Client, layout: Layout, device: str, chunk_tokens: int,
                 model: str = "e2e-model", depth: int = 2, max_ctas: int = 0):
        self.cache = Cache(layout, device)
        self.cuda = device == "cuda"
        self.stream = torch.cuda.Stream() if self.cuda else None
        k, v = self.cache.ptrs()
        self.xfer = Transfer(client, model, DTYPE_NAMES[layout.elem_bytes], layout, k, v,
                             on_device=self.cuda, chunk_tokens=chunk_tokens, depth=depth,
                             max_ctas=max_ctas)

    def stream_handle(self) -> int:
        return self.stream.cuda_stream if self.cuda else 0

    def stream_ctx(self):
        """Makes torch work run on the engine's stream (no-op on the CPU)."""
        return torch.cuda.stream(self.stream) if self.cuda else contextlib.nullcontext()

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def start(self, op, keys, ids, tokens):
        return self.xfer.start(op, keys, ids, tokens, stream=self.stream_handle())

    def close(self) -> None:
        self.xfer.close()


def layout_pairs(quick: bool):
    """(name, src layout, dst layout, chunk_tokens, tokens): every layout as a source."""
    L, H, D, nb = 4, 4, 64, 32
    kinds = ["vllm_nhd", "vllm_hnd", "flashinfer_nhd", "flashinfer_hnd", "cross_layer",
             "sglang_pool"]
    elem = [2, 2, 1, 4, 2, 2]
    for i, src in enumerate(kinds):
        dst = kinds[(i + 1) % len(kinds)]
        sb = 1 if src == "sglang_pool" else 16
        db = 1 if dst == "sglang_pool" else 32
        yield (f"{src}->{dst} e{elem[i]}", Layout(src, L, nb * 16 // sb, sb, H, D, elem[i]),
               Layout(dst, L, nb * 16 // db, db, H, D, elem[i]), 64, 170)
        if quick:
            return
    yield ("mla->mla", Layout("mla", L, nb, 16, 1, 576, 2), Layout("mla", L, nb // 2, 32, 1,
                                                                     576, 2), 64, 170)
    # vLLM 0.32's views, strided by their KVCacheLayout, to and from the classic layouts.
    for src, dst, order in (("vllm_nhd", "vllm_view", "LBNHC"), ("vllm_view", "flashinfer_hnd",
                                                                  "BLHNC"),
                            ("vllm_view", "vllm_view", "LHBNC")):
        yield (f"{src}->{dst} {order}", Layout(src, L, nb, 16, H, D, 2, order),
               Layout(dst, L, nb // 2, 32, H, D, 2, order), 64, 170)
    yield ("mla->vllm_mla_view BLNHC", Layout("mla", L, nb, 16, 1, 576, 2),
           Layout("vllm_mla_view", L, nb, 16, 1, 576, 2, "BLNHC"), 64, 170)


def blocks_needed(layout: Layout, tokens: int) -> int:
    return (tokens + layout.block_size - 1) // layout.block_size


def check_get(name, eng: Engine, mode: str, keys, ids, tokens, want) -> None:
    eng.cache.fill_byte(POISON)
    eng.sync()
    if mode == "get":
        lead, codes = eng.xfer.run(GET, keys, ids, tokens, stream=eng.stream_handle())
        got = eng.cache.canonical(ids, tokens)
    elif mode == "async":
        h = eng.start(GET, keys, ids, tokens)
        h.stream_wait(eng.stream_handle())
        with eng.stream_ctx():
            got = eng.cache.canonical(ids, tokens)  # ordered after the scatter by StreamWait
        lead, codes = h.wait()
    else:
        h = eng.start(GET_LAYERWISE, keys, ids, tokens)
        parts = []
        with eng.stream_ctx():
            for layer in range(eng.cache.layout.num_layers):
                h.stream_wait(eng.stream_handle(), layer)
                parts.append(eng.cache.canonical(ids, tokens, [layer]))
        lead, codes = h.wait()
        got = torch.cat(parts)
    eng.sync()
    if check(f"{name} {mode}: every chunk OK", lead == len(keys), f"leading {lead}, codes {codes}"):
        check(f"{name} {mode}: bytes equal", torch.equal(got.cpu(), want),
              f"{int((got.cpu() != want).sum())} elements differ")
        check(f"{name} {mode}: rest untouched", eng.cache.untouched(ids, tokens, POISON))


def test_layouts(uri: str, device: str, quick: bool, rng: random.Random) -> None:
    client = Client(uri)
    for name, src_l, dst_l, chunk, tokens in layout_pairs(quick):
        name = f"{scheme(uri)} {name}"
        src = Engine(client, src_l, device, chunk)
        dst = Engine(client, dst_l, device, chunk)
        gen = torch.Generator(device=device).manual_seed(rng.randrange(1 << 30))
        src.cache.fill_random(gen)
        src_ids = rng.sample(range(src_l.num_blocks), blocks_needed(src_l, tokens))
        dst_ids = rng.sample(range(dst_l.num_blocks), blocks_needed(dst_l, tokens))
        keys = keys_for(name, rng.random(), -(-tokens // chunk))
        src.sync()
        lead, codes = src.xfer.run(PUT, keys, src_ids, tokens, stream=src.stream_handle())
        if check(f"{name} put", lead == len(keys), f"codes {codes}"):
            want = src.cache.canonical(src_ids, tokens).cpu()
            for mode in ("get", "async", "layerwise"):
                check_get(name, dst, mode, keys, dst_ids, tokens, want)
        src.close()
        dst.close()
    client.close()


LLAMA3 = dict(num_layers=32, kv_heads=8, head_dim=128, elem_bytes=2)


def llama_engine(client, kind: str, device: str, blocks: int, **kw) -> Engine:
    return Engine(client, Layout(kind, num_blocks=blocks, block_size=16, **LLAMA3), device,
                  256, model="llama3-8b", **kw)


def test_layerwise_overlap(uri: str, rng: random.Random, out: list) -> None:
    """Layer l's stand-in forward pass reads layer l's KV right after StreamWaitLayer(l)."""
    client = Client(uri)
    src = llama_engine(client, "vllm_nhd", "cuda", 160)
    dst = llama_engine(client, "flashinfer_nhd", "cuda", 160)
    src.cache.fill_random(torch.Generator(device="cuda").manual_seed(7))
    tokens, keys = 2048, keys_for("overlap", rng.random(), 8)
    src_ids, dst_ids = rng.sample(range(160), 128), rng.sample(range(160), 128)
    src.sync()
    check(f"{scheme(uri)} overlap put", src.xfer.run(PUT, keys, src_ids, tokens)[0] == 8)
    want = src.cache.canonical(src_ids, tokens).to(torch.int64).sum(dim=(1, 2, 3)).cpu()
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)

    def layer_work(layer: int, sums) -> None:
        for _ in range(2):
            torch.mm(w, w)
        sums[layer] = dst.cache.canonical(dst_ids, tokens, [layer]).to(torch.int64).sum()

    times = {"sequential": [], "layerwise": []}
    for rep in range(5):
        for mode in ("sequential", "layerwise"):
            dst.cache.fill_byte(POISON)
            sums = torch.zeros(32, dtype=torch.int64, device="cuda")
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            with dst.stream_ctx():
                if mode == "sequential":
                    h = dst.start(GET, keys, dst_ids, tokens)
                    h.stream_wait(dst.stream_handle())
                    for layer in range(32):
                        layer_work(layer, sums)
                else:
                    h = dst.start(GET_LAYERWISE, keys, dst_ids, tokens)
                    for layer in range(32):
                        h.stream_wait(dst.stream_handle(), layer)
                        layer_work(layer, sums)
            lead, _ = h.wait()
            torch.cuda.synchronize()
            times[mode].append(time.perf_counter() - t0)
            if rep == 0:
                check(f"{scheme(uri)} overlap {mode}: every layer's compute saw its KV",
                      lead == 8 and torch.equal(sums.cpu(), want), f"leading {lead}")
    seq, lw = statistics.median(times["sequential"]), statistics.median(times["layerwise"])
    print(f"layer-wise get + compute {lw * 1e3:.1f} ms vs get then compute {seq * 1e3:.1f} ms",
          flush=True)
    out.append({"case": "layerwise_overlap", "uri": scheme(uri), "sequential_s": seq,
                "layerwise_s": lw, "ratio": lw / seq})
    src.close()
    dst.close()
    client.close()


def child(args) -> None:
    """A client killed by the parent: endless puts (or gets) of 4 Llama-3-8B chunks."""
    client = Client(args.uri)
    eng = llama_engine(client, "vllm_nhd", args.device, 80)
    eng.cache.fill_random(torch.Generator(device=args.device).manual_seed(args.seed))
    ids = list(range(64))
    eng.sync()
    for r in range(1000):
        print(f"round {r}", flush=True)
        if args.child == "put":
            eng.xfer.run(PUT, keys_for("kill", args.seed, r, 4), ids, 1024)
        else:
            eng.xfer.run(GET_LAYERWISE, keys_for("kill", args.seed, 0, 4), ids, 1024)


def run_child(args, mode: str, uri: str, seed: int, rng: random.Random) -> int:
    """Starts a child, lets it finish two rounds, kills it mid-transfer; its last round."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", mode, "--uri", uri, "--seed",
           str(seed), "--device", args.device, "--capi", args.capi]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    last = -1
    while last < 2:
        line = p.stdout.readline()
        if not line:
            break
        last = int(line.split()[1])
    time.sleep(rng.uniform(0.0, 0.05))
    p.send_signal(signal.SIGKILL)
    p.wait()
    return last


def test_killed_clients(args, daemon: Daemon, uri: str, rng: random.Random) -> None:
    seed = rng.randrange(1 << 30)
    last = run_child(args, "put", uri, seed, rng)
    check(f"{scheme(uri)} kill mid-put: child ran", last >= 2, f"last round {last}")
    check(f"{scheme(uri)} kill mid-put: daemon alive", daemon.alive())
    client = Client(uri)
    client.health()
    ref = llama_engine(client, "vllm_nhd", args.device, 80)
    ref.cache.fill_random(torch.Generator(device=args.device).manual_seed(seed))
    want = ref.cache.canonical(list(range(64)), 1024).cpu()
    dst = llama_engine(client, "flashinfer_hnd", args.device, 80)
    ids = rng.sample(range(80), 64)
    bad = []
    for r in range(last + 1):
        dst.cache.fill_byte(POISON)
        dst.sync()
        _, codes = dst.xfer.run(GET, keys_for("kill", seed, r, 4), ids, 1024)
        got = dst.cache.canonical(ids, 1024).cpu()
        for c, code in enumerate(codes):
            chunk = slice(c * 256, (c + 1) * 256)  # tokens
            whole = torch.equal(got[:, :, chunk], want[:, :, chunk])
            if (code == OK and not whole) or (code != OK and (r < last or code != NOT_FOUND)):
                bad.append((r, c, code, whole))
    check(f"{scheme(uri)} kill mid-put: finished rounds whole, the cut one whole or "
          f"absent", not bad, f"bad (round, chunk, code, bytes equal): {bad}")
    last = run_child(args, "get", uri, seed, rng)
    check(f"{scheme(uri)} kill mid-get: daemon alive", daemon.alive() and last >= 2,
          f"last round {last}")
    dst.cache.fill_byte(POISON)
    dst.sync()
    lead, _ = dst.xfer.run(GET, keys_for("kill", seed, 0, 4), ids, 1024)
    check(f"{scheme(uri)} kill mid-get: chunks still served whole",
          lead == 4 and torch.equal(dst.cache.canonical(ids, 1024).cpu(), want))
    ref.close()
    dst.close()
    client.close()


def median_gbps(fn, nbytes: int, reps: int = 5) -> float:
    fn()  # warm-up
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return nbytes / statistics.median(times) / 1e9


def bench(uri: str, rng: random.Random, out: list) -> None:
    """PagedTransfer of 8 Llama-3-8B chunks against torch copies of the same bytes."""
    client = Client(uri)
    tokens, keys = 2048, keys_for("bench", rng.random(), 8)
    nbytes = 32 * 2 * tokens * 8 * 128 * 2
    pinned = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    dev2 = torch.empty_like(dev)
    ref = {"h2d": median_gbps(lambda: dev.copy_(pinned, non_blocking=True), nbytes),
           "d2h": median_gbps(lambda: pinned.copy_(dev, non_blocking=True), nbytes),
           "d2d": median_gbps(lambda: dev2.copy_(dev), nbytes)}
    rows = {"put": (PUT, "d2h"), "get": (GET, "h2d"), "get_layerwise": (GET_LAYERWISE, "h2d")}
    for max_ctas in (0, 8):
        eng = llama_engine(client, "vllm_nhd", "cuda", 160, max_ctas=max_ctas)
        eng.cache.fill_random(torch.Generator(device="cuda").manual_seed(3))
        ids = rng.sample(range(160), 128)
        eng.xfer.run(PUT, keys, ids, tokens)  # what the gets read
        for name, (op, peer) in rows.items():
            def once():  # a put of stored keys moves no bytes: each put gets fresh keys
                k = keys_for("bench", rng.random(), 8) if op == PUT else keys
                lead, _ = eng.xfer.run(op, k, ids, tokens)
                assert lead == 8, f"{name}: {lead} of 8 chunks"

            gbps = median_gbps(once, nbytes)
            row = {"case": f"paged_{name}", "uri": scheme(uri), "max_ctas": max_ctas,
                   "bytes": nbytes, "gbps": round(gbps, 2), "peer": f"torch_{peer}_pinned",
                   "peer_gbps": round(ref[peer], 2), "ratio": round(gbps / ref[peer], 3)}
            out.append(row)
            print(json.dumps(row), flush=True)
        eng.close()
    out.append({"case": "torch_copies", **{k: round(v, 2) for k, v in ref.items()}})
    client.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvstashd")
    ap.add_argument("--capi", required=True)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--out", default=".")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--child")
    ap.add_argument("--uri")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.environ["KVSTASH_CAPI"] = args.capi
    if args.child:
        child(args)
        return 0
    seed = int(os.environ.get("KVSTASH_E2E_SEED", time.time_ns() % (1 << 30)))
    print(f"seed {seed} (KVSTASH_E2E_SEED repeats a run)", flush=True)
    rng = random.Random(seed)
    daemon = Daemon(args.kvstashd, capacity="8GiB" if args.device == "cuda" else "2GiB")
    rows: list = []
    try:
        for uri in (daemon.ucx, daemon.grpc):
            test_layouts(uri, args.device, args.quick, rng)
            test_killed_clients(args, daemon, uri, rng)
            if args.device == "cuda":
                test_layerwise_overlap(uri, rng, rows)
                if args.bench:
                    bench(uri, rng, rows)
    finally:
        rc = daemon.stop()
        check("daemon stopped cleanly", rc == 0, f"exit {rc}, log {daemon.log_path}")
    with open(os.path.join(args.out, "paged_e2e.jsonl"), "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
