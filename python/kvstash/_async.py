"""Completion queues: where a Client's submitted calls report, for callers that run their
own event loop, and the dispatcher behind the Client's futures."""

from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import Future
from typing import Any, Callable, Dict, List, NamedTuple, Optional

from . import _native
from ._errors import Error


class Completion(NamedTuple):
    """One finished call: the caller's ``token``, and its result as the synchronous call
    would return it (``value``) or the :class:`Error` it would raise (``error``)."""

    token: int
    value: Any
    error: Optional[Error]


class Completions:
    """A queue of finished calls submitted with ``Client.submit_*``, for engines that poll
    (LMCache's event fd, an asyncio reader, select/poll/epoll): :meth:`fileno` is readable
    while completions may be waiting and :meth:`drain` takes them. Tokens are the caller's;
    one queue serves any number of clients and calls.

    Thread-safety: thread-safe; calls finish on the client's threads, and any thread may
    drain (each completion is returned once).
    """

    def __init__(self) -> None:
        self._native = _native.Completions()

    def fileno(self) -> int:
        """An eventfd, readable while completions may be waiting."""
        return self._native.fileno()

    def wait(self, timeout_s: float = -1.0) -> bool:
        """Blocks (without the GIL) until :meth:`fileno` is readable or ``timeout_s``
        passed (negative: no limit); True when readable."""
        return self._native.wait(timeout_s)

    def drain(self) -> List[Completion]:
        """Every finished call not drained yet, in the order they finished."""
        return [Completion(*c) for c in self._native.drain()]

    def wake(self) -> None:
        """Makes :meth:`fileno` readable once, for a caller that answers some of its own
        requests without a call (a :meth:`drain` may then return nothing)."""
        os.eventfd_write(self._native.fileno(), 1)


class Dispatcher:
    """Resolves the futures of one Client's asynchronous calls from one Completions.

    Thread-safety: thread-safe. One daemon thread waits on the queue's eventfd (without
    the GIL) and sets each future's result or exception.
    """

    def __init__(self) -> None:
        self.completions = Completions()
        self._lock = threading.Lock()
        self._pending: Dict[int, Future] = {}
        self._tokens = itertools.count(1)
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="kvstash-completions", daemon=True)
        self._thread.start()

    def submit(self, start: Callable[[Completions, int], None]) -> Future:
        """A future for the call ``start(completions, token)`` submits."""
        future: Future = Future()
        future.set_running_or_notify_cancel()
        with self._lock:
            token = next(self._tokens)
            self._pending[token] = future
        try:
            start(self.completions, token)
        except BaseException:
            with self._lock:
                self._pending.pop(token, None)
            raise
        return future

    def _deliver(self) -> None:
        for token, value, error in self.completions.drain():
            with self._lock:
                future = self._pending.pop(token)
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)

    def _run(self) -> None:
        while not self._stop:
            if self.completions.wait(0.5):
                self._deliver()

    def close(self) -> None:
        """REQUIRES: every submitted call has finished (the native client was closed)."""
        self._stop = True
        self._thread.join()
        self._deliver()
