"""Plain result types of kvstash calls."""

from __future__ import annotations

import dataclasses
import enum
from typing import TYPE_CHECKING, Any, Dict, List, NamedTuple, Optional, Tuple

if TYPE_CHECKING:
    from ._native import Namespace


class Tier(enum.IntEnum):
    """Where a chunk lives in the daemon (kvstash.v1.Tier)."""

    NONE = 0
    GPU = 1
    DRAM = 2
    NVME = 3


class LookupResult(NamedTuple):
    """Answer of :meth:`kvstash.Client.lookup`."""

    hit_count: int
    """Number of leading keys present."""
    tiers: List[Tier]
    """Tier of each hit (``hit_count`` entries)."""
    lease_id: int
    """Pass to ``get_into`` to release the lease as chunks arrive; 0 without a lease."""


class Priority(enum.IntEnum):
    """Eviction class of a chunk (kvstash.v1.Priority): LOW goes first, HIGH last."""

    NORMAL = 0
    LOW = 1
    HIGH = 2


class TierUsage(NamedTuple):
    """One tier's share of a namespace."""

    chunks: int
    """Its live chunks in the tier."""
    bytes: int
    """Their payload bytes."""


class NamespaceUsage(NamedTuple):
    """One namespace as :meth:`kvstash.Client.list_namespaces` reports it."""

    id: bytes
    """The 16-byte namespace id."""
    namespace: "Optional[Namespace]"
    """Its spec; None when no client registered it since the daemon started (chunks
    recovered from NVMe)."""
    tenant: str
    """The tenant its chunks count against."""
    tiers: Dict[Tier, TierUsage]
    """Each tier holding its chunks, fastest first."""
    pinned_bytes: int
    """Payload bytes of its pinned chunks."""

    def in_tier(self, tier: Tier) -> TierUsage:
        """Its share of ``tier``: zeros when the tier holds none of its chunks."""
        return self.tiers.get(tier, TierUsage(0, 0))

    @classmethod
    def _make_native(cls, id: bytes, namespace: "Optional[Namespace]", tenant: str,
                     tiers: List[Tuple[int, int, int]], pinned_bytes: int) -> "NamespaceUsage":
        by_tier = {Tier(t): TierUsage(chunks, size) for t, chunks, size in tiers}
        return cls(id, namespace, tenant, by_tier, pinned_bytes)


@dataclasses.dataclass
class ClusterOptions:
    """How a cluster client (``etcd://``, ``static://`` or ``dns://`` URI; docs/cluster.md)
    spreads chunks over the members and copes with one failing: the C++ ``ClusterOptions``
    (``ClientOptions::cluster``) field by field, with the same defaults. Pass it as
    ``kvstash.Client(uri, cluster=...)``; the C++ client checks the values
    (:class:`kvstash.InvalidArgument` naming the field). Every member gets a connection with
    the client's other options (``deadline_ms`` aside: ``node_deadline_ms``)."""

    transport: str = "grpc"
    """Which address of each member to connect to: ``"grpc"``, ``"grpcs"`` (gRPC over TLS,
    with the ``tls_*`` options) or ``"ucx"`` (the ``ucx_*`` options apply)."""
    replicas: int = 1
    """Copies of each hot chunk (put with priority HIGH or pin, or fetched ``hot_fetches``
    times); 1: no copies. A get asks the next copy when an owner fails. 1 to 8."""
    hot_fetches: int = 4
    """Fetches of one chunk through this client after which it counts as hot; 0: only
    hints make a chunk hot."""
    node_deadline_ms: int = 2000
    """Deadline of one call to one member, retries included: a slower member counts as
    failed for that call, and its keys as misses."""
    breaker_failures: int = 3
    """Consecutive failed calls to a member after which its circuit breaker opens: its keys
    are misses at once for ``breaker_open_ms``, then one call probes it."""
    breaker_open_ms: int = 2000
    """How long an open breaker skips its member."""
    handover_ms: int = 60000
    """After the member set changes, a key whose owner changed and misses on its new owner
    is also looked up on its previous owner for this long (and copied over as fetched);
    0: no hand-over."""
    dns_refresh_ms: int = 5000
    """``dns://`` only: how often the name is resolved again."""
    etcd_ca_file: str = ""
    """``etcd://``/``etcds://`` only: CA bundle verifying etcd's certificate (TLS to etcd);
    empty: the system's roots. Any ``etcd_*`` file, or ``etcds://``, turns TLS on."""
    etcd_cert_file: str = ""
    """Client certificate for an etcd run with ``--client-cert-auth``."""
    etcd_key_file: str = ""
    """The private key of ``etcd_cert_file``."""


class ClusterMember(NamedTuple):
    """One member as a cluster client sees it (C++ ``ClusterMemberStatus``)."""

    id: str
    """The member's id (config ``cluster.member_id``; the address for ``static://``)."""
    address: str
    """The address this client connects to (``ClusterOptions.transport``)."""
    zone: str
    """Its failure domain (config ``cluster.zone``); empty: none."""
    capacity_bytes: Dict[Tier, int]
    """The byte budget of each tier it runs, as it registered them."""
    connected: bool
    """A connection to it exists and its last call succeeded."""
    breaker_open: bool
    """Calls to it are skipped for now (its keys are misses)."""
    calls: int
    """Calls this client made to it."""
    call_errors: int
    """Of which failed (deadline, unavailable, ...)."""


class ClusterStatus(NamedTuple):
    """Answer of :meth:`kvstash.Client.cluster` (C++ ``ClusterStatus``)."""

    members: List[ClusterMember]
    """The member set the client places chunks on, sorted by id."""
    member_set_changes: int
    """Member sets received after the first."""
    keys_moved: int
    """Hand-over lookups made on a previous owner."""
    source_connected: bool
    """etcd (or DNS) answered the last time it was asked."""

    @classmethod
    def _from_native(cls, status: Dict[str, Any]) -> "ClusterStatus":
        fields = dict(status)
        members = []
        for m in fields.pop("members"):
            m = dict(m)
            m["capacity_bytes"] = {Tier(t): c for t, c in m["capacity_bytes"].items()}
            members.append(ClusterMember(**m))
        return cls(members=members, **fields)
