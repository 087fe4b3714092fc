#!/usr/bin/env bash
# Builds the Python package's wheel (scripts/python_wheel.sh), installs it into a virtualenv
# and runs its pytest suite against the kvstashd of a build directory.
#   scripts/python_test.sh [BUILD_DIR]     (default: build; kvstashd must be built there)
# Environment: KVSTASH_PY_VENV (default .venv-py) picks the virtualenv, PYTHON the
# interpreter that creates it (default python3), PYTEST_ARGS extra pytest arguments.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
[[ "$build" = /* ]] || build="$top/$build"
venv=${KVSTASH_PY_VENV:-$top/.venv-py}
[[ "$venv" = /* ]] || venv="$top/$venv"

if [[ ! -x "$build/server/kvstashd" ]]; then
  echo "python_test: $build/server/kvstashd is missing; build first (scripts/build.sh)" >&2
  exit 1
fi
if [[ ! -x "$venv/bin/python" ]]; then
  "${PYTHON:-python3}" -m venv "$venv"
fi
wheel=$("$top/scripts/python_wheel.sh" "$build")
echo "== python package into $venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheel"
"$venv/bin/python" -m pip install -q "${wheel}[test]"
echo "== pytest (python/tests)"
cd "$top/python/tests"
KVSTASHD="$build/server/kvstashd" "$venv/bin/python" -m pytest -q -m "not engine" ${PYTEST_ARGS:-}
