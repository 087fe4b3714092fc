"""KvstashL2Adapter under LMCache (from PyPI): LMCache's own L2 harness verifies every byte."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.engine
pytest.importorskip("lmcache")

import kvstash  # noqa: E402
from kvstash.integrations.lmcache import KvstashL2Adapter  # noqa: E402

ENV = dict(os.environ, LMCACHE_DISABLE_BANNER="1", LMCACHE_TRACK_USAGE="false")


def lmcache_cli():
    path = os.path.join(os.path.dirname(sys.executable), "lmcache")
    return path if os.path.exists(path) else shutil.which("lmcache")


def adapter_json(uri, **params):
    return json.dumps({"type": "native_plugin", "module_path": "kvstash.integrations.lmcache",
                       "class_name": "KvstashL2Adapter",
                       "adapter_params": {"uri": uri, **params}})


def bench_l2(adapter, *args, timeout=600):
    cmd = [lmcache_cli(), "bench", "l2", "--l2-adapter", adapter, "--no-skip-verify", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=timeout)


def test_lmcache_bench_l2_verifies(daemon, transport):
    uri = daemon.grpc_uri if transport == "grpc" else daemon.ucx_uri
    r = bench_l2(adapter_json(uri), "--num-keys", "32", "--in-flight", "4", "--data-size-kb",
                 "1024", "--rounds", "2", "--warmup-rounds", "1", "--lookup-max-hit-rate", "1.0")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "Load" in r.stdout


def drain_until(adapter, fid, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for done in adapter.drain_completions():
            if done[0] == fid:
                return done
        time.sleep(0.005)
    raise AssertionError(f"batch {fid} never completed")


def test_contract_directly(daemon):
    a = KvstashL2Adapter(uri=daemon.ucx_uri, model="contract/model")
    keys = [f"contract/model@00000000@0@{i:064x}" for i in range(4)]
    data = [bytearray(os.urandom(256 << 10)) for _ in keys]
    fid = a.submit_batch_set(keys, [memoryview(d) for d in data])
    assert drain_until(a, fid) == (fid, True, "", [True] * 4)
    # Prefix semantics: a hole at key 2 ends the hit.
    a_del = a.submit_batch_delete(keys[2:3])
    assert drain_until(a, a_del)[1] is True
    fid = a.submit_batch_exists(keys)
    assert drain_until(a, fid)[3] == [True, True, False, False]
    out = [bytearray(256 << 10) for _ in keys]
    fid = a.submit_batch_get(keys, [memoryview(o) for o in out])
    assert drain_until(a, fid)[3] == [True, True, False, True]
    assert out[0] == data[0] and out[3] == data[3] and out[2] == bytearray(256 << 10)
    # A buffer of another size is a miss, never a partial copy.
    big = bytearray(512 << 10)
    fid = a.submit_batch_get(keys[:1], [memoryview(big)])
    assert drain_until(a, fid)[3] == [False]
    a.close()


def test_daemon_down_fails_batches_without_raising():
    a = KvstashL2Adapter(uri="grpc://127.0.0.1:1", connect_timeout_ms=200, retry_interval_s=60)
    fid = a.submit_batch_exists(["m@00000000@0@ab"])
    fid2 = a.submit_batch_get(["m@00000000@0@ab"], [memoryview(bytearray(8))])
    done = {d[0]: d for d in drain_until_all(a, {fid, fid2})}
    assert done[fid][1] is False and "unreachable" in done[fid][2]
    assert done[fid2][1] is False
    a.close()


def drain_until_all(adapter, fids, timeout_s=30.0):
    got, deadline = [], time.monotonic() + timeout_s
    while {d[0] for d in got} != fids and time.monotonic() < deadline:
        got += adapter.drain_completions()
        time.sleep(0.005)
    return got


def test_bad_params_are_refused():
    with pytest.raises(kvstash.InvalidArgument, match="nonsense"):
        KvstashL2Adapter(uri="grpc://127.0.0.1:1", nonsense=1)
    with pytest.raises(kvstash.InvalidArgument, match="uri"):
        KvstashL2Adapter(uri="redis://x")


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def checksums(log, phase):
    import re
    return re.findall(rf"\[seq (\d+)/{phase}\] CHECKSUM: ([0-9a-f]+)", log)


def test_mp_server_reloads_from_kvstash_after_l1_clear(daemon, tmp_path):
    """LMCache's MP server stores through the adapter; after its L1 is cleared the same
    requests load from kvstash, with the checksums of the first run."""
    import urllib.request
    rpc, http = free_port(), free_port()
    ns_model = f"mp-server-{os.getpid()}"
    log_path = tmp_path / "server.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [lmcache_cli(), "server", "--l1-size-gb", "0.5", "--eviction-policy", "LRU",
             "--chunk-size", "256", "--host", "127.0.0.1", "--port", str(rpc), "--http-host",
             "127.0.0.1", "--http-port", str(http), "--l2-adapter",
             adapter_json(daemon.ucx_uri, model=ns_model)],
            stdout=log, stderr=subprocess.STDOUT, env=ENV)
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{http}/healthcheck", timeout=2)
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.5)
        bench = [lmcache_cli(), "bench", "server", "--mode", "cpu", "--transfer-mode",
                 "lmcache_driven", "--rpc-url", f"tcp://127.0.0.1:{rpc}", "--url",
                 f"http://127.0.0.1:{http}", "--num-tokens", "512", "--start", "0", "--end", "2",
                 "--interval", "0.2"]
        run1 = subprocess.run(bench, capture_output=True, text=True, env=ENV, timeout=300)
        assert run1.returncode == 0, run1.stdout[-3000:]
        clear = subprocess.run([lmcache_cli(), "kvcache", "clear", "--url",
                                f"http://127.0.0.1:{http}"], capture_output=True, text=True,
                               env=ENV, timeout=120)
        assert clear.returncode == 0, clear.stdout + clear.stderr
        with kvstash.Client(daemon.grpc_uri) as c:
            hits_before = c.stats()["hits"]
        run2 = subprocess.run(bench, capture_output=True, text=True, env=ENV, timeout=300)
        assert run2.returncode == 0, run2.stdout[-3000:]
        with kvstash.Client(daemon.grpc_uri) as c:
            hits_after = c.stats()["hits"]
    finally:
        server.send_signal(2)
        server.wait(timeout=120)
    first = checksums(run1.stdout, "cold")
    assert len(first) == 2 and checksums(run2.stdout, "warm") == first
    assert "LOOKUP: 2/2 chunks hit" in run2.stdout.split("/warm]")[0]
    assert "(0 L1, 2 L2)" in log_path.read_text()
    assert hits_after - hits_before >= 4  # two requests of two chunks, read from kvstash
