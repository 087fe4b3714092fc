"""Bad arguments raise kvstash.InvalidArgument naming the argument; nothing reaches the daemon."""

import numpy as np
import pytest

import kvstash


def test_wrong_key_length_and_type(client, ns):
    with pytest.raises(kvstash.InvalidArgument, match=r"keys\[1\] is 15 bytes"):
        client.put(ns, [b"k" * 16, b"k" * 15], [b"a", b"b"])
    with pytest.raises(kvstash.InvalidArgument, match=r"keys\[0\] is a str"):
        client.lookup(ns, ["0123456789abcdef"])
    with pytest.raises(kvstash.InvalidArgument, match=r"keys\[0\] has type int"):
        client.exists(ns, [7])
    assert isinstance(kvstash.InvalidArgument(3, "x"), ValueError)


def test_buffer_problems(client, ns):
    keys = ns.prefix_keys(range(32))
    with pytest.raises(kvstash.InvalidArgument, match="2 keys but 1 buffers"):
        client.put(ns, keys, [b"a"])
    with pytest.raises(kvstash.InvalidArgument, match=r"buffers\[0\] is empty"):
        client.put(ns, keys[:1], [b""])
    strided = np.zeros((64, 64), np.uint8)[:, ::2]
    with pytest.raises(kvstash.InvalidArgument, match=r"buffers\[0\] is not contiguous"):
        client.put(ns, keys[:1], [strided])
    with pytest.raises(kvstash.InvalidArgument, match=r"buffers\[0\] is read-only"):
        client.get_into(ns, keys[:1], [b"immutable"])
    with pytest.raises(kvstash.InvalidArgument, match=r"buffers\[1\] has type str"):
        client.put(ns, keys, [b"a", "text"])


def test_buffer_smaller_than_chunk(client, ns):
    key = ns.prefix_keys(range(16))
    client.put(ns, key, [b"x" * 4096])
    small = bytearray(100)
    with pytest.raises(kvstash.InvalidArgument, match=r"buffers\[0\] holds 100 bytes.*4096"):
        client.get_into(ns, key, [small])
    assert small == bytearray(100)


def test_unknown_options_and_bad_values(daemon):
    with pytest.raises(kvstash.InvalidArgument, match="unknown client option 'deadline'"):
        kvstash.Client(daemon.grpc_uri, deadline=5)
    with pytest.raises(kvstash.InvalidArgument, match="deadline_ms"):
        kvstash.Client(daemon.grpc_uri, deadline_ms=0)
    with pytest.raises(kvstash.InvalidArgument, match="client option ucx_direct"):
        kvstash.Client(daemon.grpc_uri, ucx_direct=1)
    with pytest.raises(kvstash.InvalidArgument, match="client option connections"):
        kvstash.Client(daemon.grpc_uri, connections="two")
    # Integers of any kind (numpy's through __index__) are integers; a bool is not.
    with kvstash.Client(daemon.grpc_uri, connections=np.int64(2)):
        pass
    with pytest.raises(kvstash.InvalidArgument, match="client option connections: expected int"):
        kvstash.Client(daemon.grpc_uri, connections=True)
    with pytest.raises(kvstash.InvalidArgument):
        kvstash.Client("http://127.0.0.1:1")
    assert kvstash.default_options()["max_retries"] == 5
    assert kvstash.default_options()["cluster"]["replicas"] == 1


def test_cluster_options_are_checked_by_name_and_type():
    """The cluster options go through the same schema as the others (dotted names)."""
    with pytest.raises(kvstash.InvalidArgument, match=r"option cluster\.replicas: expected int"):
        kvstash.Client("static://127.0.0.1:1", cluster=kvstash.ClusterOptions(replicas="2"))
    with pytest.raises(kvstash.InvalidArgument, match=r"ClientOptions\.cluster\.replicas = 9"):
        kvstash.Client("static://127.0.0.1:1", cluster=kvstash.ClusterOptions(replicas=9))


def test_daemon_down_at_connect():
    with pytest.raises(kvstash.Unavailable):
        kvstash.Client("grpc://127.0.0.1:1", connect_timeout_ms=300)


def test_unregistered_namespace(client):
    ns = kvstash.Namespace(model="never/registered", num_layers=1, kv_heads=1, head_dim=1)
    with pytest.raises(kvstash.Error, match="unknown namespace") as e:
        client.put(ns, ns.prefix_keys(range(256)), [b"x"])
    assert e.value.code == kvstash.StatusCode.FAILED_PRECONDITION


def test_closed_client(daemon, ns):
    c = kvstash.Client(daemon.grpc_uri)
    c.close()
    c.close()
    with pytest.raises(kvstash.Error, match="closed"):
        c.health()


def test_uri_naming_the_metrics_port_fails_at_once_saying_which_port(daemon):
    metrics, ucx = daemon.metrics_address, daemon.addresses["ucx"]
    with pytest.raises(kvstash.Error) as raised:
        kvstash.Client("ucx://" + metrics, connect_timeout_ms=60000)
    assert raised.value.code == kvstash.StatusCode.FAILED_PRECONDITION
    assert (f"{metrics} is kvstashd's metrics endpoint, not its UCX listener (ucx://{ucx})"
            in raised.value.message)


def test_adapter_on_a_wrong_port_logs_what_answered_and_answers_misses(daemon, caplog):
    from kvstash.integrations.lmcache import KvstashL2Adapter
    import select

    metrics = daemon.metrics_address
    adapter = KvstashL2Adapter(uri="ucx://" + metrics)  # the engine still starts
    try:
        logged = [r.getMessage() for r in caplog.records if r.name == "kvstash.integrations"]
        assert any("metrics endpoint, not its UCX listener" in m and metrics in m
                   for m in logged), logged
        fid = adapter.submit_batch_exists(["model@0@0@ab"])
        select.select([adapter.event_fd()], [], [], 10)
        assert adapter.drain_completions() == [(fid, False, "kvstashd unreachable", None)]
    finally:
        adapter.close()
