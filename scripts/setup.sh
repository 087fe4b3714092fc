#!/usr/bin/env bash
# Installs the Debian 12 packages kvstash builds and tests with (clang and its runtime
# libraries build the fuzz targets, scripts/fuzz.sh; openssl makes the TLS tests'
# certificates; etcd-server and etcd-client run the cluster tests' etcd). Idempotent:
# installs only what is missing, and uses sudo only when not running as root.
#   scripts/setup.sh [--bench]   (--bench also installs the peers: redis-server, memcached,
#                                 fio for the raw-disk rows of the NVMe benchmark, and
#                                 ucx-utils for the ucx_perftest rows of --ucx,
#                                 gnuplot-nox for kvstash_workload's plots)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache clang-format
  clang libclang-rt-14-dev openssl
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libyaml-cpp-dev libxxhash-dev libssl-dev librocksdb-dev
  libgtest-dev libgmock-dev
  libcivetweb-dev libsystemd-dev libucx-dev prometheus etcd-server etcd-client
  python3-dev python3-venv
)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(redis-server memcached fio ucx-utils gnuplot-nox)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [[ "$(id -u)" != "0" ]]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
