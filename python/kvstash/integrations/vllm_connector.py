"""kvstash as a vLLM KV connector (``KVConnectorBase_V1``): prompts' KV stored in kvstash and
loaded by any engine of the same model, instead of recomputed.

    LLM(model=..., kv_transfer_config=KVTransferConfig(
        kv_connector="KvstashConnector",
        kv_connector_module_path="kvstash.integrations.vllm_connector",
        kv_role="kv_both", kv_load_failure_policy="recompute",
        kv_connector_extra_config={"uri": "ucx://127.0.0.1:7072"}))

``kv_connector_extra_config``: ``uri`` (required), ``chunk_tokens`` (tokens per kvstash
chunk, a multiple of the block size; default 128, or the block size when larger: engines
share chunks when this agrees), ``load_mode`` (``"layerwise"``, the default: loads overlap
the forward layer by layer; ``"async"``: the request waits, out of the batch, until its
chunks arrived), ``store_answers`` (default true: a finished request's answer is stored too,
so the next chat turn finds its whole history), ``lease_ms`` (how long looked-up chunks are kept from eviction for the
load, default 30000), ``staging_mb`` (host staging for objects in flight, default 512; on a
GPU pinned, made on first use), ``tenant``, ``revision``, ``hash_algo``,
``retry_interval_s`` and any :func:`kvstash.default_options` field; anything else is
refused at start.

What this version does: CUDA and CPU engines; models whose layers are all full attention
or all MLA, in any ``KVCacheLayout`` and block size (``_vllm_format`` says what is refused
and why); tensor parallelism (a namespace per rank); no pipeline parallelism. Each
(chunk, layer) object is that layer's slice of the engine-neutral ``kvstash.layer_kv_token.v1``
(docs/chunk-format.md), so engines of the same model share chunks across devices, backends,
layouts and block sizes. Chunk keys are kvstash prefix keys over the prompt's token ids
(``KeyChain``). The scheduler claims the longest prefix of whole chunks present (one leased
``Lookup``), leaving at least one prompt token to compute; whole prompt chunks are stored
once computed, and the whole chunks of prompt + answer whose KV is final when the request
finishes. The worker side (``_vllm_worker``) moves the bytes; counters go to
vLLM's stats and ``/metrics`` (``_vllm_stats``). A daemon that is down, a failed lookup or
a failed load means vLLM recomputes.

Thread-safety: vLLM calls each side (scheduler, worker) from one thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

import kvstash
from kvstash.integrations._common import Connection, logger, split_options
from kvstash.integrations._kv_mover import make_mover
from kvstash.integrations._vllm_format import DEFAULT_CHUNK_TOKENS, EngineFormat, engine_format
from kvstash.integrations._vllm_stats import KvstashConnectorStats, KvstashPromMetrics
from kvstash.integrations._vllm_worker import ChunkOp, Worker

from vllm.distributed.kv_transfer.kv_connector.v1.base import (KVConnectorBase_V1,
                                                               KVConnectorMetadata,
                                                               KVConnectorRole)

LOAD_MODES = ("layerwise", "async")


@dataclass
class KvstashConnectorMetadata(KVConnectorMetadata):
    """What the scheduler side tells the workers for one step."""

    loads: List[ChunkOp] = field(default_factory=list)  # layer-wise, before this forward
    async_loads: List[ChunkOp] = field(default_factory=list)
    stores: List[ChunkOp] = field(default_factory=list)
    preempted: Set[str] = field(default_factory=set)


@dataclass
class _Request:
    req_id: str
    keys: List[bytes]  # one per full prompt chunk
    prompt_tokens: int
    block_ids: List[int]
    stored: int  # chunks already stored or known present
    owes_save: bool = False  # stores were sent to the workers


@dataclass
class _Claim:
    first: int  # tokens
    end: int
    lease_ids: List[int]  # per rank


class KvstashConnector(KVConnectorBase_V1):
    """vLLM KV connector over kvstashd (CPU backend; see the module docstring)."""

    def __init__(self, vllm_config: Any, role: KVConnectorRole, kv_cache_config: Any = None):
        super().__init__(vllm_config=vllm_config, role=role, kv_cache_config=kv_cache_config)
        params = dict(self._kv_transfer_config.kv_connector_extra_config or {})
        uri = params.pop("uri", "")
        chunk_tokens = params.pop("chunk_tokens", None)
        self._staging_bytes = int(float(params.pop("staging_mb", 512)) * (1 << 20))
        retry_interval_s = float(params.pop("retry_interval_s", 5.0))
        self._load_async = _load_mode(params.pop("load_mode", "layerwise")) == "async"
        self._store_answers = params.pop("store_answers", True)
        if not isinstance(self._store_answers, bool):
            raise kvstash.InvalidArgument(
                kvstash.StatusCode.INVALID_ARGUMENT,
                f"KvstashConnector: store_answers {self._store_answers!r} is not true or false")
        self._lease_ms = int(params.pop("lease_ms", 30000))
        ns_fields, client_options = split_options(params)
        # One namespace per tensor-parallel rank (each holds its own KV heads): the scheduler
        # looks chunks up in all of them, a worker moves its own rank's.
        self._format = engine_format(vllm_config, kv_cache_config)
        self._ranks, self._layers_n = _namespaces(vllm_config, self._format, chunk_tokens,
                                                  ns_fields)
        rank = 0
        if role == KVConnectorRole.WORKER:
            from vllm.distributed.parallel_state import get_tensor_model_parallel_rank
            rank = get_tensor_model_parallel_rank()
        self._namespace = self._ranks[rank]
        if role == KVConnectorRole.WORKER:
            self._ranks = [self._namespace]
        self._chunk_blocks = self._namespace.chunk_tokens // self._format.block_size
        self._conn = Connection(uri, client_options, lambda: self._ranks,
                                retry_interval_s=retry_interval_s, what="vLLM KvstashConnector",
                                own_params=("chunk_tokens", "load_mode", "lease_ms",
                                            "staging_mb", "store_answers"))
        self._conn.connect_now()
        self._requests: Dict[str, _Request] = {}  # scheduler side
        self._claims: Dict[str, _Claim] = {}
        self._pending_async: List[ChunkOp] = []
        self._pending_stores: List[ChunkOp] = []  # finished requests' answers
        self._stats = KvstashConnectorStats()  # scheduler side
        self._worker = Worker(self._conn, self._layers_n, self._namespace.chunk_tokens,
                              self._object_key, self._format.object_format, rank)

    def _object_key(self, chunk_key: bytes, layer: int,
                    ns: Optional[kvstash.Namespace] = None) -> bytes:
        ns = ns or self._namespace
        return ns.key_from_engine_hash(chunk_key + layer.to_bytes(2, "little"))

    def _object_keys(self, chunk_keys: List[bytes], ns: kvstash.Namespace) -> List[bytes]:
        """Keys of every (chunk, layer) object of one rank, chunk-major."""
        return [self._object_key(k, layer, ns) for k in chunk_keys
                for layer in range(self._layers_n)]

    # -- scheduler side --------------------------------------------------------------

    def get_num_new_matched_tokens(self, request: Any,
                                   num_computed_tokens: int) -> Tuple[Optional[int], bool]:
        prompt = list(request.prompt_token_ids or [])
        chunk_tokens = self._namespace.chunk_tokens
        # At least one prompt token is left to compute: vLLM needs its logits.
        usable = (len(prompt) - 1) // chunk_tokens
        conn = self._conn.get()
        if usable <= num_computed_tokens // chunk_tokens or conn is None:
            return 0, False
        client, ranks = conn
        req = self._request(request.request_id, prompt)
        keys = req.keys
        self._stats.add(lookups=1)
        try:
            # Every rank must hold a chunk for it to be claimed; the lookups run together.
            found = [f.result() for f in [
                client.lookup_async(ns, self._object_keys(keys[:usable], ns), self._lease_ms)
                for ns in ranks]]
        except kvstash.Error as e:
            self._stats.add(lookup_failures=1)
            logger.warning("KvstashConnector: lookup failed, recomputing: %s", e)
            return 0, False
        end = min(f.hit_count for f in found) // self._layers_n * chunk_tokens
        if end <= num_computed_tokens:
            # vLLM's own cache covers them; they need no store either.
            req.stored = max(req.stored, end // chunk_tokens)
            return 0, False
        self._claims[request.request_id] = _Claim(num_computed_tokens, end,
                                                  [f.lease_id for f in found])
        return end - num_computed_tokens, self._load_async

    def update_state_after_alloc(self, request: Any, blocks: Any, num_external_tokens: int):
        if num_external_tokens == 0:
            self._claims.pop(request.request_id, None)
            return
        if self._load_async:
            # The request waits for its loads out of the batch, so they go out this step.
            claim = self._claims.pop(request.request_id)
            req = self._request(request.request_id, request.prompt_token_ids)
            req.block_ids = list(blocks.get_block_ids()[0])
            self._pending_async += self._claim_ops(req, claim)

    def build_connector_meta(self, scheduler_output: Any) -> KVConnectorMetadata:
        out = scheduler_output
        meta = KvstashConnectorMetadata(async_loads=self._pending_async,
                                        stores=self._pending_stores,
                                        preempted=set(out.preempted_req_ids or ()))
        self._pending_async, self._pending_stores = [], []
        for new in out.scheduled_new_reqs:
            req = self._request(new.req_id, new.prompt_token_ids)
            req.block_ids = list(new.block_ids[0])
            self._plan_step(meta, req, new.num_computed_tokens, out.num_scheduled_tokens)
        cached = out.scheduled_cached_reqs
        for i, req_id in enumerate(cached.req_ids):
            req = self._requests.get(req_id)
            if req is None:
                continue
            new_blocks = cached.new_block_ids[i]
            if new_blocks is not None:
                if req_id in cached.resumed_req_ids:
                    req.block_ids = list(new_blocks[0])
                else:
                    req.block_ids.extend(new_blocks[0])
            self._plan_step(meta, req, cached.num_computed_tokens[i], out.num_scheduled_tokens)
        return meta

    def _plan_step(self, meta: KvstashConnectorMetadata, req: _Request, computed: int,
                   scheduled: Dict[str, int]) -> None:
        """Loads claimed before this step (a new or a resumed request), then stores."""
        claim = self._claims.pop(req.req_id, None)
        if claim is not None:
            meta.loads += self._claim_ops(req, claim)
        self._plan_stores(meta, req, computed + scheduled[req.req_id])

    def _request(self, req_id: str, prompt: Any) -> _Request:
        """The request's state from its first lookup on, kept across preemptions (it may
        still owe saves)."""
        req = self._requests.get(req_id)
        if req is None:
            prompt = list(prompt or [])
            req = self._requests[req_id] = _Request(req_id, self._namespace.prefix_keys(prompt),
                                                    len(prompt), [], stored=0)
        return req

    def _claim_ops(self, req: _Request, claim: _Claim) -> List[ChunkOp]:
        first, end = (t // self._namespace.chunk_tokens for t in (claim.first, claim.end))
        req.stored = max(req.stored, end)  # already in kvstash
        return [self._op(req, c, claim.lease_ids) for c in range(first, end)]

    def _op(self, req: _Request, chunk: int, lease_ids: Optional[List[int]] = None) -> ChunkOp:
        n = self._chunk_blocks
        return ChunkOp(req.req_id, req.keys[chunk], req.block_ids[chunk * n:(chunk + 1) * n],
                       lease_ids or [])

    def _plan_stores(self, meta: KvstashConnectorMetadata, req: _Request, computed: int) -> None:
        """Stores every prompt chunk whose tokens are all computed once this step ran."""
        done = min(min(computed, req.prompt_tokens) // self._namespace.chunk_tokens, len(req.keys))
        ops = [self._op(req, c) for c in range(req.stored, done)]
        meta.stores += ops
        req.stored = max(req.stored, done)
        req.owes_save = req.owes_save or bool(ops)

    def request_finished(self, request: Any, block_ids: List[int]) -> Tuple[bool, Optional[dict]]:
        """Stores the chunks the answer completed (unless ``store_answers`` is off) and keeps
        the request's blocks until the workers report its stores done."""
        req = self._requests.pop(request.request_id, None)
        self._claims.pop(request.request_id, None)
        if req is None:
            return False, None
        if self._store_answers:
            self._plan_answer(req, request, list(block_ids))
        return req.owes_save, None

    def _plan_answer(self, req: _Request, request: Any, block_ids: List[int]) -> None:
        """The whole chunks of prompt + answer whose KV is final: computed and processed
        (not in flight), which leaves out the last sampled token and any rejected draft."""
        tokens = list(request.all_token_ids)
        final = request.num_computed_tokens - getattr(request, "num_in_flight_tokens", 0)
        final = min(final, len(tokens) - 1)
        chunk, n = self._namespace.chunk_tokens, self._chunk_blocks
        done = min(final // chunk, len(block_ids) // n)
        if done <= req.stored:
            return
        keys = self._namespace.prefix_keys(tokens[:done * chunk])
        ops = [ChunkOp(req.req_id, keys[c], block_ids[c * n:(c + 1) * n])
               for c in range(req.stored, done)]
        self._pending_stores += ops
        req.stored, req.owes_save = done, True

    def get_kv_connector_stats(self) -> Optional[KvstashConnectorStats]:
        """This side's counters since the last call (vLLM aggregates both sides)."""
        stats = self._stats if self._role == KVConnectorRole.SCHEDULER else self._worker.stats
        if stats.is_empty():
            return None
        out = KvstashConnectorStats(data=dict(stats.data))
        stats.reset()
        return out

    @classmethod
    def requires_piecewise_for_cudagraph(cls, extra_config: Dict[str, Any]) -> bool:
        """True in every load mode: stores (and layer-wise loads) run in the per-layer hooks,
        which a full CUDA graph would skip on replay."""
        return True

    @classmethod
    def build_kv_connector_stats(cls, data: Optional[Dict[str, Any]] = None
                                 ) -> KvstashConnectorStats:
        return KvstashConnectorStats(data=dict(data or {}))

    @classmethod
    def build_prom_metrics(cls, vllm_config: Any, metric_types: Dict[type, type],
                           labelnames: List[str],
                           per_engine_labelvalues: Dict[int, List[object]]) -> KvstashPromMetrics:
        return KvstashPromMetrics(vllm_config, metric_types, labelnames, per_engine_labelvalues)

    # -- worker side -----------------------------------------------------------------

    def register_kv_caches(self, kv_caches: Dict[str, Any]) -> None:
        from vllm.model_executor.models.utils import extract_layer_index
        layers = sorted(kv_caches.items(), key=lambda item: extract_layer_index(item[0]))
        if len(layers) != self._layers_n:
            raise kvstash.InvalidArgument(
                kvstash.StatusCode.INVALID_ARGUMENT,
                f"KvstashConnector: {len(layers)} KV caches for {self._layers_n} layers")
        try:
            codec = self._format.codec([cache for _, cache in layers])
        except ValueError as e:
            raise kvstash.Error(kvstash.StatusCode.UNIMPLEMENTED,
                                f"KvstashConnector: {e}") from e
        device = layers[0][1].device
        mover = make_mover(device, self._format.spec.layer_bytes(self._namespace.chunk_tokens),
                           self._staging_bytes)
        self._worker.register(layers, [codec] * len(layers), mover)

    def handle_preemptions(self, kv_connector_metadata: KVConnectorMetadata) -> None:
        if isinstance(kv_connector_metadata, KvstashConnectorMetadata) and \
                kv_connector_metadata.preempted:
            self._worker.wait_saves(kv_connector_metadata.preempted)

    def bind_connector_metadata(self, connector_metadata: KVConnectorMetadata) -> None:
        super().bind_connector_metadata(connector_metadata)
        if isinstance(connector_metadata, KvstashConnectorMetadata):
            self._worker.begin_step(connector_metadata.stores)

    def start_load_kv(self, forward_context: Any, **kwargs: Any) -> None:
        meta = self._get_connector_metadata()
        if isinstance(meta, KvstashConnectorMetadata):
            self._worker.start_load(meta.loads, asynchronous=False)
            self._worker.start_load(meta.async_loads, asynchronous=True)

    def wait_for_layer_load(self, layer_name: str) -> None:
        self._worker.wait_layer(layer_name)

    def save_kv_layer(self, layer_name: str, kv_layer: Any, attn_metadata: Any,
                      **kwargs: Any) -> None:
        self._worker.save_layer(layer_name)

    def wait_for_save(self) -> None:
        # Puts keep running; only loads of this step must be in the cache before it ends.
        # A step without a forward (only finished requests' answers to store) saves here.
        self._worker.wait_all_layers()
        self._worker.save_unsaved_layers()

    def get_finished(self, finished_req_ids: Set[str]
                     ) -> Tuple[Optional[Set[str]], Optional[Set[str]]]:
        sending = self._worker.finished_saves(set(finished_req_ids))
        recving = self._worker.finished_loads()
        return sending or None, recving or None

    def get_block_ids_with_load_errors(self) -> Set[int]:
        return self._worker.load_errors()

    def shutdown(self) -> None:
        self._worker.wait_saves()
        self._conn.close()


def _load_mode(mode: Any) -> str:
    if mode not in LOAD_MODES:
        raise kvstash.InvalidArgument(
            kvstash.StatusCode.INVALID_ARGUMENT,
            f"KvstashConnector: load_mode {mode!r} is not one of {', '.join(LOAD_MODES)}")
    return mode

def _namespaces(vllm_config: Any, fmt: EngineFormat, chunk_tokens: Any,
                fields: Dict[str, Any]) -> Tuple[List[kvstash.Namespace], int]:
    """The namespaces of this engine's objects, one per tensor-parallel rank, and its number
    of layers."""
    model, parallel = vllm_config.model_config, vllm_config.parallel_config
    if parallel.pipeline_parallel_size != 1:
        raise kvstash.Error(kvstash.StatusCode.UNIMPLEMENTED,
                            "KvstashConnector: pipeline parallelism is not supported yet")
    if getattr(parallel, "decode_context_parallel_size", 1) != 1:
        raise kvstash.Error(kvstash.StatusCode.UNIMPLEMENTED,
                            "KvstashConnector: decode context parallelism is not supported yet")
    block = fmt.block_size
    if chunk_tokens is None:
        chunk_tokens = -(-DEFAULT_CHUNK_TOKENS // block) * block
    chunk_tokens = int(chunk_tokens)
    if chunk_tokens < block or chunk_tokens % block:
        raise kvstash.InvalidArgument(
            kvstash.StatusCode.INVALID_ARGUMENT,
            f"KvstashConnector: chunk_tokens {chunk_tokens} is not a multiple of the "
            f"{block}-token block size")
    layers = model.get_num_layers(parallel)
    tp = parallel.tensor_parallel_size
    return [kvstash.Namespace(
        model=model.model, num_layers=layers, kv_heads=fmt.spec.kv_heads,
        head_dim=fmt.spec.head_size, dtype=fmt.dtype, chunk_tokens=chunk_tokens,
        tp_rank=rank, tp_size=tp, kv_layout=fmt.kv_layout, **fields)
        for rank in range(tp)], layers
