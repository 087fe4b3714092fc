"""The worker side of KvstashConnector against a real kvstashd, without an engine: per-layer
stores and layer-wise or asynchronous loads into vLLM-shaped page tensors, a chunk that
vanished between lookup and load, a store skipped after a failed load, a daemon killed
with saves in flight (requests still reported finished, nothing stuck)."""

import pytest

pytestmark = pytest.mark.engine
torch = pytest.importorskip("torch")
pytest.importorskip("vllm")

import kvstash  # noqa: E402
from kvstash.integrations._common import Connection  # noqa: E402
from kvstash.integrations._vllm_worker import ChunkOp, Worker  # noqa: E402
from kvstash.testing import Daemon  # noqa: E402

LAYERS, BLOCKS, HEADS, BLOCK, HEAD_DIM = 3, 8, 2, 16, 8
NAMES = [f"model.layers.{i}.self_attn.attn" for i in range(LAYERS)]


def make_worker(uri: str, seed: int):
    ns = kvstash.Namespace(model="worker-test", num_layers=LAYERS, kv_heads=HEADS,
                           head_dim=HEAD_DIM, dtype="bfloat16", chunk_tokens=BLOCK,
                           kv_layout=f"vllm.cpu.page.v1;block_size={BLOCK}")
    conn = Connection(uri, {"deadline_ms": 3000, "connect_timeout_ms": 500, "max_retries": 0},
                      lambda: [ns], retry_interval_s=60)
    assert conn.connect_now()
    gen = torch.Generator().manual_seed(seed)
    caches = [torch.randn(BLOCKS, HEADS, BLOCK, 2 * HEAD_DIM, generator=gen).to(torch.bfloat16)
              for _ in range(LAYERS)]
    worker = Worker(conn, LAYERS, BLOCK,
                    lambda key, layer: ns.key_from_engine_hash(key + layer.to_bytes(2, "little")))
    worker.register(list(zip(NAMES, caches)))
    return worker, caches, conn, ns


def store(worker, ops, finished=("r",)):
    worker.begin_step(ops)
    for name in NAMES:
        worker.save_layer(name)
    worker.wait_saves()
    assert worker.finished_saves(set(finished)) == set(finished)


CHUNKS = [b"chunk-%d" % i for i in range(3)]


@pytest.fixture
def daemon():
    with Daemon() as d:
        yield d


@pytest.mark.parametrize("scheme", ["grpc", "ucx"])
def test_layerwise_and_async_loads_return_the_stored_pages(daemon, scheme):
    uri = daemon.grpc_uri if scheme == "grpc" else daemon.ucx_uri
    a, a_caches, a_conn, _ = make_worker(uri, seed=1)
    # Chunk 2 spans two blocks: staged through a copy.
    store(a, [ChunkOp("r", CHUNKS[0], [1]), ChunkOp("r", CHUNKS[1], [5]),
              ChunkOp("r", CHUNKS[2], [2, 3])])
    assert a.stats.data["stored_objects"] == 3 * LAYERS
    b, b_caches, b_conn, _ = make_worker(uri, seed=2)
    b.begin_step([])
    b.start_load([ChunkOp("q", CHUNKS[0], [7]), ChunkOp("q", CHUNKS[2], [0, 6])], False)
    for name in NAMES:
        b.wait_layer(name)
    b.start_load([ChunkOp("s", CHUNKS[1], [4])], True)
    while not b.finished_loads():
        pass
    assert b.load_errors() == set()
    for layer in range(LAYERS):
        assert torch.equal(b_caches[layer][7], a_caches[layer][1])
        assert torch.equal(b_caches[layer][4], a_caches[layer][5])
        assert torch.equal(b_caches[layer][[0, 6]], a_caches[layer][[2, 3]])
    assert b.stats.data["loaded_objects"] == 3 * LAYERS
    a_conn.close()
    b_conn.close()


def test_vanished_chunk_is_a_load_error_and_the_step_stores_nothing(daemon):
    a, a_caches, a_conn, ns = make_worker(daemon.ucx_uri, seed=1)
    store(a, [ChunkOp("r", CHUNKS[0], [1]), ChunkOp("r", CHUNKS[1], [2])])
    b, b_caches, b_conn, _ = make_worker(daemon.ucx_uri, seed=2)
    before = b_caches[1][3].clone()
    # Looked up, then deleted before the load ran (evicted, or deleted by another client).
    with kvstash.Client(daemon.grpc_uri) as c:
        victim = ns.key_from_engine_hash(CHUNKS[1] + (1).to_bytes(2, "little"))
        assert c.delete(ns, [victim]) == 1
    b.begin_step([ChunkOp("q", b"computed-after-load", [5])])
    b.start_load([ChunkOp("q", CHUNKS[0], [4]), ChunkOp("q", CHUNKS[1], [3])], False)
    for name in NAMES:
        b.wait_layer(name)
        b.save_layer(name)
    assert b.load_errors() == {3}
    assert torch.equal(b_caches[1][3], before)  # nothing half-written
    assert b.stats.data["load_failed_objects"] == 1
    # Layer 0 loaded fine before the failure showed at layer 1: its put was the only one.
    b.wait_saves()
    assert b.stats.data["stored_objects"] == 1 and b.stats.data["store_skipped_objects"] == 2
    b.begin_step([])
    b.start_load([ChunkOp("s", CHUNKS[1], [6])], True)
    while not (done := b.finished_loads()):
        pass
    assert done == {"s"} and b.load_errors() == {6}
    a_conn.close()
    b_conn.close()


def test_daemon_killed_with_saves_in_flight_never_leaves_a_request_stuck(daemon):
    a, _, conn, _ = make_worker(daemon.ucx_uri, seed=1)
    a.begin_step([ChunkOp("r", CHUNKS[0], [1]), ChunkOp("r", CHUNKS[1], [2])])
    a.save_layer(NAMES[0])
    daemon.kill()
    for name in NAMES[1:]:
        a.save_layer(name)
    a.wait_saves()
    assert a.finished_saves({"r"}) == {"r"}
    a.begin_step([])
    a.start_load([ChunkOp("q", CHUNKS[0], [3])], False)
    a.wait_all_layers()
    assert a.load_errors() == {3}
    conn.close()
