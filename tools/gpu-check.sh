#!/usr/bin/env bash
# The GPU suite: CUDA artifacts of the examples checked on a real GPU against the reference
# interpreter, from several threads at once, and under compute-sanitizer.
#
#   tools/gpu-check.sh prepare [--full]   on the build machine (no GPU needed): builds aotc and
#       the device checker, exports every model with --target cuda, draws inputs and computes the
#       interpreter's outputs, all under .gpu-check/ (ignored by git).
#   tools/gpu-check.sh run [DIR] [cuda:N]   on the GPU machine: aotc_gpu_check on every case of
#       DIR (default .gpu-check): output within 1e-4 of the interpreter, or the tolerance of its
#       --precision; 8 threads on one handle bitwise equal to the serial run; CUDA graph replays
#       bitwise equal to plain launches; runs on a caller's stream bitwise equal too), then compute-sanitizer memcheck and racecheck on one run
#       of each case (each tool at most $GPU_CHECK_SANITIZER_TIMEOUT s, default 240; racecheck
#       took 55 s on full-size ResNet-18 at batch 1 on an H200, so --full groups need more). One table;
#       exit 1 on any failure. Without a GPU it says so and exits 0.
#   tools/gpu-check.sh                    both, on a machine that builds and has a GPU.
#
# With the device tool of this project's sessions: `tools/gpu-check.sh prepare` here, then one
# run call per group it prints (carry [".gpu-check/groupN"], command `tools/gpu-check.sh run
# .gpu-check/groupN`). A call carries at most 64 MiB with the repository: the default suite (the
# MLP at batch 1..512 and at tf32 and bf16, the tiny ResNets and one at fp16, GPT-2 tiny, at fp16
# and through the PTX JIT, the tiny captioner, a wide projection at bf16) is 138 MiB with
# GPU_CHECK_ARCHS=sm_90, three groups; --full adds ResNet-18 and ResNet-50 at full size, their
# weights compressed (GPT-2 small and the captioner do not fit a call). Each group holds its own checker and
# stands alone: calls may run in any order, on a warm machine or a fresh one.
set -euo pipefail
cd "$(dirname "$0")/.."

root=.gpu-check
mode=${1:-all}

prepare() {
  local full=${1:-}
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build --target aotc aotc_gpu_check >/dev/null
  local aotc=build/tools/aotc/aotc
  rm -rf "$root" && mkdir -p "$root/bin" "$root/suite" "$root/work"
  cp build/tools/gpu-check/aotc_gpu_check "$root/bin/"

  # Ampere and Hopper cubins only (the cards lent are H100 and H200; an A100 runs the sm_80 ones):
  # the suite's artifacts are half the size of ones for every default arch. GPU_CHECK_ARCHS=sm_90
  # halves them again for a Hopper card, so that the default suite travels in one call.
  local suiteArchs=${GPU_CHECK_ARCHS:-sm_80,sm_90}
  # model NAME SOURCE "EXPORT FLAGS" then cases: ENTRY "INPUT SPECS"...; with PRECISION=P in
  # the environment the artifact is exported with --precision P (the tensor cores) and checked
  # within aotc verify's default tolerance of P; with ARCHS=A, for the archs A alone.
  model() {
    local name=$1 src=$2 flags=$3 precision=${PRECISION:-fp32} archs=${ARCHS:-$suiteArchs} tolerance
    shift 3
    case "$precision" in
    fp32) tolerance=1e-4 ;;
    tf32 | fp16) tolerance=1e-2 ;;
    bf16) tolerance=5e-2 ;;
    esac
    echo "gpu-check: exporting $name" >&2
    # shellcheck disable=SC2086
    "$aotc" export "$src" $flags --target cuda --cuda-arch "$archs" --precision "$precision" \
      ${WEIGHTS_FILE:+--weights-file "$WEIGHTS_FILE"} -o "$root/suite/$name.so" 2>/dev/null
    # shellcheck disable=SC2086
    "$aotc" export "$src" $flags -o "$root/work/$name.aotp" 2>/dev/null
    local n=0
    while [ $# -gt 0 ]; do
      local entry=$1 inputs=$2 dir="$root/suite/$name/case$n"
      shift 2
      mkdir -p "$dir"
      printf 'entry %s\ntolerance %s\n' "$entry" "$tolerance" >"$dir/case"
      local args=()
      for spec in $inputs; do args+=(--input "$spec"); done
      "$aotc" run "$root/work/$name.aotp" --entry "$entry" "${args[@]}" --seed "$n" \
        --save-inputs "$dir/inputs" --output "$dir/expected" >/dev/null
      n=$((n + 1))
    done
  }

  "$aotc" weights examples/resnet/tiny_basic.cpp --seed 1 -o "$root/work/basic.safetensors"
  "$aotc" weights examples/resnet/tiny_bottleneck.cpp --seed 1 -o "$root/work/bottleneck.safetensors"
  model mlp examples/mlp/mlp.cpp "" \
    forward x=1x784 forward x=256x784 forward x=512x784
  model tiny_basic examples/resnet/tiny_basic.cpp "--dyn batch=1..4 --weights $root/work/basic.safetensors" \
    forward x=1x3x32x32 forward x=4x3x32x32 forward_any_size x=2x3x64x96
  model tiny_bottleneck examples/resnet/tiny_bottleneck.cpp "--dyn batch=1..4 --weights $root/work/bottleneck.safetensors" \
    forward x=1x3x32x32 forward x=4x3x32x32
  model gpt2_tiny examples/gpt2/gpt2_tiny.cpp "--dyn batch=1..2 --dyn seq=1..16 --weights tests/fixtures/gpt2/w.safetensors" \
    forward input_ids=1x1 forward input_ids=2x16 prefill input_ids=2x9 \
    decode "input_ids=1x1 past=2x2x1x4x1x8" decode "input_ids=2x1 past=2x2x2x4x15x8"
  # The tensor cores' three mma kinds on small models.
  PRECISION=tf32 model mlp_tf32 examples/mlp/mlp.cpp "" forward x=1x784 forward x=512x784
  PRECISION=bf16 model mlp_bf16 examples/mlp/mlp.cpp "" forward x=3x784 forward x=256x784
  # The 16-bit GEMM buffers (bf16 and fp16 convolutions, and GEMMs of many tiles): a tiny
  # ResNet's 128 x 64 tiles, an LM-head-wide projection's 128 x 128 ones.
  PRECISION=fp16 model tiny_basic_fp16 examples/resnet/tiny_basic.cpp "--dyn batch=1..4 --weights $root/work/basic.safetensors" \
    forward x=4x3x32x32
  PRECISION=bf16 model wide_head_bf16 tools/gpu-check/models/wide_head.cpp "" forward x=9x96 forward x=130x96
  PRECISION=fp16 model gpt2_tiny_fp16 examples/gpt2/gpt2_tiny.cpp "--dyn batch=1..2 --dyn seq=1..16 --weights tests/fixtures/gpt2/w.safetensors" \
    forward input_ids=2x16 decode "input_ids=2x1 past=2x2x2x4x15x8"
  # A model whose tensors are bf16 (Module::to): bf16 GEMMs, the attention on bf16 q, k and v
  # (a decode kernel at one row, the tensor cores past it).
  PRECISION=bf16 model bf16_block tools/gpu-check/models/bf16_block.cpp "" \
    forward x=1x1x128 forward x=2x77x128 forward x=4x300x128
  # A decode step over a long cache: split-decode's split and merge kernels (12 parts of 3000
  # keys at batch 1, 2 parts of 300 at batch 8), the decode kernel alone at 200 keys.
  model long_cache tools/gpu-check/models/long_cache.cpp "" \
    forward "q=1x8x1x64 k=1x4x3000x64 v=1x4x3000x64" \
    forward "q=8x8x1x64 k=8x4x300x64 v=8x4x300x64" forward "q=2x8x1x64 k=2x4x200x64 v=2x4x200x64"
  # The driver's PTX JIT: an sm_80 cubin does not run on sm_90 and later, so there this
  # artifact loads its PTX (stderr says so once).
  ARCHS=sm_80 model gpt2_tiny_ptx examples/gpt2/gpt2_tiny.cpp "--dyn batch=1..2 --dyn seq=1..16 --weights tests/fixtures/gpt2/w.safetensors" \
    forward input_ids=2x16 decode "input_ids=2x1 past=2x2x2x4x15x8"
  model captioner_tiny examples/captioner/captioner_tiny.cpp "--dyn batch=1..2 --weights tests/fixtures/captioner/w.safetensors" \
    encode image=2x3x32x32 decode "ids=1x1 encoder_hidden_states=1x5x32" \
    decode "ids=2x16 encoder_hidden_states=2x5x32"
  if [ "$full" = --full ]; then
    # Full-size models travel with their weights rounded to a coarse grid (coarse_weights.py),
    # exported beside the kernels-only .so (--weights-file external) and compressed there as
    # NAME.weights.xz, 7 times smaller; `run` decompresses them. GPT-2 small and the captioner
    # do not fit a call even so (GPT-2's logits at batch 8 alone are 206 MB).
    fullModel() {
      local name=$1 src=$2
      shift 2
      "$aotc" weights "$src" --seed 1 -o "$root/work/$name.init.safetensors"
      python3 tools/gpu-check/coarse_weights.py "$root/work/$name.init.safetensors" \
        "$root/work/$name.safetensors"
      WEIGHTS_FILE=external model "$name" "$src" "--weights $root/work/$name.safetensors" "$@"
      python3 -c 'import lzma, sys; open(sys.argv[1] + ".xz", "wb").write(lzma.compress(open(sys.argv[1], "rb").read(), preset=3))' \
        "$root/suite/$name.weights"
      rm "$root/suite/$name.weights"
    }
    fullModel resnet18 examples/resnet/resnet18.cpp \
      forward x=1x3x224x224 forward x=8x3x224x224 forward_any_size x=2x3x160x96
    fullModel resnet50 examples/resnet/resnet50.cpp forward x=1x3x224x224 forward x=8x3x224x224
  fi
  rm -rf "$root/work"
  local bytes
  bytes=$(du -sb "$root" | cut -f1)
  echo "gpu-check: prepared $root ($((bytes / 1048576)) MiB)"
  if [ "$bytes" -gt $((56 * 1048576)) ]; then
    # One device call carries at most 64 MiB with the repository: the models go into groups of
    # at most 56 MiB, each with its own copy of the checker, so that every call stands alone (a
    # machine handed back between calls loses nothing).
    local limit=$((56 * 1048576)) binBytes group=0 used so name size
    binBytes=$(du -sb "$root/bin" | cut -f1)
    used=$limit
    for so in "$root"/suite/*.so; do
      name=$(basename "$so" .so)
      local parts=("$so" "$root/suite/$name")
      [ ! -e "$root/suite/$name.weights.xz" ] || parts+=("$root/suite/$name.weights.xz")
      size=$(du -sbc "${parts[@]}" | tail -1 | cut -f1)
      if [ $((used + size)) -gt "$limit" ]; then
        group=$((group + 1))
        mkdir -p "$root/group$group/suite"
        cp -r "$root/bin" "$root/group$group/"
        used=$binBytes
      fi
      mv "$so" "$root/suite/$name" "$root/group$group/suite/"
      [ ! -e "$root/suite/$name.weights.xz" ] || mv "$root/suite/$name.weights.xz" "$root/group$group/suite/"
      used=$((used + size))
    done
    rm -rf "${root:?}/bin" "${root:?}/suite"
    echo "gpu-check: too large for one call; one call per group, in any order:"
    for g in "$root"/group*; do
      echo "  carry [\"$g\"]: tools/gpu-check.sh run $g   ($(du -sh "$g" | cut -f1): $(ls "$g/suite" | grep '\.so$' | tr '\n' ' '))"
    done
  fi
}

run() {
  local device=cuda:0 dir=$root
  for arg in "$@"; do
    case "$arg" in
    cuda:*) device=$arg ;;
    *) dir=$arg ;;
    esac
  done
  if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu-check: no GPU on this machine (nvidia-smi finds none): the GPU suite did not run"
    return 0
  fi
  if [ ! -x "$dir/bin/aotc_gpu_check" ]; then
    echo "gpu-check: $dir is not prepared: run tools/gpu-check.sh prepare first" >&2
    return 2
  fi
  nvidia-smi -L
  # Full-size models' compressed weights (prepare --full), beside their .so.
  for xz in "$dir"/suite/*.weights.xz; do
    if [ ! -e "$xz" ] || [ -e "${xz%.xz}" ]; then continue; fi
    python3 -c 'import lzma, sys; open(sys.argv[1][:-3], "wb").write(lzma.decompress(open(sys.argv[1], "rb").read()))' "$xz"
  done
  local status=0
  "$dir/bin/aotc_gpu_check" --trace --device "$device" "$dir/suite" || status=1
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [ -x "$sanitizer" ]; then
    for tool in memcheck racecheck; do
      echo "gpu-check: compute-sanitizer --tool $tool"
      local limit=${GPU_CHECK_SANITIZER_TIMEOUT:-240} rc=0
      timeout "$limit" "$sanitizer" --tool "$tool" --error-exitcode 3 --print-limit 20 \
        "$dir/bin/aotc_gpu_check" --quick --device "$device" "$dir/suite" || rc=$?
      if [ "$rc" = 124 ]; then
        echo "gpu-check: $tool did not finish within ${limit} s (GPU_CHECK_SANITIZER_TIMEOUT)"
      fi
      [ "$rc" = 0 ] || status=1
    done
  else
    echo "gpu-check: compute-sanitizer not found: memcheck and racecheck did not run"
    status=1
  fi
  [ "$status" = 0 ] && echo "gpu-check: all passed" || echo "gpu-check: FAILED"
  return "$status"
}

case "$mode" in
prepare) prepare "${2:-}" ;;
run)
  shift
  run "$@"
  ;;
all) prepare && run ;;
*)
  echo "usage: tools/gpu-check.sh [prepare [--full] | run [DIR] [cuda:N]]" >&2
  exit 2
  ;;
esac
