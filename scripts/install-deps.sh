#!/usr/bin/env bash
# Installs the Debian 12 packages clmcache needs: to build and run it, or
# with --test also to build and run its tests (GoogleTest, the HTTP client,
# Redis, HAProxy, Chromium, Node.js, pybind11, pytest, the Python ZeroMQ,
# msgpack and CBOR modules, and clang 16 with libFuzzer for
# scripts/fuzz.sh), or with --arm64 what a cross build for AArch64 and its
# emulated tests need (cmake/aarch64-linux-gnu.cmake): the cross compiler,
# qemu-user-static and the arm64 -dev packages, through Debian's multiarch
# (it adds the arm64 architecture to dpkg). Skips apt entirely when
# everything is already there.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libxxhash-dev libre2-dev
  libboost-dev libsqlite3-dev libhiredis-dev
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev
)
if [ "${1:-}" = "--test" ]; then
  packages+=(
    libgtest-dev libgmock-dev libbenchmark-dev
    libcpp-httplib-dev libssl-dev zlib1g-dev libbrotli-dev
    redis-server chromium
    pybind11-dev python3-dev python3-pytest python3-numpy
    python3-zmq python3-msgpack python3-cbor2 haproxy
    clang-16 libclang-rt-16-dev
  )
  # The server's client tests (tests/app/node) need node and npm; a Node.js
  # installed some other way is kept.
  command -v node >/dev/null 2>&1 || packages+=(nodejs)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
elif [ "${1:-}" = "--arm64" ]; then
  # Header-only libraries (nlohmann-json, CLI11) serve both architectures.
  packages+=(g++-aarch64-linux-gnu qemu-user-static)
  for p in libxxhash-dev libre2-dev libsqlite3-dev libhiredis-dev libzmq3-dev cppzmq-dev libmsgpack-cxx-dev \
           libboost-dev libgtest-dev libgmock-dev libbenchmark-dev libcpp-httplib-dev libssl-dev zlib1g-dev \
           libbrotli-dev; do
    packages+=("$p:arm64")
  done
elif [ -n "${1:-}" ]; then
  echo "usage: $0 [--test | --arm64]" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
if [ "${1:-}" = "--arm64" ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $sudo dpkg --add-architecture arm64
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
