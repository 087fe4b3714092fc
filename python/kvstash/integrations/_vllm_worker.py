"""The worker side of KvstashConnector: moving (chunk, layer) objects between kvstash and
vLLM's KV cache tensors without blocking the forward where vLLM allows it.

- Layer-wise loads: ``start_load`` submits one get per (request, layer) before the forward;
  ``wait_layer`` waits for a layer's gets just before that layer's attention reads them.
- Asynchronous loads: submitted after the forward of the step vLLM scheduled them in,
  reported through ``finished`` once complete, so other requests compute meanwhile.
- Stores: one put per layer submitted as soon as the layer's attention wrote its KV,
  overlapping the later layers; pages stay allocated until the put completed (vLLM keeps
  a finished request's blocks until ``finished`` reports it, and preempted requests' puts
  are waited for before their blocks can be reused).

A failed or short load marks the chunk's blocks for recomputation, and the request's stores
of the same step are dropped, so nothing computed from wrong KV is ever stored.

Thread-safety: vLLM calls a worker from one thread; the stats are also read from it.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import kvstash
from kvstash.integrations._common import Connection, logger
from kvstash.integrations._vllm_stats import KvstashConnectorStats

# Recorded with every object: one (chunk, layer) run of vLLM CPU-backend pages.
PAGE_FORMAT = 0x564C4350  # "VLCP"


@dataclass
class ChunkOp:
    """One chunk to load or store for a request: its prefix key and vLLM block ids."""

    req_id: str
    key: bytes
    block_ids: List[int]
    lease_ids: List[int] = field(default_factory=list)  # per tensor-parallel rank


@dataclass
class _Load:
    """Gets in flight for one request and one layer (or all layers when asynchronous)."""

    req_id: str
    ops: List[ChunkOp]
    layers: List[int]
    views: List[Any]  # per (layer, op), layer-major; staged copies where chunks span blocks
    future: Optional[Future]


@dataclass
class _Save:
    """One layer's puts in flight, and the pages they read (kept alive until done)."""

    future: Future
    req_ids: Set[str]
    views: List[Any]


class Worker:
    """Loads and stores of one vLLM worker (see the module docstring)."""

    def __init__(self, conn: Connection, layers_n: int, chunk_tokens: int,
                 object_key: Callable[[bytes, int], bytes], rank: int = 0) -> None:
        self._conn = conn
        self._rank = rank
        self._layers_n = layers_n
        self._chunk_tokens = chunk_tokens
        self._object_key = object_key
        self._caches: List[Any] = []
        self._layer_index: Dict[str, int] = {}
        self._layer_loads: Dict[int, List[_Load]] = {}  # this step's layer-wise loads
        self._async_loads: List[_Load] = []
        self._failed_reqs: Set[str] = set()  # requests whose load failed this step
        self._load_errors: Set[int] = set()
        self._stores: List[ChunkOp] = []  # this step's
        self._saves: List[_Save] = []
        self._owed: Set[str] = set()  # requests with stores, reported once finished and saved
        self._finishing: Set[str] = set()
        self.stats = KvstashConnectorStats()

    def register(self, caches: List[Tuple[str, Any]]) -> None:
        """Per layer in layer order: (layer name, cache tensor)."""
        self._caches = [cache for _, cache in caches]
        self._layer_index = {name: i for i, (name, _) in enumerate(caches)}

    # -- loads ---------------------------------------------------------------------------

    def start_load(self, loads: List[ChunkOp], asynchronous: bool) -> None:
        """Submits gets: per request and layer, or per request for asynchronous loads."""
        by_req: Dict[str, List[ChunkOp]] = {}
        for op in loads:
            by_req.setdefault(op.req_id, []).append(op)
        for req_id, ops in by_req.items():
            if asynchronous:
                self._async_loads.append(self._submit_get(req_id, ops, range(self._layers_n)))
                continue
            for layer in range(self._layers_n):
                self._layer_loads.setdefault(layer, []).append(
                    self._submit_get(req_id, ops, [layer]))

    def wait_layer(self, layer_name: str) -> None:
        """Blocks until the layer-wise gets of ``layer_name`` landed in the cache."""
        layer = self._layer_index.get(layer_name)
        pending = self._layer_loads.pop(layer, None) if layer is not None else None
        for load in pending or ():
            self._complete(load, wait=True)

    def wait_all_layers(self) -> None:
        for layer in sorted(self._layer_loads):
            for load in self._layer_loads.pop(layer):
                self._complete(load, wait=True)

    def _submit_get(self, req_id: str, ops: List[ChunkOp], layers: Any) -> _Load:
        layers = list(layers)
        views = [self._view(layer, op) for layer in layers for op in ops]
        load = _Load(req_id, ops, layers, views, None)
        conn = self._conn.get()
        if conn is not None:
            client, (ns,) = conn
            keys = [self._object_key(op.key, layer) for layer in layers for op in ops]
            try:
                lease = ops[0].lease_ids[self._rank] if ops[0].lease_ids else 0
                load.future = client.get_into_async(ns, keys, views, lease)
            except kvstash.Error as e:
                logger.warning("KvstashConnector: load of %d chunks not started: %s",
                               len(ops), e)
        return load

    def _complete(self, load: _Load, wait: bool) -> bool:
        """Checks a finished load into the cache; False while it is still running."""
        if load.future is not None and not wait and not load.future.done():
            return False
        start = time.monotonic()
        sizes = self._result(load.future, "load", len(load.views))
        self.stats.add(load_wait_seconds=time.monotonic() - start)
        n = len(load.ops)
        for i, op in enumerate(load.ops):
            chunk = [sizes[j * n + i] for j in range(len(load.layers))]
            views = [load.views[j * n + i] for j in range(len(load.layers))]
            if all(got == v.nbytes for got, v in zip(chunk, views)):
                self.stats.add(loaded_objects=len(views), loaded_bytes=sum(chunk))
                self._scatter(op, load.layers, views)
            else:
                self.stats.add(load_failed_objects=sum(
                    got != v.nbytes for got, v in zip(chunk, views)))
                self._load_errors.update(op.block_ids)
                self._failed_reqs.add(op.req_id)
        return True

    def finished_loads(self) -> Set[str]:
        """Requests whose asynchronous loads completed (failed blocks already reported)."""
        done = {load.req_id for load in self._async_loads if self._complete(load, wait=False)}
        self._async_loads = [load for load in self._async_loads if load.req_id not in done]
        return done

    def load_errors(self) -> Set[int]:
        errors, self._load_errors = self._load_errors, set()
        return errors

    # -- stores --------------------------------------------------------------------------

    def begin_step(self, stores: List[ChunkOp]) -> None:
        self._stores = stores
        self._failed_reqs = set()
        self._owed.update(op.req_id for op in stores)

    def save_layer(self, layer_name: str) -> None:
        """Submits this step's puts of one layer, whose KV the attention just wrote."""
        layer = self._layer_index.get(layer_name)
        ops = [op for op in self._stores if op.req_id not in self._failed_reqs]
        skipped = len(self._stores) - len(ops)
        if skipped:
            self.stats.add(store_skipped_objects=skipped)
        if layer is None or not ops:
            return
        conn = self._conn.get()
        if conn is None:
            self.stats.add(store_failed_objects=len(ops))
            return
        client, (ns,) = conn
        keys = [self._object_key(op.key, layer) for op in ops]
        views = [self._view(layer, op) for op in ops]
        try:
            future = client.put_async(ns, keys, views, tokens=self._chunk_tokens,
                                      format=PAGE_FORMAT)
        except kvstash.Error as e:
            logger.warning("KvstashConnector: store of %d chunks not started: %s", len(ops), e)
            self.stats.add(store_failed_objects=len(ops))
            return
        self._saves.append(_Save(future, {op.req_id for op in ops}, views))

    def wait_saves(self, req_ids: Optional[Set[str]] = None) -> None:
        """Waits for the puts of ``req_ids`` (all when None), e.g. before their blocks are
        reused after a preemption."""
        for save in self._saves:
            if req_ids is None or save.req_ids & req_ids:
                save.future.exception()  # waits; errors are counted when reaped
        self._reap_saves()

    def _reap_saves(self) -> None:
        running = []
        for save in self._saves:
            if not save.future.done():
                running.append(save)
                continue
            stored = self._result(save.future, "store", len(save.views))
            self.stats.add(stored_objects=sum(s is True for s in stored),
                           store_declined_objects=sum(s is False for s in stored),
                           store_failed_objects=sum(s is None for s in stored),
                           stored_bytes=sum(v.nbytes for s, v in zip(stored, save.views) if s))
        self._saves = running

    def finished_saves(self, finished_req_ids: Set[str]) -> Set[str]:
        """Finished requests (ever named in ``finished_req_ids``) whose puts all completed."""
        self._finishing.update(finished_req_ids & self._owed)
        self._reap_saves()
        busy = set().union(*(save.req_ids for save in self._saves))
        done = self._finishing - busy
        self._finishing -= done
        self._owed -= done
        return done

    # -- pages ---------------------------------------------------------------------------

    def _view(self, layer: int, op: ChunkOp) -> Any:
        """The chunk's pages of one layer: in place for one block, else a staged copy."""
        cache = self._caches[layer]
        if len(op.block_ids) == 1:
            return cache[op.block_ids[0]]
        import torch
        return cache.index_select(0, torch.tensor(op.block_ids))

    def _scatter(self, op: ChunkOp, layers: List[int], views: List[Any]) -> None:
        if len(op.block_ids) == 1:
            return
        import torch
        index = torch.tensor(op.block_ids)
        for layer, staged in zip(layers, views):
            self._caches[layer].index_copy_(0, index, staged)

    @staticmethod
    def _result(future: Optional[Future], what: str, n: int) -> List[Any]:
        """The per-object results of a call, None for each object when it failed."""
        if future is None:
            return [None] * n
        try:
            return list(future.result())
        except kvstash.Error as e:
            logger.warning("KvstashConnector: %s of %d objects failed: %s", what, n, e)
            return [None] * n
