#!/usr/bin/env bash
# Builds the Python package (python/) into one wheel, BUILD_DIR/wheel/kvstash_client-*.whl,
# and prints its path. The wheel serves every virtualenv of this interpreter
# (scripts/python_test.sh, scripts/engine_test.sh), so the native extension compiles once per
# change: incrementally in python/build/, without build isolation from a cached build
# virtualenv (python/build-requirements.txt), so that its paths, and with them ccache's hits,
# stay the same from run to run.
#   scripts/python_wheel.sh [BUILD_DIR]      (default: build)
# Environment: KVSTASH_WHEEL_VENV (default ~/.cache/kvstash/wheel-venv-<hash of the pins>)
# holds the build backend; PYTHON is the interpreter (default python3).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
[[ "$build" = /* ]] || build="$top/$build"
pins="$top/python/build-requirements.txt"
venv=${KVSTASH_WHEEL_VENV:-$HOME/.cache/kvstash/wheel-venv-$(sha256sum "$pins" | cut -c1-12)}
mkdir -p "$(dirname "$venv")"
exec {lock}>"$venv.lock"
flock "$lock"  # two runs on one machine: one builds the venv, the other waits for it
if [[ ! -f "$venv/.complete" ]]; then
  rm -rf "$venv"
  "${PYTHON:-python3}" -m venv "$venv" >&2
  "$venv/bin/python" -m pip install -q --upgrade pip >&2
  "$venv/bin/python" -m pip install -q -r "$pins" >&2
  touch "$venv/.complete"
fi
flock -u "$lock"
out="$build/wheel"
rm -rf "$out"
mkdir -p "$out"
echo "== python wheel into $out" >&2
"$venv/bin/python" -m pip wheel -q --no-deps --no-build-isolation -w "$out" "$top/python" >&2
ls "$out"/kvstash_client-*.whl
