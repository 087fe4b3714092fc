"""README's code blocks as tests: find them, say how each is exercised, run them as written.

Every ``sh``, ``python`` and ``json`` block of the repository README (and any block of a
file under docs/ that carries a marker) sits under an HTML comment on the line above::

    <!-- snippet: run -->                      run by test_readme.py against a kvstashd
                                               started as README says (no flags)
    <!-- snippet: engine ENGINE -->            run by ENGINE's suite (scripts/engine_test.sh)
    <!-- snippet: illustrative: WHY -->        not run; WHY says why

so a new block cannot escape the tests unnoticed, and a failure names the file, line and
heading of the block. Shell blocks run under ``bash -e -o pipefail`` in a scratch directory
that links the repository's top-level folders (``build`` to the build under test), with
``build/client`` and ``build/server`` on PATH as an installed kvstash would be; Python
blocks run with the test's interpreter in the same directory.

Thread-safety: functions of their arguments; a DefaultDaemon is driven by one thread.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Dict, Iterator, List, Optional, Sequence

from kvstash.testing import parse_ready_file

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(REPO, "README.md")
CHECKED_LANGS = ("sh", "python", "json")
MODES = ("run", "engine", "illustrative")
# The embedded default config's listeners (README, "Configuration reference").
DEFAULT_PORTS = {"grpc": 7070, "metrics": 7071, "ucx": 7072}

_MARKER = re.compile(r"<!--\s*snippet:\s*(run|engine|illustrative)\b[:\s]*(.*?)\s*-->")
_FENCE = re.compile(r"^```(\w*)\s*$")


@dataclasses.dataclass(frozen=True)
class Snippet:
    """One fenced block: where it is, what it is, and how the tests exercise it."""

    path: str  # relative to the repository
    line: int  # 1-based line of the opening fence
    heading: str  # the nearest heading above it
    lang: str
    code: str
    mode: Optional[str]  # "run", "engine", "illustrative", or None when unmarked
    arg: str  # the engine's name, or the reason a block is illustrative

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line} ({self.heading})"


def parse(path: str) -> List[Snippet]:
    """Every fenced block of the Markdown file ``path`` with its marker, in file order."""
    with open(path) as f:
        lines = f.read().splitlines()
    rel = os.path.relpath(path, REPO)
    out: List[Snippet] = []
    heading, i = "top", 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if lines[i].startswith("#") and not fence:
            heading = lines[i].lstrip("#").strip()
        if not fence:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        prev = i - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        marker = _MARKER.search(lines[prev]) if prev >= 0 else None
        out.append(Snippet(rel, i + 1, heading, fence.group(1), "\n".join(lines[i + 1:end]) + "\n",
                           marker.group(1) if marker else None,
                           marker.group(2).strip() if marker else ""))
        i = end + 1
    return out


def checked(paths: Sequence[str]) -> List[Snippet]:
    """The README's sh/python/json blocks, and every marked block of ``paths``."""
    out = [s for s in parse(README) if s.lang in CHECKED_LANGS or s.mode]
    for p in paths:
        out += [s for s in parse(p) if s.mode]
    return out


def docs_files() -> List[str]:
    docs = os.path.join(REPO, "docs")
    return sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))


def problems(snippets: Sequence[Snippet]) -> List[str]:
    """What is wrong with the markers: a missing marker, an illustrative block without a
    reason, an engine block without an engine."""
    out = []
    for s in snippets:
        if s.mode is None:
            out.append(f"{s.where}: ```{s.lang} block has no <!-- snippet: ... --> marker")
        elif s.mode != "run" and not s.arg:
            out.append(f"{s.where}: snippet: {s.mode} needs "
                       f"{'an engine' if s.mode == 'engine' else 'a reason'}")
    return out


class Workdir:
    """A scratch directory that looks like the repository root to a snippet."""

    def __init__(self, build_dir: str) -> None:
        self.path = tempfile.mkdtemp(prefix="kvstash-readme-")
        for entry in os.listdir(REPO):
            if entry.startswith(".") or entry.startswith("build") or entry == "var":
                continue
            os.symlink(os.path.join(REPO, entry), os.path.join(self.path, entry))
        os.symlink(build_dir, os.path.join(self.path, "build"))
        self.env = dict(os.environ)
        self.env["PATH"] = os.pathsep.join(
            [os.path.join(build_dir, "client"), os.path.join(build_dir, "server"),
             os.path.dirname(sys.executable), self.env.get("PATH", "")])


def run(snippet: Snippet, workdir: Workdir, timeout_s: float = 300,
        substitutions: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    """Runs ``snippet`` (sh or python) in ``workdir`` with the user's substitutions
    (literal text -> text, e.g. MODEL -> a model directory). Raises AssertionError naming
    the block and its output when it fails."""
    code = snippet.code
    for old, new in (substitutions or {}).items():
        code = code.replace(old, new)
    if snippet.lang == "sh":
        argv = ["bash", "-e", "-o", "pipefail", "-c", code]
    elif snippet.lang == "python":
        argv = [sys.executable, "-c", code]
    else:
        raise AssertionError(f"{snippet.where}: cannot run a ```{snippet.lang} block")
    try:
        proc = subprocess.run(argv, cwd=workdir.path, env=workdir.env, capture_output=True,
                              text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{snippet.where}: still running after {timeout_s} s\n"
                             f"{e.stdout or ''}{e.stderr or ''}") from None
    if proc.returncode != 0:
        raise AssertionError(
            f"{snippet.where}: exited {proc.returncode}{_failing_line(snippet, proc.stderr)}\n"
            f"--- block ---\n{code}--- stdout ---\n{proc.stdout}--- stderr ---\n{proc.stderr}")
    return proc


def start(snippet: Snippet, workdir: Workdir, log_path: str,
          substitutions: Optional[Dict[str, str]] = None,
          env: Optional[Dict[str, str]] = None) -> subprocess.Popen:
    """Starts a long-running ``sh`` block (a server) in ``workdir``, output to ``log_path``,
    in a process group of its own (stop it with :func:`stop`)."""
    code = snippet.code
    for old, new in (substitutions or {}).items():
        code = code.replace(old, new)
    with open(log_path, "w") as log:
        return subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", "exec " + code.lstrip()],
                                cwd=workdir.path, env={**workdir.env, **(env or {})},
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop(proc: subprocess.Popen, timeout_s: float = 60) -> None:
    """SIGINT to the process group of a :func:`start`ed block, SIGKILL after ``timeout_s``."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def words(snippet: Snippet) -> List[str]:
    """The words of a one-command ``sh`` block as bash splits them."""
    return shlex.split(snippet.code.replace("\\\n", " "), comments=True)


def flag_value(snippet: Snippet, flag: str) -> str:
    """The argument after ``flag`` in a one-command ``sh`` block."""
    w = words(snippet)
    if flag not in w[:-1]:
        raise AssertionError(f"{snippet.where}: no {flag} argument")
    return w[w.index(flag) + 1]


def _failing_line(snippet: Snippet, stderr: str) -> str:
    """", README.md line N" for the block line a Python traceback or bash names."""
    found = re.findall(r'File "<string>", line (\d+)', stderr) or re.findall(
        r"^bash: line (\d+):", stderr, re.M)
    if not found:
        return ""
    return f", {snippet.path} line {snippet.line + int(found[-1])}"


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextlib.contextmanager
def fixed_ports(name: str, timeout_s: float = 1800) -> Iterator[None]:
    """Holds a lock, one per machine, for tests that need fixed ports (README's defaults,
    LMCache's): two suites on one machine take turns instead of failing on a taken port."""
    path = os.path.join(tempfile.gettempdir(), f"kvstash-fixed-ports-{name}.lock")
    with open(path, "w") as f:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{path}: held by another test run for {timeout_s} s")
                time.sleep(0.5)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class DefaultDaemon:
    """kvstashd started as README's "Running kvstashd" does, with no config flags: the
    embedded default config, its ports (7070 gRPC, 7071 metrics, 7072 UCX) and ./var/kvstash
    in ``cwd``; only ``--ready_file``, which changes nothing served, tells that this process
    is the one serving. Holds :func:`fixed_ports` while it runs. Raises RuntimeError when a
    default port is taken or it does not get ready."""

    def __init__(self, kvstashd: str, cwd: str, start_timeout_s: float = 60) -> None:
        self._ports = fixed_ports("kvstashd-defaults")
        self._ports.__enter__()
        self.proc: Optional[subprocess.Popen] = None
        try:
            self._start(kvstashd, cwd, start_timeout_s)
        except BaseException:
            self.close()
            raise

    def _start(self, kvstashd: str, cwd: str, start_timeout_s: float) -> None:
        taken = [f"{name} {port}" for name, port in DEFAULT_PORTS.items() if not port_free(port)]
        if taken:
            raise RuntimeError(f"README's snippets need the default ports; in use: {taken}")
        self.log_path = os.path.join(cwd, "kvstashd.log")
        ready = os.path.join(cwd, "kvstashd.ready")
        if os.path.exists(ready):
            os.remove(ready)
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen([kvstashd, "--ready_file", ready], cwd=cwd, stdout=log,
                                         stderr=subprocess.STDOUT)
        deadline = time.monotonic() + start_timeout_s
        while not (self._ours(ready) and self._ready()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                with open(self.log_path) as f:
                    raise RuntimeError(f"kvstashd (default config) did not get ready:\n{f.read()}")
            time.sleep(0.1)

    def _ours(self, ready: str) -> bool:
        try:
            with open(ready) as f:
                info = parse_ready_file(f.read())
        except (OSError, ValueError):
            return False
        return self.proc is not None and info.get("pid") == str(self.proc.pid)

    @staticmethod
    def _ready() -> bool:
        url = f"http://127.0.0.1:{DEFAULT_PORTS['metrics']}/readyz"
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    def close(self) -> None:
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        finally:
            if self._ports is not None:
                ports, self._ports = self._ports, None
                ports.__exit__(None, None, None)

    def __enter__(self) -> "DefaultDaemon":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
