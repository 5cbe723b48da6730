#!/usr/bin/env bash
# Sets up, builds and runs every test of aotc: the release build (unit, golden, round-trip and
# bad-input tests), then the sanitizer build (clang, ASan + UBSan) with bounded fuzzer runs.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
ctest --test-dir build --output-on-failure -j2
# A test that skips itself (tests/triton where its wheels cannot be installed) says why here.
grep -h "SKIPPED:" build/Testing/Temporary/LastTest.log || true

cmake -S . -B build-san -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 -DAOTC_SANITIZE=ON -DAOTC_FUZZ=ON
cmake --build build-san
ctest --test-dir build-san --output-on-failure -j2
