"""vLLM 0.32's own KV cache views over random bytes, and an indexing reference to read
them by: what the codec and worker tests compare against."""

import pytest
import torch
from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheTensor, MLAAttentionSpec,
                                        compute_layout_strides, create_kv_cache_views)

from kvstash.integrations._kv_codec import KvSpec

LAYERS, BLOCKS = 3, 10
CARRIER = {1: torch.uint8, 2: torch.int16, 4: torch.int32}
SPECS = {
    "bf16": lambda bs: FullAttentionSpec(block_size=bs, num_kv_heads=2, head_size=8,
                                         dtype=torch.bfloat16),
    "fp16": lambda bs: FullAttentionSpec(block_size=bs, num_kv_heads=3, head_size=4,
                                         dtype=torch.float16),
    "fp32": lambda bs: FullAttentionSpec(block_size=bs, num_kv_heads=1, head_size=8,
                                         dtype=torch.float32),
    "fp8": lambda bs: FullAttentionSpec(block_size=bs, num_kv_heads=2, head_size=16,
                                        dtype=torch.float8_e4m3fn),
    "v_narrower": lambda bs: FullAttentionSpec(block_size=bs, num_kv_heads=2, head_size=8,
                                               head_size_v=4, dtype=torch.bfloat16),
    "mla": lambda bs: MLAAttentionSpec(block_size=bs, num_kv_heads=1, head_size=24,
                                       dtype=torch.bfloat16),
}


def engine_views(spec, layout, kernel_block=None, seed=0, raw=None, blocks=BLOCKS,
                 layers=LAYERS):
    """The per-layer views vLLM gives attention (and a connector), over random bytes."""
    layer_stride, block_stride, *_ = compute_layout_strides(spec, blocks, layers, layout)
    size = layers * blocks * spec.page_size_bytes
    if raw is None:
        gen = torch.Generator().manual_seed(seed)
        raw = torch.randint(-128, 128, (size,), dtype=torch.int8, generator=gen)
    tensor = KVCacheTensor(size=size, layers=[f"layer.{i}" for i in range(layers)],
                           layer_stride=layer_stride, block_stride=block_stride)
    try:
        views = create_kv_cache_views(raw, spec, blocks, layout, tensor, kernel_block)
    except ValueError as e:  # vLLM refuses kernel blocks in this layout
        pytest.skip(str(e))
    return raw, views


def kv_spec(spec) -> KvSpec:
    return KvSpec(spec.num_kv_heads, spec.head_size, spec.head_size_v,
                  torch.empty(0, dtype=spec.dtype).element_size())


def token_cells(view, spec, block_ids, tokens):
    """Each token's [heads, content] cell of the view, by the view's own indexing: manager
    block ``b`` is kernel blocks ``b * ratio + i``."""
    kernel = view.shape[2]
    ratio = spec.block_size // kernel
    carrier = view.view(CARRIER[view.element_size()])
    for t in range(tokens):
        b, o = block_ids[t // spec.block_size], t % spec.block_size
        yield carrier[b * ratio + o // kernel, :, o % kernel, :]


def reference_tokens(view, spec, block_ids, tokens):
    """[tokens, heads, content] elements read one token at a time."""
    return torch.stack(list(token_cells(view, spec, block_ids, tokens)))


def canonical(ref, s: KvSpec):
    """The canonical slice from [tokens, heads, content]: every K row, then every V row."""
    parts = [ref[..., :s.head_size].reshape(-1), ref[..., s.head_size:].reshape(-1)]
    return torch.cat(parts).view(torch.uint8)


