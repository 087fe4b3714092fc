"""The worker side of KvstashConnector: moving (chunk, layer) objects between kvstash and
vLLM's KV cache without blocking the forward where vLLM allows it.

- Layer-wise loads: ``start_load`` submits one get per (request, layer) before the forward,
  into host staging slots; ``wait_layer`` waits for a layer's gets, writes them into the
  cache (on a GPU: on a side stream the compute stream then waits for) just before that
  layer's attention reads them.
- Asynchronous loads: submitted with the step vLLM scheduled them in, reported through
  ``finished_loads`` once in the cache, so other requests compute meanwhile.
- Stores: each layer's objects are copied out as soon as the layer's attention wrote its KV
  (on a GPU: after an event on the compute stream, on a side stream), then put; pages stay
  allocated until the put completed (vLLM keeps a finished request's blocks until
  ``finished_saves`` reports it; a preempted request's puts are waited for).

Objects are in the engine-neutral format of the codec (``_kv_codec``), or a backend's
opaque pages where it cannot be decoded. A failed or short load marks the chunk's blocks
for recomputation and drops the request's stores of the same step, so nothing computed
from wrong KV is ever stored. No free staging slot: that load fails, that store is skipped.

Thread-safety: vLLM calls a worker from one thread; the stats are also read from it.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import kvstash
from kvstash.integrations._common import Connection, logger
from kvstash.integrations._kv_codec import PageCodec
from kvstash.integrations._kv_mover import Mover, Staged
from kvstash.integrations._vllm_stats import KvstashConnectorStats


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
    slots: List[Optional[Staged]]  # per (layer, op), layer-major; None: no slot
    future: Optional[Future]
    landed: bool = False  # the get finished and its copies into the cache started
    copying: List[Staged] = field(default_factory=list)  # slots being written to the cache


@dataclass
class _Save:
    """One layer's objects of one step: copied out, then put."""

    ops: List[ChunkOp]
    layer: int
    slots: List[Staged]
    future: Optional[Future] = None  # the put, once every copy finished


class Worker:
    """Loads and stores of one vLLM worker (see the module docstring)."""

    def __init__(self, conn: Connection, layers_n: int, chunk_tokens: int,
                 object_key: Callable[[bytes, int], bytes], object_format: int,
                 rank: int = 0) -> None:
        self._conn = conn
        self._rank = rank
        self._layers_n = layers_n
        self._chunk_tokens = chunk_tokens
        self._object_key = object_key
        self._format = object_format
        self._caches: List[Any] = []
        self._codecs: List[PageCodec] = []
        self._mover: Optional[Mover] = None
        self._nbytes = 0
        self._layer_index: Dict[str, int] = {}
        self._layer_loads: Dict[int, List[_Load]] = {}  # this step's layer-wise loads
        self._async_loads: List[_Load] = []
        self._draining: List[Staged] = []  # load slots whose copy into the cache runs
        self._failed_reqs: Set[str] = set()  # requests whose load failed this step
        self._load_errors: Set[int] = set()
        self._stores: List[ChunkOp] = []  # this step's
        self._saved: Set[int] = set()  # layers whose stores of this step went out
        self._saves: List[_Save] = []
        self._owed: Set[str] = set()  # requests with stores, reported once finished and saved
        self._finishing: Set[str] = set()
        self.stats = KvstashConnectorStats()

    def register(self, caches: List[Tuple[str, Any]], codecs: Sequence[PageCodec],
                 mover: Mover) -> None:
        """Per layer in layer order: (layer name, cache view) and the view's codec."""
        self._caches = [cache for _, cache in caches]
        self._codecs = list(codecs)
        self._layer_index = {name: i for i, (name, _) in enumerate(caches)}
        self._mover = mover
        self._nbytes = self._codecs[0].spec.layer_bytes(self._chunk_tokens)

    # -- loads ---------------------------------------------------------------------------

    def start_load(self, loads: List[ChunkOp], asynchronous: bool) -> None:
        """Submits gets: per request and layer, or per request for asynchronous loads."""
        if loads:
            self._mover.start_load()
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
        """Blocks until the layer-wise gets of ``layer_name`` landed; orders the layer's
        attention after their copies into the cache."""
        layer = self._layer_index.get(layer_name)
        if layer is not None:
            self._wait_loads(layer)

    def wait_all_layers(self) -> None:
        for layer in sorted(self._layer_loads):
            self._wait_loads(layer)

    def _wait_loads(self, layer: int) -> None:
        for load in self._layer_loads.pop(layer, ()):
            self._land(load, wait=True)
            for staged in load.copying:
                self._mover.before_compute(staged)
            self._draining += load.copying
        self._release_drained()

    def _submit_get(self, req_id: str, ops: List[ChunkOp], layers: Any) -> _Load:
        layers = list(layers)
        slots = [self._mover.slot_in(self._nbytes) for _ in layers for _ in ops]
        load = _Load(req_id, ops, layers, slots, None)
        short = sum(s is None for s in slots)
        if short:
            self.stats.add(staging_full_objects=short)
        conn = self._conn.get()
        if conn is not None:
            client, (ns,) = conn
            wanted = [i for i, s in enumerate(slots) if s is not None]
            keys = [self._object_key(op.key, layer) for layer in layers for op in ops]
            try:
                lease = ops[0].lease_ids[self._rank] if ops[0].lease_ids else 0
                if wanted:
                    load.future = client.get_into_async(
                        ns, [keys[i] for i in wanted], [slots[i].buffer for i in wanted], lease)
            except kvstash.Error as e:
                logger.warning("KvstashConnector: load of %d chunks not started: %s",
                               len(ops), e)
        return load

    def _land(self, load: _Load, wait: bool) -> bool:
        """Checks a finished get and starts its copies into the cache; False while the get
        is still running."""
        if load.landed:
            return True
        if load.future is not None and not wait and not load.future.done():
            return False
        load.landed = True
        start = time.monotonic()
        wanted = [i for i, s in enumerate(load.slots) if s is not None]
        got = self._result(load.future, "load", len(wanted))
        sizes: List[Optional[int]] = [None] * len(load.slots)
        for i, size in zip(wanted, got):
            sizes[i] = size
        self.stats.add(load_wait_seconds=time.monotonic() - start)
        n = len(load.ops)
        for i, op in enumerate(load.ops):
            idx = [j * n + i for j in range(len(load.layers))]
            if all(sizes[k] == self._nbytes for k in idx):
                self.stats.add(loaded_objects=len(idx), loaded_bytes=self._nbytes * len(idx))
                for j, k in enumerate(idx):
                    layer = load.layers[j]
                    self._mover.stage_in(load.slots[k], self._codecs[layer],
                                         self._caches[layer], op.block_ids, self._chunk_tokens)
                    load.copying.append(load.slots[k])
            else:
                self.stats.add(load_failed_objects=sum(sizes[k] != self._nbytes for k in idx))
                self._load_errors.update(op.block_ids)
                self._failed_reqs.add(op.req_id)
                for k in idx:
                    if load.slots[k] is not None:
                        self._mover.release(load.slots[k])
        return True

    def finished_loads(self) -> Set[str]:
        """Requests whose asynchronous loads are in the cache (failed blocks reported)."""
        done = set()
        for load in self._async_loads:
            if not self._land(load, wait=False):
                continue
            if all(self._mover.ready(s) for s in load.copying):
                for staged in load.copying:
                    self._mover.release(staged)
                load.copying = []
                done.add(load.req_id)
        self._async_loads = [load for load in self._async_loads if load.req_id not in done]
        self._release_drained()
        return done

    def _release_drained(self) -> None:
        running = []
        for staged in self._draining:
            if self._mover.ready(staged):
                self._mover.release(staged)
            else:
                running.append(staged)
        self._draining = running

    def load_errors(self) -> Set[int]:
        errors, self._load_errors = self._load_errors, set()
        return errors

    # -- stores --------------------------------------------------------------------------

    def begin_step(self, stores: List[ChunkOp]) -> None:
        self._stores = stores
        self._saved = set()
        self._failed_reqs = set()
        self._owed.update(op.req_id for op in stores)

    def save_layer(self, layer_name: str) -> None:
        """Copies out this step's objects of one layer, whose KV the attention just wrote;
        each layer's puts go out once its copies finished."""
        layer = self._layer_index.get(layer_name)
        if layer is not None:
            self._save(layer)

    def save_unsaved_layers(self) -> None:
        """Saves the layers no forward saved this step (a step that ran none)."""
        for layer in range(self._layers_n):
            if layer not in self._saved:
                self._save(layer)

    def _save(self, layer: int) -> None:
        self._saved.add(layer)
        ops = [op for op in self._stores if op.req_id not in self._failed_reqs]
        skipped = len(self._stores) - len(ops)
        if skipped:
            self.stats.add(store_skipped_objects=skipped)
        if ops:
            staged, kept = [], []
            for op in ops:
                s = self._mover.stage_out(self._codecs[layer], self._caches[layer],
                                          op.block_ids, self._chunk_tokens, self._nbytes)
                if s is None:
                    self.stats.add(staging_full_objects=1, store_skipped_objects=1)
                    continue
                staged.append(s)
                kept.append(op)
            if kept:
                self._saves.append(_Save(kept, layer, staged))
        self._submit_puts(wait=False)

    def _submit_puts(self, wait: bool) -> None:
        """Puts every save whose copies finished (all of them when ``wait``)."""
        for save in self._saves:
            if save.future is not None:
                continue
            if wait:
                for s in save.slots:
                    self._mover.wait(s)
            elif not all(self._mover.ready(s) for s in save.slots):
                continue
            save.future = self._put(save)

    def _put(self, save: _Save) -> Future:
        conn = self._conn.get()
        failed: Future = Future()
        failed.set_result([None] * len(save.ops))
        if conn is None:
            return failed
        client, (ns,) = conn
        keys = [self._object_key(op.key, save.layer) for op in save.ops]
        try:
            return client.put_async(ns, keys, [s.buffer for s in save.slots],
                                    tokens=self._chunk_tokens, format=self._format)
        except kvstash.Error as e:
            logger.warning("KvstashConnector: store of %d chunks not started: %s",
                           len(save.ops), e)
            return failed

    def wait_saves(self, req_ids: Optional[Set[str]] = None) -> None:
        """Waits for the copies and puts of ``req_ids`` (all when None), e.g. before their
        blocks are reused after a preemption."""
        self._submit_puts(wait=True)
        for save in self._saves:
            if req_ids is None or {op.req_id for op in save.ops} & req_ids:
                save.future.exception()  # waits; errors are counted when reaped
        self._reap_saves()

    def _reap_saves(self) -> None:
        running = []
        for save in self._saves:
            if save.future is None or not save.future.done():
                running.append(save)
                continue
            stored = self._result(save.future, "store", len(save.ops))
            self.stats.add(stored_objects=sum(s is True for s in stored),
                           store_declined_objects=sum(s is False for s in stored),
                           store_failed_objects=sum(s is None for s in stored),
                           stored_bytes=self._nbytes * sum(s is True for s in stored))
            for s in save.slots:
                self._mover.release(s)
        self._saves = running

    def finished_saves(self, finished_req_ids: Set[str]) -> Set[str]:
        """Finished requests (ever named in ``finished_req_ids``) whose puts all completed."""
        self._finishing.update(finished_req_ids & self._owed)
        self._submit_puts(wait=False)
        self._reap_saves()
        busy = set().union(*({op.req_id for op in save.ops} for save in self._saves))
        done = self._finishing - busy
        self._finishing -= done
        self._owed -= done
        return done

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
