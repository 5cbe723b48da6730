// RUN: not %aotc export %s --emit=ir --report 2>&1 | FileCheck %s
// nn::MultiheadAttention takes 2-d (unbatched) or 3-d inputs: another rank is one line at the
// model's line.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  M() { attn = register_module("attn", nn::MultiheadAttention(8, 2)); }
  Tensor f(Tensor x) { return std::get<0>(attn->forward(x, x, x)); }
  nn::MultiheadAttention attn{nullptr};
};

AOTC_MODEL(M, dim("batch", 1, 16), AOTC_ENTRY(f, input("x", {"batch", 2, 4, 8})));

// CHECK: bad_mha.cpp:9: MultiheadAttention takes 2-d (unbatched) or 3-d query, key and value, got f32[batch, 2, 4, 8], f32[batch, 2, 4, 8] and f32[batch, 2, 4, 8]
