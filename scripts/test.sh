#!/usr/bin/env bash
# Builds clmcache with its tests and the Python module and runs every test.
# Reference data is read from ../shared (override with CLMCACHE_SHARED=DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON
cmake --build build
ctest --test-dir build --output-on-failure -j2
# The AVX2 kernels are what most desktops run, while a machine with AVX-512
# runs its wider paths above: the golden, bitwise-reuse and tier tests once
# more on the forced AVX2 path (README, Layout: CLMCACHE_TEST_KERNELS).
if grep -qw avx2 /proc/cpuinfo && grep -qw avx512f /proc/cpuinfo; then
  for layer in kernels model cache engine tier; do
    echo "== clm_tests_$layer on the avx2 path"
    CLMCACHE_TEST_KERNELS=avx2 "build/tests/clm_tests_$layer" --gtest_brief=1
  done
fi
# On an AArch64 CPU with the dot-product extension (a Raspberry Pi 5), the
# same layers once more on the plain neon path, which a Pi 4 runs.
if grep -qw asimddp /proc/cpuinfo; then
  for layer in kernels model cache engine tier; do
    echo "== clm_tests_$layer on the neon path"
    CLMCACHE_TEST_KERNELS=neon "build/tests/clm_tests_$layer" --gtest_brief=1
  done
fi
