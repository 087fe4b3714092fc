"""Engine KV pages <-> kvstash's engine-neutral chunk format (docs/chunk-format.md).

One kvstash object holds one layer of one chunk as ``kvstash.layer_kv_token.v1``: every K
row of its tokens (``[tokens][kv_heads][head_size]``), then every V row
(``[tokens][kv_heads][head_size_v]``; none for MLA). An engine keeps a layer's cache as a
4D view ``[blocks, heads, block_tokens, content]`` (vLLM 0.32: any ``KVCacheLayout``, with
K then V side by side in ``content``) whose strides may be anything; :class:`PageCodec`
moves tokens between such a view and that slice with torch operations, so the same code
runs on CPU and CUDA tensors. A backend that packs a block's page its own way (vLLM's CPU
backend) is decoded by a permutation learned from the backend's own cache writer
(:func:`learn_page_order`); where that permutation is two strided slabs, CPU pages are
copied by :func:`kvstash.copy_strided` instead.

Thread-safety: a PageCodec is immutable; concurrent calls touching different blocks are
safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import kvstash

# The chunk format tag every canonical object is stored with (client/include/kvstash/paged.h).
CANONICAL_FORMAT = 0x4B564C31  # "KVL1"
CANONICAL_LAYOUT = "kvstash.layer_kv_token.v1"


@dataclass(frozen=True)
class KvSpec:
    """What one token of one layer holds: ``kv_heads`` heads of a K vector of ``head_size``
    elements and a V vector of ``head_size_v`` (0 for MLA's single latent vector), each
    element ``elem_bytes`` wide."""

    kv_heads: int
    head_size: int
    head_size_v: int
    elem_bytes: int

    @property
    def content(self) -> int:
        """Elements of one (token, head) cell of a page: K and V side by side."""
        return self.head_size + self.head_size_v

    def layer_bytes(self, tokens: int) -> int:
        """Bytes of one layer's canonical slice of ``tokens`` tokens."""
        return tokens * self.kv_heads * self.content * self.elem_bytes

    def layout_name(self) -> str:
        """The namespace's ``kv_layout``: the canonical format, plus what the namespace's own
        fields cannot say (a V width unlike K's, MLA's single vector)."""
        if self.head_size_v == 0:
            return f"{CANONICAL_LAYOUT};mla"
        if self.head_size_v != self.head_size:
            return f"{CANONICAL_LAYOUT};head_size_v={self.head_size_v}"
        return CANONICAL_LAYOUT


def _carrier(elem_bytes: int) -> Any:
    """An integer dtype as wide as one element: copies never interpret values (fp8 and bf16
    index operations are not implemented everywhere)."""
    import torch
    return {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[elem_bytes]


class PageCodec:
    """Gathers and scatters the tokens of consecutive engine blocks of one layer.

    ``block_tokens`` is the engine manager's block size; the view's dimension 2 may be a
    smaller kernel block (vLLM splits a manager block into ``ratio`` kernel blocks, which
    are ``block * ratio + i`` of dimension 0). ``page_order``, when given, is a long tensor
    naming for each canonical element ``(kv, token, head, dim)`` of one kernel block the
    element of that block's page that holds it (a backend-packed page, see
    :func:`learn_page_order`); the view must then keep each page contiguous.
    """

    def __init__(self, spec: KvSpec, block_tokens: int, kernel_block_tokens: int = 0,
                 page_order: Optional[Any] = None) -> None:
        kernel = kernel_block_tokens or block_tokens
        if kernel <= 0 or block_tokens % kernel:
            raise ValueError(f"kernel block of {kernel} tokens does not divide a block of "
                             f"{block_tokens}")
        self.spec = spec
        self.block_tokens = block_tokens
        self.kernel = kernel
        self.ratio = block_tokens // kernel
        self._order = page_order
        self._orders: dict = {}  # page_order per device
        # K's and V's place in a page as (first element, (token, head, dim) strides) when
        # the order is that regular: then pages are read and written through strided views.
        self._slabs = None if page_order is None else _affine_parts(page_order, spec, kernel)

    def check_view(self, cache: Any) -> None:
        """Raises ValueError when ``cache`` is not a page view this codec reads."""
        s = self.spec
        want = (s.kv_heads, self.kernel, s.content)
        if cache.dim() != 4 or tuple(cache.shape[1:]) != want:
            raise ValueError(f"KV cache view {tuple(cache.shape)} is not [blocks, {want[0]}, "
                             f"{want[1]}, {want[2]}]")
        if cache.element_size() != s.elem_bytes or cache.stride(3) != 1:
            raise ValueError(f"KV cache view of {cache.dtype} with strides {cache.stride()} "
                             f"does not hold {s.elem_bytes}-byte elements contiguously")
        if cache.shape[0] % self.ratio:
            raise ValueError(f"{cache.shape[0]} kernel blocks are not whole blocks of "
                             f"{self.ratio}")
        if self._order is not None and not _pages_contiguous(cache):
            raise ValueError("a packed page view must keep each block's page contiguous")

    def gather(self, cache: Any, block_ids: Sequence[int], tokens: int, out: Any) -> None:
        """Copies tokens ``[0, tokens)`` of blocks ``block_ids`` (in order) into ``out``, a
        contiguous tensor of ``spec.layer_bytes(tokens)`` bytes on the cache's device."""
        if self._slabs is not None:
            self._copy_slabs(cache, block_ids, tokens, out, gather=True)
            return
        x = self._decode(cache, self._kernel_ids(cache, block_ids, tokens), tokens)
        k, v = self._split(out, tokens)
        k.copy_(x[..., :self.spec.head_size])
        if v is not None:
            v.copy_(x[..., self.spec.head_size:])

    def scatter(self, src: Any, cache: Any, block_ids: Sequence[int], tokens: int) -> None:
        """Writes the canonical slice ``src`` into tokens ``[0, tokens)`` of blocks
        ``block_ids``; every other token slot of the cache keeps its bytes."""
        import torch
        if self._slabs is not None:
            self._copy_slabs(cache, block_ids, tokens, src, gather=False)
            return
        ids = self._kernel_ids(cache, block_ids, tokens)
        k, v = self._split(src, tokens)
        x = k if v is None else torch.cat((k, v), dim=-1)  # [tokens, heads, content]
        full, rest = divmod(tokens, self.kernel)
        if self._order is not None:
            if rest:  # the packed page is written whole: the slots after ``tokens`` are kept
                kept = self._decode(cache, ids, len(ids) * self.kernel)
                kept[:tokens] = x
                x, full, rest = kept, len(ids), 0
            self._encode_pages(cache, ids[:full], x)
            return
        c = self._view(cache)
        if full:
            pages = x[:full * self.kernel].view(full, self.kernel, *x.shape[1:])
            c.index_copy_(0, ids[:full], pages.transpose(1, 2))
        if rest:
            c[int(ids[full])][:, :rest] = x[full * self.kernel:].transpose(0, 1)

    # -- helpers -------------------------------------------------------------------------

    def _copy_slabs(self, cache: Any, block_ids: Sequence[int], tokens: int, buf: Any,
                    gather: bool) -> None:
        """Packed pages of a regular order: one strided copy per (block, K|V), straight
        between the page and the canonical slice (the slots after ``tokens`` untouched).
        On CPU the views are numpy's, built without torch's per-op cost, and copied by
        :func:`kvstash.copy_strided`, tiled, on this thread (a small strided copy run by
        torch's thread pool stalls for milliseconds when the cores are busy elsewhere)."""
        s = self.spec
        view = self._view(cache)
        parts = self._split(buf, tokens)
        cpu = view.device.type == "cpu"
        if cpu:
            import numpy
            view = view.numpy()
            parts = [p.numpy() for p in parts if p is not None]
        for j, b in enumerate(self._kernel_list(block_ids, tokens)):
            first = j * self.kernel
            n = min(self.kernel, tokens - first)
            page = view[b].reshape(-1)
            for part, (base, strides), width in zip(parts, self._slabs,
                                                     (s.head_size, s.head_size_v)):
                shape = (n, s.kv_heads, width)
                rows = part[first:first + n]
                if cpu:
                    slab = numpy.ndarray(shape, page.dtype, page, base * page.itemsize,
                                         tuple(x * page.itemsize for x in strides))
                    kvstash.copy_strided(rows, slab) if gather else kvstash.copy_strided(
                        slab, rows)
                else:
                    slab = page.as_strided(shape, strides, page.storage_offset() + base)
                    rows.copy_(slab) if gather else slab.copy_(rows)

    def _view(self, cache: Any) -> Any:
        return cache.view(_carrier(self.spec.elem_bytes))

    def _kernel_list(self, block_ids: Sequence[int], tokens: int) -> list:
        """The kernel blocks holding tokens ``[0, tokens)`` of ``block_ids``."""
        n = -(-tokens // self.kernel)
        if n > len(block_ids) * self.ratio:
            raise ValueError(f"{tokens} tokens need more than {len(block_ids)} blocks")
        return [b * self.ratio + i for b in block_ids for i in range(self.ratio)][:n]

    def _kernel_ids(self, cache: Any, block_ids: Sequence[int], tokens: int) -> Any:
        import torch
        ids = torch.tensor(self._kernel_list(block_ids, tokens), dtype=torch.long)
        return ids.to(cache.device)

    def _split(self, buf: Any, tokens: int) -> Any:
        """K and V of a canonical slice (V None for MLA), as [tokens, heads, width] views."""
        s = self.spec
        flat = buf.view(-1).view(_carrier(1)).view(_carrier(s.elem_bytes))
        k_n = tokens * s.kv_heads * s.head_size
        v_n = tokens * s.kv_heads * s.head_size_v
        if flat.numel() != k_n + v_n:
            raise ValueError(f"canonical slice of {flat.numel() * s.elem_bytes} bytes for "
                             f"{tokens} tokens (want {s.layer_bytes(tokens)})")
        k = flat[:k_n].view(tokens, s.kv_heads, s.head_size)
        v = flat[k_n:].view(tokens, s.kv_heads, s.head_size_v) if v_n else None
        return k, v

    def _decode(self, cache: Any, ids: Any, tokens: int) -> Any:
        """The first ``tokens`` tokens of kernel blocks ``ids``: [tokens, heads, content]."""
        pages = self._view(cache).index_select(0, ids)  # [n, heads, kernel, content]
        if self._order is not None:
            s = self.spec
            order = self._order_on(pages.device)
            pages = pages.reshape(len(ids), -1).index_select(1, order)
            pages = pages.view(len(ids), 2 if s.head_size_v else 1, self.kernel, s.kv_heads,
                               -1)
            return _join_kv(pages, s)[:tokens]
        return pages.transpose(1, 2).reshape(-1, pages.shape[1], pages.shape[3])[:tokens]

    def _encode_pages(self, cache: Any, ids: Any, x: Any) -> None:
        import torch
        s, n = self.spec, len(ids)
        if n == 0:
            return
        # learn_page_order only finds orders for K and V of one width.
        x = x[:n * self.kernel].view(n, self.kernel, s.kv_heads, s.content)
        canon = torch.stack((x[..., :s.head_size], x[..., s.head_size:]), dim=1)
        order = self._order_on(x.device)
        packed = torch.empty((n, order.numel()), dtype=x.dtype, device=x.device)
        packed.index_copy_(1, order, canon.reshape(n, -1))
        self._view(cache).index_copy_(0, ids, packed.view(n, *cache.shape[1:]))

    def _order_on(self, device: Any) -> Any:
        order = self._orders.get(device)
        if order is None:
            order = self._orders[device] = self._order.to(device)
        return order


def _join_kv(pages: Any, s: KvSpec) -> Any:
    """[n, kv, kernel, heads, width] -> [n * kernel, heads, content]."""
    import torch
    n, kv, kernel = pages.shape[:3]
    parts = [pages[:, i].reshape(n * kernel, s.kv_heads, -1) for i in range(kv)]
    return parts[0] if kv == 1 else torch.cat(parts, dim=-1)


def _affine_parts(order: Any, s: KvSpec, kernel: int) -> Optional[list]:
    """(first element, (token, head, dim) strides) of K and of V in a page, when ``order``
    places each as one strided block; None otherwise."""
    import torch
    o = order.view(2, kernel, s.kv_heads, s.head_size)
    idx = [torch.arange(n).view(*[-1 if i == a else 1 for i in range(3)])
           for a, n in enumerate(o.shape[1:])]
    parts = []
    for kv in range(2):
        base = int(o[kv, 0, 0, 0])
        strides = tuple(int(o[kv][tuple(1 if i == a else 0 for i in range(3))]) - base
                        if o.shape[1 + a] > 1 else 0 for a in range(3))
        if min(strides) < 0:
            return None
        want = base + sum(i * st for i, st in zip(idx, strides))
        if not torch.equal(o[kv], want):
            return None
        parts.append((base, strides))
    return parts


def _pages_contiguous(cache: Any) -> bool:
    """Whether every block's [heads, tokens, content] page is one contiguous run."""
    _, h, n, c = cache.shape
    return cache.stride(3) == 1 and cache.stride(2) == c and cache.stride(1) == n * c


def learn_page_order(write: Callable[[Any, Any, Any], None], spec: KvSpec, block_tokens: int,
                     dtype: Any) -> Optional[Any]:
    """Where a backend's own cache writer puts each element of one block.

    ``write(key, value, page)`` must store ``key`` and ``value`` (``[block_tokens, heads,
    width]`` of ``dtype``) as tokens ``0..block_tokens-1`` of ``page`` (a zeroed
    ``[1, heads, block_tokens, content]`` tensor of ``dtype``) exactly as the engine does.
    Each element is tagged with its canonical index written in base 256, one digit per
    pass (every integer below 256 is exact in fp16, bf16 and fp32). Returns the order for
    :class:`PageCodec`, or None when the writer is not a permutation of the elements (it
    converts or scales them: such pages cannot be decoded).
    """
    import torch
    s = spec
    if not s.head_size_v or s.head_size_v != s.head_size or dtype not in (
            torch.float16, torch.bfloat16, torch.float32):
        return None
    n = 2 * block_tokens * s.kv_heads * s.head_size
    codes = torch.arange(n, dtype=torch.long)
    found = torch.zeros(n, dtype=torch.long)
    passes, scale = 1, 256
    while scale < n:
        passes, scale = passes + 1, scale * 256
    for p in range(passes):
        digit = (codes // (256 ** p)) % 256
        kv = digit.view(2, block_tokens, s.kv_heads, s.head_size).to(dtype)
        page = torch.zeros((1, s.kv_heads, block_tokens, s.content), dtype=dtype)
        write(kv[0].contiguous(), kv[1].contiguous(), page)
        got = page.reshape(-1).to(torch.float32)
        if not torch.equal(got, got.round()) or got.min() < 0 or got.max() > 255:
            return None
        found += got.to(torch.long) * (256 ** p)
    # found[j] = canonical index held by page element j; invert it.
    if not torch.equal(torch.sort(found).values, codes):
        return None
    order = torch.empty(n, dtype=torch.long)
    order[found] = torch.arange(n)
    return order
