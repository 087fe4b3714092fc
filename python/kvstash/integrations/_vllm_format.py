"""What KvstashConnector stores for one vLLM engine: read off its KV cache spec (vLLM 0.32,
``v1/kv_cache_interface.py``), with the engine-neutral format wherever the pages can be
decoded, and a clear refusal at start for what kvstash cannot represent.

- Full attention and MLA layers, in any ``KVCacheLayout`` and block size, on CUDA or CPU:
  objects in ``kvstash.layer_kv_token.v1`` (``_kv_codec``), in a namespace that names the
  model, the heads, the head sizes and the cache dtype but no backend or block size, so
  engines of the same model share chunks across backends, layouts and devices.
- vLLM's CPU backend packs each block's page its own way: decoded through an order learned
  from its own cache writer; a packing that cannot be learned (fp8 pages) is stored as
  opaque pages in a namespace naming the backend's ISA and block size.
- Refused: other platforms (ROCm, XPU, TPU: not tested), other KV cache specs (sliding
  window, Mamba, ...), padded or packed pages, and quantized pages that carry scales.

Thread-safety: EngineFormat is immutable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import kvstash
from kvstash.integrations._kv_codec import CANONICAL_FORMAT, KvSpec, PageCodec, \
    learn_page_order

# The format tag of opaque CPU-backend pages ("VLCP").
PAGE_FORMAT = 0x564C4350
# Default chunk: vLLM's CPU block, and a multiple of every smaller (GPU) block size, so
# engines share chunks by default; finer than 256 so more of each prompt is reused.
DEFAULT_CHUNK_TOKENS = 128

_FP8 = {"fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2"}


def _refuse(what: str) -> kvstash.Error:
    return kvstash.Error(kvstash.StatusCode.UNIMPLEMENTED, f"KvstashConnector: {what}")


@dataclass(frozen=True)
class EngineFormat:
    """How one engine's (chunk, layer) objects are laid out, and in which namespace."""

    spec: KvSpec
    block_size: int  # the KV cache manager's block, in tokens
    dtype: str  # the namespace's dtype: the cache's element type
    kv_layout: str  # the namespace's kv_layout
    object_format: int  # the tag every object is put with
    page_writer: Optional[Callable[[Any, Any, Any], None]] = None  # CPU backend: its writer
    page_order: Optional[Any] = None  # CPU backend: its packing of a block_size-token page

    @property
    def opaque(self) -> bool:
        return self.object_format == PAGE_FORMAT

    def codec(self, views: Sequence[Any]) -> PageCodec:
        """The one codec of every layer's cache view; raises ValueError for a view unlike
        the spec."""
        kernel = views[0].shape[2] if views[0].dim() == 4 else self.block_size
        order = self.page_order
        if self.page_writer is not None and kernel != self.block_size:
            order = learn_page_order(self.page_writer, self.spec, kernel, views[0].dtype)
            if order is None:
                raise ValueError(f"the backend's {kernel}-token pages could not be decoded")
        codec = (_OpaquePages if self.opaque else PageCodec)(
            self.spec, self.block_size, kernel, order)
        for view in views:
            codec.check_view(view)
        return codec


class _OpaquePages(PageCodec):
    """Whole pages as they are, for a packing no order describes: the object of a chunk is
    its blocks' pages one after the other (only whole blocks move)."""

    def gather(self, cache: Any, block_ids: Any, tokens: int, out: Any) -> None:
        ids = self._kernel_ids(cache, block_ids, tokens)
        pages = self._view(cache).index_select(0, ids)
        self._pages_of(out, pages.dtype, len(ids), cache).copy_(pages)

    def scatter(self, src: Any, cache: Any, block_ids: Any, tokens: int) -> None:
        ids = self._kernel_ids(cache, block_ids, tokens)
        view = self._view(cache)
        view.index_copy_(0, ids, self._pages_of(src, view.dtype, len(ids), cache))

    @staticmethod
    def _pages_of(buf: Any, dtype: Any, n: int, cache: Any) -> Any:
        return buf.view(-1).view(dtype).view(n, *cache.shape[1:])


def engine_format(vllm_config: Any, kv_cache_config: Any) -> EngineFormat:
    """The format of this engine's objects; raises UNIMPLEMENTED with the reason for an
    engine whose KV kvstash does not store."""
    from vllm.platforms import current_platform
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVQuantMode, MLAAttentionSpec
    if not (current_platform.is_cpu() or current_platform.is_cuda()):
        raise _refuse(f"vLLM on {current_platform.device_name or 'this platform'} is not "
                      "supported (CPU and CUDA are)")
    groups = getattr(kv_cache_config, "kv_cache_groups", None) or []
    if len(groups) != 1:
        raise _refuse(f"{len(groups)} KV cache groups: only models with one (every layer "
                      "full attention, or every layer MLA) are stored")
    spec = groups[0].kv_cache_spec
    if type(spec) not in (FullAttentionSpec, MLAAttentionSpec):
        raise _refuse(f"{type(spec).__name__} layers are not stored (only full attention "
                      "and MLA: other caches do not hold every token's KV)")
    packed = [f for f in ("page_size_padded", "num_head_slots", "state_content_bytes")
              if getattr(spec, f, None) is not None]
    if packed or spec.tokens_per_state != 1:
        raise _refuse(f"the KV pages are packed or padded ({', '.join(packed) or 'tokens_per_state'}"
                      "), which the engine-neutral chunk format cannot represent")
    if spec.kv_quant_mode not in (KVQuantMode.NONE, KVQuantMode.FP8_PER_TENSOR):
        raise _refuse(f"the KV cache dtype {vllm_config.cache_config.cache_dtype!r} is "
                      f"quantized with scales ({spec.kv_quant_mode.name}), which the chunk "
                      "format does not carry")
    import torch
    elem = torch.empty(0, dtype=spec.dtype).element_size()
    mla = isinstance(spec, MLAAttentionSpec)
    kv = KvSpec(1 if mla else spec.num_kv_heads, spec.head_size,
                0 if mla else spec.head_size_v, elem)
    cache_dtype = str(vllm_config.cache_config.cache_dtype)
    dtype = _FP8.get(cache_dtype) or str(spec.dtype).replace("torch.", "")
    fmt = EngineFormat(kv, spec.block_size, dtype, kv.layout_name(), CANONICAL_FORMAT)
    if current_platform.is_cpu():
        fmt = _cpu_format(fmt, vllm_config, spec.dtype, cache_dtype)
    return fmt


def _cpu_format(fmt: EngineFormat, vllm_config: Any, dtype: Any, cache_dtype: str
                ) -> EngineFormat:
    """vLLM's CPU backend: its writer's packing, learned; opaque pages where it cannot be."""
    from vllm.v1.attention.backends.cpu_attn import _get_attn_isa
    isa = _get_attn_isa(vllm_config.model_config.dtype, fmt.block_size, fmt.spec.head_size,
                        cache_dtype)
    write = cpu_page_writer(isa, cache_dtype)
    order = learn_page_order(write, fmt.spec, fmt.block_size, dtype)
    if order is not None:
        return EngineFormat(fmt.spec, fmt.block_size, fmt.dtype, fmt.kv_layout,
                            fmt.object_format, write, order)
    return EngineFormat(fmt.spec, fmt.block_size, fmt.dtype,
                        f"vllm.cpu_attn.{isa}.page.v1;block_size={fmt.block_size}", PAGE_FORMAT)


def cpu_page_writer(isa: str, cache_dtype: str = "auto") -> Callable[[Any, Any, Any], None]:
    """vLLM's CPU backend's cache writer for ``isa``, as :func:`learn_page_order` calls it:
    ``write(key, value, page)`` stores tokens 0.. of one block the way the backend does."""
    import torch
    from vllm import _custom_ops as ops

    def write(key: Any, value: Any, page: Any) -> None:
        # The backend's own view of a page (cpu_attn.py): a block's K slots, then its V.
        blocks, heads, block, _ = page.shape
        k_cache, v_cache = page.view(blocks, heads, block * 2, -1).chunk(2, dim=2)
        slots = torch.arange(key.shape[0], dtype=torch.long)
        ops.cpu_attn_reshape_and_cache(key, value, k_cache, v_cache, slots, isa,
                                       kv_cache_dtype=cache_dtype)
    return write
