"""What KvstashConnector counts on its workers, in vLLM's connector stats and Prometheus.

vLLM sends each worker's :class:`KvstashConnectorStats` to the engine's logger process,
aggregates them, logs them (``KV Transfer metrics: ...``) and hands them to
:class:`KvstashPromMetrics`, which exports ``vllm:kvstash_*`` counters on vLLM's
``/metrics``. Objects are (chunk, layer) slices of KV.

Thread-safety: not thread-safe; the connector's worker adds to its stats under its own lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Tuple

from vllm.distributed.kv_transfer.kv_connector.v1.metrics import (KVConnectorPromMetrics,
                                                                  KVConnectorStats)

# name -> Prometheus help text; every counter is a plain sum over workers and intervals.
COUNTERS: Dict[str, str] = {
    "loaded_objects": "(chunk, layer) objects loaded from kvstash into vLLM's KV cache",
    "loaded_bytes": "Bytes loaded from kvstash into vLLM's KV cache",
    "load_failed_objects": "Objects that could not be loaded (missing, wrong size, daemon "
                           "error); their blocks are recomputed",
    "load_wait_seconds": "Time the engine waited for loads (layer-wise: inside the forward)",
    "stored_objects": "Objects stored in kvstash (or already present)",
    "stored_bytes": "Bytes sent to kvstash by stores",
    "store_declined_objects": "Objects the daemon declined for lack of space",
    "store_failed_objects": "Objects whose store failed (daemon down or error)",
    "store_skipped_objects": "Objects not stored because a load of the same step failed "
                             "or no staging slot was free",
    "staging_full_objects": "Objects not moved because every staging slot was in use (a load "
                            "then fails and is recomputed, a store is skipped)",
    "lookups": "Scheduler lookups (one per new request with at least one whole chunk)",
    "lookup_failures": "Lookups that failed (daemon down or error): treated as misses",
}


@dataclass
class KvstashConnectorStats(KVConnectorStats):
    """Counters since the last interval (``data``: name -> number)."""

    def __post_init__(self) -> None:
        for name in COUNTERS:
            self.data.setdefault(name, 0)

    def add(self, **counts: float) -> None:
        for name, value in counts.items():
            self.data[name] += value

    def reset(self) -> None:
        self.data = {name: 0 for name in COUNTERS}

    def aggregate(self, other: KVConnectorStats) -> "KvstashConnectorStats":
        for name in COUNTERS:
            self.data[name] += other.data.get(name, 0)
        return self

    def reduce(self) -> Dict[str, int | float]:
        return {name: self.data[name] for name in COUNTERS}

    def is_empty(self) -> bool:
        return not any(self.data[name] for name in COUNTERS)


class KvstashPromMetrics(KVConnectorPromMetrics):
    """``vllm:kvstash_<counter>_total`` per engine."""

    def __init__(self, vllm_config: Any, metric_types: Dict[type, type], labelnames: List[str],
                 per_engine_labelvalues: Dict[int, List[object]]) -> None:
        super().__init__(vllm_config, metric_types, labelnames, per_engine_labelvalues)
        self._counters: Dict[Tuple[str, int], Any] = {}
        for name, doc in COUNTERS.items():
            counter = self._counter_cls(name=f"vllm:kvstash_{name}", documentation=doc,
                                        labelnames=labelnames)
            for engine, values in per_engine_labelvalues.items():
                self._counters[(name, engine)] = counter.labels(*values)

    def observe(self, transfer_stats_data: Dict[str, Any], engine_idx: int = 0) -> None:
        for name in COUNTERS:
            value = transfer_stats_data.get(name, 0)
            if value:
                self._counters[(name, engine_idx)].inc(value)
