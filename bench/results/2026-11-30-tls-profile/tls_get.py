import os, sys, threading, time, subprocess, numpy as np, kvstash
from kvstash.testing import Daemon
tls = sys.argv[1] == "tls"
sets = {"storage.dram.capacity_bytes": "1GiB"}
if tls:
    sets.update({"server.tls.cert_file": "/tmp/certs/server.crt", "server.tls.key_file": "/tmp/certs/server.key"})
with Daemon(sets, kvstashd="build/server/kvstashd") as d:
    opts = {"tls_ca_file": "/tmp/certs/ca.crt"} if tls else {}
    uri = d.grpc_uri.replace("grpc://", "grpcs://") if tls else d.grpc_uri
    c = kvstash.Client(uri.replace("127.0.0.1", "localhost"), **opts)
    ns = c.namespace(model="m", num_layers=0, kv_heads=0, head_dim=0, dtype="opaque", chunk_tokens=1, kv_layout="x")
    N = 4 << 20
    keys = [[kvstash.key_from_engine_hash(f"{t}-{i}") for i in range(8)] for t in range(4)]
    for t in range(4):
        c.put(ns, keys[t], [np.full(N, t, np.uint8) for _ in range(8)])
    stop = time.time() + float(sys.argv[2])
    moved = [0] * 4
    def work(t):
        bufs = [np.empty(N, np.uint8) for _ in range(8)]
        while time.time() < stop:
            c.get_into(ns, keys[t], bufs); moved[t] += 8 * N
    perf = None
    if len(sys.argv) > 3:
        perf = subprocess.Popen(["perf", "record", "--call-graph", "dwarf,32768", "-F", "299", "-o", sys.argv[3], "-p", f"{d.proc.pid},{os.getpid()}"], stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    t0 = time.time()
    ths = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    [x.start() for x in ths]; [x.join() for x in ths]
    el = time.time() - t0
    if perf: perf.send_signal(2); perf.wait()
    print("tls" if tls else "plain", "get 4MiB x4: %.2f GB/s, %.3f GB in %.2f s" % (sum(moved) / el / 1e9, sum(moved) / 1e9, el))
    c.close()
