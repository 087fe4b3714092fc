"""kvstash as an LMCache L2 adapter (LMCache's ``native_plugin`` L2 type).

    lmcache server ... --l2-adapter '{"type": "native_plugin",
        "module_path": "kvstash.integrations.lmcache", "class_name": "KvstashL2Adapter",
        "adapter_params": {"uri": "ucx://127.0.0.1:7072"}}'

``adapter_params``: ``uri`` (required), ``tenant``, ``model`` (the namespace's model name;
LMCache's keys already carry the model and KV rank, so one namespace serves them all),
``revision``, ``hash_algo``, ``retry_interval_s``, and any
:func:`kvstash.default_options` field. Anything else is refused at start.

LMCache hands over batches of string keys and writable memoryviews and polls
:meth:`event_fd`; every submit returns at once (the bytes move on the kvstash client's
threads, straight from and into LMCache's buffers) and :meth:`drain_completions` reports
what finished, with one answer per key as LMCache's ``NativeConnectorL2Adapter`` reads them:
``exists`` says of each key whether it is stored (LMCache decides what to do with holes);
``delete`` reports every key as gone once the call succeeded (deleted now, or evicted
before), so LMCache's L2 usage accounting frees its bytes; ``get`` reports a chunk whose
size differs from LMCache's buffer as a miss, never a partial copy.

Thread-safety: thread-safe; LMCache submits under its own lock from several threads.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

import kvstash
from kvstash.integrations._common import Connection, logger, split_options

# Recorded with every chunk: an LMCache memory object, opaque to other engines.
OBJECT_FORMAT = 0x4C4D4331  # "LMC1"

Completion = Tuple[int, bool, str, Optional[List[bool]]]


class KvstashL2Adapter:
    """LMCache ``native_plugin`` L2 adapter over kvstashd."""

    def __init__(self, uri: str = "", model: str = "lmcache", retry_interval_s: float = 5.0,
                 **params: Any) -> None:
        ns_fields, client_options = split_options(params)
        namespace = kvstash.Namespace(model=model, num_layers=0, kv_heads=0, head_dim=0,
                                      dtype="opaque", chunk_tokens=1,
                                      kv_layout="lmcache.l2.object.v1", **ns_fields)
        self._conn = Connection(uri, client_options, lambda: [namespace],
                                retry_interval_s=retry_interval_s, what="LMCache KvstashL2Adapter",
                                own_params=("model",))
        self._completions = kvstash.Completions()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._kinds: Dict[int, Tuple[str, List[int]]] = {}  # id -> (op, buffer sizes)
        self._failed: List[Completion] = []  # answered without reaching the daemon
        self._conn.connect_now()

    # -- LMCache's native-plugin interface --------------------------------------------

    def event_fd(self) -> int:
        """Readable while completions wait; :meth:`drain_completions` clears it."""
        return self._completions.fileno()

    def submit_batch_set(self, keys: Sequence[str], memoryviews: Sequence[memoryview]) -> int:
        return self._submit("set", keys, memoryviews)

    def submit_batch_get(self, keys: Sequence[str], memoryviews: Sequence[memoryview]) -> int:
        return self._submit("get", keys, memoryviews)

    def submit_batch_exists(self, keys: Sequence[str]) -> int:
        return self._submit("exists", keys, None)

    def submit_batch_delete(self, keys: Sequence[str]) -> int:
        return self._submit("delete", keys, None)

    def drain_completions(self) -> List[Completion]:
        """``(future_id, ok, error, per_key)`` for every finished batch."""
        out: List[Completion] = []
        for fid, value, error in self._completions.drain():
            with self._lock:
                kind = self._kinds.pop(fid, None)
            if kind is None:  # never LMCache's: dropping it must not lose the rest
                logger.warning("KvstashL2Adapter: completion for unknown batch %d dropped", fid)
                continue
            op, sizes = kind
            if error is not None:
                out.append((fid, False, str(error), None))
            else:
                out.append((fid, True, "", _per_key(op, value, sizes)))
        with self._lock:
            failed, self._failed = self._failed, []
        return out + failed

    def close(self) -> None:
        """Waits for batches in flight, then disconnects."""
        self._conn.close()

    # -- internals ---------------------------------------------------------------------

    def _submit(self, op: str, keys: Sequence[str], views: Optional[Sequence[Any]]) -> int:
        fid = next(self._ids)
        conn = self._conn.get()
        if conn is None:
            return self._fail(fid, "kvstashd unreachable")
        client, (ns,) = conn
        q = self._completions
        try:
            kv_keys = [kvstash.key_from_engine_hash(k) for k in keys]
            # Per key: the buffer's size (set, get) or 0 (exists, delete).
            sizes = [memoryview(v).nbytes for v in views] if views is not None else [0] * len(keys)
            with self._lock:
                self._kinds[fid] = (op, sizes)
            if op == "set":
                client.submit_put(q, fid, ns, kv_keys, views, format=OBJECT_FORMAT)
            elif op == "get":
                client.submit_get_into(q, fid, ns, kv_keys, views)
            elif op == "exists":
                client.submit_exists(q, fid, ns, kv_keys)
            else:
                client.submit_delete(q, fid, ns, kv_keys)
        except Exception as e:  # noqa: BLE001 -- a submit must not raise into LMCache's threads
            with self._lock:
                self._kinds.pop(fid, None)
            logger.warning("KvstashL2Adapter: %s batch refused: %s", op, e)
            return self._fail(fid, str(e))
        return fid

    def _fail(self, fid: int, why: str) -> int:
        with self._lock:
            self._failed.append((fid, False, why, None))
        self._completions.wake()
        return fid


def _per_key(op: str, value: Any, sizes: List[int]) -> List[bool]:
    if op == "set":
        return list(value)
    if op == "get":
        # A chunk of another size is not this object: a miss, never a partial buffer.
        return [got is not None and got == want for got, want in zip(value, sizes)]
    if op == "exists":
        return [tier != kvstash.Tier.NONE for tier in value]
    # delete: the call succeeded, so no key is stored any more.
    return [True] * len(sizes)
