#!/usr/bin/env bash
# Sets up and builds aotc, then runs the main job on the MLP example: export it with a dynamic
# batch to a self-contained shared library, check it against the reference interpreter across the
# batch range, and run it from examples/run_model (a C++ program using only the runtime header),
# which prints the output and the latency.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target aotc run_model
build/tools/aotc/aotc export examples/mlp/mlp.cpp --dyn batch=1..512 -o build/mlp.so
build/tools/aotc/aotc verify build/mlp.so --samples 3
build/examples/run_model/run_model build/mlp.so --input x=8x784 --iters 200
