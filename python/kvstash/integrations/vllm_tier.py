"""kvstash as a secondary tier of vLLM's OffloadingConnector (``TieringOffloadingSpec``).

    --kv-transfer-config '{"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
      "kv_connector_extra_config": {"spec_name": "TieringOffloadingSpec",
        "cpu_bytes_to_use": 8589934592,
        "secondary_tiers": [{"type": "KvstashTier",
                             "module_path": "kvstash.integrations.vllm_tier",
                             "uri": "ucx://127.0.0.1:7072"}]}}'

vLLM's CPU primary tier holds chunks in one shared host buffer; this tier copies rows of
it to and from kvstashd (zero copy on this side: rows go straight from and into that
buffer). Tier parameters: ``uri`` (required), ``tenant``, ``revision``, ``hash_algo``,
``retry_interval_s``, and any :func:`kvstash.default_options` field.

A chunk is stored under its vLLM offload key (a chained block hash, so it names the whole
prefix) in a namespace that pins the model, dtype, parallel layout and row format, so
engines with another layout or model never read it.

Each job gets exactly one result. A load that fails for some keys marks those keys missed in
vLLM's lookup bookkeeping, so the scheduler recomputes them instead of promoting them again
(kvstash may evict a chunk between lookup and load). ``drain_jobs`` returns once every
submitted job's result is queued.

Thread-safety: vLLM calls the tier from its scheduler thread; transfers complete on the
kvstash client's threads and are handed back through a locked list.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any, ClassVar, Dict, Iterable, List, Optional

import numpy as np

import kvstash
from kvstash.integrations._common import Connection, logger, split_options

from vllm.v1.kv_offload.base import (LookupResult, Medium, OffloadKey, ReqContext,
                                     RequestOffloadingContext, ScheduleEndContext)
from vllm.v1.kv_offload.tiering.async_lookup import AsyncLookupManager
from vllm.v1.kv_offload.tiering.base import JobResult, SecondaryTierManager, TransferJob

# Recorded with every chunk: a vLLM offloading row, opaque to other engines.
ROW_FORMAT = 0x564C4F31  # "VLO1"


class _Lookups(AsyncLookupManager):
    """vLLM's asynchronous lookup bookkeeping; one Exists call per scheduler step."""

    def __init__(self, tier: "KvstashTier") -> None:
        self._tier = tier
        super().__init__(tier_type=tier.tier_type)

    def batch_lookup(self, keys: List[OffloadKey], req_context: ReqContext) -> List[bool]:
        return self._tier._exists(keys)


class KvstashTier(SecondaryTierManager):
    """A :class:`SecondaryTierManager` over kvstashd."""

    medium: ClassVar[Medium] = Medium.STORAGE

    def __init__(self, offloading_spec: Any, primary_kv_view: memoryview, tier_type: str,
                 backpressure_detector: Any = None, uri: str = "",
                 retry_interval_s: float = 5.0, **params: Any) -> None:
        super().__init__(offloading_spec=offloading_spec, primary_kv_view=primary_kv_view,
                         tier_type=tier_type, backpressure_detector=backpressure_detector)
        ns_fields, client_options = split_options(params)
        self._rows = np.asarray(primary_kv_view).view(np.uint8)  # [num_chunks, row_bytes]
        self._namespace = _namespace_for(offloading_spec, self._rows.shape[1], ns_fields)
        self._conn = Connection(uri, client_options, lambda: [self._namespace],
                                retry_interval_s=retry_interval_s, what="vLLM KvstashTier")
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)  # notified when a job finishes
        self._finished: List[JobResult] = []
        self._in_flight: Dict[int, Future] = {}
        self._load_keys: Dict[int, List[OffloadKey]] = {}  # loads not yet reported
        self._lookups = _Lookups(self)
        self._conn.connect_now()

    # -- lookups -----------------------------------------------------------------------

    def lookup(self, key: OffloadKey, req_context: ReqContext) -> LookupResult:
        found = self._lookups.lookup(key, req_context)
        if found is None:
            return LookupResult.RETRY
        return LookupResult.HIT if found else LookupResult.MISS

    def _exists(self, keys: List[OffloadKey]) -> List[bool]:
        conn = self._conn.get()
        if conn is None:
            return [False] * len(keys)
        client, (ns,) = conn
        try:
            tiers = client.exists(ns, [kvstash.key_from_engine_hash(bytes(k)) for k in keys])
        except kvstash.Error as e:
            logger.warning("KvstashTier: lookup failed, treated as misses: %s", e)
            return [False] * len(keys)
        return [t != kvstash.Tier.NONE for t in tiers]

    # -- transfers ---------------------------------------------------------------------

    def submit_store(self, job: TransferJob) -> None:
        self._start(job, store=True)

    def submit_load(self, job: TransferJob) -> None:
        self._start(job, store=False)

    def _start(self, job: TransferJob, store: bool) -> None:
        keys = list(job.keys)
        if not store:
            with self._lock:
                self._load_keys[job.job_id] = keys
        conn = self._conn.get()
        if conn is None:
            self._finish(JobResult(job_id=job.job_id, success=False))
            return
        client, (ns,) = conn
        try:
            kv_keys = [kvstash.key_from_engine_hash(bytes(k)) for k in keys]
            rows = [self._rows[int(c)] for c in np.asarray(job.chunk_ids)]
            if store:
                future = client.put_async(ns, kv_keys, rows, format=ROW_FORMAT)
            else:
                future = client.get_into_async(ns, kv_keys, rows)
        except Exception as e:  # noqa: BLE001 -- every job gets its one result
            logger.warning("KvstashTier: job %d not started: %s", job.job_id, e)
            self._finish(JobResult(job_id=job.job_id, success=False))
            return
        with self._lock:
            self._in_flight[job.job_id] = future
        future.add_done_callback(lambda f: self._done(job.job_id, keys, store, f))

    def _done(self, job_id: int, keys: List[OffloadKey], store: bool, future: Future) -> None:
        try:
            result = self._result(job_id, keys, store, future.result())
        except Exception as e:  # noqa: BLE001 -- every job gets its one result
            logger.warning("KvstashTier: %s job %d failed: %s", "store" if store else "load",
                           job_id, e)
            result = JobResult(job_id=job_id, success=False)
        self._finish(result)

    def _result(self, job_id: int, keys: List[OffloadKey], store: bool,
                per_key: List[Any]) -> JobResult:
        row = self._rows.shape[1]
        ok = [bool(r) if store else r == row for r in per_key]
        partial = None if all(ok) else [k for k, good in zip(keys, ok) if good]
        return JobResult(job_id=job_id, success=all(ok), successful_keys=partial,
                         transfer_bytes=len(keys) * self.block_size_bytes)

    def _finish(self, result: JobResult) -> None:
        # Leaves the in-flight set and joins the results at once, so drain_jobs and
        # has_pending_work never see a job in neither.
        with self._settled:
            self._in_flight.pop(result.job_id, None)
            self._finished.append(result)
            self._settled.notify_all()

    def get_finished_jobs(self) -> Iterable[JobResult]:
        with self._lock:
            done, self._finished = self._finished, []
            loads = [self._load_keys.pop(r.job_id, None) for r in done]
        for result, keys in zip(done, loads):
            if keys is not None and not result.success:
                kept = set(result.successful_keys or ())
                self._lookups.mark_miss([k for k in keys if k not in kept])
        return done

    def has_pending_work(self) -> bool:
        with self._lock:
            return bool(self._in_flight or self._finished)

    def drain_jobs(self) -> None:
        with self._settled:
            self._settled.wait_for(lambda: not self._in_flight)

    # -- request life cycle ------------------------------------------------------------

    def on_new_request(self, req_context: ReqContext) -> RequestOffloadingContext:
        return RequestOffloadingContext()

    def on_schedule_end(self, context: ScheduleEndContext) -> None:
        self._lookups.flush()

    def on_request_finished(self, req_context: ReqContext) -> None:
        self._lookups.cleanup(req_context.req_id)

    def shutdown(self) -> None:
        self.drain_jobs()
        self._lookups.shutdown()
        self._conn.close()
        self._rows = None  # vLLM closes the shared buffer next; no view of it may remain


def _namespace_for(spec: Any, row_bytes: int, fields: Dict[str, Any]) -> kvstash.Namespace:
    """The namespace of this engine's rows: model, dtype, parallel layout, row shape and the
    KV cache layout the rows' bytes are in (engines in NHD and HND never share rows)."""
    config = spec.config
    layers = sum(len(g.layer_names) for g in config.groups)
    blocks = config.cache.blocks_per_chunk
    tokens = config.groups[0].tokens_per_block * blocks
    parallel = config.parallel
    layout = (f"vllm.offload.row.v1;row_bytes={row_bytes};blocks_per_chunk={blocks}"
              f";world_size={parallel.world_size};pp={parallel.pp_size}"
              f";canonical={bool(config.extra_config.get('canonical_layout', False))}"
              f";kv_cache_layout={getattr(config, 'kv_cache_layout', None) or 'unknown'}")
    return kvstash.Namespace(model=config.model.name, dtype=str(config.model.dtype),
                             num_layers=layers, kv_heads=0, head_dim=0, chunk_tokens=tokens,
                             tp_rank=0, tp_size=1, kv_layout=layout, **fields)
