#!/bin/bash
# Alternates the connector's load path (bench/vllm_ttft_bench.py load_path) between two
# wheels: run.sh VLLM_VENV OUT.jsonl, with KVSTASHD and WHEELS (holding old/ and new/) set.
V=$1; OUT=$2
cd "$(dirname "$0")/../.."
for i in 1 2 3; do
  for which in old new; do
    $V/bin/pip install -q --no-deps --force-reinstall $WHEELS/$which/kvstash_client-0.1.0-cp311-cp311-linux_x86_64.whl
    PYTHONPATH=. $V/bin/python -c "
import json, vllm_ttft_bench as b
for r in b.load_path('$KVSTASHD', 9, 2048, 'float32'):
    r['wheel'] = '$which'; r['invocation'] = $i
    print(json.dumps(r))" 2>/dev/null | grep '^{' >> $OUT
  done
done
