"""The engine-neutral chunk codec against vLLM 0.32's own KV cache views: every
KVCacheLayout, full attention (K and V of one width or not) and MLA, kernel blocks smaller
than the manager's, each cache dtype; byte-exact against an indexing reference, round trips
across layouts and block sizes, bytes outside the request untouched; the CPU backend's
packed pages decoded through its own cache writer."""

import pytest

pytestmark = pytest.mark.engine
torch = pytest.importorskip("torch")
pytest.importorskip("vllm")

from vllm.v1.kv_cache_layout import KVCacheLayout  # noqa: E402

from kv_views import (LAYERS, SPECS, canonical, engine_views, kv_spec,  # noqa: E402
                      reference_tokens, token_cells)
from kvstash.integrations._kv_codec import KvSpec, PageCodec, learn_page_order  # noqa: E402

def codec_for(spec, view) -> PageCodec:
    codec = PageCodec(kv_spec(spec), spec.block_size, view.shape[2])
    codec.check_view(view)
    return codec


@pytest.mark.parametrize("kernel_split", [False, True])
@pytest.mark.parametrize("name", list(SPECS))
@pytest.mark.parametrize("layout", list(KVCacheLayout), ids=lambda x: x.name)
def test_gather_is_the_canonical_slice_of_the_view(layout, name, kernel_split):
    spec = SPECS[name](16)
    _, views = engine_views(spec, layout, 8 if kernel_split else None)
    s = kv_spec(spec)
    blocks, tokens = [7, 2, 9], 40  # the last block partial
    for view in views:
        codec = codec_for(spec, view)
        out = torch.empty(s.layer_bytes(tokens), dtype=torch.uint8)
        codec.gather(view, blocks, tokens, out)
        assert torch.equal(out, canonical(reference_tokens(view, spec, blocks, tokens), s))


def test_gather_matches_flash_attention_k_and_v():
    spec = SPECS["bf16"](16)
    _, views = engine_views(spec, KVCacheLayout.LBNHC)
    view = views[0]
    s = kv_spec(spec)
    out = torch.empty(s.layer_bytes(32), dtype=torch.uint8)
    codec_for(spec, view).gather(view, [3, 5], 32, out)
    # FlashAttention's own split of the same view.
    key, value = view.transpose(1, 2).split(spec.head_size, -1)  # [blocks, tokens, heads, D]
    # Bits compared: random bytes hold NaNs.
    want_k = torch.cat([key[3], key[5]]).reshape(-1).view(torch.int16)
    want_v = torch.cat([value[3], value[5]]).reshape(-1).view(torch.int16)
    got = out.view(torch.int16)
    assert torch.equal(got[:want_k.numel()], want_k)
    assert torch.equal(got[want_k.numel():], want_v)


ROUND_TRIPS = [
    # (source layout, block size, kernel block), (destination ...)
    ((KVCacheLayout.LBNHC, 16, None), (KVCacheLayout.LBHNC, 16, None)),
    ((KVCacheLayout.LBHNC, 16, 8), (KVCacheLayout.BLNHC, 32, None)),
    ((KVCacheLayout.BHLNC, 32, None), (KVCacheLayout.LBNHC, 16, 8)),
    ((KVCacheLayout.LHBNC, 16, None), (KVCacheLayout.BLHNC, 8, None)),
]


@pytest.mark.parametrize("name", ["bf16", "fp8", "mla", "v_narrower"])
@pytest.mark.parametrize("src,dst", ROUND_TRIPS, ids=lambda x: f"{x[0].name}-{x[1]}-{x[2]}")
def test_round_trip_across_layouts_and_block_sizes_touches_only_the_request(src, dst, name):
    src_spec, dst_spec = SPECS[name](src[1]), SPECS[name](dst[1])
    _, src_views = engine_views(src_spec, src[0], src[2], seed=1)
    dst_raw, dst_views = engine_views(dst_spec, dst[0], dst[2], seed=2)
    s, tokens = kv_spec(src_spec), 44
    src_blocks = [4, 0, 8, 6, 1, 5][:-(-tokens // src[1])]
    dst_blocks = [9, 3, 2, 7, 0, 5][:-(-tokens // dst[1])]
    before = dst_raw.clone()
    for layer in range(LAYERS):
        out = torch.empty(s.layer_bytes(tokens), dtype=torch.uint8)
        codec_for(src_spec, src_views[layer]).gather(src_views[layer], src_blocks, tokens, out)
        codec_for(dst_spec, dst_views[layer]).scatter(out, dst_views[layer], dst_blocks, tokens)
        assert torch.equal(reference_tokens(dst_views[layer], dst_spec, dst_blocks, tokens),
                           reference_tokens(src_views[layer], src_spec, src_blocks, tokens))
    # Every byte outside the request's token cells is as it was.
    mask = torch.zeros_like(dst_raw)
    _, mask_views = engine_views(dst_spec, dst[0], dst[2], raw=mask)
    for view in mask_views:
        for cell in token_cells(view, dst_spec, dst_blocks, tokens):
            cell.fill_(-1)
    outside = mask == 0
    assert outside.any()
    assert torch.equal(dst_raw[outside], before[outside])


def test_a_slice_of_the_wrong_size_or_a_foreign_view_is_refused():
    spec = SPECS["bf16"](16)
    _, views = engine_views(spec, KVCacheLayout.LBNHC)
    codec = codec_for(spec, views[0])
    with pytest.raises(ValueError, match="canonical slice"):
        codec.gather(views[0], [1], 16, torch.empty(100, dtype=torch.uint8))
    with pytest.raises(ValueError, match="need more than"):
        codec.gather(views[0], [1], 17, torch.empty(kv_spec(spec).layer_bytes(17),
                                                      dtype=torch.uint8))
    _, mla_views = engine_views(SPECS["mla"](16), KVCacheLayout.LBNHC)
    with pytest.raises(ValueError, match="is not"):
        codec.check_view(mla_views[0])


# -- vLLM's CPU backend: pages packed by its own writer --------------------------------


@pytest.mark.parametrize("block,head_size", [(32, 64), (16, 32)])
def test_cpu_backend_pages_decode_through_the_learned_order(block, head_size):
    from vllm.v1.attention.backends.cpu_attn import _get_attn_isa
    dtype, heads = torch.bfloat16, 2
    isa = _get_attn_isa(dtype, block, head_size)
    s = KvSpec(heads, head_size, head_size, 2)
    from kvstash.integrations._vllm_format import cpu_page_writer
    order = learn_page_order(cpu_page_writer(isa), s, block, dtype)
    assert order is not None, isa
    codec = PageCodec(s, block, page_order=order)
    assert codec._slabs is not None, "the backend's packing is regular: strided copies"
    # The engine writes 2.5 blocks of a prompt into blocks 3, 0, 5 of its cache.
    tokens, blocks = block * 2 + block // 2, [3, 0, 5]
    gen = torch.Generator().manual_seed(3)
    cache = torch.randn(6, heads, block, 2 * head_size, generator=gen).to(dtype)
    key = torch.randn(tokens, heads, head_size, generator=gen).to(dtype)
    value = torch.randn(tokens, heads, head_size, generator=gen).to(dtype)
    key_cache, value_cache = cache.view(6, heads, block * 2, -1).chunk(2, dim=2)
    slots = torch.tensor([blocks[t // block] * block + t % block for t in range(tokens)])
    from vllm import _custom_ops as ops
    ops.cpu_attn_reshape_and_cache(key, value, key_cache, value_cache, slots, isa)
    codec.check_view(cache)
    out = torch.empty(s.layer_bytes(tokens), dtype=torch.uint8)
    codec.gather(cache, blocks, tokens, out)
    assert torch.equal(out, torch.cat([key.reshape(-1), value.reshape(-1)]).view(torch.uint8))
    # Scattered into another cache, the pages are the bytes the writer itself produced, and
    # the slots after the request keep theirs.
    other = torch.randn(6, heads, block, 2 * head_size, generator=gen).to(dtype)
    before = other.clone()
    codec.scatter(out, other, blocks, tokens)
    assert torch.equal(other[[3, 0]], cache[[3, 0]])
    again = torch.empty_like(out)
    codec.gather(other, blocks, tokens, again)
    assert torch.equal(again, out)
    # Block 5 held the last half block: its other slots are as they were.
    tail, kept = (torch.empty(s.layer_bytes(block), dtype=torch.uint8) for _ in range(2))
    codec.gather(before, [5], block, kept)
    codec.gather(other, [5], block, tail)
    row, half = s.layer_bytes(1) // 2, s.layer_bytes(block) // 2  # K rows, then V rows
    for part in (0, half):
        rest = slice(part + block // 2 * row, part + half)
        assert torch.equal(tail[rest], kept[rest])
    for b in (1, 2, 4):
        assert torch.equal(other[b], before[b])


def test_a_writer_that_converts_values_has_no_order():
    s = KvSpec(1, 4, 4, 2)

    def scaled(key, value, page):
        page[0, :, :, :4] = key.transpose(0, 1) * 2
        page[0, :, :, 4:] = value.transpose(0, 1)
    assert learn_page_order(scaled, s, 4, torch.bfloat16) is None

    def plain(key, value, page):
        page[0, :, :, :4] = key.transpose(0, 1)
        page[0, :, :, 4:] = value.transpose(0, 1)
    order = learn_page_order(plain, s, 4, torch.bfloat16)
    assert order is not None and torch.equal(torch.sort(order).values, torch.arange(32))
    assert learn_page_order(plain, s, 4, torch.float8_e4m3fn) is None


def test_an_irregular_packing_round_trips_through_the_general_path():
    """A writer that scatters a page's elements by a fixed random permutation: no strided
    description, so pages are decoded element by element; tokens and bytes still exact."""
    s, block = KvSpec(2, 4, 4, 2), 4
    perm = torch.randperm(2 * block * 2 * 4, generator=torch.Generator().manual_seed(5))

    def scrambled(key, value, page):
        canon = torch.stack((key, value)).reshape(-1)  # [kv][token][head][dim]
        page.view(-1)[perm] = canon
    order = learn_page_order(scrambled, s, block, torch.bfloat16)
    assert order is not None and torch.equal(order, perm)
    codec = PageCodec(s, block, page_order=order)
    assert codec._slabs is None
    gen = torch.Generator().manual_seed(6)
    cache = torch.randn(5, 2, block, 8, generator=gen).to(torch.bfloat16)
    key = torch.randn(6, 2, 4, generator=gen).to(torch.bfloat16)
    value = torch.randn(6, 2, 4, generator=gen).to(torch.bfloat16)
    src = torch.cat([key.reshape(-1), value.reshape(-1)]).view(torch.uint8)
    before = cache.clone()
    codec.scatter(src, cache, [3, 1], 6)
    out = torch.empty_like(src)
    codec.gather(cache, [3, 1], 6, out)
    assert torch.equal(out, src)
    for b in (0, 2, 4):
        assert torch.equal(cache[b], before[b])
    # Block 1 held tokens 4 and 5 only: its slots 2 and 3 kept their bytes.
    rest, kept = (torch.empty(s.layer_bytes(block), dtype=torch.uint8) for _ in range(2))
    codec.gather(cache, [1], block, rest)
    codec.gather(before, [1], block, kept)
    half, row = s.layer_bytes(block) // 2, s.layer_bytes(1) // 2
    for part in (0, half):
        assert torch.equal(rest[part + 2 * row:part + half], kept[part + 2 * row:part + half])
