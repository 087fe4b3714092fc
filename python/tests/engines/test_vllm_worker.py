"""The worker side of KvstashConnector against a real kvstashd, without an engine: per-layer
stores and layer-wise or asynchronous loads between vLLM 0.32 cache views of different
layouts and block sizes (CPU tensors in GPU shapes, and the CPU backend's packed pages); a
copy engine that completes late (nothing put before its copy finished, no slot reused
early, a load in the cache before the layer that waits for it); a full staging pool; a
chunk that vanished between lookup and load; a daemon killed with saves in flight."""

import time

import pytest

pytestmark = pytest.mark.engine
torch = pytest.importorskip("torch")
pytest.importorskip("vllm")

from vllm.v1.kv_cache_layout import KVCacheLayout  # noqa: E402

import kvstash  # noqa: E402
from kv_views import LAYERS, SPECS, engine_views, kv_spec, reference_tokens  # noqa: E402
from kvstash.integrations._common import Connection  # noqa: E402
from kvstash.integrations._kv_codec import CANONICAL_FORMAT, PageCodec  # noqa: E402
from kvstash.integrations._kv_mover import CpuMover, StagingPool  # noqa: E402
from kvstash.integrations._vllm_worker import ChunkOp, Worker  # noqa: E402
from kvstash.testing import Daemon  # noqa: E402

NAMES = [f"model.layers.{i}.self_attn.attn" for i in range(LAYERS)]
CHUNK = 32  # tokens: two 16-token blocks, or one 32-token block
CHUNKS = [b"chunk-%d" % i for i in range(3)]
SHAPES = {  # name -> (layout, block size, kernel block)
    "nhd": (KVCacheLayout.LBNHC, 16, None),
    "hnd": (KVCacheLayout.LBHNC, 16, None),
    "hnd_kernel8": (KVCacheLayout.LBHNC, 16, 8),
    "blocks_outer": (KVCacheLayout.BLNHC, 32, None),
}


class LateEvent:
    """A copy that runs only when the test (or a wait) completes it."""

    def __init__(self, action) -> None:
        self.action, self.done = action, False

    def query(self) -> bool:
        return self.done

    def synchronize(self) -> None:
        if not self.done:
            self.action()
            self.done = True


class LateMover(CpuMover):
    """A copy engine whose copies finish late: a slot holds stale bytes until its copy ran;
    releasing a slot whose copy is pending, or handing out a slot in use, fails the test."""

    def __init__(self, pool) -> None:
        super().__init__(pool)
        self.pending, self.in_use, self.waited = [], set(), []

    def slot_in(self, nbytes):
        staged = super().slot_in(nbytes)
        if staged is not None:
            assert id(staged.slot) not in self.in_use
            self.in_use.add(id(staged.slot))
            staged.slot.fill_(0xAB)  # what a reused slot still holds
        return staged

    def stage_out(self, codec, cache, block_ids, tokens, nbytes):
        staged = self.slot_in(nbytes)
        if staged is not None:
            staged.event = LateEvent(lambda: codec.gather(cache, block_ids, tokens,
                                                          staged.buffer))
            self.pending.append(staged.event)
        return staged

    def stage_in(self, staged, codec, cache, block_ids, tokens):
        staged.event = LateEvent(lambda: codec.scatter(staged.buffer, cache, block_ids, tokens))
        self.pending.append(staged.event)

    def before_compute(self, staged):
        self.waited.append(staged)
        staged.event.synchronize()  # the compute stream waits for the copy

    def release(self, staged):
        assert staged.event is None or staged.event.done, "slot released before its copy"
        self.in_use.discard(id(staged.slot))
        super().release(staged)

    def complete(self, n=None):
        for event in self.pending[:n]:
            event.synchronize()
        self.pending = [e for e in self.pending if not e.done]


class Engine:
    """One worker over one engine's cache views, in a namespace shared by every shape."""

    def __init__(self, uri, shape="nhd", seed=0, mover=None, staging_bytes=1 << 24) -> None:
        layout, block, kernel = SHAPES[shape]
        self.spec = SPECS["bf16"](block)
        self.raw, self.views = engine_views(self.spec, layout, kernel, seed=seed)
        s = kv_spec(self.spec)
        self.ns = kvstash.Namespace(model="worker-test", num_layers=LAYERS, kv_heads=s.kv_heads,
                                    head_dim=s.head_size, dtype="bfloat16", chunk_tokens=CHUNK,
                                    kv_layout=s.layout_name())
        self.conn = Connection(uri, {"deadline_ms": 3000, "connect_timeout_ms": 500,
                                     "max_retries": 0}, lambda: [self.ns], retry_interval_s=60)
        assert self.conn.connect_now()
        self.mover = mover or CpuMover(StagingPool(s.layer_bytes(CHUNK), staging_bytes, False))
        self.worker = Worker(self.conn, LAYERS, CHUNK, self.object_key, CANONICAL_FORMAT)
        codecs = [PageCodec(s, block, v.shape[2]) for v in self.views]
        self.worker.register(list(zip(NAMES, self.views)), codecs, self.mover)

    def object_key(self, key, layer):
        return self.ns.key_from_engine_hash(key + layer.to_bytes(2, "little"))

    def blocks(self, first):
        """The blocks of one chunk starting at block ``first``."""
        n = CHUNK // self.spec.block_size
        return [first + i for i in range(n)]

    def tokens(self, layer, blocks):
        return reference_tokens(self.views[layer], self.spec, blocks, CHUNK)

    def store(self, ops, finished=("r",)):
        w = self.worker
        w.begin_step(ops)
        for name in NAMES:
            w.save_layer(name)
        w.wait_saves()
        assert w.finished_saves(set(finished)) == set(finished)

    def stored(self, keys):
        with kvstash.Client(self.conn.uri) as c:
            return sum(t != kvstash.Tier.NONE for t in c.exists(self.ns, keys))

    def close(self):
        self.conn.close()


def until(cond, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


@pytest.fixture
def daemon():
    with Daemon() as d:
        yield d


@pytest.mark.parametrize("src,dst", [("nhd", "hnd"), ("hnd_kernel8", "blocks_outer"),
                                     ("blocks_outer", "nhd")])
@pytest.mark.parametrize("scheme", ["grpc", "ucx"])
def test_chunks_stored_in_one_shape_load_into_another(daemon, scheme, src, dst):
    uri = daemon.grpc_uri if scheme == "grpc" else daemon.ucx_uri
    a, b = Engine(uri, src, seed=1), Engine(uri, dst, seed=2)
    stored = {CHUNKS[0]: a.blocks(0), CHUNKS[1]: a.blocks(4), CHUNKS[2]: a.blocks(6)}
    a.store([ChunkOp("r", key, blocks) for key, blocks in stored.items()])
    assert a.worker.stats.data["stored_objects"] == 3 * LAYERS
    loaded = {CHUNKS[0]: b.blocks(8), CHUNKS[2]: b.blocks(2), CHUNKS[1]: b.blocks(0)}
    w = b.worker
    w.begin_step([])
    w.start_load([ChunkOp("q", k, loaded[k]) for k in CHUNKS[::2]], False)
    for name in NAMES:
        w.wait_layer(name)
    w.start_load([ChunkOp("s", CHUNKS[1], loaded[CHUNKS[1]])], True)
    until(lambda: w.finished_loads() == {"s"})
    assert w.load_errors() == set()
    for layer in range(LAYERS):
        for key in CHUNKS:
            assert torch.equal(b.tokens(layer, loaded[key]), a.tokens(layer, stored[key]))
    assert w.stats.data["loaded_objects"] == 3 * LAYERS
    a.close()
    b.close()


def test_late_copies_order_puts_slots_and_layer_loads(daemon):
    s = kv_spec(SPECS["bf16"](16))
    late = LateMover(StagingPool(s.layer_bytes(CHUNK), 1 << 24, False))
    a = Engine(daemon.ucx_uri, "nhd", seed=1, mover=late)
    ops = [ChunkOp("r", CHUNKS[0], a.blocks(0)), ChunkOp("r", CHUNKS[1], a.blocks(2))]
    keys = [a.object_key(op.key, layer) for layer in range(LAYERS) for op in ops]
    w = a.worker
    w.begin_step(ops)
    for name in NAMES:
        w.save_layer(name)
    assert w.finished_saves({"r"}) == set()  # nothing copied: nothing put, nothing reported
    assert a.stored(keys) == 0
    late.complete(2)  # layer 0's two copies
    until(lambda: w.finished_saves(set()) == set() and a.stored(keys[:2]) == 2)
    assert a.stored(keys[2:]) == 0
    w.wait_saves()
    assert w.finished_saves(set()) == {"r"} and a.stored(keys) == len(keys)
    assert late.in_use == set()  # every slot back once its put completed
    # Loaded by a late engine: each layer's copy is in the cache when the layer waits.
    b_late = LateMover(StagingPool(s.layer_bytes(CHUNK), 1 << 24, False))
    b = Engine(daemon.ucx_uri, "hnd", seed=2, mover=b_late)
    dst = [b.blocks(4), b.blocks(8)]
    b.worker.begin_step([])
    b.worker.start_load([ChunkOp("q", op.key, blocks) for op, blocks in zip(ops, dst)], False)
    for layer, name in enumerate(NAMES):
        b.worker.wait_layer(name)
        for op, blocks in zip(ops, dst):
            assert torch.equal(b.tokens(layer, blocks), a.tokens(layer, op.block_ids))
        if layer + 1 < LAYERS:  # the next layer's copies wait for their own layer
            assert not torch.equal(b.tokens(layer + 1, dst[0]), a.tokens(layer + 1, ops[0].block_ids))
    assert len(b_late.waited) == 2 * LAYERS and b_late.in_use == set()
    a.close()
    b.close()


def test_a_full_staging_pool_fails_loads_and_skips_stores(daemon):
    slot = kv_spec(SPECS["bf16"](16)).layer_bytes(CHUNK)
    late = LateMover(StagingPool(slot, 2 * slot, False))
    a = Engine(daemon.grpc_uri, "nhd", seed=1, mover=late)
    w = a.worker
    w.begin_step([ChunkOp("r", CHUNKS[0], a.blocks(0))])
    for name in NAMES:  # copies not finished: the third layer finds no slot
        w.save_layer(name)
    assert w.stats.data["staging_full_objects"] == 1
    assert w.stats.data["store_skipped_objects"] == 1
    w.wait_saves()
    assert w.finished_saves({"r"}) == {"r"} and w.stats.data["stored_objects"] == 2
    # A chunk of three layers loaded with two slots: it fails as a whole, and is recomputed.
    big = Engine(daemon.grpc_uri, "nhd", seed=2)
    big.store([ChunkOp("r", CHUNKS[1], big.blocks(2))])
    w.begin_step([])
    w.start_load([ChunkOp("q", CHUNKS[1], a.blocks(6))], True)
    until(lambda: w.finished_loads() == {"q"})
    assert w.load_errors() == set(a.blocks(6))
    assert w.stats.data["staging_full_objects"] == 2 and late.in_use == set()
    a.close()
    big.close()


def test_vanished_chunk_is_a_load_error_and_the_step_stores_nothing(daemon):
    a = Engine(daemon.ucx_uri, seed=1)
    a.store([ChunkOp("r", CHUNKS[0], a.blocks(0)), ChunkOp("r", CHUNKS[1], a.blocks(2))])
    b = Engine(daemon.ucx_uri, seed=2)
    # Looked up, then deleted before the load ran (evicted, or deleted by another client).
    with kvstash.Client(daemon.grpc_uri) as c:
        assert c.delete(a.ns, [a.object_key(CHUNKS[1], 1)]) == 1
    untouched = b.tokens(1, b.blocks(6))
    w = b.worker
    w.begin_step([ChunkOp("q", b"computed-after-load", b.blocks(8))])
    w.start_load([ChunkOp("q", CHUNKS[0], b.blocks(4)), ChunkOp("q", CHUNKS[1], b.blocks(6))],
                 False)
    for name in NAMES:
        w.wait_layer(name)
        w.save_layer(name)
    assert w.load_errors() == set(b.blocks(6))
    assert torch.equal(b.tokens(1, b.blocks(6)), untouched)  # nothing half-written
    assert w.stats.data["load_failed_objects"] == 1
    # Layer 0 loaded fine before the failure showed at layer 1: its put was the only one.
    w.wait_saves()
    assert w.stats.data["stored_objects"] == 1 and w.stats.data["store_skipped_objects"] == 2
    w.begin_step([])
    w.start_load([ChunkOp("s", CHUNKS[1], b.blocks(0))], True)
    until(lambda: w.finished_loads() == {"s"})
    assert w.load_errors() == set(b.blocks(0))
    a.close()
    b.close()


def test_daemon_killed_with_saves_in_flight_never_leaves_a_request_stuck(daemon):
    a = Engine(daemon.ucx_uri, seed=1)
    w = a.worker
    w.begin_step([ChunkOp("r", CHUNKS[0], a.blocks(0)), ChunkOp("r", CHUNKS[1], a.blocks(2))])
    w.save_layer(NAMES[0])
    daemon.kill()
    for name in NAMES[1:]:
        w.save_layer(name)
    w.wait_saves()
    assert w.finished_saves({"r"}) == {"r"}
    w.begin_step([])
    w.start_load([ChunkOp("q", CHUNKS[0], a.blocks(6))], False)
    w.wait_all_layers()
    assert w.load_errors() == set(a.blocks(6))
    a.close()


@pytest.mark.parametrize("load_mode", ["layerwise", "async"])
def test_the_connector_asks_vllm_for_piecewise_cuda_graphs(load_mode):
    """Its per-layer hooks run between graph pieces; in a full graph replay would skip them."""
    from vllm.config import KVTransferConfig
    from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory
    extra = {"uri": "ucx://127.0.0.1:7072", "load_mode": load_mode}
    cls = KVConnectorFactory.get_connector_class(KVTransferConfig(
        kv_connector="KvstashConnector", kv_role="kv_both", kv_connector_extra_config=extra,
        kv_connector_module_path="kvstash.integrations.vllm_connector"))
    assert cls.requires_piecewise_for_cudagraph(extra)
