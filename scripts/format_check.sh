#!/usr/bin/env bash
# Fails when a tracked C/C++/CUDA source is not formatted as .clang-format says.
#   scripts/format_check.sh            every tracked source
#   scripts/format_check.sh --fix      reformat them in place instead
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
mapfile -t files < <(git ls-files '*.h' '*.cc' '*.cu' '*.cuh' | grep -v '^python/build/')
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
if ! clang-format --dry-run -Werror "${files[@]}" 2>/tmp/kvstash-format.$$; then
  grep -E '^[^ ].*: (error|warning):' /tmp/kvstash-format.$$ | cut -d: -f1 | sort -u |
    sed 's/^/not clang-format clean: /'
  rm -f /tmp/kvstash-format.$$
  echo "run scripts/format_check.sh --fix (clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1))"
  exit 1
fi
rm -f /tmp/kvstash-format.$$
echo "format: ${#files[@]} files clean"
