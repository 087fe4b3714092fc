"""Zero copy (process memory stays flat) and a daemon restart mid-use."""

import numpy as np
import pytest

import kvstash
from kvstash.testing import Daemon

MIB = 1 << 20


def rss_anon_bytes():
    # Private memory only: a copy in Python or the client lands here; the daemon's arena,
    # which a same-host UCX client maps, is shared memory and does not.
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no RssAnon")


def test_64mib_put_and_get_do_not_copy(client, ns):
    size = 64 * MIB
    src = np.random.default_rng(7).integers(0, 255, size, dtype=np.uint8)
    dst = np.ones(size, np.uint8)
    key = ns.prefix_keys(range(16))
    client.put(ns, key, [b"warm"])  # connections and threads exist before measuring
    client.get_into(ns, key, [bytearray(4)])
    key = ns.prefix_keys(range(100, 116))
    before = rss_anon_bytes()
    assert client.put(ns, key, [src[:]]) == [True]
    assert client.get_into(ns, key, [dst]) == [size]
    grown = rss_anon_bytes() - before
    assert np.array_equal(src, dst)
    assert grown < 8 * MIB, f"process grew by {grown / MIB:.1f} MiB moving a 64 MiB chunk"


@pytest.mark.parametrize("scheme", ["grpc", "ucx"])
@pytest.mark.parametrize("sigkill", [False, True])
def test_daemon_restart_mid_use(scheme, sigkill):
    with Daemon() as d:
        uri = d.grpc_uri if scheme == "grpc" else d.ucx_uri
        with kvstash.Client(uri, max_retries=50, max_backoff_ms=200) as c:
            ns = c.namespace(model="restart/model", num_layers=1, kv_heads=1, head_dim=8)
            keys = ns.prefix_keys(range(256 * 2))
            assert c.put(ns, keys, [b"a" * 1000, b"b" * 1000]) == [True, True]
            d.restart(sigkill=sigkill)
            # DRAM is gone: a miss, not an error; the namespace is registered again.
            out = [bytearray(1000), bytearray(1000)]
            assert c.get_into(ns, keys, out) == [None, None]
            assert c.put(ns, keys, [b"c" * 1000, b"d" * 1000]) == [True, True]
            assert c.get_into(ns, keys, out) == [1000, 1000]
            assert out[0] == b"c" * 1000
