"""Plain result types of kvstash calls."""

from __future__ import annotations

import enum
from typing import List, NamedTuple


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
