"""Plain result types of kvstash calls."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, List, NamedTuple, Optional

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

    @classmethod
    def _make_native(cls, hit_count: int, tiers: List[int], lease_id: int) -> "LookupResult":
        return cls(hit_count, [Tier(t) for t in tiers], lease_id)


class Priority(enum.IntEnum):
    """Eviction class of a chunk (kvstash.v1.Priority): LOW goes first, HIGH last."""

    NORMAL = 0
    LOW = 1
    HIGH = 2


class NamespaceUsage(NamedTuple):
    """One namespace as :meth:`kvstash.Client.list_namespaces` reports it."""

    id: bytes
    """The 16-byte namespace id."""
    namespace: "Optional[Namespace]"
    """Its spec; None when no client registered it since the daemon started (chunks
    recovered from NVMe)."""
    tenant: str
    """The tenant its chunks count against."""
    dram_chunks: int
    dram_bytes: int
    """Payload bytes of its chunks in DRAM."""
    nvme_chunks: int
    nvme_bytes: int
    """Payload bytes of its chunks on NVMe."""
    pinned_bytes: int
    """Payload bytes of its pinned chunks."""
