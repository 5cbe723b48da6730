// RUN: not %aotc export %s -o %t.so 2>&1 | FileCheck %s
// A module called through its holder (`attn(q, k, v)`) whose forward takes its location after
// defaulted parameters, as nn::MultiheadAttention's does: an error inside names the model's line
// of the call, not a line of aotc's headers.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  M() { attn = register_module("attn", nn::MultiheadAttention(8, 2)); }
  Tensor forward(Tensor q, Tensor k) {
    auto [out, weights] = attn(q, k, k);
    return out;
  }
  nn::MultiheadAttention attn{nullptr};
};

AOTC_MODEL(M, dim("seq", 1, 4),
           AOTC_ENTRY(forward, input("q", {"seq", 2, 8}), input("k", {"seq", 2, 6})));

// CHECK: aotc export: error: {{.*}}bad_holder_call.cpp:11: aten.linear: the last dims of input and weight must match, got 6 and 8 (input f32[seq, 2, 6], weight f32[8, 8])
// CHECK-NOT: Module.h
