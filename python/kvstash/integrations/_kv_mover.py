"""Copies between an engine's KV cache and host staging slots, on CPU or CUDA.

kvstash objects travel from and into host memory; a :class:`Mover` fills a staging slot
from the cache (a store) or writes a slot into the cache (a load), through a
:class:`~kvstash.integrations._kv_codec.PageCodec`. :class:`CpuMover` copies at once.
:class:`CudaMover` copies on low-priority side streams, ordered by events: a store's gather
starts after the compute that wrote the layer (an event recorded when the store is staged);
a load's scatter starts after the compute already queued, and the compute stream waits for
it before the layer's attention reads it; staging slots are pinned host memory.

A slot goes back to the pool only once its copy finished and its kvstash call no longer
reads or writes it. The pool is bounded (``staging_bytes``): when it is full, the caller
gets None and decides (a load then counts as failed, a store is skipped).

Thread-safety: not thread-safe; the engine's worker thread owns a Mover.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

from kvstash.integrations._kv_codec import PageCodec


@dataclass
class Staged:
    """One slot in use: its host buffer and the copy that fills or drains it."""

    buffer: Any  # uint8 tensor of the object's bytes (a view of the slot)
    slot: Any  # the whole slot, returned to the pool on release
    event: Any = None  # a CUDA event recorded after the copy; None: done at once


class StagingPool:
    """Host slots of ``slot_bytes``, at most ``limit_bytes`` in all, made on first use and
    kept. ``pin``: page-locked, so device copies run asynchronously."""

    def __init__(self, slot_bytes: int, limit_bytes: int, pin: bool) -> None:
        self.slot_bytes = slot_bytes
        self.max_slots = max(1, limit_bytes // max(1, slot_bytes))
        self._pin = pin
        self._free: List[Any] = []
        self._made = 0

    def take(self) -> Optional[Any]:
        """A free slot, or None when every slot is in use."""
        if self._free:
            return self._free.pop()
        if self._made >= self.max_slots:
            return None
        import torch
        self._made += 1
        return torch.empty(self.slot_bytes, dtype=torch.uint8, pin_memory=self._pin)

    def give(self, slot: Any) -> None:
        self._free.append(slot)

    @property
    def in_use(self) -> int:
        return self._made - len(self._free)


class Mover:
    """The copy engine interface (see the module docstring). ``nbytes`` of a call is the
    object's canonical size; ``block_ids`` and ``tokens`` say where it lives in ``cache``."""

    def __init__(self, pool: StagingPool) -> None:
        self.pool = pool

    def stage_out(self, codec: PageCodec, cache: Any, block_ids: Sequence[int], tokens: int,
                  nbytes: int) -> Optional[Staged]:
        """A slot being filled from the cache (after the compute queued so far)."""
        raise NotImplementedError

    def slot_in(self, nbytes: int) -> Optional[Staged]:
        """A slot for a get to land in."""
        slot = self.pool.take()
        return None if slot is None else Staged(slot[:nbytes], slot)

    def start_load(self) -> None:
        """Marks the compute queued so far: scatters of this step's loads come after it."""

    def stage_in(self, staged: Staged, codec: PageCodec, cache: Any, block_ids: Sequence[int],
                 tokens: int) -> None:
        """Starts writing a landed slot into the cache."""
        raise NotImplementedError

    def before_compute(self, staged: Staged) -> None:
        """Orders the engine's next compute after ``staged``'s copy into the cache."""

    def ready(self, staged: Staged) -> bool:
        return staged.event is None or staged.event.query()

    def wait(self, staged: Staged) -> None:
        if staged.event is not None:
            staged.event.synchronize()

    def release(self, staged: Staged) -> None:
        """Returns the slot; the caller checked that its copy and its call are over."""
        self.pool.give(staged.slot)


class CpuMover(Mover):
    """Copies on the calling thread: every copy is done when the call returns."""

    def stage_out(self, codec: PageCodec, cache: Any, block_ids: Sequence[int], tokens: int,
                  nbytes: int) -> Optional[Staged]:
        staged = self.slot_in(nbytes)
        if staged is not None:
            codec.gather(cache, block_ids, tokens, staged.buffer)
        return staged

    def stage_in(self, staged: Staged, codec: PageCodec, cache: Any, block_ids: Sequence[int],
                 tokens: int) -> None:
        codec.scatter(staged.buffer, cache, block_ids, tokens)


class CudaMover(Mover):
    """Copies on two low-priority streams of ``device`` (see the module docstring)."""

    def __init__(self, pool: StagingPool, device: Any) -> None:
        super().__init__(pool)
        import torch
        self._torch = torch
        self.device = device
        low = torch.cuda.Stream.priority_range()[0] if hasattr(
            torch.cuda.Stream, "priority_range") else 0
        self._store_stream = torch.cuda.Stream(device=device, priority=low)
        self._load_stream = torch.cuda.Stream(device=device, priority=low)
        self._load_after: Optional[Any] = None  # the compute event this step's loads follow

    def _event(self) -> Any:
        return self._torch.cuda.Event()

    def stage_out(self, codec: PageCodec, cache: Any, block_ids: Sequence[int], tokens: int,
                  nbytes: int) -> Optional[Staged]:
        torch = self._torch
        staged = self.slot_in(nbytes)
        if staged is None:
            return None
        written = self._event()
        written.record(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self._store_stream):
            self._store_stream.wait_event(written)
            dev = torch.empty(nbytes, dtype=torch.uint8, device=self.device)
            codec.gather(cache, block_ids, tokens, dev)
            staged.buffer.copy_(dev, non_blocking=True)
            staged.event = self._event()
            staged.event.record(self._store_stream)
        return staged

    def start_load(self) -> None:
        self._load_after = self._event()
        self._load_after.record(self._torch.cuda.current_stream(self.device))

    def stage_in(self, staged: Staged, codec: PageCodec, cache: Any, block_ids: Sequence[int],
                 tokens: int) -> None:
        torch = self._torch
        with torch.cuda.stream(self._load_stream):
            if self._load_after is not None:
                self._load_stream.wait_event(self._load_after)
            dev = staged.buffer.to(self.device, non_blocking=True)
            codec.scatter(dev, cache, block_ids, tokens)
            staged.event = self._event()
            staged.event.record(self._load_stream)

    def before_compute(self, staged: Staged) -> None:
        if staged.event is not None:
            self._torch.cuda.current_stream(self.device).wait_event(staged.event)


def make_mover(device: Any, slot_bytes: int, staging_bytes: int) -> Mover:
    """The mover for caches on ``device`` (a torch device)."""
    if device.type == "cuda":
        return CudaMover(StagingPool(slot_bytes, staging_bytes, pin=True), device)
    if device.type == "cpu":
        return CpuMover(StagingPool(slot_bytes, staging_bytes, pin=False))
    raise ValueError(f"KV caches on {device.type} are not supported (CPU and CUDA are)")
