#!/usr/bin/env bash
# The container image (deploy/Containerfile) must carry every shared library its binaries
# load: for each library `ldd` lists, the Debian package that owns it must be installed by
# the runtime stage, be pulled in by a package it installs, or be one of the required
# packages every Debian image has. Catches a new dependency that would leave the image's
# kvstashd unable to start, without building the image (no container engine on CI hosts).
#   container_libs_test.sh CONTAINERFILE BINARY...
# Exit 77 (skipped) without dpkg/apt-cache.
set -euo pipefail
containerfile=$1
shift
for tool in dpkg dpkg-query apt-cache ldd; do
  command -v "$tool" >/dev/null || { echo "SKIPPED: $tool not found"; exit 77; }
done

# Package names of the last stage's `apt-get install ... --no-install-recommends NAMES &&`.
runtime_packages() {
  awk '/^FROM /{stage=""} {stage = stage $0 "\n"} END{printf "%s", stage}' "$containerfile" |
    tr '\\\n' '  ' | sed -n 's/.*--no-install-recommends\([^&]*\)&&.*/\1/p' | tr ' ' '\n' |
    grep -E '^[a-z0-9][a-z0-9.+-]+$' || true
}

mapfile -t listed < <(runtime_packages)
[[ ${#listed[@]} -gt 0 ]] || { echo "FAIL: no runtime packages found in $containerfile"; exit 1; }
declare -A allowed=()
while read -r pkg; do allowed[$pkg]=1; done < <(
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "${listed[@]}" 2>/dev/null | grep -E '^[a-z0-9]' | sed 's/:.*//')
while read -r pkg prio; do
  [[ $prio == required ]] && allowed[$pkg]=1
done < <(dpkg-query -W -f='${Package} ${Priority}\n')
for pkg in "${listed[@]}"; do
  apt-cache show "$pkg" >/dev/null 2>&1 || { echo "FAIL: $containerfile installs unknown package $pkg"; exit 1; }
done

owner() {  # the package owning library file $1 (with or without the /usr merge prefix)
  local f=$1 alt
  alt=${f#/usr}
  [[ $alt == "$f" ]] && alt=/usr$f
  { dpkg -S "$f" 2>/dev/null || dpkg -S "$alt" 2>/dev/null || true; } | head -1 | sed 's/:.*//'
}

missing=0
checked=0
for bin in "$@"; do
  [[ -x $bin ]] || { echo "FAIL: $bin is not an executable"; exit 1; }
  while read -r lib; do
    pkg=$(owner "$lib")
    checked=$((checked + 1))
    if [[ -z $pkg ]]; then
      echo "FAIL: $(basename "$bin") loads $lib, which no Debian package owns"
      missing=1
    elif [[ -z ${allowed[$pkg]:-} ]]; then
      echo "FAIL: $(basename "$bin") loads $lib from package $pkg, which the runtime stage of $containerfile does not install"
      missing=1
    fi
  done < <(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3}')
done
[[ $checked -gt 0 ]] || { echo "FAIL: ldd listed no libraries"; exit 1; }
[[ $missing == 0 ]] && echo "OK: $checked libraries of $# binaries, all installed by the image"
exit $missing
