#!/usr/bin/env bash
# The install test: installs the aotc build tree BUILD into a temporary prefix, builds this
# consumer project against it with GENERATOR (a copy of the model in the temporary directory),
# runs the program and `aotc verify` (ctest), then checks that a rebuild with nothing changed
# exports nothing, and that editing the model file, a header it includes, the weights or the aotc
# binary re-exports. With --package it also builds the .deb (cpack -G DEB) from BUILD.
# Usage: check.sh BUILD GENERATOR [--package]
set -euo pipefail
build=$(cd "$1" && pwd)
generator=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/aotc-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

step() { echo "== $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

step "install into $tmp/prefix"
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
"$tmp/prefix/bin/aotc" --version

mkdir "$tmp/model"
cp "$here/tiny_mlp.cpp" "$here/tiny_mlp_sizes.h" "$tmp/model/"
weights=$tmp/model/tiny_mlp.safetensors
"$tmp/prefix/bin/aotc" weights "$tmp/model/tiny_mlp.cpp" --seed 1 -o "$weights"
step "configure and build the consumer ($generator)"
cmake -S "$here" -B "$tmp/build" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DMODEL_SOURCE="$tmp/model/tiny_mlp.cpp" -DMODEL_WEIGHTS="$weights" >/dev/null
so=$tmp/build/tiny_mlp.so

# build EXPECT: builds and checks that the export ran (EXPECT=export) or did not (none).
build() {
  local before after log
  before=$(stat -c %y "$so" 2>/dev/null || echo none)
  log=$(cmake --build "$tmp/build" 2>&1) || { echo "$log"; fail "the build failed"; }
  echo "$log" | sed 's/^/   /'
  after=$(stat -c %y "$so")
  if [[ $1 == export ]]; then
    grep -q "aotc export tiny_mlp.so" <<<"$log" || fail "no export after $2"
    [[ $before != "$after" ]] || fail "tiny_mlp.so unchanged after $2"
  else
    ! grep -q "aotc export" <<<"$log" || fail "an export ran after $2"
    [[ $before == "$after" ]] || fail "tiny_mlp.so rewritten after $2"
  fi
}
build export "the first build"
"$tmp/build/consumer"
ctest --test-dir "$tmp/build" --output-on-failure

step "rebuild with nothing changed: no export"
build none "nothing changed"
step "touch an unrelated file: no export"
touch "$tmp/model/unrelated.h"
build none "touching an unrelated file"
step "edit the model file: export"
echo "// edited" >>"$tmp/model/tiny_mlp.cpp"
build export "editing the model file"
step "edit a header the model includes (and the weights to match): export"
sed -i 's/kHidden = 32/kHidden = 24/' "$tmp/model/tiny_mlp_sizes.h"
"$tmp/prefix/bin/aotc" weights "$tmp/model/tiny_mlp.cpp" --seed 1 -o "$weights"
build export "editing an included header"
"$tmp/build/consumer"
step "new weights: export"
touch "$weights"
build export "touching the weights"
step "a newer aotc binary: export"
touch "$tmp/prefix/bin/aotc"
build export "touching the aotc binary"
build none "the re-export"

if [[ ${3:-} == --package ]]; then
  step "cpack -G DEB"
  (cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" >/dev/null)
  deb=$(ls "$tmp"/aotc_*.deb)
  dpkg-deb -f "$deb" Package Version Depends
  contents=$(dpkg-deb -c "$deb")
  for f in usr/bin/aotc usr/lib/libaotc_dsl.so usr/lib/aotc/libaotc_runtime.a \
    usr/include/aotc/runtime.h usr/lib/cmake/aotc/aotcConfig.cmake \
    usr/lib/triton/backends/aotc/libtriton_aotc.so; do
    grep -q " \./$f\$" <<<"$contents" || fail "the .deb holds no $f"
  done
fi
echo "PASS"
