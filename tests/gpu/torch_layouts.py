"""Engine paged KV caches as torch tensors, in every layout of cuda/include/kvstash/paged/
layout.h, and the canonical chunk view of a request (docs/chunk-format.md) computed with
plain torch indexing, independently of kvstash's kernels."""

from __future__ import annotations

import copy

import torch

from kvstash_capi import Layout

DTYPES = {1: torch.uint8, 2: torch.bfloat16, 4: torch.float32}
# vLLM 0.32's KVCacheLayout stride orders over [layer, block, head, token, content].
ORDERS = {"LBHNC": (0, 1, 2, 3, 4), "LBNHC": (0, 1, 3, 2, 4), "LHBNC": (0, 2, 1, 3, 4),
          "BLHNC": (1, 0, 2, 3, 4), "BLNHC": (1, 0, 3, 2, 4), "BHLNC": (1, 2, 0, 3, 4)}
BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32}  # same-size integer views


class Cache:
    """One engine's paged cache: per-layer tensors (cross_layer: one; sglang_pool: K and V
    pools per layer)."""

    def __init__(self, layout: Layout, device: str):
        self.layout, l = layout, layout
        nb, bs, h, d, dt = l.num_blocks, l.block_size, l.kv_heads, l.head_dim, DTYPES[
            l.elem_bytes]
        if l.kind in ("vllm_view", "vllm_mla_view"):
            self._views(device)
            return
        shape = {
            "vllm_nhd": (2, nb, bs, h, d),
            "vllm_hnd": (2, nb, h, bs, d),
            "flashinfer_nhd": (nb, 2, bs, h, d),
            "flashinfer_hnd": (nb, 2, h, bs, d),
            "mla": (nb, bs, d),
            "cross_layer": (nb, l.num_layers, 2, bs, h, d),
            "sglang_pool": (nb * bs, h, d),
        }[l.kind]
        count = 1 if l.kind == "cross_layer" else l.num_layers
        self.k = [torch.empty(shape, dtype=dt, device=device) for _ in range(count)]
        self.v = ([torch.empty(shape, dtype=dt, device=device) for _ in range(count)]
                  if l.kind == "sglang_pool" else [])

    def _views(self, device: str) -> None:
        """vLLM 0.32's per-layer [blocks, heads, tokens, content] views of one buffer in the
        layout's memory order; records their byte strides in the layout."""
        l = self.layout
        content = (2 if l.kind == "vllm_view" else 1) * l.head_dim
        shape = (l.num_layers, l.num_blocks, l.kv_heads, l.block_size, content)
        order = ORDERS[l.order]
        raw = torch.empty([shape[i] for i in order], dtype=DTYPES[l.elem_bytes], device=device)
        five = raw.permute([order.index(i) for i in range(5)])  # logical [L, B, H, N, C]
        self.k, self.v = [five[layer] for layer in range(l.num_layers)], []
        e = l.elem_bytes
        l.view_strides = tuple(s * e for s in (five.stride(1), five.stride(2), five.stride(3)))

    def tensors(self) -> list[torch.Tensor]:
        return self.k + self.v

    def ptrs(self) -> tuple[list[int], list[int]]:
        return [t.data_ptr() for t in self.k], [t.data_ptr() for t in self.v]

    def fill_random(self, gen: torch.Generator) -> None:
        """Random bit patterns (not just valid numbers), so every byte is checked."""
        for t in self.tensors():
            bits = t.view(BITS[self.layout.elem_bytes])
            hi = 256 if self.layout.elem_bytes == 1 else 1 << 15
            lo = 0 if self.layout.elem_bytes == 1 else -hi
            bits.copy_(torch.randint(lo, hi, bits.shape, generator=gen, dtype=torch.int64,
                                     device=gen.device))

    def fill_byte(self, value: int) -> None:
        for t in self.tensors():
            t.view(torch.uint8).fill_(value)

    def nhd(self, layer: int) -> torch.Tensor:
        """Layer `layer` as a [kv, num_blocks, block_size, kv_heads, head_dim] view."""
        l = self.layout
        if l.kind == "cross_layer":
            return self.k[0][:, layer].permute(1, 0, 2, 3, 4)
        if l.kind == "sglang_pool":
            pools = (self.k[layer], self.v[layer])
            return torch.stack([p.view(l.num_blocks, l.block_size, l.kv_heads, l.head_dim)
                                for p in pools])  # a copy: read-only use
        t = self.k[layer]
        if l.kind in ("vllm_view", "vllm_mla_view"):  # K then V in the content axis
            kv = 2 if l.kind == "vllm_view" else 1
            return t.view(*t.shape[:3], kv, l.head_dim).permute(3, 0, 2, 1, 4)
        return {
            "vllm_nhd": lambda: t,
            "vllm_hnd": lambda: t.permute(0, 1, 3, 2, 4),
            "flashinfer_nhd": lambda: t.permute(1, 0, 2, 3, 4),
            "flashinfer_hnd": lambda: t.permute(1, 0, 3, 2, 4),
            "mla": lambda: t.unsqueeze(0).unsqueeze(3),
        }[l.kind]()

    def _positions(self, block_ids, num_tokens: int):
        """(block, offset in block) of each of the request's tokens, on the cache's device."""
        bs = self.layout.block_size
        tok = torch.arange(num_tokens)
        ids = torch.tensor(block_ids, dtype=torch.int64)
        dev = self.k[0].device
        return ids[tok // bs].to(dev), (tok % bs).to(dev)

    def canonical(self, block_ids, num_tokens: int, layers=None) -> torch.Tensor:
        """The request's tokens as [layers][kv][tokens][kv_heads * head_dim] integer bits, of
        every layer or of the given ones."""
        blk, off = self._positions(block_ids, num_tokens)
        out = []
        for layer in range(self.layout.num_layers) if layers is None else layers:
            v = self.nhd(layer)[:, blk, off]  # [kv, tokens, heads, dim]
            out.append(v.reshape(v.shape[0], num_tokens, -1))
        return torch.stack(out).view(BITS[self.layout.elem_bytes])

    def untouched(self, block_ids, num_tokens: int, value: int) -> bool:
        """Whether every byte outside the request's tokens still holds `value`."""
        blk, off = self._positions(block_ids, num_tokens)
        rest = copy.copy(self)
        rest.k = [t.clone() for t in self.k]
        rest.v = [t.clone() for t in self.v]
        if self.layout.kind == "sglang_pool":
            for pools in (rest.k, rest.v):
                for p in pools:
                    view = p.view(self.layout.num_blocks, self.layout.block_size, -1)
                    view.view(torch.uint8)[blk, off] = value
        else:
            for layer in range(self.layout.num_layers):
                rest.nhd(layer).view(torch.uint8)[:, blk, off] = value
        return all(bool((t.view(torch.uint8) == value).all()) for t in rest.tensors())
