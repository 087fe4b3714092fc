"""KvstashConnector's device path on a GPU: the chunk codec and the CUDA copy engine
(python/kvstash/integrations/_kv_codec.py, _kv_mover.py) with CUDA tensors in vLLM 0.32's
shapes, no engine and no daemon needed.

  python3 tests/gpu/vllm_worker_gpu.py [--device cuda|cpu] [--out DIR]

Checks:
  - every KVCacheLayout x (bf16, fp16, fp32, fp8, V narrower than K, MLA) x kernel-block
    split: gather and scatter on the device, byte-exact against the same codec on CPU
    copies (and against vLLM's own views when vLLM imports);
  - ordering (CUDA only), under a compute stream kept busy on purpose: a store's copy reads
    what the compute wrote, not the stale bytes before it; a load's copy lands after the
    compute queued before it and before the compute that waits for it;
  - bandwidth (CUDA only): a 2048-token prompt of a Llama-3-8B-shaped model (32 layers, 8
    KV heads, head size 128, bf16) staged out and in, against torch's own copies of the same
    bytes between the device and pinned memory (JSON lines in --out).
Prints "N passed, M failed"; exit status 1 when a check failed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
import types

import torch

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_codec():
    """The codec and mover modules from the source tree, without the native client (its
    wheel is built for the build host's Python)."""
    pkg_dir = os.path.join(TOP, "python", "kvstash")
    for name, path in (("kvstash", pkg_dir),
                       ("kvstash.integrations", os.path.join(pkg_dir, "integrations"))):
        if name not in sys.modules:
            stub = types.ModuleType(name)
            stub.__path__ = [path]
            sys.modules[name] = stub
    return (importlib.import_module("kvstash.integrations._kv_codec"),
            importlib.import_module("kvstash.integrations._kv_mover"))


codec_mod, mover_mod = load_codec()
KvSpec, PageCodec = codec_mod.KvSpec, codec_mod.PageCodec

# vLLM 0.32's KVCacheLayout stride orders over [L, B, H, N, C] (v1/kv_cache_layout.py).
LAYOUTS = {"LBHNC": (0, 1, 2, 3, 4), "LBNHC": (0, 1, 3, 2, 4), "LHBNC": (0, 2, 1, 3, 4),
           "BLHNC": (1, 0, 2, 3, 4), "BLNHC": (1, 0, 3, 2, 4), "BHLNC": (1, 2, 0, 3, 4)}
SPECS = {  # name -> (kv_heads, head_size, head_size_v, dtype)
    "bf16": (2, 64, 64, torch.bfloat16), "fp16": (4, 32, 32, torch.float16),
    "fp32": (1, 64, 64, torch.float32), "fp8": (2, 128, 128, torch.float8_e4m3fn),
    "v_narrower": (2, 64, 32, torch.bfloat16), "mla": (1, 576, 0, torch.bfloat16),
}
LAYERS, BLOCKS, BLOCK = 3, 12, 16


class Results:
    def __init__(self) -> None:
        self.passed = self.failed = 0

    def check(self, ok: bool, what: str) -> None:
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {what}", flush=True)


def views(order, spec, kernel, device, seed):
    """Per-layer [B, H, N, C] views over one random buffer in a layout's memory order, the
    strides vLLM's compute_layout_strides gives an unpadded cache."""
    heads, hs, hsv, dtype = spec
    elem = torch.empty(0, dtype=dtype).element_size()
    blocks = BLOCKS * (BLOCK // kernel)
    shape = (LAYERS, blocks, heads, kernel, (hs + hsv) * elem)
    strides, run = [0] * 5, 1
    for dim in reversed(order):
        strides[dim], run = run, run * shape[dim]
    gen = torch.Generator().manual_seed(seed)
    raw = torch.randint(0, 256, (run,), dtype=torch.uint8, generator=gen).to(device)
    five = raw.as_strided(shape, strides)
    return raw, [five[layer].view(dtype) for layer in range(LAYERS)]


def check_views_match_vllm(res: Results) -> None:
    """The views above have the strides vLLM's own create_kv_cache_views gives (when vLLM
    imports here)."""
    try:
        from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheTensor,
                                                compute_layout_strides, create_kv_cache_views)
        from vllm.v1.kv_cache_layout import KVCacheLayout
    except ImportError:
        print("vLLM does not import: views not compared with vLLM's", flush=True)
        return
    heads, hs, _, dtype = SPECS["bf16"]
    spec = FullAttentionSpec(block_size=BLOCK, num_kv_heads=heads, head_size=hs, dtype=dtype)
    for lname, order in LAYOUTS.items():
        layout = KVCacheLayout[lname]
        ls, bs, *_ = compute_layout_strides(spec, BLOCKS, LAYERS, layout)
        size = LAYERS * BLOCKS * spec.page_size_bytes
        raw = torch.zeros(size, dtype=torch.int8)
        theirs = create_kv_cache_views(raw, spec, BLOCKS, layout,
                                       KVCacheTensor(size=size, layers=["a", "b", "c"],
                                                     layer_stride=ls, block_stride=bs))
        _, ours = views(order, SPECS["bf16"], BLOCK, "cpu", seed=0)
        res.check(all(t.shape == o.shape and t.stride() == o.stride()
                      for t, o in zip(theirs, ours)), f"views of {lname} are vLLM's")


def check_codec(res: Results, device: str) -> None:
    for lname, order in LAYOUTS.items():
        for sname, spec in SPECS.items():
            for kernel in (BLOCK, BLOCK // 2):
                if kernel != BLOCK and order[0] != 0:
                    continue  # vLLM splits kernel blocks in layer-outermost layouts only
                s = KvSpec(spec[0], spec[1], spec[2],
                           torch.empty(0, dtype=spec[3]).element_size())
                _, dev_views = views(order, spec, kernel, device, seed=1)
                _, dst_views = views(order, spec, kernel, device, seed=2)
                codec = PageCodec(s, BLOCK, kernel)
                what = f"codec {lname} {sname} kernel={kernel}"
                tokens, blocks, dst_blocks = 40, [7, 2, 9], [1, 11, 4]
                for layer in range(LAYERS):
                    v, d = dev_views[layer], dst_views[layer]
                    codec.check_view(v)
                    got = torch.empty(s.layer_bytes(tokens), dtype=torch.uint8, device=device)
                    codec.gather(v, blocks, tokens, got)
                    want = torch.empty(s.layer_bytes(tokens), dtype=torch.uint8)
                    codec.gather(v.cpu(), blocks, tokens, want)
                    res.check(torch.equal(got.cpu(), want), f"{what} gather layer {layer}")
                    before = d.cpu()
                    codec.scatter(got, d, dst_blocks, tokens)
                    expect = before.clone()
                    codec.scatter(want, expect, dst_blocks, tokens)
                    same = torch.equal(d.cpu().view(torch.uint8), expect.view(torch.uint8))
                    res.check(same, f"{what} scatter layer {layer}")


def check_ordering(res: Results) -> None:
    """A busy compute stream: copies must follow what was queued on it."""
    spec = KvSpec(8, 128, 128, 2)
    codec = PageCodec(spec, BLOCK)
    nbytes = spec.layer_bytes(BLOCK * 2)
    mover = mover_mod.make_mover(torch.device("cuda"), nbytes, 16 * nbytes)
    cache = torch.zeros(BLOCKS, 8, BLOCK, 256, dtype=torch.bfloat16, device="cuda")
    compute = torch.cuda.current_stream()
    # Store: the compute writes the blocks after a long sleep; the copy must see the write.
    torch.cuda._sleep(200_000_000)
    cache[[3, 4]] = 1.5
    staged = mover.stage_out(codec, cache, [3, 4], BLOCK * 2, nbytes)
    mover.wait(staged)
    got = staged.buffer.view(torch.bfloat16)
    res.check(bool((got == 1.5).all()), "a store's copy waits for the compute that wrote it")
    mover.release(staged)
    # Load: the compute (queued first) zeroes the blocks late; the load's data must win,
    # and a compute queued after before_compute must read the loaded bytes.
    slot = mover.slot_in(nbytes)
    slot.buffer.view(torch.bfloat16).fill_(2.5)
    torch.cuda._sleep(200_000_000)
    cache[[5, 6]] = 0
    mover.start_load()
    mover.stage_in(slot, codec, cache, [5, 6], BLOCK * 2)
    mover.before_compute(slot)
    seen = cache[[5, 6]].clone()  # on the compute stream, after the load
    torch.cuda.synchronize()
    res.check(bool((seen == 2.5).all()), "a load lands after the compute before it and "
                                         "before the compute that waits for it")
    res.check(mover.ready(slot), "the load's event completed")
    mover.release(slot)


def bench(out_dir: str) -> dict:
    """2048 tokens x 32 layers of Llama-3-8B KV (256-token chunks), staged out and in,
    against torch copies of the same bytes; medians of 5."""
    spec, chunk, layers, tokens = KvSpec(8, 128, 128, 2), 256, 32, 2048
    blocks = tokens // BLOCK
    caches = [torch.randn(blocks, 8, BLOCK, 256, device="cuda").to(torch.bfloat16)
              for _ in range(layers)]
    codec = PageCodec(spec, BLOCK)
    nbytes = spec.layer_bytes(chunk)
    objects = layers * tokens // chunk
    mover = mover_mod.make_mover(torch.device("cuda"), nbytes, objects * nbytes)
    per = chunk // BLOCK
    ids = [list(range(c * per, (c + 1) * per)) for c in range(tokens // chunk)]

    def stage_out():
        staged = [mover.stage_out(codec, caches[layer], b, chunk, nbytes)
                  for layer in range(layers) for b in ids]
        for s in staged:
            mover.wait(s)
        return staged

    def stage_in(staged):
        for layer in range(layers):
            for j, b in enumerate(ids):
                s = staged[layer * len(ids) + j]
                mover.stage_in(s, codec, caches[layer], b, chunk)
        for s in staged:
            mover.wait(s)

    pinned = torch.empty(objects * nbytes, dtype=torch.uint8, pin_memory=True)
    flat = torch.empty(objects * nbytes, dtype=torch.uint8, device="cuda")

    def timed(fn):
        torch.cuda.synchronize()
        start = time.perf_counter()
        result = fn()
        torch.cuda.synchronize()
        return time.perf_counter() - start, result

    rows = []
    for _ in range(5):
        t_out, staged = timed(stage_out)
        t_in, _ = timed(lambda: stage_in(staged))
        for s in staged:
            mover.release(s)
        t_d2h, _ = timed(lambda: pinned.copy_(flat, non_blocking=True))
        t_h2d, _ = timed(lambda: flat.copy_(pinned, non_blocking=True))
        rows.append((t_out, t_in, t_d2h, t_h2d))
    med = [sorted(col)[len(col) // 2] for col in zip(*rows)]
    gib = objects * nbytes / (1 << 30)
    result = {"bench": "vllm_worker_gpu", "bytes": objects * nbytes, "objects": objects,
              "store_gib_s": gib / med[0], "load_gib_s": gib / med[1],
              "torch_d2h_gib_s": gib / med[2], "torch_h2d_gib_s": gib / med[3],
              "store_vs_torch": med[2] / med[0], "load_vs_torch": med[3] / med[1]}
    with open(os.path.join(out_dir, "vllm_worker_gpu.jsonl"), "a") as f:
        f.write(json.dumps(result) + "\n")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    res = Results()
    check_views_match_vllm(res)
    check_codec(res, args.device)
    if args.device == "cuda":
        check_ordering(res)
        print(json.dumps(bench(args.out)), flush=True)
    print(f"{res.passed} passed, {res.failed} failed", flush=True)
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
