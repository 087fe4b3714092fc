"""KvstashHiCacheStorage under SGLang (from PyPI): the real backend factory and real CPU host
pools in every layout SGLang offers for storage, zero-copy and legacy paths."""

import pytest

pytestmark = pytest.mark.engine
pytest.importorskip("sglang.srt.mem_cache.hicache_storage")

import torch  # noqa: E402
from sglang.srt.mem_cache.hicache_storage import HiCacheStorageConfig  # noqa: E402
from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool, MLATokenToKVPool  # noqa: E402
from sglang.srt.mem_cache.pool_host.mha import MHATokenToKVPoolHost  # noqa: E402
from sglang.srt.mem_cache.pool_host.mla import MLATokenToKVPoolHost  # noqa: E402
from sglang.srt.mem_cache.storage import StorageBackendFactory  # noqa: E402

from kvstash.integrations.sglang import KvstashHiCacheStorage  # noqa: E402

PAGE, LAYERS, HEADS, HEAD_DIM, TOKENS = 4, 3, 2, 8, 64 * 4
MHA_LAYOUTS = ["layer_first", "page_first", "page_first_direct", "page_head"]
MLA_LAYOUTS = ["layer_first", "page_first", "page_first_direct"]


def host_pool(kind, layout):
    common = dict(pin_memory=False, device="cpu", host_token_capacity=TOKENS)
    if kind == "mha":
        dev = MHATokenToKVPool(TOKENS, PAGE, torch.bfloat16, HEADS, HEAD_DIM, LAYERS, "cpu", False,
                               start_layer=0, end_layer=LAYERS)
        return MHATokenToKVPoolHost(dev.get_device_pool_infos()[0].buffer_info, 2.0, 0, PAGE,
                                    layout, device_capacity_tokens=dev.size, start_layer=0,
                                    end_layer=LAYERS, **common)
    dev = MLATokenToKVPool(TOKENS, PAGE, torch.bfloat16, 16, 8, LAYERS, "cpu", False,
                           start_layer=0, end_layer=LAYERS)
    return MLATokenToKVPoolHost(dev.get_device_pool_infos()[0].buffer_info, 2.0, 0, PAGE, layout,
                                device_capacity_tokens=dev.size, start_layer=0, end_layer=LAYERS,
                                target_layer_num=dev.layer_num,
                                override_kv_cache_dim=dev.kv_cache_dim, **common)


def backend(uri, pool, *, mla=False, tp_rank=0, tp_size=1, v1=True, model="test/sglang",
            extra_config=None, **extra):
    """The storage backend SGLang's factory makes from ``--hicache-storage-backend dynamic``
    and ``extra_config`` (default: kvstash at ``uri`` with ``extra``)."""
    if extra_config is None:
        extra_config = {"backend_name": "kvstash", "module_path": "kvstash.integrations.sglang",
                        "class_name": "KvstashHiCacheStorage", "interface_v1": int(v1),
                        "uri": uri, **extra}
    config = HiCacheStorageConfig(
        tp_rank=tp_rank, tp_size=tp_size, pp_rank=0, pp_size=1, attn_cp_rank=0, attn_cp_size=1,
        is_mla_model=mla, enable_storage_metrics=False,
        is_page_first_layout=pool.layout == "page_first", model_name=model,
        extra_config=extra_config)
    b = StorageBackendFactory.create_backend("dynamic", config, pool)
    b.register_mem_pool_host(pool)  # what SGLang's cache controller does next
    return b


def fill(pool, seed):
    g = torch.Generator().manual_seed(seed)
    for buf in (pool.kv_buffer if isinstance(pool.kv_buffer, tuple) else [pool.kv_buffer]):
        raw = buf.view(torch.uint8)
        raw.copy_(torch.randint(0, 256, raw.shape, dtype=torch.uint8, generator=g))


def zero(pool):
    for buf in (pool.kv_buffer if isinstance(pool.kv_buffer, tuple) else [pool.kv_buffer]):
        buf.zero_()


def snapshot(pool):
    kv = pool.kv_buffer
    return tuple(b.clone() for b in kv) if isinstance(kv, tuple) else kv.clone()


def page_keys(n, salt):
    import hashlib
    out, prev = [], salt.encode()
    for i in range(n):
        prev = hashlib.sha256(prev + i.to_bytes(4, "little")).digest()
        out.append(prev.hex())
    return out


def indices(pages):
    return torch.cat([torch.arange(p * PAGE, (p + 1) * PAGE) for p in pages]).to(torch.int64)


@pytest.mark.parametrize("kind,layout", [("mha", l) for l in MHA_LAYOUTS] +
                         [("mla", l) for l in MLA_LAYOUTS])
def test_v1_set_zero_get_byte_exact(daemon, transport, kind, layout):
    uri = daemon.grpc_uri if transport == "grpc" else daemon.ucx_uri
    pool = host_pool(kind, layout)
    b = backend(uri, pool, mla=kind == "mla", model=f"v1-{kind}-{layout}-{transport}")
    fill(pool, seed=3)
    before = snapshot(pool)
    keys = page_keys(10, f"{kind}{layout}{transport}")
    pages = list(range(2, 12))
    assert b.batch_set_v1(keys, indices(pages)) == [True] * 10
    assert b.batch_exists(keys + page_keys(2, "absent")) == 10
    zero(pool)
    assert b.batch_get_v1(keys, indices(pages)) == [True] * 10
    after = snapshot(pool)
    zero(pool)
    # Exactly the requested pages came back, bit for bit; nothing else was written.
    mask = torch.zeros(TOKENS, dtype=torch.bool)
    mask[indices(pages)] = True
    for got, want in zip(after if isinstance(after, tuple) else [after],
                         before if isinstance(before, tuple) else [before]):
        tok_dim = [i for i, s in enumerate(got.shape) if s == TOKENS]
        if tok_dim:  # token-major axis: compare only the requested tokens
            d = tok_dim[0]
            assert torch.equal(got.index_select(d, indices(pages)).view(torch.uint8),
                               want.index_select(d, indices(pages)).view(torch.uint8))
            assert not got.index_select(d, torch.nonzero(~mask).flatten()).view(torch.uint8).any()
        else:  # page-major layouts: [.., page, ..]
            pages_dim = [i for i, s in enumerate(got.shape) if s == TOKENS // PAGE][0]
            sel = torch.tensor(pages)
            assert torch.equal(got.index_select(pages_dim, sel).view(torch.uint8),
                               want.index_select(pages_dim, sel).view(torch.uint8))
    # A page stored into other host pages comes back there too; a hole ends the hit.
    b2 = backend(uri, pool, mla=kind == "mla", model=f"v1-{kind}-{layout}-{transport}")
    assert b2.batch_get_v1(keys[:3] + page_keys(1, "hole") + keys[4:5],
                           indices([20, 21, 22, 23, 24])) == [True, True, True, False, True]
    b.close()
    b2.close()


@pytest.mark.parametrize("layout", ["layer_first", "page_first"])
def test_legacy_flat_pages(daemon, layout):
    pool = host_pool("mha", layout)
    b = backend(daemon.ucx_uri, pool, v1=False, model=f"legacy-{layout}")
    fill(pool, seed=5)
    keys = page_keys(6, f"legacy{layout}")
    pages = [pool.get_data_page(p * PAGE).clone() for p in range(6)]
    assert b.batch_set(keys, pages) is True
    assert b.batch_exists(keys) == 6
    targets = [pool.get_dummy_flat_data_page() for _ in keys]
    for t in targets:
        t.zero_()
    got = b.batch_get(keys, targets)
    assert all(g is t for g, t in zip(got, targets))
    for t, want in zip(targets, pages):
        assert torch.equal(t.view(torch.uint8), want.view(torch.uint8))
    # The zero-copy namespace of the same model never sees legacy pages (other byte order).
    v1 = backend(daemon.ucx_uri, pool, v1=True, model=f"legacy-{layout}")
    assert v1.batch_exists(keys) == 0
    b.close()
    v1.close()


def test_tp_ranks_are_separate_for_mha_and_shared_for_mla(daemon):
    for kind, shared in (("mha", False), ("mla", True)):
        pool = host_pool(kind, "page_first")
        fill(pool, seed=9)
        r0 = backend(daemon.ucx_uri, pool, mla=kind == "mla", tp_rank=0, tp_size=2,
                     model=f"tp-{kind}")
        r1 = backend(daemon.ucx_uri, pool, mla=kind == "mla", tp_rank=1, tp_size=2,
                     model=f"tp-{kind}")
        keys = page_keys(4, f"tp{kind}")
        assert all(r0.batch_set_v1(keys, indices(range(4))))
        assert r1.batch_exists(keys) == (4 if shared else 0)
        r0.close()
        r1.close()


def test_daemon_down_is_a_miss():
    pool = host_pool("mha", "page_first")
    b = backend("grpc://127.0.0.1:1", pool, connect_timeout_ms=200, retry_interval_s=60)
    keys = page_keys(2, "down")
    assert b.batch_set_v1(keys, indices([0, 1])) == [False, False]
    assert b.batch_get_v1(keys, indices([0, 1])) == [False, False]
    assert b.batch_exists(keys) == 0
    assert b.batch_set(keys, [pool.get_data_page(0)] * 2) is False
    b.close()


def test_unknown_option_is_refused():
    import kvstash
    with pytest.raises(kvstash.InvalidArgument, match="colour"):
        backend("grpc://127.0.0.1:1", host_pool("mha", "page_first"), colour="blue")


def test_readme_launch_config(tmp_path):
    """README's launch_server options, as written, make a backend that stores into and loads
    from kvstashd on its embedded default config (a full SGLang server does not run on CPU)."""
    import json
    import os

    import readme_snippets as rs
    blocks = [s for s in rs.checked(rs.docs_files()) if s.mode == "engine" and s.arg == "sglang"]
    assert len(blocks) == 1, blocks
    words = rs.words(blocks[0])
    assert words[:3] == ["python", "-m", "sglang.launch_server"] and \
        "--enable-hierarchical-cache" in words, words
    assert rs.flag_value(blocks[0], "--hicache-storage-backend") == "dynamic"
    extra = json.loads(rs.flag_value(blocks[0], "--hicache-storage-backend-extra-config"))
    workdir = rs.Workdir(os.path.dirname(os.path.dirname(os.environ["KVSTASHD"])))
    with rs.DefaultDaemon(os.environ["KVSTASHD"], workdir.path):
        pool = host_pool("mha", "page_first")
        b = backend(None, pool, model="readme/sglang", extra_config=extra)
        fill(pool, seed=11)
        before = snapshot(pool)
        keys = page_keys(4, "readme")
        assert b.batch_set_v1(keys, indices(range(4))) == [True] * 4
        zero(pool)
        assert b.batch_get_v1(keys, indices(range(4))) == [True] * 4
        got, tokens = snapshot(pool), indices(range(4))  # page_first: [2, tokens, ...]
        assert torch.equal(got.index_select(1, tokens).view(torch.uint8),
                           before.index_select(1, tokens).view(torch.uint8))
        b.close()


def test_uri_naming_the_metrics_port_is_logged_with_what_answered(daemon, caplog):
    pool = host_pool("mha", "page_first")
    b = backend("ucx://" + daemon.metrics_address, pool, model="wrong-port")
    logged = [r.getMessage() for r in caplog.records if r.name == "kvstash.integrations"]
    assert any("metrics endpoint, not its UCX listener" in m for m in logged), logged
    assert b.batch_exists(page_keys(1, "wrong-port")) == 0  # SGLang recomputes
    b.close()


def test_exists_over_a_prompt_longer_than_one_request(daemon):
    """SGLang asks batch_exists for a whole prompt at once: more page buffers than the
    daemon takes in one request still count, and a hole still ends the prefix."""
    pool = host_pool("mha", "layer_first")  # LAYERS x K, V: 6 buffers a page
    b = backend(daemon.ucx_uri, pool, model="long-prompt")
    fill(pool, seed=13)
    keys = page_keys(11000, "long")  # 66000 page buffers: over 65536 keys
    for start in range(0, len(keys), 64):
        piece = keys[start:start + 64]
        assert all(b.batch_set_v1(piece, indices(range(len(piece)))))
    assert b.batch_exists(keys + page_keys(1, "absent")) == len(keys)
    assert b.batch_exists(keys[:5] + page_keys(1, "hole") + keys[5:]) == 5
    b.close()
