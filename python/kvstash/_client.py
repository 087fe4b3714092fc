"""kvstash.Client: the Python face of libkvstash_client."""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import threading
import weakref
from concurrent.futures import Future
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import _native
from ._async import Completions, Dispatcher
from ._errors import Error
from ._types import ClusterOptions, ClusterStatus, LookupResult, NamespaceUsage, Priority, Tier

Namespace = _native.Namespace
Keys = Sequence[bytes]
Buffers = Sequence[Any]

_DEFAULT_LAYOUT = "kvstash.layer_kv_token.v1"


def _put_hints(session_id: int, ttl_ms: int, priority: "Priority | int", pin: bool,
               parent: Optional[bytes]) -> _native.PutHints:
    hints = _native.PutHints()
    hints.session_id = session_id
    hints.ttl_ms = ttl_ms
    hints.priority = int(priority)
    hints.pin = pin
    hints.parent = parent
    return hints


def default_options() -> Dict[str, Any]:
    """Every option ``Client`` takes, with its default (as in the C++ ``ClientOptions``);
    ``"cluster"`` holds :class:`ClusterOptions`' fields as a dict."""
    return dict(_native.default_options())


def key_from_engine_hash(engine_hash: "bytes | str", namespace: Optional[Namespace] = None) -> bytes:
    """Maps an engine's own block hash (bytes or str, any length) to a 16-byte key.

    Without ``namespace``: ``XXH3-128("kvstash.engine" || engine_hash)``, for calls that
    name the namespace anyway. With it: the namespace-bound form (its hash algorithm).
    docs/keys.md, "Engine-hash keys", has both with test vectors.
    """
    if namespace is not None:
        return namespace.key_from_engine_hash(engine_hash)
    return _native.key_from_engine_hash(engine_hash)


def memory_at(address: int, size: int) -> memoryview:
    """A writable memoryview of ``size`` bytes of this process's memory at ``address``, for
    buffers an engine describes by address (SGLang's host pool); any call takes it as a
    buffer. The caller vouches that the range stays mapped while the view is in use."""
    return _native.memory_at(address, size)


def copy_strided(dst: Any, src: Any) -> None:
    """``dst[...] = src[...]`` for two CPU arrays (numpy arrays, CPU torch tensors: any
    buffer-protocol or DLPack view) of one shape and element width, whatever their
    strides: bytes are moved, never converted. Rows contiguous on both sides are copied
    whole and transposes in tiles, without the GIL: an engine adapter's page codec moves
    KV between a page layout and kvstash's chunk format with it.

    Raises :class:`InvalidArgument` when the shapes or element widths differ, the memory
    ranges the two views span overlap (even where no element is shared), there are more
    than 8 axes, or ``dst`` is read-only."""
    _native.copy_strided(dst, src)


class Client:
    """A connection to kvstashd, over ``grpc://host:port``, ``grpcs://host:port`` (TLS),
    ``unix:///path`` (gRPC over the daemon's ``server.local_socket``) or
    ``ucx://host:port``; or to a cluster of them, ``etcd://host:port[,host:port]/<name>``
    (the members registered in etcd, followed as they change; ``etcds://`` over TLS to
    etcd, with the ``etcd_*_file`` cluster options), ``static://host:port,...``
    or ``dns://name:port``, placing each chunk on its member by rendezvous hashing.
    ``cluster`` (:class:`ClusterOptions`) tunes how; :meth:`cluster` shows the members.

    ``options`` are the C++ ``ClientOptions`` fields by name (``deadline_ms``,
    ``connect_timeout_ms``, ``max_retries``, ``initial_backoff_ms``, ``max_backoff_ms``,
    ``frame_bytes``, ``connections``, ``async_threads``, ``verify_checksums``,
    ``checksum_puts``, ``tls_ca_file``, ``tls_cert_file``, ``tls_key_file``,
    ``tls_server_name``, ``ucx_tls``, ``ucx_direct``, ``ucx_copy_threads``,
    ``local_direct``, ``ucx_idle_progress_ms``, ``ucx_tcp_segment_bytes``, ``token``);
    :func:`default_options`
    lists their defaults. ``token`` (str) is the bearer token every call presents; empty:
    the ``KVSTASH_TOKEN`` environment variable, else none. It is never read from the URI.
    Raises :class:`Unavailable` when the daemon does not answer within
    ``connect_timeout_ms`` and :class:`InvalidArgument` for a bad URI or option.

    Buffers are anything with the buffer protocol (bytes, bytearray, memoryview, numpy
    arrays) or a CPU ``__dlpack__`` producer (torch tensors): read and written in place,
    never copied in Python; the GIL is released while bytes move. A buffer must stay
    untouched until its call (or future) completes.

    Thread-safety: thread-safe; calls from many threads run concurrently.
    """

    def __init__(self, uri: str, *, cluster: Optional[ClusterOptions] = None,
                 **options: Any) -> None:
        if cluster is not None:
            if not isinstance(cluster, ClusterOptions):
                raise TypeError(f"cluster: expected kvstash.ClusterOptions, got "
                                f"{type(cluster).__name__}")
            options["cluster"] = dataclasses.asdict(cluster)
        self._native = _native.Client(uri, options)
        self._dispatcher: Optional[Dispatcher] = None
        self._dispatcher_lock = threading.Lock()
        _open_clients.add(self)

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def uri(self) -> str:
        return self._native.uri

    def close(self) -> None:
        """Waits for asynchronous calls to finish, then closes the connections. Idempotent."""
        self._native.close()
        with self._dispatcher_lock:
            dispatcher, self._dispatcher = self._dispatcher, None
        if dispatcher is not None:
            dispatcher.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- namespaces --------------------------------------------------------------------

    def namespace(
        self,
        *,
        model: str,
        num_layers: int,
        kv_heads: int,
        head_dim: int,
        dtype: str = "fp16",
        chunk_tokens: int = 256,
        tenant: str = "default",
        tp_rank: int = 0,
        tp_size: int = 1,
        revision: str = "",
        kv_layout: str = _DEFAULT_LAYOUT,
        hash_algo: str = "xxh3",
    ) -> Namespace:
        """Registers a namespace with the daemon (idempotent) and returns it.

        Two engines share chunks iff every field is equal (docs/keys.md). The client
        registers it again by itself after a daemon restart.
        """
        ns = Namespace(
            model=model, num_layers=num_layers, kv_heads=kv_heads, head_dim=head_dim,
            dtype=dtype, chunk_tokens=chunk_tokens, tenant=tenant, tp_rank=tp_rank,
            tp_size=tp_size, revision=revision, kv_layout=kv_layout, hash_algo=hash_algo)
        self.open_namespace(ns)
        return ns

    def open_namespace(self, ns: Namespace) -> None:
        """Registers a namespace built with ``kvstash.Namespace(...)``."""
        self._native.open_namespace(ns)

    # -- synchronous calls -------------------------------------------------------------

    def lookup(self, ns: Namespace, keys: Keys, lease_ms: int = 0, *,
               session_id: int = 0) -> LookupResult:
        """How many leading ``keys`` are present, in one round trip. ``lease_ms > 0``
        keeps the hits from eviction until fetched with the returned ``lease_id``.
        ``session_id != 0`` keeps that session (see :meth:`put`) active and adds the hits
        to its chain."""
        return self._native.lookup(ns, keys, lease_ms, session_id)

    def put(self, ns: Namespace, keys: Keys, buffers: Buffers, *, tokens: int = 0,
            format: int = 0, session_id: int = 0, ttl_ms: int = 0,
            priority: "Priority | int" = Priority.NORMAL, pin: bool = False,
            parent: Optional[bytes] = None, chain: bool = False) -> List[bool]:
        """Stores one chunk per key from ``buffers``. Per key: True when stored (or
        already present), False when the daemon declined it for space. ``tokens`` and
        ``format`` (an opaque writer tag) are recorded with every chunk.

        Hints (docs/protocol.md, "Hints"; each chunk of the call gets them, the defaults
        say nothing): ``session_id`` (0: none) keeps the chunks until the session ends or
        idles out; ``ttl_ms`` (0: none) keeps them at least that long; ``priority`` is
        their eviction class; ``pin`` keeps them until :meth:`unpin`, within the tenant's
        pin quota. ``parent`` is the key of the chunk before the first one in its chain;
        with ``chain`` every further key names the key before it as its parent, as
        ``Namespace.prefix_keys`` lists a prompt. Bad hints raise InvalidArgument."""
        hints = _put_hints(session_id, ttl_ms, priority, pin, parent)
        return self._native.put(ns, keys, buffers, tokens, format, hints, chain)

    def get_into(self, ns: Namespace, keys: Keys, buffers: Buffers,
                 lease_id: int = 0) -> List[Optional[int]]:
        """Fetches each key's chunk into its writable buffer. Per key: bytes written, or
        None for a miss. A buffer smaller than its chunk raises InvalidArgument."""
        return self._native.get_into(ns, keys, buffers, lease_id)

    def exists(self, ns: Namespace, keys: Keys) -> List[Tier]:
        """The tier of each key, ``Tier.NONE`` when absent."""
        return self._native.exists(ns, keys)

    def delete(self, ns: Namespace, keys: Keys) -> int:
        """Deletes ``keys``; returns how many existed."""
        return self._native.delete(ns, keys)

    def stats(self, ns: Optional[Namespace] = None) -> Dict[str, int]:
        """The daemon's counters (chunks, bytes, hits, misses, ...), keyed as the C++
        client's ``ServerStats`` fields (``kvstash/stats_counters.h``), and for each tier
        the daemon runs its ``TierStats`` as ``<tier>_<field>`` (``dram_capacity_bytes``,
        ``nvme_chunks``, ...); with ``ns``, that namespace's counters (the tier and NVMe
        fields stay the daemon's)."""
        return self._native.stats(ns)

    def health(self) -> Dict[str, Any]:
        """``{"serving": bool, "version": str, "uptime_ms": int}``."""
        return self._native.health()

    def cluster(self) -> ClusterStatus:
        """The members a cluster client places chunks on, as it sees them now, with its
        calls, errors and breaker state per member (no call is made). Raises
        :class:`Error` (FAILED_PRECONDITION) for a client of one daemon."""
        return ClusterStatus._from_native(self._native.cluster())

    # -- admin calls -------------------------------------------------------------------

    def list_namespaces(self) -> List[NamespaceUsage]:
        """Every namespace the daemon knows (registered, or holding chunks), sorted by
        id, with its tenant and its chunks and bytes per tier."""
        return [NamespaceUsage._make_native(*row) for row in self._native.list_namespaces()]

    def clear_namespace(self, ns: Namespace) -> int:
        """Deletes every chunk of ``ns`` in every tier; returns how many. ``ns`` stays
        registered."""
        return self._native.clear_namespace(ns)

    def pin(self, ns: Namespace, keys: Keys) -> int:
        """Pins the leading ``keys`` that are stored (up to the first absent one);
        returns how many were not pinned before. Raises :class:`Error` with code
        ``RESOURCE_EXHAUSTED``, pinning nothing, when the tenant's pin quota cannot hold
        them."""
        return self._native.pin(ns, keys, True)

    def unpin(self, ns: Namespace, keys: Keys) -> int:
        """Unpins the leading ``keys`` that are stored; returns how many were pinned."""
        return self._native.pin(ns, keys, False)

    def end_session(self, ns: Namespace, session_id: int) -> None:
        """Ends session ``session_id`` (not 0) of ``ns``: its chunks become ordinary
        chunks of their priority."""
        self._native.end_session(ns, session_id)

    # -- asynchronous calls: a completion queue ---------------------------------------

    def submit_lookup(self, completions: Completions, token: int, ns: Namespace, keys: Keys,
                      *, lease_ms: int = 0, session_id: int = 0) -> None:
        """:meth:`lookup`, answered in ``completions`` under ``token``; returns at once."""
        self._native.submit_lookup(completions._native, token, ns, keys, lease_ms, session_id)

    def submit_put(self, completions: Completions, token: int, ns: Namespace, keys: Keys,
                   buffers: Buffers, *, tokens: int = 0, format: int = 0, session_id: int = 0,
                   ttl_ms: int = 0, priority: "Priority | int" = Priority.NORMAL,
                   pin: bool = False, parent: Optional[bytes] = None,
                   chain: bool = False) -> None:
        """:meth:`put`, answered in ``completions`` under ``token``; returns at once. The
        buffers must stay untouched until then."""
        hints = _put_hints(session_id, ttl_ms, priority, pin, parent)
        self._native.submit_put(completions._native, token, ns, keys, buffers, tokens, format,
                                hints, chain)

    def submit_get_into(self, completions: Completions, token: int, ns: Namespace, keys: Keys,
                        buffers: Buffers, *, lease_id: int = 0) -> None:
        """:meth:`get_into`, answered in ``completions`` under ``token``; returns at once.
        The buffers must stay untouched until then."""
        self._native.submit_get_into(completions._native, token, ns, keys, buffers, lease_id)

    def submit_exists(self, completions: Completions, token: int, ns: Namespace,
                      keys: Keys) -> None:
        """:meth:`exists`, answered in ``completions`` under ``token``; returns at once."""
        self._native.submit_exists(completions._native, token, ns, keys)

    def submit_delete(self, completions: Completions, token: int, ns: Namespace,
                      keys: Keys) -> None:
        """:meth:`delete`, answered in ``completions`` under ``token``; returns at once."""
        self._native.submit_delete(completions._native, token, ns, keys)

    # -- asynchronous calls: concurrent.futures --------------------------------------

    def lookup_async(self, ns: Namespace, keys: Keys, lease_ms: int = 0, *,
                     session_id: int = 0) -> "Future[LookupResult]":
        return self._submit(lambda q, t: self.submit_lookup(q, t, ns, keys, lease_ms=lease_ms,
                                                            session_id=session_id))

    def put_async(self, ns: Namespace, keys: Keys, buffers: Buffers, *, tokens: int = 0,
                  format: int = 0, session_id: int = 0, ttl_ms: int = 0,
                  priority: "Priority | int" = Priority.NORMAL, pin: bool = False,
                  parent: Optional[bytes] = None, chain: bool = False) -> "Future[List[bool]]":
        return self._submit(lambda q, t: self.submit_put(
            q, t, ns, keys, buffers, tokens=tokens, format=format, session_id=session_id,
            ttl_ms=ttl_ms, priority=priority, pin=pin, parent=parent, chain=chain))

    def get_into_async(self, ns: Namespace, keys: Keys, buffers: Buffers,
                       lease_id: int = 0) -> "Future[List[Optional[int]]]":
        return self._submit(
            lambda q, t: self.submit_get_into(q, t, ns, keys, buffers, lease_id=lease_id))

    def exists_async(self, ns: Namespace, keys: Keys) -> "Future[List[Tier]]":
        return self._submit(lambda q, t: self.submit_exists(q, t, ns, keys))

    def delete_async(self, ns: Namespace, keys: Keys) -> "Future[int]":
        return self._submit(lambda q, t: self.submit_delete(q, t, ns, keys))

    # -- asynchronous calls: asyncio -------------------------------------------------

    async def alookup(self, ns: Namespace, keys: Keys, lease_ms: int = 0, *,
                      session_id: int = 0) -> LookupResult:
        return await asyncio.wrap_future(
            self.lookup_async(ns, keys, lease_ms, session_id=session_id))

    async def aput(self, ns: Namespace, keys: Keys, buffers: Buffers, *, tokens: int = 0,
                   format: int = 0, session_id: int = 0, ttl_ms: int = 0,
                   priority: "Priority | int" = Priority.NORMAL, pin: bool = False,
                   parent: Optional[bytes] = None, chain: bool = False) -> List[bool]:
        return await asyncio.wrap_future(
            self.put_async(ns, keys, buffers, tokens=tokens, format=format, session_id=session_id,
                           ttl_ms=ttl_ms, priority=priority, pin=pin, parent=parent,
                           chain=chain))

    async def aget_into(self, ns: Namespace, keys: Keys, buffers: Buffers,
                        lease_id: int = 0) -> List[Optional[int]]:
        return await asyncio.wrap_future(self.get_into_async(ns, keys, buffers, lease_id))

    async def aexists(self, ns: Namespace, keys: Keys) -> List[Tier]:
        return await asyncio.wrap_future(self.exists_async(ns, keys))

    async def adelete(self, ns: Namespace, keys: Keys) -> int:
        return await asyncio.wrap_future(self.delete_async(ns, keys))

    def _submit(self, start: Callable[[Completions, int], None]) -> Future:
        with self._dispatcher_lock:
            if self._dispatcher is None:
                self._dispatcher = Dispatcher()
            dispatcher = self._dispatcher
        return dispatcher.submit(start)


# Clients still open when the interpreter exits are closed first: their threads must not
# be inside native code when Python stops daemon threads.
_open_clients: "weakref.WeakSet[Client]" = weakref.WeakSet()


@atexit.register
def _close_open_clients() -> None:
    for client in list(_open_clients):
        client.close()


__all__ = ["Client", "Namespace", "Error", "copy_strided", "default_options",
           "key_from_engine_hash", "memory_at"]
