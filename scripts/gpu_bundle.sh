#!/usr/bin/env bash
# Builds what the GPU check needs on this (Debian) build host and packs it with every shared
# library it loads, for a GPU host that has the NVIDIA driver, Python with torch and no
# Debian packages or network (scripts/gpu_check.sh runs it there):
#   scripts/gpu_bundle.sh [OUT_TAR]      (default: gpu-bundle.tar.gz)
# Environment: CUDA_ARCHS (default "90": H100/H200; "80;90" adds A100), BUILD_DIR (default
# build-gpu). glibc, libstdc++ and libgcc_s stay the GPU host's own (newer there, and torch
# must load the host's libstdc++); the CUDA runtime is linked statically.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
tar_out=$(realpath -m "${1:-gpu-bundle.tar.gz}")
build=${BUILD_DIR:-$top/build-gpu}
"$top/scripts/setup.sh"
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHS:-90}" -DKVSTASH_BUILD_TESTS=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target kvstashd kvstash kvstash_paged_capi \
  paged_gpu_test kvstash_cuda_bench

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib/ucx"
cp "$build/server/kvstashd" "$build/client/kvstash" "$build/cuda/tests/paged_gpu_test" \
  "$build/cuda/bench/kvstash_cuda_bench" "$stage/bin/"
cp "$build/tests/libkvstash_paged_capi.so" "$stage/lib/"
# UCX loads its cma transport (part of "sm") as a module from its own directory.
ucx_modules=$(dirname "$(ldconfig -p | awk '/libucp.so.0 /{print $NF; exit}')")/ucx
cp -L "$ucx_modules/libuct_cma.so.0" "$stage/lib/ucx/"

# Every library the binaries load, but the C runtime that the GPU host brings.
host_own='^(libc|libm|libdl|librt|libpthread|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcuda)\.so'
for f in "$stage"/bin/* "$stage"/lib/*.so "$stage"/lib/ucx/*; do
  ldd "$f" | awk '/=> \//{print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $host_own ]] || cp -nL "$path" "$stage/lib/$name"
done
chmod -R u+w "$stage"
strip --strip-unneeded "$stage"/bin/* "$stage"/lib/*.so* "$stage"/lib/ucx/* 2>/dev/null || true
tar -C "$stage" -czf "$tar_out" .
echo "gpu_bundle: $tar_out ($(du -h "$tar_out" | cut -f1); $(ls "$stage/lib" | wc -l) libraries)"
