#!/usr/bin/env bash
# Builds clmcache with its tests and the Python module and runs every test.
# Reference data is read from ../shared (override with CLMCACHE_SHARED=DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON
cmake --build build
ctest --test-dir build --output-on-failure -j2
