#!/usr/bin/env bash
# The engine adapters' suites (python/tests/engines/) against real engines from PyPI:
# LMCache, SGLang and vLLM, each in a virtualenv of its own built from the exact pins in
# python/tests/engines/requirements/ENGINE.txt (a PyPI torch is ~2.5 GB: venvs are cached).
#   scripts/engine_test.sh [BUILD_DIR] [ENGINE...]   (default: build; lmcache sglang vllm)
# Environment: KVSTASH_SKIP_ENGINES=1 skips everything; KVSTASH_ENGINE_VENVS (default
# ~/.cache/kvstash/engine-venvs) holds the venvs, one per engine and pin-file hash; PYTHON
# is the interpreter that creates them (default python3).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [[ "${KVSTASH_SKIP_ENGINES:-0}" == "1" ]]; then
  echo "engine_test: skipped (KVSTASH_SKIP_ENGINES=1)"
  exit 0
fi
build=${1:-build}
shift || true
[[ "$build" = /* ]] || build="$top/$build"
engines=("$@")
[[ ${#engines[@]} -gt 0 ]] || engines=(lmcache sglang vllm)
cache=${KVSTASH_ENGINE_VENVS:-$HOME/.cache/kvstash/engine-venvs}
mkdir -p "$cache"

# venv_for ENGINE: prints the path of the engine's venv, building it when missing.
venv_for() {
  local engine=$1 pins="$top/python/tests/engines/requirements/$1.txt"
  local hash venv
  hash=$(sha256sum "$pins" | cut -c1-12)
  venv="$cache/$engine-$hash"
  # Built in place (scripts in bin/ name their interpreter by path); .complete marks a
  # venv whose install finished; two runs on one machine take turns.
  local lock
  exec {lock}>"$cache/$engine.lock"
  flock "$lock"
  if [[ ! -f "$venv/.complete" ]]; then
    echo "== $engine: building $venv from $(basename "$pins")" >&2
    rm -rf "$venv"
    "${PYTHON:-python3}" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip >&2
    "$venv/bin/python" -m pip install -q --no-deps -r "$pins" >&2
    touch "$venv/.complete"
    # Venvs of older pins are dropped: each is several GB.
    for old in "$cache/$engine"-*; do
      [[ "$old" == "$venv" ]] || rm -rf "$old"
    done
  fi
  exec {lock}>&-
  echo "$venv"
}

wheel=$("$top/scripts/python_wheel.sh" "$build")
status=0
for engine in "${engines[@]}"; do
  start=$SECONDS
  venv=$(venv_for "$engine")
  echo "== $engine: kvstash-client into $venv"
  "$venv/bin/python" -m pip install -q --no-deps --force-reinstall "$wheel"
  echo "== $engine: pytest"
  # Every engine venv has torch: the DLPack test of the client runs there too.
  (cd "$top/python/tests" &&
    KVSTASHD="$build/server/kvstashd" "$venv/bin/python" -m pytest -q --durations=8 "engines/test_$engine"*.py \
      test_client.py::test_torch_cpu_tensors_through_dlpack) || status=1
  echo "== $engine: $((SECONDS - start)) s"
done
exit $status
