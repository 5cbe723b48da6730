#!/usr/bin/env bash
# Sets up and builds aotc, then runs the main job on the MLP example: export it with a dynamic
# batch to an exported program (.aotp) and run that with the reference interpreter on a random
# batch of 8. (The CPU backend will turn this into a .so.)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target aotc
build/tools/aotc/aotc export examples/mlp/mlp.cpp --dyn batch=1..512 -o build/mlp.aotp
build/tools/aotc/aotc run build/mlp.aotp --input x=8x784
