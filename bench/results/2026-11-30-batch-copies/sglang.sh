#!/bin/bash
# Alternates bench/sglang_hicache_bench.py between two installs of the kvstash package:
# sglang.sh SGLANG_VENV OUTDIR, with KVSTASHD set and PKGS holding before/ and after/.
V=$1; OUTDIR=$2
SP=$($V/bin/python -c "import site; print(site.getsitepackages()[0])")
cd "$(dirname "$0")/../../.."
for i in 1 2; do
  for which in before after; do
    rm -rf "$SP/kvstash" && cp -a "$PKGS/$which" "$SP/kvstash"
    $V/bin/python bench/sglang_hicache_bench.py --kvstashd "$KVSTASHD" \
      --out "$OUTDIR/sglang-run$i-$which" > /dev/null 2>&1
  done
done
