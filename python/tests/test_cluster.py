"""Cluster clients from Python: etcd:// against a real etcd and three kvstashd members
registered in it (kvstash.testing.Cluster), or static:// over three plain daemons when
etcd is not installed. Chunks put through one client are found through another, each on
one member; a killed member's chunks become misses, never errors or wrong bytes."""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Iterator, List, NamedTuple

import pytest

import kvstash
from kvstash.testing import Cluster, Daemon, find_etcd

CHUNK = 8 << 10


class Members(NamedTuple):
    mode: str  # "etcd" or "static"
    daemons: List[Daemon]
    cluster: "Cluster | None"

    def uri(self, transport: str) -> str:
        if self.cluster is not None:
            return self.cluster.uri
        return "static://" + ",".join(d.addresses[transport] for d in self.daemons)


@pytest.fixture(scope="module")
def members() -> Iterator[Members]:
    try:
        find_etcd()
    except FileNotFoundError:
        daemons = [Daemon({"storage.dram.capacity_bytes": "128MiB"}) for _ in range(3)]
        try:
            yield Members("static", daemons, None)
        finally:
            for d in daemons:
                d.close()
        return
    with Cluster(members=3) as c:
        yield Members("etcd", c.daemons, c)


def pattern(key: bytes, size: int = CHUNK) -> bytes:
    """Bytes derived from the key alone, so any reader can check any chunk."""
    return (key * (size // len(key) + 1))[:size]


def connect(members: Members, transport: str) -> kvstash.Client:
    options = kvstash.ClusterOptions(transport=transport)
    client = kvstash.Client(members.uri(transport), cluster=options, deadline_ms=20000,
                            ucx_tls="tcp")
    if members.mode == "etcd":
        assert wait_for(lambda: serving(client) == member_ids(members)), client.cluster()
    return client


def serving(client: kvstash.Client) -> List[str]:
    return sorted(m.id for m in client.cluster().members if not m.breaker_open)


def member_ids(members: Members) -> List[str]:
    return [f"m{i}" for i, d in enumerate(members.daemons) if d.alive()]


def wait_for(done, timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


_counter = iter(range(1, 1 << 30))


def namespace(client: kvstash.Client) -> kvstash.Namespace:
    return client.namespace(model=f"cluster/model-{next(_counter)}-{os.getpid()}",
                            num_layers=2, kv_heads=2, head_dim=64, dtype="bf16",
                            chunk_tokens=16)


def put_keys(client: kvstash.Client, ns: kvstash.Namespace, count: int) -> List[bytes]:
    keys = [os.urandom(16) for _ in range(count)]
    assert client.put(ns, keys, [pattern(k) for k in keys]) == [True] * count
    return keys


def get_checked(client: kvstash.Client, ns: kvstash.Namespace, keys: List[bytes]) -> List[bool]:
    """Per key: found with the exact bytes (True) or a miss (False); anything else fails."""
    out = [bytearray(CHUNK) for _ in keys]
    sizes = client.get_into(ns, keys, out)
    found = []
    for key, size, buf in zip(keys, sizes, out):
        if size is not None:
            assert size == CHUNK and bytes(buf) == pattern(key), "wrong bytes served"
        found.append(size is not None)
    return found


def test_cluster_options_are_typed_and_checked():
    defaults = kvstash.ClusterOptions()
    assert dataclasses.asdict(defaults) == kvstash.default_options()["cluster"]
    with pytest.raises(TypeError):
        kvstash.ClusterOptions(no_such_field=1)  # type: ignore[call-arg]
    with pytest.raises(kvstash.InvalidArgument, match="transport"):
        kvstash.Client("static://127.0.0.1:1", cluster=kvstash.ClusterOptions(transport="smoke"))
    # The etcd TLS files reach the C++ client, which checks them before dialling etcd.
    with pytest.raises(kvstash.InvalidArgument, match="cluster.etcd_ca_file"):
        kvstash.Client(
            "etcds://127.0.0.1:1/default",
            cluster=kvstash.ClusterOptions(etcd_ca_file="/nonexistent/etcd-ca.crt"),
        )


@pytest.mark.parametrize("transport", ["grpc", "ucx"])
def test_put_through_one_client_found_by_another(members, transport):
    with connect(members, transport) as writer, connect(members, transport) as reader:
        ns = namespace(writer)
        reader.open_namespace(ns)
        keys = put_keys(writer, ns, 120)
        assert get_checked(reader, ns, keys) == [True] * len(keys)
        status = reader.cluster()
        assert len(status.members) == len(members.daemons)
        if members.mode == "etcd":  # a static member set has no registered capacities
            dram = [m.capacity_bytes.get(kvstash.Tier.DRAM, 0) for m in status.members]
            assert all(c > 0 for c in dram), status.members
        # Every chunk sits on exactly one member, and every member has a share.
        holders = [0] * len(keys)
        for d in members.daemons:
            with kvstash.Client(d.grpc_uri) as direct:
                direct.open_namespace(ns)
                tiers = direct.exists(ns, keys)
                held = [t != kvstash.Tier.NONE for t in tiers]
                assert any(held), f"{d.grpc_uri} holds none of the chunks"
                holders = [h + int(x) for h, x in zip(holders, held)]
        assert holders == [1] * len(keys)


def test_killed_member_gives_misses_never_errors(members):
    if members.mode != "etcd":
        pytest.skip("needs etcd: a static list never drops a member")
    with connect(members, "grpc") as client:
        ns = namespace(client)
        keys = put_keys(client, ns, 120)
        victim = members.daemons[-1]
        victim.kill()
        # Until the client drops it, calls to it fail fast into misses.
        found = get_checked(client, ns, keys)
        assert wait_for(lambda: serving(client) == member_ids(members)), client.cluster()
        found = get_checked(client, ns, keys)
        missing = found.count(False)
        assert 0 < missing < len(keys), f"{missing} of {len(keys)} missing"
        with kvstash.Client(members.daemons[0].grpc_uri) as direct:
            direct.open_namespace(ns)
            held = [t != kvstash.Tier.NONE for t in direct.exists(ns, keys)]
        # What the first member holds is still found.
        assert all(f for f, h in zip(found, held) if h)
