#!/bin/bash
# Alternates the connector's load path (bench/vllm_ttft_bench.py load_path) between two
# installs of the kvstash package: run.sh VLLM_VENV OUT.jsonl, with KVSTASHD set and PKGS
# holding before/ and after/ (copies of site-packages/kvstash from each wheel).
V=$1; OUT=$2
SP=$($V/bin/python -c "import site; print(site.getsitepackages()[0])")
cd "$(dirname "$0")/../.."
for i in 1 2 3; do
  for which in before after; do
    rm -rf "$SP/kvstash" && cp -a "$PKGS/$which" "$SP/kvstash"
    PYTHONPATH=. $V/bin/python -c "
import json, vllm_ttft_bench as b
for r in b.load_path('$KVSTASHD', 9, 2048, 'float32'):
    r['package'] = '$which'; r['invocation'] = $i
    print(json.dumps(r))" 2>/dev/null | grep '^{' >> $OUT
  done
done
