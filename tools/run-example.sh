#!/usr/bin/env bash
# Sets up and builds aotc, then runs the main job on the MLP example: until the tracer and the
# backends land, that is the optimization pipeline over the example's graph IR.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target aotc
build/tools/aotc/aotc opt examples/mlp/mlp.aotc --passes=default
