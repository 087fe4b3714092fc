"""Run a real kvstashd for tests and benchmarks: free loopback ports, a private data dir;
and a cluster of them registered in a real etcd.

    with kvstash.testing.Daemon() as d:          # kvstashd from $KVSTASHD or PATH
        client = kvstash.Client(d.ucx_uri)

    with kvstash.testing.Cluster(members=3) as c:  # etcd from $KVSTASH_ETCD or PATH
        client = kvstash.Client(c.uri)             # "etcd://127.0.0.1:PORT/<name>"

Thread-safety: a Daemon, Etcd or Cluster is driven by one thread.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from typing import Dict, List, Optional, Sequence, TypeVar


def find_kvstashd() -> str:
    """``$KVSTASHD``, else ``kvstashd`` on PATH. Raises FileNotFoundError."""
    path = os.environ.get("KVSTASHD") or shutil.which("kvstashd")
    if not path or not os.access(path, os.X_OK):
        raise FileNotFoundError("kvstashd not found: set KVSTASHD to its path")
    return path


def parse_ready_file(text: str) -> Dict[str, str]:
    """The daemon's ready file: ``key=value`` lines (``grpc=HOST:PORT`` always, ``pid=``,
    ``metrics=``, ``ucx=`` and ``local=`` when served, ``grpc_tls=true`` under TLS; see README, "Running kvstashd", and
    common/ready_file.h). Raises ValueError when there is no ``grpc=`` line."""
    fields = {}
    for line in text.splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            fields[key.strip()] = value.strip()
    if not fields.get("grpc"):
        raise ValueError(f"ready file has no grpc= line: {text!r}")
    return fields


_ChildT = TypeVar("_ChildT", bound="_Child")


class _Child:
    """A server process of the test helpers: its log and its clean-up.

    Subclasses set ``dir``, ``proc`` and ``log_path`` and define ``close()``.
    """

    dir: str
    proc: Optional[subprocess.Popen]
    log_path: str

    def kill(self) -> None:
        """SIGKILL: the process dies without any clean-up."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def log_tail(self, lines: int = 20) -> str:
        try:
            with open(self.log_path) as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _ChildT) -> _ChildT:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Daemon(_Child):
    """kvstashd on loopback with gRPC, UCX (shared memory + TCP) and metrics listeners.

    ``settings`` are extra ``--set key=value`` pairs (e.g. a DRAM capacity, NVMe on). By
    default the daemon keeps chunks in DRAM only, 1 GiB. ``local_socket`` serves
    ``server.local_socket`` in the daemon's directory too (``local_uri``).
    """

    def __init__(self, settings: Optional[Dict[str, str]] = None, kvstashd: Optional[str] = None,
                 start_timeout_s: float = 60.0, dir_prefix: str = "kvstash-py-",
                 local_socket: bool = False) -> None:
        self.kvstashd = kvstashd or find_kvstashd()
        self.dir = tempfile.mkdtemp(prefix=dir_prefix)
        self.settings = {
            "data_dir": self.dir,
            "storage.nvme.enabled": "false",
            "storage.dram.capacity_bytes": "1GiB",
            "ucx.listen": "127.0.0.1:0",
            "ucx.tls": "sm,tcp,self",
            "metrics.listen": "127.0.0.1:0",
        }
        if local_socket:
            self.settings["server.local_socket"] = os.path.join(self.dir, "kvstash.sock")
        self.settings.update(settings or {})
        self.start_timeout_s = start_timeout_s
        self.proc: Optional[subprocess.Popen] = None
        self.addresses: Dict[str, str] = {}
        self._grpc_listen = "127.0.0.1:0"
        self.start()

    @property
    def grpc_uri(self) -> str:
        return "grpc://" + self.addresses["grpc"]

    @property
    def ucx_uri(self) -> str:
        return "ucx://" + self.addresses["ucx"]

    @property
    def local_uri(self) -> str:
        """``unix://`` URI of the ``server.local_socket`` listener (KeyError when not served)."""
        return "unix://" + self.addresses["local"]

    @property
    def metrics_address(self) -> str:
        return self.addresses["metrics"]

    @property
    def log_path(self) -> str:
        return os.path.join(self.dir, "kvstashd.log")

    def start(self) -> None:
        """Starts the daemon (again, on the same ports once it has run)."""
        ready = os.path.join(self.dir, "ready")
        if os.path.exists(ready):
            os.unlink(ready)
        args: List[str] = [self.kvstashd, "--listen", self._grpc_listen, "--ready_file", ready]
        for key, value in self.settings.items():
            args += ["--set", f"{key}={value}"]
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.start_timeout_s
        # The daemon renames a complete file into place: once it exists it is whole.
        while not os.path.exists(ready):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"kvstashd did not start; log: {self.log_tail()}")
            time.sleep(0.02)
        with open(ready) as f:
            self.addresses = parse_ready_file(f.read())
        # A restart binds the same ports, so clients reconnect to the URIs they hold.
        self._grpc_listen = self.addresses["grpc"]
        self.settings["ucx.listen"] = self.addresses["ucx"]
        self.settings["metrics.listen"] = self.addresses["metrics"]

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM and wait; returns the exit code."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout_s)

    def restart(self, sigkill: bool = False) -> None:
        """Stops (or kills) and starts again on the same ports."""
        self.kill() if sigkill else self.stop()
        self.start()

    def close(self) -> None:
        """Stops the daemon and removes its data dir."""
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def find_etcd() -> str:
    """``$KVSTASH_ETCD``, else ``etcd`` on PATH, else ``/usr/bin/etcd`` (Debian's
    etcd-server). Raises FileNotFoundError."""
    path = os.environ.get("KVSTASH_ETCD") or shutil.which("etcd") or "/usr/bin/etcd"
    if not os.access(path, os.X_OK):
        raise FileNotFoundError("etcd not found: install etcd-server or set KVSTASH_ETCD")
    return path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Etcd(_Child):
    """A single-node etcd on loopback, in a private data dir, on free ports.

    ``restart()`` kills it (SIGKILL) and starts it again on the same ports and data, so
    its keys and leases survive as they would a crash.
    """

    def __init__(self, etcd: Optional[str] = None, start_timeout_s: float = 30.0) -> None:
        self.etcd = etcd or find_etcd()
        self.dir = tempfile.mkdtemp(prefix="kvstash-etcd-")
        self.client_port = _free_port()
        self.peer_port = _free_port()
        self.start_timeout_s = start_timeout_s
        self.proc: Optional[subprocess.Popen] = None
        self.start()

    @property
    def endpoint(self) -> str:
        """``127.0.0.1:PORT``, as ``cluster.etcd_endpoints`` and etcd:// URIs take it."""
        return f"127.0.0.1:{self.client_port}"

    @property
    def log_path(self) -> str:
        return os.path.join(self.dir, "etcd.log")

    def start(self) -> None:
        client = f"http://{self.endpoint}"
        peer = f"http://127.0.0.1:{self.peer_port}"
        args = [self.etcd, "--name", "kvstash-test", "--data-dir", os.path.join(self.dir, "data"),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"kvstash-test={peer}"]
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.start_timeout_s
        while not self._healthy():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"etcd did not start; log: {self.log_tail()}")
            time.sleep(0.05)

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://{self.endpoint}/health", timeout=1) as r:
                return b'"true"' in r.read()
        except OSError:
            return False

    def restart(self) -> None:
        self.kill()
        self.start()

    def close(self) -> None:
        try:
            self.kill()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class Cluster:
    """An etcd and ``members`` kvstashd registered in it (config section ``cluster:``) as
    members ``m0``, ``m1``, ...; ``uri`` is what a cluster client connects to. Members
    run with NVMe off unless ``settings`` say otherwise.
    """

    def __init__(self, members: int = 3, name: Optional[str] = None, lease_ttl_s: int = 2,
                 settings: Optional[Dict[str, str]] = None) -> None:
        self.name = name or f"py-{os.getpid()}-{int(time.monotonic() * 1000)}"
        self.lease_ttl_s = lease_ttl_s
        self.settings = dict(settings or {})
        self.etcd = Etcd()
        self.daemons: List[Daemon] = []
        try:
            for _ in range(members):
                self.add_member()
        except BaseException:
            self.close()
            raise

    @property
    def uri(self) -> str:
        return f"etcd://{self.etcd.endpoint}/{self.name}"

    @property
    def static_uri(self) -> str:
        """``static://host:port,...``: the members' gRPC addresses, without etcd."""
        return "static://" + ",".join(d.addresses["grpc"] for d in self.daemons)

    def add_member(self) -> Daemon:
        """Starts member ``m<len(daemons)>`` and returns it."""
        settings = {
            "cluster.enabled": "true",
            "cluster.name": self.name,
            "cluster.etcd_endpoints": self.etcd.endpoint,
            "cluster.member_id": f"m{len(self.daemons)}",
            "cluster.lease_ttl_s": str(self.lease_ttl_s),
            "storage.dram.capacity_bytes": "128MiB",
        }
        settings.update(self.settings)
        daemon = Daemon(settings, dir_prefix="kvstash-py-cluster-")
        self.daemons.append(daemon)
        return daemon

    def close(self) -> None:
        """Stops the members, then etcd, and removes their directories."""
        try:
            for d in self.daemons:
                d.close()
        finally:
            self.etcd.close()

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__: Sequence[str] = ["Cluster", "Daemon", "Etcd", "find_etcd", "find_kvstashd",
                          "parse_ready_file"]
