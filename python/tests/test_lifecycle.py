"""A program that never closes its client still exits cleanly, whatever it had running."""

import subprocess
import sys
import textwrap

import pytest

PROGRAM = textwrap.dedent("""
    import sys, kvstash
    c = kvstash.Client(sys.argv[1])
    ns = c.namespace(model="exit/model", num_layers=1, kv_heads=1, head_dim=1)
    keys = ns.prefix_keys(range(256 * 4))
    if sys.argv[2] == "async":
        c.put_async(ns, keys, [b"x" * 1000] * 4).result()
        pending = c.get_into_async(ns, keys, [bytearray(1000) for _ in keys])  # not awaited
    else:
        c.put(ns, keys, [b"x" * 1000] * 4)
    print("done")
""")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_exit_without_close(daemon, transport, mode):
    uri = daemon.grpc_uri if transport == "grpc" else daemon.ucx_uri
    r = subprocess.run([sys.executable, "-c", PROGRAM, uri, mode], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "done"
    assert "terminate" not in r.stderr and "leak" not in r.stderr, r.stderr
