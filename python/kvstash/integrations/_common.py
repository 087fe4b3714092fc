"""What every engine adapter needs: a kvstash connection that never takes the engine down.

An engine must keep serving (by recomputing) while kvstashd is down, so adapters do not
connect in their constructor and fail; they ask a :class:`Connection` for the client
each time and treat ``None`` as "no cache right now".

Thread-safety: Connection is thread-safe.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import kvstash

logger = logging.getLogger("kvstash.integrations")

# Options every adapter reads for itself; the rest go to kvstash.Client.
NAMESPACE_FIELDS = ("tenant", "revision", "hash_algo")


class Connection:
    """A kvstash.Client plus the namespaces an adapter writes in, made on first use.

    ``make_namespaces`` builds them (they may depend on what the engine tells the adapter
    after construction). When the daemon cannot be reached, the failure is logged
    once per outage and retried at most every ``retry_interval_s``; meanwhile ``get()``
    returns None at once, so the engine treats every lookup as a miss.
    """

    def __init__(self, uri: str, client_options: Dict[str, Any],
                 make_namespaces: Callable[[], List[kvstash.Namespace]],
                 retry_interval_s: float = 5.0, what: str = "kvstash",
                 own_params: Sequence[str] = ()) -> None:
        self.uri = uri
        # Named in errors about unknown parameters, beside the client options.
        self._params = ("uri", "retry_interval_s", *own_params, *NAMESPACE_FIELDS)
        self._options = dict(client_options)
        self._make_namespaces = make_namespaces
        self._retry_interval_s = retry_interval_s
        self._what = what
        self._lock = threading.Lock()
        self._client: Optional[kvstash.Client] = None
        self._ns: List[kvstash.Namespace] = []
        self._next_try = 0.0
        self._down_logged = False
        self._connecting = False
        self._closed = False

    def get(self) -> Optional[Tuple[kvstash.Client, List[kvstash.Namespace]]]:
        """The connected client and namespaces, or None at once while kvstashd has not been
        reached (a background attempt is started when the retry interval has passed)."""
        with self._lock:
            if self._client is not None:
                return self._client, self._ns
            if self._closed or self._connecting or time.monotonic() < self._next_try:
                return None
            self._connecting = True
        threading.Thread(target=self._connect, name="kvstash-connect", daemon=True).start()
        return None

    def connect_now(self) -> bool:
        """One connection attempt on this thread (adapters call it at engine start)."""
        with self._lock:
            if self._client is not None:
                return True
            if self._connecting:
                return False
            self._connecting = True
        self._connect()
        return self._client is not None

    def _connect(self) -> None:
        client: Optional[kvstash.Client] = None
        try:
            client = kvstash.Client(self.uri, **self._options)
            ns = self._make_namespaces()
            for n in ns:
                client.open_namespace(n)
        except kvstash.InvalidArgument as e:
            # A bad URI, option or namespace is the operator's to fix, not an outage; the
            # client checks them before it connects, so this comes from connect_now().
            with self._lock:
                self._connecting = False
            raise kvstash.InvalidArgument(
                e.code, f"{self._what} (uri {self.uri!r}): {e.message}; adapter parameters "
                f"besides client options: {', '.join(self._params)}") from e
        except kvstash.Error as e:
            if client is not None:
                client.close()
            with self._lock:
                self._connecting = False
                self._next_try = time.monotonic() + self._retry_interval_s
                first = not self._down_logged
                self._down_logged = True
            if first:
                logger.error("%s: cannot use kvstashd at %s (%s); serving without it, "
                             "retrying every %.0f s", self._what, self.uri, e,
                             self._retry_interval_s)
            return
        with self._lock:
            self._connecting = False
            if self._closed:
                client.close()
                return
            self._client, self._ns = client, ns
            if self._down_logged:
                logger.info("%s: connected to kvstashd at %s", self._what, self.uri)
            self._down_logged = False

    def close(self) -> None:
        with self._lock:
            client, self._client, self._closed = self._client, None, True
        if client is not None:
            client.close()


def split_options(params: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(namespace fields, client options) out of an adapter's parameters."""
    ns = {k: v for k, v in params.items() if k in NAMESPACE_FIELDS}
    client = {k: v for k, v in params.items() if k not in NAMESPACE_FIELDS}
    return ns, client
