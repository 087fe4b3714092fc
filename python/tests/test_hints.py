"""Put hints, session lookups and the admin calls against a real kvstashd, over gRPC and UCX."""

import asyncio

import pytest

import kvstash


def chain(client, ns, n, size=4096):
    """Stores a prompt of ``n`` chunks; returns its keys."""
    keys = ns.prefix_keys(range(16 * n))
    assert client.put(ns, keys, [bytes([i]) * size for i in range(n)], tokens=16) == [True] * n
    return keys


def usage(client, ns):
    rows = [u for u in client.list_namespaces() if u.id == ns.id]
    assert len(rows) == 1
    return rows[0]


def test_hinted_put_and_session_lookup(client, ns):
    keys = ns.prefix_keys(range(16 * 3))
    data = [bytes([i]) * 1000 for i in range(3)]
    stored = client.put(ns, keys, data, tokens=16, session_id=7, ttl_ms=5000,
                        priority=kvstash.Priority.HIGH, pin=False, chain=True)
    assert stored == [True] * 3
    hit = client.lookup(ns, keys, session_id=7)
    assert hit.hit_count == 3
    out = [bytearray(1000) for _ in range(3)]
    assert client.get_into(ns, keys, out) == [1000] * 3
    assert [bytes(o) for o in out] == data
    # Priorities as plain ints, a parent naming the chunk before, the async forms.
    more = ns.prefix_keys(range(16 * 4))[3:]
    assert client.put_async(ns, more, [b"z" * 10], priority=1, parent=keys[-1]).result() == [True]
    assert asyncio.run(client.alookup(ns, keys + more, session_id=7)).hit_count == 4


def test_bad_hints_raise_invalid_argument(client, ns):
    key = ns.prefix_keys(range(16))
    with pytest.raises(kvstash.InvalidArgument, match="hints.priority 9"):
        client.put(ns, key, [b"x"], priority=9)
    with pytest.raises(kvstash.InvalidArgument, match="max_ttl_ms"):
        client.put(ns, key, [b"x"], ttl_ms=(1 << 32) - 1)
    with pytest.raises(kvstash.InvalidArgument, match="parent"):
        client.put(ns, key, [b"x"], parent=b"short")
    with pytest.raises(kvstash.InvalidArgument, match="session_id"):
        client.end_session(ns, 0)
    assert client.exists(ns, key) == [kvstash.Tier.NONE]


def test_list_namespaces_names_spec_and_tenant(client, ns):
    row = usage(client, ns)
    assert isinstance(row, kvstash.NamespaceUsage)
    assert row.namespace == ns and row.tenant == "default"
    assert all(len(u.id) == 16 for u in client.list_namespaces())


def test_admin_calls_refuse_an_unknown_namespace(client):
    stranger = kvstash.Namespace(model="never-registered", num_layers=1, kv_heads=1, head_dim=8)
    key = stranger.prefix_keys(range(256))
    for call in (lambda: client.clear_namespace(stranger), lambda: client.pin(stranger, key),
                 lambda: client.end_session(stranger, 3)):
        with pytest.raises(kvstash.Error) as e:
            call()
        assert e.value.code == kvstash.StatusCode.FAILED_PRECONDITION


def test_end_session(client, ns):
    chain(client, ns, 2)
    assert client.end_session(ns, 11) is None


# The tests below check what the store does with the calls (usage, clearing, pinning).


def test_usage_counts_chunks_and_bytes(client, ns):
    chain(client, ns, 3)
    row = usage(client, ns)
    assert row.tiers == {kvstash.Tier.DRAM: kvstash.TierUsage(chunks=3, bytes=3 * 4096)}
    assert row.pinned_bytes == 0


def test_clear_namespace(client, ns):
    keys = chain(client, ns, 3)
    assert client.clear_namespace(ns) == 3
    assert client.exists(ns, keys) == [kvstash.Tier.NONE] * 3
    assert usage(client, ns).in_tier(kvstash.Tier.DRAM).chunks == 0


def test_pin_and_unpin_a_prefix(client, ns):
    keys = chain(client, ns, 2)
    absent = ns.prefix_keys(range(16 * 3))[2:]
    assert client.pin(ns, keys + absent) == 2
    assert client.pin(ns, keys) == 0
    assert usage(client, ns).pinned_bytes == 2 * 4096
    assert client.unpin(ns, keys) == 2
    assert usage(client, ns).pinned_bytes == 0
