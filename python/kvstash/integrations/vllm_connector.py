"""kvstash as a vLLM KV connector (``KVConnectorBase_V1``): prompts' KV stored in kvstash and
loaded by any engine of the same model, instead of recomputed.

    LLM(model=..., kv_transfer_config=KVTransferConfig(
        kv_connector="KvstashConnector",
        kv_connector_module_path="kvstash.integrations.vllm_connector",
        kv_role="kv_both",
        kv_connector_extra_config={"uri": "ucx://127.0.0.1:7071"}))

``kv_connector_extra_config``: ``uri`` (required), ``chunk_blocks`` (vLLM blocks per kvstash
chunk, default 1), ``tenant``, ``revision``, ``hash_algo``, ``retry_interval_s`` and any
:func:`kvstash.default_options` field; anything else is refused at start.

What this version does: vLLM's CPU backend (each layer's cache one tensor of pages,
``[num_blocks, kv_heads, block_size, 2 * head_dim]``, packed by the backend: a (layer,
block) page is stored as opaque bytes under a format tag, in a namespace that pins the
layout, so no other layout misreads it), one KV cache group, no tensor parallelism.
Chunk keys are kvstash prefix keys over the prompt's token ids (``KeyChain``), one chunk
object per (chunk, layer), read and written in place in vLLM's cache. The scheduler claims
the longest prefix of whole chunks present (one ``Lookup``), leaving at least one prompt
token to compute; the worker loads them before the forward (synchronously) and stores each
prompt chunk once the step that computed it has run. A daemon that is down or a failed
lookup means no claim: vLLM recomputes.

Thread-safety: vLLM calls each side (scheduler, worker) from one thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import kvstash
from kvstash.integrations._common import Connection, logger, split_options

from vllm.distributed.kv_transfer.kv_connector.v1.base import (KVConnectorBase_V1,
                                                               KVConnectorMetadata,
                                                               KVConnectorRole)

# Recorded with every object: one (chunk, layer) run of vLLM CPU-backend pages.
PAGE_FORMAT = 0x564C4350  # "VLCP"


@dataclass
class _ChunkOp:
    """One chunk to load or store: its prefix key and vLLM block ids."""

    key: bytes
    block_ids: List[int]


@dataclass
class KvstashConnectorMetadata(KVConnectorMetadata):
    """What the scheduler side tells the workers for one step."""

    loads: List[_ChunkOp] = field(default_factory=list)
    stores: List[_ChunkOp] = field(default_factory=list)


@dataclass
class _Request:
    keys: List[bytes]  # one per full prompt chunk
    prompt_tokens: int
    block_ids: List[int]
    stored: int  # chunks already stored or known present


class KvstashConnector(KVConnectorBase_V1):
    """vLLM KV connector over kvstashd (CPU backend; see the module docstring)."""

    def __init__(self, vllm_config: Any, role: KVConnectorRole, kv_cache_config: Any = None):
        super().__init__(vllm_config=vllm_config, role=role, kv_cache_config=kv_cache_config)
        params = dict(self._kv_transfer_config.kv_connector_extra_config or {})
        uri = params.pop("uri", "")
        chunk_blocks = int(params.pop("chunk_blocks", 1))
        retry_interval_s = float(params.pop("retry_interval_s", 5.0))
        ns_fields, client_options = split_options(params)
        self._namespace, self._layers_n = _namespace(vllm_config, kv_cache_config, chunk_blocks,
                                                     ns_fields)
        self._block_size = self._namespace.chunk_tokens // chunk_blocks
        self._chunk_blocks = chunk_blocks
        self._conn = Connection(uri, client_options, lambda: [self._namespace],
                                retry_interval_s=retry_interval_s, what="vLLM KvstashConnector")
        self._conn.connect_now()
        self._requests: Dict[str, _Request] = {}  # scheduler side
        # request -> (first, end) tokens to load, and the prompt's chunk keys
        self._claims: Dict[str, Tuple[int, int, List[bytes]]] = {}
        self._caches: List[Any] = []  # worker side: per layer, in layer order
        self._load_errors: set = set()

    # -- keys ------------------------------------------------------------------------

    def _object_keys(self, chunk_keys: List[bytes]) -> List[bytes]:
        """Keys of every (chunk, layer) object, chunk-major."""
        ns = self._namespace
        return [ns.key_from_engine_hash(k + layer.to_bytes(2, "little"))
                for k in chunk_keys for layer in range(self._layers_n)]

    # -- scheduler side --------------------------------------------------------------

    def get_num_new_matched_tokens(self, request: Any,
                                   num_computed_tokens: int) -> Tuple[Optional[int], bool]:
        prompt = list(request.prompt_token_ids or [])
        chunk_tokens = self._namespace.chunk_tokens
        # At least one prompt token is left to compute: vLLM needs its logits.
        usable = (len(prompt) - 1) // chunk_tokens
        conn = self._conn.get()
        if usable <= 0 or conn is None:
            return 0, False
        client, (ns,) = conn
        try:
            keys = ns.prefix_keys(prompt)
            hit = client.lookup(ns, self._object_keys(keys[:usable])).hit_count // self._layers_n
        except kvstash.Error as e:
            logger.warning("KvstashConnector: lookup failed, recomputing: %s", e)
            return 0, False
        end = hit * chunk_tokens
        if end <= num_computed_tokens:
            return 0, False
        self._claims[request.request_id] = (num_computed_tokens, end, keys)
        return end - num_computed_tokens, False

    def update_state_after_alloc(self, request: Any, blocks: Any, num_external_tokens: int):
        if num_external_tokens == 0:
            self._claims.pop(request.request_id, None)

    def build_connector_meta(self, scheduler_output: Any) -> KVConnectorMetadata:
        meta = KvstashConnectorMetadata()
        out = scheduler_output
        for new in out.scheduled_new_reqs:
            prompt = list(new.prompt_token_ids or [])
            claim = self._claims.pop(new.req_id, None)
            keys = claim[2] if claim is not None else self._namespace.prefix_keys(prompt)
            req = _Request(keys=keys, prompt_tokens=len(prompt), block_ids=list(new.block_ids[0]),
                           stored=0)
            self._requests[new.req_id] = req
            if claim is not None:
                first, end = (t // self._namespace.chunk_tokens for t in claim[:2])
                meta.loads += [self._op(req, c) for c in range(first, end)]
                req.stored = end
            self._plan_stores(meta, req, new.num_computed_tokens + out.num_scheduled_tokens[new.req_id])
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
            self._plan_stores(meta, req,
                              cached.num_computed_tokens[i] + out.num_scheduled_tokens[req_id])
        return meta

    def _op(self, req: _Request, chunk: int) -> _ChunkOp:
        n = self._chunk_blocks
        return _ChunkOp(req.keys[chunk], req.block_ids[chunk * n:(chunk + 1) * n])

    def _plan_stores(self, meta: KvstashConnectorMetadata, req: _Request, computed: int) -> None:
        """Stores every prompt chunk whose tokens are all computed once this step ran."""
        done = min(min(computed, req.prompt_tokens) // self._namespace.chunk_tokens, len(req.keys))
        meta.stores += [self._op(req, c) for c in range(req.stored, done)]
        req.stored = max(req.stored, done)

    def request_finished(self, request: Any, block_ids: List[int]) -> Tuple[bool, Optional[dict]]:
        self._requests.pop(request.request_id, None)
        self._claims.pop(request.request_id, None)
        return False, None

    # -- worker side -----------------------------------------------------------------

    def register_kv_caches(self, kv_caches: Dict[str, Any]) -> None:
        from vllm.model_executor.models.utils import extract_layer_index
        layers = sorted(kv_caches.items(), key=lambda item: extract_layer_index(item[0]))
        if len(layers) != self._layers_n:
            raise kvstash.InvalidArgument(
                kvstash.StatusCode.INVALID_ARGUMENT,
                f"KvstashConnector: {len(layers)} KV caches for {self._layers_n} layers")
        self._caches = [cache for _, cache in layers]

    def _views(self, op: _ChunkOp) -> List[Any]:
        """Per layer, the chunk's pages: in place for one block, else a staging copy."""
        if len(op.block_ids) == 1:
            return [cache[op.block_ids[0]] for cache in self._caches]
        import torch
        index = torch.tensor(op.block_ids)
        return [cache.index_select(0, index) for cache in self._caches]

    def start_load_kv(self, forward_context: Any, **kwargs: Any) -> None:
        meta = self._get_connector_metadata()
        if not isinstance(meta, KvstashConnectorMetadata) or not meta.loads:
            return
        views = [self._views(op) for op in meta.loads]
        got = self._transfer(meta.loads, views, load=True)
        for i, op in enumerate(meta.loads):
            layers = got[i * self._layers_n:(i + 1) * self._layers_n]
            if not all(n == v.nbytes for n, v in zip(layers, views[i])):
                self._load_errors.update(op.block_ids)
            elif len(op.block_ids) > 1:
                import torch
                index = torch.tensor(op.block_ids)
                for cache, staged in zip(self._caches, views[i]):
                    cache.index_copy_(0, index, staged)

    def wait_for_layer_load(self, layer_name: str) -> None:
        return  # loads are synchronous, done before the forward

    def save_kv_layer(self, layer_name: str, kv_layer: Any, attn_metadata: Any,
                      **kwargs: Any) -> None:
        return  # chunks are stored in wait_for_save, after the step computed every layer

    def wait_for_save(self) -> None:
        if not self.has_connector_metadata():
            return
        meta = self._get_connector_metadata()
        if isinstance(meta, KvstashConnectorMetadata) and meta.stores:
            self._transfer(meta.stores, [self._views(op) for op in meta.stores], load=False)

    def _transfer(self, ops: List[_ChunkOp], views: List[List[Any]], load: bool) -> List[Any]:
        """Gets (sizes, None = miss) or puts every (chunk, layer) object of `ops`."""
        flat = [v for per_chunk in views for v in per_chunk]
        conn = self._conn.get()
        if conn is None:
            return [None] * len(flat)
        client, (ns,) = conn
        keys = self._object_keys([op.key for op in ops])
        try:
            if load:
                return client.get_into(ns, keys, flat)
            return client.put(ns, keys, flat, tokens=self._namespace.chunk_tokens,
                              format=PAGE_FORMAT)
        except kvstash.Error as e:
            logger.warning("KvstashConnector: %s of %d chunks failed: %s",
                           "load" if load else "store", len(ops), e)
            return [None] * len(flat)

    def get_block_ids_with_load_errors(self) -> set:
        errors, self._load_errors = self._load_errors, set()
        return errors

    def shutdown(self) -> None:
        self._conn.close()


def _namespace(vllm_config: Any, kv_cache_config: Any, chunk_blocks: int,
               fields: Dict[str, Any]) -> Tuple[kvstash.Namespace, int]:
    """The namespace of this engine's pages, and its number of layers."""
    from vllm.platforms import current_platform
    model, parallel, cache = (vllm_config.model_config, vllm_config.parallel_config,
                              vllm_config.cache_config)
    if not current_platform.is_cpu():
        raise kvstash.Error(kvstash.StatusCode.UNIMPLEMENTED,
                            "KvstashConnector: only vLLM's CPU backend is supported so far")
    if parallel.tensor_parallel_size != 1 or parallel.pipeline_parallel_size != 1:
        raise kvstash.Error(kvstash.StatusCode.UNIMPLEMENTED,
                            "KvstashConnector: tensor and pipeline parallelism not supported yet")
    if chunk_blocks < 1:
        raise kvstash.InvalidArgument(kvstash.StatusCode.INVALID_ARGUMENT,
                                      f"KvstashConnector: chunk_blocks is {chunk_blocks}")
    block_size = cache.block_size
    if kv_cache_config is not None and kv_cache_config.kv_cache_groups:
        if len(kv_cache_config.kv_cache_groups) != 1:
            raise kvstash.Error(kvstash.StatusCode.UNIMPLEMENTED,
                                "KvstashConnector: one KV cache group only")
        block_size = kv_cache_config.kv_cache_groups[0].kv_cache_spec.block_size
    dtype = str(cache.cache_dtype)
    if dtype == "auto":
        dtype = str(model.dtype).replace("torch.", "")
    layers = model.get_num_layers(parallel)
    ns = kvstash.Namespace(
        model=model.model, num_layers=layers, kv_heads=model.get_num_kv_heads(parallel),
        head_dim=model.get_head_size(), dtype=dtype, chunk_tokens=block_size * chunk_blocks,
        kv_layout=f"vllm.cpu.page.v1;block_size={block_size}", **fields)
    return ns, layers
