#!/usr/bin/env bash
# The before/after runs of lookups.jsonl: 153bd80's kvstashd and wheel ("before", built in a
# worktree) against this change's ("after"), three alternations; the C++ cells use this
# change's kvstash_client_loop against either daemon. Run from the repository root:
#   bash bench/results/2026-11-30-lookup-path/run.sh BEFORE_KVSTASHD BEFORE_WHEEL_DIR
set -euo pipefail
here=bench/results/2026-11-30-lookup-path
py=.venv-py/bin/python
after_wheel=$(ls build/wheel/kvstash_client-*.whl)
for round in 1 2 3; do
  for version in before after; do
    if [[ $version == before ]]; then d=$1; wheel=$(ls "$2"/kvstash_client-*.whl); else d=build/server/kvstashd; wheel=$after_wheel; fi
    "$py" -m pip install -q --no-deps --force-reinstall "$wheel"
    "$py" "$here/cpp_lookups.py" "$d" build/bench/kvstash_client_loop "$version"
    "$py" "$here/python_lookups.py" "$d" "$version"
  done
done
"$py" -m pip install -q --no-deps --force-reinstall "$after_wheel"
