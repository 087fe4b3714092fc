"""The Python client against a real kvstashd, over gRPC and UCX."""

import asyncio
import os
import select
import threading
import urllib.request

import numpy as np
import pytest

import kvstash


def payloads(n, size, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size, dtype=np.uint8) for _ in range(n)]


def test_put_lookup_get_exists_delete(client, ns):
    keys = ns.prefix_keys(range(16 * 4))
    data = payloads(4, 300 << 10)
    assert client.put(ns, keys, data, tokens=16) == [True] * 4
    hit = client.lookup(ns, keys + [kvstash.key_from_engine_hash("absent", ns)])
    assert hit.hit_count == 4 and hit.tiers == [kvstash.Tier.DRAM] * 4
    assert isinstance(hit, kvstash.LookupResult)
    assert all(type(t) is kvstash.Tier for t in hit.tiers)  # members, not bare ints
    out = [np.zeros(300 << 10, np.uint8) for _ in range(4)]
    assert client.get_into(ns, keys, out) == [300 << 10] * 4
    for a, b in zip(data, out):
        np.testing.assert_array_equal(a, b)
    assert client.exists(ns, keys[:2]) == [kvstash.Tier.DRAM] * 2
    assert client.delete(ns, keys[:2]) == 2
    assert client.exists(ns, keys[:2]) == [kvstash.Tier.NONE] * 2
    assert all(type(t) is kvstash.Tier for t in client.exists(ns, keys[:2]))
    assert client.get_into(ns, keys[:1], out[:1]) == [None]


def test_local_socket_reads_what_another_transport_stored(client, ns, daemon):
    keys = ns.prefix_keys(range(16 * 2))
    data = payloads(2, 1 << 20, seed=7)
    assert client.put(ns, keys, data, tokens=16) == [True] * 2
    with kvstash.Client(daemon.local_uri, deadline_ms=20000) as local:
        same = local.namespace(model=ns.model, num_layers=2, kv_heads=2, head_dim=64,
                               dtype="bf16", chunk_tokens=16)
        out = [np.zeros(1 << 20, np.uint8) for _ in range(2)]
        assert local.get_into(same, keys, out) == [1 << 20] * 2
        for a, b in zip(data, out):
            np.testing.assert_array_equal(a, b)
        # A put through it writes the daemon's arena.
        more = ns.prefix_keys(range(16 * 3))[2:]
        extra = payloads(1, 1 << 20, seed=8)
        assert local.put(same, more, extra, tokens=16) == [True]
    back = [np.zeros(1 << 20, np.uint8)]
    assert client.get_into(ns, more, back) == [1 << 20]
    np.testing.assert_array_equal(extra[0], back[0])
    # Those gets read and that put wrote the daemon's arena through the local arena socket.
    url = f"http://{daemon.metrics_address}/metrics"
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    for direction, least in (("out", 2 << 20), ("in", 1 << 20)):
        series = f'kvstash_transport_direct_bytes_total{{transport="local",direction="{direction}"}} '
        assert float(text.split(series, 1)[1].split()[0]) >= least


def test_every_buffer_kind(client, ns):
    keys = ns.prefix_keys(range(16 * 4))
    raw = os.urandom(1000)
    sources = [raw, bytearray(raw), memoryview(raw), np.frombuffer(raw, np.uint8)]
    assert client.put(ns, keys, sources) == [True] * 4
    sinks = [bytearray(1000), memoryview(bytearray(1000)), np.zeros(250, np.float32),
             np.zeros((10, 100), np.uint8)]
    assert client.get_into(ns, keys, sinks) == [1000] * 4
    for s in sinks:
        assert bytes(memoryview(s).cast("B")) == raw


def test_repeat_put_is_idempotent_and_larger_buffer_is_fine(client, ns):
    key = ns.prefix_keys(range(16))
    assert client.put(ns, key, [b"a" * 100]) == [True]
    assert client.put(ns, key, [b"a" * 100]) == [True]
    big = bytearray(4096)
    assert client.get_into(ns, key, [big]) == [100]
    assert bytes(big[:100]) == b"a" * 100 and big[100:] == bytearray(3996)


def test_lease_from_lookup(client, ns):
    keys = ns.prefix_keys(range(32))
    client.put(ns, keys, [b"x" * 64, b"y" * 64])
    hit = client.lookup(ns, keys, lease_ms=5000)
    assert hit.hit_count == 2 and hit.lease_id != 0
    out = [bytearray(64), bytearray(64)]
    assert client.get_into(ns, keys, out, lease_id=hit.lease_id) == [64, 64]


def test_stats_and_health(client, ns):
    keys = ns.prefix_keys(range(16))
    client.put(ns, keys, [b"z" * 512])
    client.get_into(ns, keys, [bytearray(512)])
    s = client.stats(ns)
    assert s["chunks"] == 1 and s["bytes"] == 512 and s["hits"] == 1
    assert client.stats()["dram_capacity_bytes"] == 1 << 30
    h = client.health()
    assert h["serving"] is True and h["version"]


def test_futures_and_asyncio(client, ns):
    keys = ns.prefix_keys(range(16 * 8))
    data = payloads(8, 64 << 10, seed=1)
    futures = [client.put_async(ns, [k], [d]) for k, d in zip(keys, data)]
    assert [f.result(timeout=30) for f in futures] == [[True]] * 8
    assert client.lookup_async(ns, keys).result(timeout=30).hit_count == 8

    async def fetch():
        out = [np.zeros(64 << 10, np.uint8) for _ in range(8)]
        got = await asyncio.gather(*(client.aget_into(ns, [k], [o]) for k, o in zip(keys, out)))
        return got, out

    got, out = asyncio.run(fetch())
    assert got == [[64 << 10]] * 8
    for a, b in zip(data, out):
        np.testing.assert_array_equal(a, b)
    assert client.exists_async(ns, keys[:1]).result(30) == [kvstash.Tier.DRAM]
    assert client.delete_async(ns, keys).result(30) == 8
    with pytest.raises(kvstash.InvalidArgument):
        client.get_into_async(ns, keys[:1], [b"read-only"])


def test_async_errors_arrive_on_the_future(client, ns):
    key = ns.prefix_keys(range(16))
    client.put(ns, key, [b"q" * 1000])
    f = client.get_into_async(ns, key, [bytearray(10)])
    with pytest.raises(kvstash.InvalidArgument, match="holds 10 bytes"):
        f.result(timeout=30)


def drain(q, n):
    """The next ``n`` completions of ``q`` by token, waiting on its fd (which may also wake
    with nothing to drain: a completion that raced with the previous drain)."""
    got = {}
    while len(got) < n:
        assert select.select([q], [], [], 30)[0], got
        got.update({c.token: c for c in q.drain()})
    assert len(got) == n, got
    return got


def test_one_completion_queue_for_an_event_loop(client, daemon, ns):
    """Calls submitted with the caller's tokens, from two clients, answer in one queue whose
    fd select() sees; errors arrive as values of the queue, never raised by a submit."""
    keys = ns.prefix_keys(range(16 * 3))
    data = payloads(3, 4096)
    q = kvstash.Completions()
    with kvstash.Client(daemon.grpc_uri) as other:
        client.submit_put(q, 1, ns, keys, data, tokens=16, priority=kvstash.Priority.HIGH,
                          chain=True)
        assert drain(q, 1) == {1: kvstash.Completion(1, [True] * 3, None)}
        out = [bytearray(4096) for _ in keys]
        other.submit_get_into(q, 2, ns, keys, out)
        client.submit_lookup(q, 3, ns, keys, lease_ms=1000)
        client.submit_exists(q, 4, ns, keys[:1])
        client.submit_get_into(q, 5, ns, keys[:1], [bytearray(10)])  # smaller than the chunk
        got = drain(q, 4)
        assert got[2].value == [4096] * 3 and [bytes(o) for o in out] == [d.tobytes()
                                                                         for d in data]
        assert got[3].value.hit_count == 3 and got[3].value.lease_id
        assert got[4].value == [kvstash.Tier.DRAM]
        assert isinstance(got[5].error, kvstash.InvalidArgument) and got[5].value is None
        other.submit_delete(q, 6, ns, keys)
        assert drain(q, 1) == {6: kvstash.Completion(6, 3, None)}
    q.drain()  # a wake-up left by a completion that raced with a drain
    q.wake()
    assert select.select([q], [], [], 0)[0] and q.drain() == []
    assert not q.wait(0)


def test_many_python_threads(client, ns):
    errors = []

    def worker(i):
        try:
            keys = ns.prefix_keys(range(i * 1000, i * 1000 + 16 * 4))
            data = payloads(4, 128 << 10, seed=i)
            for _ in range(5):
                assert client.put(ns, keys, data) == [True] * 4
                out = [np.empty(128 << 10, np.uint8) for _ in range(4)]
                assert client.get_into(ns, keys, out) == [128 << 10] * 4
                for a, b in zip(data, out):
                    assert np.array_equal(a, b)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_torch_cpu_tensors_through_dlpack(client, ns):
    torch = pytest.importorskip("torch")
    keys = ns.prefix_keys(range(32))
    src = [torch.randn(64, 128).to(torch.bfloat16), torch.randn(4096)]
    assert client.put(ns, keys, src) == [True, True]
    dst = [torch.zeros(64, 128, dtype=torch.bfloat16), torch.zeros(4096)]
    assert client.get_into(ns, keys, dst) == [64 * 128 * 2, 4096 * 4]
    assert all(torch.equal(a, b) for a, b in zip(src, dst))
    with pytest.raises(kvstash.InvalidArgument, match="contiguous"):
        client.get_into(ns, keys[:1], [torch.zeros(128, 64, dtype=torch.bfloat16).t()])
