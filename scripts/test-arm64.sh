#!/usr/bin/env bash
# Cross-builds clmcache for AArch64 (cmake/aarch64-linux-gnu.cmake) and runs
# its tests under qemu-aarch64-static, on a Cortex-A76 (the Raspberry Pi 5's
# core: NEON with the dot-product extension, so the neondot path), then the
# kernel and model tests once more on a Cortex-A72 (the Pi 4's: NEON without
# it, so the neon path: the kernels against the scalar reference and the real
# model's golden outputs). The cache and engine tests run on neondot only:
# Numerics.NeonAndNeonDot* shows that both paths compute the same bits, and
# CI's time is better spent elsewhere. Emulation checks results, never speed.
# Needs `scripts/install-deps.sh --arm64`; reference data as scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_TESTING=ON
cmake --build build-arm64
QEMU_CPU=cortex-a76 ctest --test-dir build-arm64 --output-on-failure -j2
for layer in kernels model; do
  echo "== clm_tests_$layer on a Cortex-A72 (neon path)"
  QEMU_CPU=cortex-a72 qemu-aarch64-static "build-arm64/tests/clm_tests_$layer" --gtest_brief=1
done
