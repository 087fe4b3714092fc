"""What README says, runs: its quick start and its ``<!-- snippet: run -->`` blocks, as
written, against a kvstashd on the embedded default config (readme_snippets.py).

Engine blocks (``<!-- snippet: engine ENGINE -->``) run in the engine suites."""

from __future__ import annotations

import os
import re
import time
from typing import Dict, Iterator

import pytest

import kvstash
import readme_snippets as rs

SNIPPETS = rs.checked(rs.docs_files())
RUN = [s for s in SNIPPETS if s.mode == "run"]


def _build_dir() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(os.environ["KVSTASHD"])))


def test_every_block_says_how_it_is_tested() -> None:
    assert RUN, "README has no runnable snippet"
    bad = rs.problems(SNIPPETS)
    assert not bad, "\n".join(bad)


def test_engine_blocks_name_a_known_engine() -> None:
    engines = {s.arg for s in SNIPPETS if s.mode == "engine"}
    assert engines <= {"lmcache", "sglang", "vllm"}, engines


@pytest.fixture(scope="module")
def workdir() -> rs.Workdir:
    return rs.Workdir(_build_dir())


def test_demo_script_serves_and_stops(workdir: rs.Workdir) -> None:
    """README's first command (its second, scripts/test.sh, is this suite's caller)."""
    top = next(s for s in SNIPPETS if s.heading == "kvstash")
    assert top.code.splitlines()[0].startswith("scripts/demo.sh "), top.code
    demo = rs.Snippet(top.path, top.line, top.heading, "sh", "scripts/demo.sh\n", "run", "")
    stop = rs.Snippet(top.path, top.line, top.heading, "sh", "scripts/demo.sh stop\n", "run", "")
    with rs.fixed_ports("kvstashd-defaults"):
        try:
            out = rs.run(demo, workdir, timeout_s=600).stdout
            assert "kvstashd is serving grpc://127.0.0.1:7070 and ucx://127.0.0.1:7072" in out, out
            with open(os.path.join(workdir.path, "var", "kvstashd.pid")) as f:
                pid = int(f.read())
        finally:
            rs.run(stop, workdir)
        deadline = time.monotonic() + 30
        while _alive(pid):
            assert time.monotonic() < deadline, "the demo's kvstashd did not stop"
            time.sleep(0.1)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped has stopped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.fixture(scope="module")
def default_daemon(workdir: rs.Workdir) -> Iterator[rs.DefaultDaemon]:
    with rs.DefaultDaemon(os.environ["KVSTASHD"], workdir.path) as d:
        yield d


def _stats() -> Dict[str, int]:
    with kvstash.Client("grpc://127.0.0.1:7070") as c:
        return c.stats()


@pytest.mark.parametrize("snippet", RUN, ids=[s.where for s in RUN])
def test_snippet_runs_as_written(snippet: rs.Snippet, default_daemon: rs.DefaultDaemon,
                                 workdir: rs.Workdir) -> None:
    before = _stats()
    rs.run(snippet, workdir)
    after = _stats()
    if re.search(r"\bput\b", snippet.code):
        # A block that stores chunks must have stored some, and read some back.
        assert after["puts"] > before["puts"], f"{snippet.where}: nothing was stored"
        assert after["hits"] > before["hits"], f"{snippet.where}: nothing was read back"
    assert default_daemon.proc.poll() is None, f"{snippet.where}: kvstashd exited"
