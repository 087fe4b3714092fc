"""kvstash as an SGLang HiCache storage backend (``--hicache-storage-backend dynamic``).

    --hicache-storage-backend dynamic --hicache-storage-backend-extra-config
      '{"backend_name": "kvstash", "module_path": "kvstash.integrations.sglang",
        "class_name": "KvstashHiCacheStorage", "interface_v1": 1,
        "uri": "ucx://127.0.0.1:7072"}'

With ``interface_v1`` SGLang calls the zero-copy ``batch_get_v1``/``batch_set_v1``: pages
move straight between kvstashd and the registered host pool, one chunk per page buffer
(``get_page_buffer_meta``: K and V, per layer for ``layer_first``). Without it, the legacy
``batch_get``/``batch_set`` move flat pages. The two paths order a page's bytes
differently, so each has its own namespace; namespaces also pin the model, dtype, host
layout, page size and the ranks (TP for MHA; MLA KV is shared by TP ranks, as SGLang's
file backend does), so nothing is ever read in another layout.

Extra-config keys besides SGLang's own: ``uri`` (required), ``tenant``, ``revision``,
``hash_algo``, ``retry_interval_s``, and :func:`kvstash.default_options` fields.

Thread-safety: thread-safe; SGLang calls from its backup and prefetch threads.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import kvstash
from kvstash.integrations._common import Connection, logger, split_options

from sglang.srt.mem_cache.hicache_storage import HiCacheStorage, HiCacheStorageConfig

# Keys of SGLang's extra config that are SGLang's, not this backend's.
_SGLANG_KEYS = frozenset({"backend_name", "module_path", "class_name", "interface_v1"})
# Keys per server-side Lookup of batch_exists: well under the daemon's
# server.max_keys_per_request (65536 by default).
LOOKUP_KEYS = 16384


class KvstashHiCacheStorage(HiCacheStorage):
    """HiCache L3 storage over kvstashd."""

    def __init__(self, storage_config: HiCacheStorageConfig, kwargs: Optional[dict] = None):
        extra = dict(storage_config.extra_config or {})
        params = {k: v for k, v in extra.items() if k not in _SGLANG_KEYS}
        uri = params.pop("uri", "")
        retry_interval_s = float(params.pop("retry_interval_s", 5.0))
        self._ns_fields, client_options = split_options(params)
        self.storage_config = storage_config
        self.mem_pool_host = None
        self._zero_copy = bool(extra.get("interface_v1", 0))
        self._buffers_per_page = 0  # page buffers per key on the zero-copy path
        self._conn = Connection(uri, client_options, self._namespaces,
                                retry_interval_s=retry_interval_s,
                                what="SGLang KvstashHiCacheStorage",
                                own_params=("interface_v1",))

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        super().register_mem_pool_host(mem_pool_host)
        if self._zero_copy:
            import torch
            first_page = torch.arange(mem_pool_host.page_size, dtype=torch.int64)
            self._buffers_per_page = len(mem_pool_host.get_page_buffer_meta(first_page)[0])
        self._conn.connect_now()

    def _namespaces(self) -> List[kvstash.Namespace]:
        """[zero-copy page buffers, legacy flat pages] of this pool and rank."""
        c, pool = self.storage_config, self.mem_pool_host
        if pool is None:
            raise kvstash.Error(kvstash.StatusCode.FAILED_PRECONDITION, "no host pool yet")
        shard = f"pp={c.pp_rank}/{c.pp_size};cp={c.attn_cp_rank}/{c.attn_cp_size}"
        if getattr(c, "dcp_size", 1) > 1:
            shard += f";dcp={c.dcp_rank}/{c.dcp_size};page={c.logical_page_size}"
        rank = dict(tp_rank=0, tp_size=1) if c.is_mla_model else dict(tp_rank=c.tp_rank,
                                                                         tp_size=c.tp_size)
        common = dict(model=c.model_name or "unnamed", dtype=str(pool.dtype).replace("torch.", ""),
                      num_layers=int(getattr(pool, "layer_num", 0)),
                      kv_heads=int(getattr(pool, "head_num", 1)),
                      head_dim=int(getattr(pool, "head_dim", 0)),
                      chunk_tokens=int(pool.page_size), **rank, **self._ns_fields)
        kind = f"{type(pool).__name__};{shard}"
        return [kvstash.Namespace(kv_layout=f"sglang.hicache.v1;{pool.layout};{kind}", **common),
                kvstash.Namespace(kv_layout=f"sglang.hicache.flat;{kind}", **common)]

    # -- zero copy ---------------------------------------------------------------------

    def _page_views(self, keys: Sequence[str], host_indices: Any):
        """Keys and writable views, one per page buffer, grouped by page in key order."""
        ptrs, sizes = self.mem_pool_host.get_page_buffer_meta(host_indices)
        if not keys or len(ptrs) % len(keys) or len(ptrs) != len(sizes):
            raise kvstash.InvalidArgument(
                kvstash.StatusCode.INVALID_ARGUMENT,
                f"{len(ptrs)} page buffers do not split over {len(keys)} keys")
        per = len(ptrs) // len(keys)
        chunk_keys = _chunk_keys(keys, per)
        views = [kvstash.memory_at(int(p), int(s)) for p, s in zip(ptrs, sizes)]
        return per, chunk_keys, views, [int(s) for s in sizes]

    def batch_set_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
        return self._v1("set", keys, host_indices)

    def batch_get_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
        return self._v1("get", keys, host_indices)

    def _v1(self, op: str, keys: List[str], host_indices: Any) -> List[bool]:
        """Per key: all of its page buffers stored (set) or filled whole (get)."""
        conn = self._conn.get()
        if conn is None or not keys:
            return [False] * len(keys)
        client, (ns, _) = conn
        try:
            per, chunk_keys, views, sizes = self._page_views(keys, host_indices)
            if op == "set":
                ok = client.put(ns, chunk_keys, views)
            else:
                ok = [g == s for g, s in zip(client.get_into(ns, chunk_keys, views), sizes)]
        except kvstash.Error as e:
            logger.warning("KvstashHiCacheStorage: %s of %d pages failed: %s", op, len(keys), e)
            return [False] * len(keys)
        return [all(ok[i * per:(i + 1) * per]) for i in range(len(keys))]

    # -- legacy flat pages -------------------------------------------------------------

    def batch_set(self, keys: List[str], values: Optional[Any] = None,
                  target_locations: Optional[Any] = None, target_sizes: Optional[Any] = None) -> bool:
        conn = self._conn.get()
        if conn is None or values is None or len(values) != len(keys):
            return False
        client, (_, flat) = conn
        try:
            stored = client.put(flat, [kvstash.key_from_engine_hash(k) for k in keys],
                                [v.contiguous() for v in values])
        except kvstash.Error as e:
            logger.warning("KvstashHiCacheStorage: set of %d pages failed: %s", len(keys), e)
            return False
        return all(stored)

    def batch_get(self, keys: List[str], target_locations: Optional[Any] = None,
                  target_sizes: Optional[Any] = None) -> List[Any]:
        conn = self._conn.get()
        if conn is None or target_locations is None:
            return [None] * len(keys)
        client, (_, flat) = conn
        try:
            got = client.get_into(flat, [kvstash.key_from_engine_hash(k) for k in keys],
                                  list(target_locations))
        except kvstash.Error as e:
            logger.warning("KvstashHiCacheStorage: get of %d pages failed: %s", len(keys), e)
            return [None] * len(keys)
        return [t if g == t.numel() * t.element_size() else None
                for g, t in zip(got, target_locations)]

    def set(self, key: str, value: Optional[Any] = None, target_location: Optional[Any] = None,
            target_sizes: Optional[Any] = None) -> bool:
        return self.batch_set([key], [value] if value is not None else None)

    def get(self, key: str, target_location: Optional[Any] = None,
            target_sizes: Optional[Any] = None) -> Any:
        if target_location is None:
            return None  # kvstash fills caller memory; SGLang always passes a page here
        return self.batch_get([key], [target_location])[0]

    # -- existence ---------------------------------------------------------------------

    def batch_exists(self, keys: List[str], extra_info: Any = None) -> int:
        """Consecutive pages present from keys[0]. SGLang asks for a whole prompt at once;
        the server-side Lookups go in page-aligned pieces of at most LOOKUP_KEYS keys (the
        daemon's per-request limit is larger), stopping at the first piece that falls short."""
        conn = self._conn.get()
        if conn is None or not keys:
            return 0
        client, (ns, flat) = conn
        per = self._buffers_per_page if self._zero_copy else 1
        pages_per_call = max(1, LOOKUP_KEYS // per)
        found = 0
        try:
            for start in range(0, len(keys), pages_per_call):
                piece = keys[start:start + pages_per_call]
                if self._zero_copy:
                    hit = client.lookup(ns, _chunk_keys(piece, per)).hit_count // per
                else:
                    hit = client.lookup(flat, [kvstash.key_from_engine_hash(k)
                                               for k in piece]).hit_count
                found += hit
                if hit < len(piece):
                    break
        except kvstash.Error as e:
            logger.warning("KvstashHiCacheStorage: exists failed, treated as a miss: %s", e)
            return 0
        return found

    def exists(self, key: str) -> bool:
        return self.batch_exists([key]) == 1

    def clear(self) -> None:
        """Nothing to do: chunks age out of kvstashd by its own eviction, shared with
        other engines."""

    def close(self) -> None:
        self._conn.close()


def _chunk_keys(keys: Sequence[str], per: int) -> List[bytes]:
    """Keys of each page's `per` buffers, page-major."""
    return [kvstash.key_from_engine_hash(f"{k}#{j}") for k in keys for j in range(per)]
