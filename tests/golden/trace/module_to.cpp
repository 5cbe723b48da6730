// REQUIRES: cuda-toolkit
// UNSUPPORTED: sanitizer
// Module::to(bf16), as libtorch's module->to(torch::kBFloat16): every floating parameter and
// buffer (the children's too) becomes bf16, the graph computes in bf16, its linears are bf16
// GEMMs (f32 sums rounded once) on both targets, its attention a bf16 call on CUDA, and a bf16
// checkpoint loads as it is.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %aotc export %s --emit=ir -o %t/mlp.ir 2>/dev/null
// RUN: FileCheck --check-prefix=IR %s < %t/mlp.ir
// IR-DAG: parameter "fc1.weight" : bf16[96, 64]
// IR-DAG: parameter "ln.weight" : bf16[96]
// IR-DAG: parameter "fc2.bias" : bf16[40]
// IR:     aten.linear({{.*}}) : bf16[batch, 96]
//
// RUN: %aotc export %s -o %t/mlp.so 2>/dev/null
// RUN: %aotc verify %t/mlp.so --samples 3 | FileCheck --check-prefix=VERIFY %s
// RUN: %aotc export %s --target cuda --cuda-arch sm_80 -o %t/gpu.so \
// RUN:   --print-after lower-cuda 2>&1 | FileCheck --check-prefix=CUDA %s
// RUN: %aotc verify %t/gpu.so --device cuda-emu --samples 3 \
// RUN:   | FileCheck --check-prefix=VERIFY %s
// VERIFY: forward batch=1 {{ *}}output {{ *}}max rel err {{.*}} ok
// VERIFY: forward batch=24 {{ *}}output {{ *}}max rel err {{.*}} ok
// VERIFY: attend  batch=1 seq=1 {{ *}}output {{ *}}max rel err {{.*}} ok
// VERIFY: attend  batch=24 seq=40 {{ *}}output {{ *}}max rel err {{.*}} ok
//
// On CUDA the attention is one call in bf16 (tensor cores of that type at the default
// precision, f32 scores), reading q, k and v in place from the projection's bf16 output.
// CUDA-LABEL: entry @attend
// CUDA:      gemm {{.*}} precision bf16
// CUDA:        out = [[QKV:b[0-9]+]]
// CUDA-NEXT: attention attention_{{[0-9]+}} bf16 precision bf16 {{.*}} causal
// CUDA-NEXT:   q = [[QKV]][0 +
// CUDA-NEXT:   k = [[QKV]][64 +
// CUDA-NEXT:   v = [[QKV]][128 +
//
// A bf16 checkpoint loads into it; an f32 one is the wrong dtype, named.
// RUN: python3 %S/Inputs/write_safetensors.py %t/bf16.safetensors BF16 fc1.weight=96x64 \
// RUN:   fc1.bias=96 ln.weight=96 ln.bias=96 fc2.weight=40x96 fc2.bias=40 \
// RUN:   qkv.weight=192x64 qkv.bias=192
// RUN: %aotc export %s --weights %t/bf16.safetensors -o %t/loaded.so
// RUN: %aotc verify %t/loaded.so --samples 2 | FileCheck --check-prefix=VERIFY %s
// RUN: python3 %S/Inputs/write_safetensors.py %t/f32.safetensors F32 fc1.weight=96x64 \
// RUN:   fc1.bias=96 ln.weight=96 ln.bias=96 fc2.weight=40x96 fc2.bias=40 \
// RUN:   qkv.weight=192x64 qkv.bias=192
// RUN: not %aotc export %s --weights %t/f32.safetensors -o %t/wrong.so 2>&1 \
// RUN:   | FileCheck --check-prefix=WRONG %s
// WRONG: wrong dtype or shape:
// WRONG: "fc1.weight" is f32[96, 64] in the file but the model has bf16[96, 64]
#include <aotc/aotc.h>

using namespace aotc;

struct Mlp : nn::Module {
  nn::Linear fc1{nullptr}, fc2{nullptr}, qkv{nullptr};
  nn::LayerNorm ln{nullptr};
  Mlp() {
    fc1 = register_module("fc1", nn::Linear(64, 96));
    ln = register_module("ln", nn::LayerNorm({96}));
    fc2 = register_module("fc2", nn::Linear(96, 40));
    qkv = register_module("qkv", nn::Linear(64, 192));
    to(bf16);
  }
  Tensor forward(Tensor x) { return fc2(ln(gelu(fc1(x)))); }
  // Causal self-attention over 2 heads of 32 in bf16, GPT-2's way.
  Tensor attend(Tensor x) {
    SymInt b = x.size(0), t = x.size(1);
    std::vector<Tensor> parts = qkv(x).split(64, 2);
    for (Tensor &p : parts)
      p = p.view({b, t, 2, 32}).transpose(1, 2);
    Tensor y = scaled_dot_product_attention(parts[0], parts[1], parts[2], {}, true);
    return y.transpose(1, 2).reshape({b, t, 64});
  }
};

AOTC_MODEL(Mlp, dim("batch", 1, 24), dim("seq", 1, 40),
           AOTC_ENTRY(forward, input("x", {"batch", 64}, bf16)),
           AOTC_ENTRY(attend, input("x", {"batch", "seq", 64}, bf16)));
