"""KvstashConnector under vLLM's real ``Scheduler``, built in-process from a ``VllmConfig``
(the way vLLM's own connector unit tests do), with the worker-side connector over vLLM 0.32
cache views and a real kvstashd; the forward is simulated: every token's KV is a known
function of its id and position. Checked: loads land as stored; a failed load is
recomputed from its first bad block (vLLM's recovery); a request loading asynchronously
stores nothing it loaded; answers are stored; no request state is left behind."""

import time

import pytest

pytestmark = pytest.mark.engine
torch = pytest.importorskip("torch")
pytest.importorskip("vllm")

from vllm import SamplingParams  # noqa: E402
from vllm.config import (CacheConfig, DeviceConfig, KVTransferConfig, ModelConfig,  # noqa: E402
                         SchedulerConfig, VllmConfig)
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole  # noqa: E402
from vllm.v1.core.sched.scheduler import Scheduler  # noqa: E402
from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheConfig,  # noqa: E402
                                        KVCacheGroupSpec)
from vllm.v1.kv_cache_layout import KVCacheLayout  # noqa: E402
from vllm.v1.outputs import KVConnectorOutput, ModelRunnerOutput  # noqa: E402
from vllm.v1.request import Request  # noqa: E402
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402

import kvstash  # noqa: E402
from kv_views import engine_views  # noqa: E402
from kvstash.testing import Daemon  # noqa: E402

BLOCK, CHUNK, BLOCKS = 16, 32, 64
NAMES = [f"model.layers.{i}.self_attn.attn" for i in range(2)]
SPEC = FullAttentionSpec(block_size=BLOCK, num_kv_heads=2, head_size=64, dtype=torch.bfloat16)
PROMPT = [4 + (i * 13) % 990 for i in range(100)]  # 3 whole chunks and a tail
NEXT_TOKEN = 7  # what the simulated model always samples


def kv_of(token: int, position: int, layer: int):
    """What the simulated forward writes for one token: [heads, 2 * head_size], exact in
    bf16."""
    base = torch.arange(2 * 128, dtype=torch.float32).view(2, 128) % 16
    return (base + (token % 61) + (position % 29) * 64 + layer * 8).to(torch.bfloat16)


class Engine:
    """A Scheduler and the worker-side connector of one simulated engine."""

    def __init__(self, model: str, uri: str, monkeypatch, blocks: int = BLOCKS, **extra) -> None:
        import vllm.distributed.parallel_state as ps
        monkeypatch.setattr(ps, "get_tensor_model_parallel_rank", lambda: 0)
        config = VllmConfig(
            model_config=ModelConfig(model=model, dtype="bfloat16", max_model_len=1024, seed=0),
            cache_config=CacheConfig(block_size=BLOCK, enable_prefix_caching=False),
            scheduler_config=SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=256,
                                             max_model_len=1024, is_encoder_decoder=False),
            kv_transfer_config=KVTransferConfig(
                kv_connector="KvstashConnector", kv_role="kv_both",
                kv_connector_module_path="kvstash.integrations.vllm_connector",
                kv_load_failure_policy="recompute",
                kv_connector_extra_config={"uri": uri, "chunk_tokens": CHUNK, **extra}),
            device_config=DeviceConfig("cpu"))
        config.cache_config.num_gpu_blocks = blocks
        kv_config = KVCacheConfig(num_blocks=blocks, kv_cache_tensors=[],
                                  kv_cache_groups=[KVCacheGroupSpec(NAMES, SPEC)])
        self.sched = Scheduler(config, kv_config, StructuredOutputManager(config),
                               block_size=BLOCK)
        from kvstash.integrations.vllm_connector import KvstashConnector
        self.worker = KvstashConnector(config, KVConnectorRole.WORKER, kv_config)
        # The CPU backend's views; the simulated forward writes cells directly (the backend's own
        # packing of them is the codec tests' business).
        _, self.views = engine_views(SPEC, KVCacheLayout.LBHNC, blocks=blocks, layers=2)
        self.worker.register_kv_caches(dict(zip(NAMES, self.views)))
        self.computed_ranges = []  # per step: {req_id: (first, end)} computed by the forward
        self.preempted, self.resumed = set(), set()

    def add(self, req_id: str, prompt, max_tokens: int = 1) -> Request:
        req = Request(req_id, list(prompt), SamplingParams(max_tokens=max_tokens,
                                                           temperature=0.0), None)
        self.sched.add_request(req)
        return req

    def step(self) -> None:
        out = self.sched.schedule()
        w = self.worker
        self.preempted |= set(out.preempted_req_ids or ())
        resumed = set(out.scheduled_cached_reqs.resumed_req_ids or ()) | {
            r.req_id for r in out.scheduled_new_reqs if r.req_id in self.preempted}
        self.resumed |= resumed
        w.handle_preemptions(out.kv_connector_metadata)
        w.bind_connector_metadata(out.kv_connector_metadata)
        w.start_load_kv(None)
        ranges = {}
        for req_id, n in out.num_scheduled_tokens.items():
            req = self.sched.requests[req_id]
            ranges[req_id] = (req.num_computed_tokens - n, req.num_computed_tokens)
        for layer, name in enumerate(NAMES):
            w.wait_for_layer_load(name)
            for req_id, (first, end) in ranges.items():
                self._write(req_id, layer, first, end)
            w.save_kv_layer(name, self.views[layer], None)
        w.wait_for_save()
        sending, recving = w.get_finished(set(out.finished_req_ids))
        invalid = w.get_block_ids_with_load_errors()
        w.clear_connector_metadata()
        self.computed_ranges.append(ranges)
        for req_id in resumed & set(ranges):  # what it loaded and computed is its own KV
            self.check_kv(req_id, self.sched.requests[req_id].all_token_ids, ranges[req_id][1])
        req_ids = list(ranges)
        sampled = [[NEXT_TOKEN] if ranges[r][1] >= self.sched.requests[r].num_tokens else []
                   for r in req_ids]
        self.sched.update_from_output(out, ModelRunnerOutput(
            req_ids=req_ids, req_id_to_index={r: i for i, r in enumerate(req_ids)},
            sampled_token_ids=sampled,
            kv_connector_output=KVConnectorOutput(finished_sending=sending,
                                                  finished_recving=recving,
                                                  invalid_block_ids=invalid)))

    def run(self, timeout_s: float = 60.0) -> None:
        """Steps until every request finished and was freed; a step with nothing to compute
        (waiting on kvstash) comes after a pause, as an idle engine's would."""
        deadline = time.monotonic() + timeout_s
        while self.sched.has_requests():
            assert time.monotonic() < deadline, "requests still pending"
            self.step()
            if not self.computed_ranges[-1]:
                time.sleep(0.005)

    def _write(self, req_id: str, layer: int, first: int, end: int) -> None:
        tokens = self.sched.requests[req_id].all_token_ids
        blocks = self.sched.kv_cache_manager.get_block_ids(req_id)[0]
        for p in range(first, end):
            self.views[layer][blocks[p // BLOCK], :, p % BLOCK] = kv_of(tokens[p], p, layer)

    def check_kv(self, req_id: str, tokens, upto: int) -> None:
        """The request's cache holds the KV of tokens [0, upto)."""
        blocks = self.sched.kv_cache_manager.get_block_ids(req_id)[0]
        for layer in range(2):
            for p in range(upto):
                got = self.views[layer][blocks[p // BLOCK], :, p % BLOCK]
                assert torch.equal(got, kv_of(tokens[p], p, layer)), (layer, p)

    def stats(self) -> dict:
        return self.worker._worker.stats.data

    def assert_no_state_left(self) -> None:
        conn = self.sched.connector
        assert not conn._requests and not conn._claims and not conn._pending_stores
        w = self.worker._worker
        assert not w._owed and not w._finishing and not w._saves and not w._async_loads
        assert not w._layer_loads and not w._draining
        assert w._mover.pool.in_use == 0

    def close(self) -> None:
        self.worker.shutdown()
        self.sched.connector.shutdown()


@pytest.fixture
def daemon():
    with Daemon() as d:
        yield d


def stored_prompt(model_dir, daemon, monkeypatch) -> "Engine":
    """An engine that computed and stored PROMPT's 3 whole chunks."""
    a = Engine(model_dir, daemon.ucx_uri, monkeypatch, store_answers=False)
    a.add("a", PROMPT)
    a.run()
    assert a.stats()["stored_objects"] == 3 * 2
    a.assert_no_state_left()
    return a


def test_loads_land_as_stored_and_leave_nothing_behind(model_dir, daemon, monkeypatch):
    stored_prompt(model_dir, daemon, monkeypatch).close()
    b = Engine(model_dir, daemon.ucx_uri, monkeypatch)
    b.add("b", PROMPT, max_tokens=3)  # still running, with its blocks, after the step
    b.step()
    # The connector supplied 3 chunks; the forward computed only the tail.
    assert b.computed_ranges[0]["b"] == (3 * CHUNK, len(PROMPT))
    b.check_kv("b", PROMPT, len(PROMPT))
    b.run()
    assert b.stats()["loaded_objects"] == 3 * 2
    b.assert_no_state_left()
    b.close()


def test_a_failed_load_is_recomputed_from_its_first_bad_block(model_dir, daemon, monkeypatch):
    a = stored_prompt(model_dir, daemon, monkeypatch)
    with kvstash.Client(daemon.grpc_uri) as c:  # chunk 1, layer 1: gone after the lookup
        ns = a.worker._namespace
        c.open_namespace(ns)
        bad = ns.key_from_engine_hash(ns.prefix_keys(PROMPT)[1] + (1).to_bytes(2, "little"))
        a.close()
        b = Engine(model_dir, daemon.ucx_uri, monkeypatch)
        b.add("b", PROMPT)
        original = b.sched.connector.get_num_new_matched_tokens

        def lookup_then_lose(request, computed):
            found = original(request, computed)
            assert c.delete(ns, [bad]) == 1
            return found
        b.sched.connector.get_num_new_matched_tokens = lookup_then_lose
        b.run()
    first_steps = [r["b"] for r in b.computed_ranges if "b" in r]
    # Loaded chunks 0..2, chunk 1 failed: vLLM recomputes from chunk 1's first block on.
    assert first_steps[0] == (3 * CHUNK, len(PROMPT))
    assert first_steps[1][0] == CHUNK
    assert b.stats()["load_failed_objects"] == 1
    b.assert_no_state_left()
    b.close()


def test_an_async_load_stores_nothing_it_loaded(model_dir, daemon, monkeypatch):
    stored_prompt(model_dir, daemon, monkeypatch).close()
    b = Engine(model_dir, daemon.ucx_uri, monkeypatch, load_mode="async")
    longer = PROMPT + [5] * 40  # one more whole chunk than what is stored
    b.add("b", longer)
    b.run()
    stats = b.stats()
    assert stats["loaded_objects"] == 3 * 2
    assert stats["stored_objects"] == 1 * 2  # only the chunk it computed
    b.assert_no_state_left()
    b.close()


def test_a_finished_answer_is_stored_for_the_next_turn(model_dir, daemon, monkeypatch):
    a = Engine(model_dir, daemon.ucx_uri, monkeypatch)
    turn1 = PROMPT[:60]  # one whole chunk; with its 10-token answer, two minus the last token
    a.add("t1", turn1, max_tokens=10)
    a.run()
    # Chunk 0 stored with the prompt; chunk 1 (tokens 32..63) when the request finished.
    assert a.stats()["stored_objects"] == 2 * 2
    a.assert_no_state_left()
    turn2 = turn1 + [NEXT_TOKEN] * 10 + PROMPT[60:80]
    a.add("t2", turn2, max_tokens=3)
    a.step()
    assert a.computed_ranges[-1]["t2"] == (2 * CHUNK, len(turn2))
    a.check_kv("t2", turn2, len(turn2))
    a.run()
    a.assert_no_state_left()
    a.close()


def test_preempted_requests_resume_from_what_they_stored(model_dir, daemon, monkeypatch):
    """Two requests outgrow a 20-block cache while decoding: vLLM preempts one (its puts
    are waited for before its blocks go to the other) and resumes it later, loading its
    prompt's chunks back; the resumed request's cache holds its own KV."""
    e = Engine(model_dir, daemon.ucx_uri, monkeypatch, blocks=20)
    e.add("x", PROMPT + PROMPT[:40], max_tokens=40)  # 9 blocks each, 12 once answered
    e.add("y", PROMPT[60:] + PROMPT, max_tokens=40)
    e.run()
    assert e.preempted and e.preempted <= e.resumed, (e.preempted, e.resumed)
    assert e.stats()["loaded_objects"] >= 2
    e.assert_no_state_left()
    e.close()
