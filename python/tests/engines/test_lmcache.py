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


def wrapper(uri, max_capacity_gb=1.0, **params):
    """LMCache's own NativeConnectorL2Adapter over KvstashL2Adapter, built by LMCache's
    factory from the config its server takes (``--l2-adapter``)."""
    from lmcache.v1.distributed.l2_adapters import create_l2_adapter
    from lmcache.v1.distributed.l2_adapters.native_plugin_l2_adapter import (
        NativePluginL2AdapterConfig)
    cfg = json.loads(adapter_json(uri, **params))
    cfg["max_capacity_gb"] = max_capacity_gb
    return create_l2_adapter(NativePluginL2AdapterConfig.from_dict(cfg))


def wait_for(poll, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = poll()
        if got is not None:
            return got
        time.sleep(0.005)
    raise AssertionError("LMCache's wrapper never completed the task")


def object_keys(model, n, first=0):
    from lmcache.v1.distributed.api import ObjectKey
    return [ObjectKey(chunk_hash=i.to_bytes(32, "big"), model_name=model, kv_rank=0)
            for i in range(first, first + n)]


def bits(bitmap):
    return [bitmap.test(i) for i in range(len(bitmap))]


def test_contract_through_lmcaches_wrapper(daemon):
    """Per-key answers as LMCache's NativeConnectorL2Adapter reads them: stores, lookups
    with a hole in the middle, loads, deletes that free LMCache's L2 usage, empty batches."""
    from lmcache.v1.memory_management import BytesBufferMemoryObj
    l2 = wrapper(daemon.ucx_uri, model="contract/model")
    try:
        keys = object_keys("contract/model", 4)
        data = [bytearray(os.urandom(256 << 10)) for _ in keys]
        task = l2.submit_store_task(keys, [BytesBufferMemoryObj(d) for d in data])
        stored = wait_for(lambda: l2.pop_completed_store_tasks().get(task))
        assert stored == 4 * (256 << 10)  # success, bytes charged to LMCache's usage
        assert l2.get_usage().total_bytes_used == 4 * (256 << 10)
        # A key deleted behind LMCache's back is a hole; the keys after it are still found.
        with kvstash.Client(daemon.grpc_uri) as c:
            ns = kvstash.Namespace(model="contract/model", num_layers=0, kv_heads=0,
                                   head_dim=0, dtype="opaque", chunk_tokens=1,
                                   kv_layout="lmcache.l2.object.v1")
            c.open_namespace(ns)
            from lmcache.v1.distributed.l2_adapters.native_connector_l2_adapter import (
                _object_key_to_string)
            assert c.delete(ns, [kvstash.key_from_engine_hash(_object_key_to_string(keys[1]))]) == 1
        task = l2.submit_lookup_and_lock_task(keys, {})
        assert bits(wait_for(lambda: l2.query_lookup_and_lock_result(task))) == [
            True, False, True, True]
        l2.submit_unlock([keys[0], keys[2], keys[3]])
        out = [BytesBufferMemoryObj(bytearray(256 << 10)) for _ in keys]
        task = l2.submit_load_task(keys, out)
        assert bits(wait_for(lambda: l2.query_load_result(task))) == [True, False, True, True]
        assert out[0].byte_array == data[0] and out[3].byte_array == data[3]
        assert out[1].byte_array == bytearray(256 << 10)
        # A buffer of another size is a miss, never a partial copy.
        big = BytesBufferMemoryObj(bytearray(512 << 10))
        task = l2.submit_load_task(keys[:1], [big])
        assert bits(wait_for(lambda: l2.query_load_result(task))) == [False]
        # LMCache evicting: every deleted key's bytes leave its usage, the one kvstash had
        # already lost included.
        l2.delete(keys[:2])
        assert l2.get_usage().total_bytes_used == 2 * (256 << 10)
        l2.delete(keys[2:])
        assert l2.get_usage().total_bytes_used == 0
        task = l2.submit_lookup_and_lock_task(keys, {})
        assert bits(wait_for(lambda: l2.query_lookup_and_lock_result(task))) == [False] * 4
        # Empty batches complete, with nothing in them.
        task = l2.submit_lookup_and_lock_task([], {})
        assert bits(wait_for(lambda: l2.query_lookup_and_lock_result(task))) == []
        task = l2.submit_store_task([], [])
        assert wait_for(lambda: l2.pop_completed_store_tasks().get(task)) == 0
        task = l2.submit_load_task([], [])
        assert bits(wait_for(lambda: l2.query_load_result(task))) == []
    finally:
        l2.close()


def test_every_batch_completes_exactly_once(daemon):
    """Many batches in flight over both paths: one completion per submitted future id."""
    a = KvstashL2Adapter(uri=daemon.grpc_uri, model="once/model")
    keys = [f"once/model@00000000@0@{i:064x}" for i in range(8)]
    bufs = [memoryview(bytearray(64 << 10)) for _ in keys]
    fids = [a.submit_batch_set(keys, bufs)]
    fids += [a.submit_batch_exists(keys[: i + 1]) for i in range(8)]
    fids += [a.submit_batch_get(keys, [memoryview(bytearray(64 << 10)) for _ in keys])]
    fids += [a.submit_batch_delete([]), a.submit_batch_exists([])]
    got = drain_until_all(a, set(fids))
    time.sleep(0.2)
    got += a.drain_completions()
    assert sorted(d[0] for d in got) == sorted(fids)
    by_id = {d[0]: d for d in got}
    assert by_id[fids[-1]] == (fids[-1], True, "", [])
    assert by_id[fids[-2]] == (fids[-2], True, "", [])
    for i in range(8):
        assert len(by_id[fids[1 + i]][3]) == i + 1
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


def free_ports(n):
    """``n`` distinct free ports (every socket stays bound until all are picked)."""
    import contextlib
    import socket
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def checksums(log, phase):
    import re
    return re.findall(rf"\[seq (\d+)/{phase}\] CHECKSUM: ([0-9a-f]+)", log)


def wait_healthy(server, http, log_path, timeout_s=180):
    import urllib.request
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{http}/healthcheck", timeout=2)
            return
        except OSError:
            assert server.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.5)


def store_clear_reload(rpc, http, grpc_uri, log_path):
    """Through a running MP server: ``lmcache bench server`` stores two requests, ``lmcache
    kvcache clear`` empties L1, the same requests load from kvstash with the same
    checksums."""
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
    with kvstash.Client(grpc_uri) as c:
        hits_before = c.stats()["hits"]
    run2 = subprocess.run(bench, capture_output=True, text=True, env=ENV, timeout=300)
    assert run2.returncode == 0, run2.stdout[-3000:]
    with kvstash.Client(grpc_uri) as c:
        hits_after = c.stats()["hits"]
    first = checksums(run1.stdout, "cold")
    assert len(first) == 2 and checksums(run2.stdout, "warm") == first
    assert "LOOKUP: 2/2 chunks hit" in run2.stdout.split("/warm]")[0]
    assert "(0 L1, 2 L2)" in log_path.read_text()
    assert hits_after - hits_before >= 4  # two requests of two chunks, read from kvstash


def test_mp_server_reloads_from_kvstash_after_l1_clear(daemon, tmp_path):
    """LMCache's MP server stores through the adapter; after its L1 is cleared the same
    requests load from kvstash, with the checksums of the first run."""
    rpc, http = free_ports(2)
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
        wait_healthy(server, http, log_path)
        store_clear_reload(rpc, http, daemon.grpc_uri, log_path)
    finally:
        server.send_signal(2)
        try:
            server.wait(timeout=120)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_readme_server_command(tmp_path):
    """README's ``lmcache server`` command as written (its default ports, 5555 and 8080),
    against kvstashd on its embedded default config."""
    import readme_snippets as rs
    blocks = [s for s in rs.checked(rs.docs_files()) if s.mode == "engine" and s.arg == "lmcache"]
    assert len(blocks) == 1 and blocks[0].code.startswith("lmcache server "), blocks
    workdir = rs.Workdir(os.path.dirname(os.path.dirname(os.environ["KVSTASHD"])))
    log_path = tmp_path / "server.log"
    with rs.fixed_ports("lmcache-defaults"), rs.DefaultDaemon(os.environ["KVSTASHD"], workdir.path):
        for port in (5555, 8080):
            assert rs.port_free(port), f"port {port} is taken"
        server = rs.start(blocks[0], workdir, str(log_path),
                          env={"LMCACHE_DISABLE_BANNER": "1", "LMCACHE_TRACK_USAGE": "false"})
        try:
            wait_healthy(server, 8080, log_path)
            store_clear_reload(5555, 8080, "grpc://127.0.0.1:7070", log_path)
        finally:
            rs.stop(server, timeout_s=120)
