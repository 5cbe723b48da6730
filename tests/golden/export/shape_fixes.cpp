// RUN: not %aotc export %s --emit=ir --report 2>&1 | FileCheck %s
// Shape errors name the fix where there is one: a view that splits a width into heads it does
// not divide says which division fails; a Linear after a conv stack without its flatten shows the
// input and the flatten; sdpa with fewer key/value heads than query heads points to enable_gqa; a
// cat (or broadcast) between a dim and a size that equals it only for its even values (a U-Net's
// skip connection after pooling) names the multiple_of that proves it, and between a dim and
// an expression of other dims names the derived_dim.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  M() {
    fc = register_module("fc", nn::Linear(1280, 10));
    pool = register_module("pool", nn::AdaptiveAvgPool2d(1));
  }
  Tensor heads(Tensor x) { return x.view({x.size(0), x.size(1), 3, 42}); }
  Tensor classify(Tensor x) { return fc(pool(x)); }
  Tensor attend(Tensor q, Tensor kv) { return scaled_dot_product_attention(q, kv, kv); }
  Tensor skip(Tensor x) {
    Tensor down = max_pool2d(x, {1, 2});
    Tensor up = down.unsqueeze(-1).expand({x.size(0), 4, 1, down.size(3), 2}).flatten(3);
    return cat({x, up}, 1);
  }
  Tensor pairs(Tensor x, Tensor y) { return x + y.flatten(1); }
  nn::Linear fc{nullptr};
  nn::AdaptiveAvgPool2d pool{nullptr};
};

AOTC_MODEL(M, dim("batch", 1, 16), dim("seq", 1, 64), dim("h", 2, 64), dim("half", 1, 32),
           AOTC_ENTRY(heads, input("x", {"batch", "seq", 128})),
           AOTC_ENTRY(classify, input("x", {"batch", 1280, 7, 7})),
           AOTC_ENTRY(attend, input("q", {"batch", 8, "seq", 16}), input("kv", {"batch", 2, "seq", 16})),
           AOTC_ENTRY(skip, input("x", {"batch", 4, 1, "h"})),
           AOTC_ENTRY(pairs, input("x", {"batch", "seq"}), input("y", {"batch", "half", 2})));

// CHECK:      5 problems found:
// CHECK-NEXT: shape_fixes.cpp:16: aten.view: cannot view f32[batch, seq, 128] as [batch, seq, 3, 42]: 128 is not divisible by 3
// CHECK-NEXT: shape_fixes.cpp:17: aten.linear: the last dims of input and weight must match, got 1 and 1280 (input f32[batch, 1280, 1, 1], weight f32[10, 1280]); flatten the input first: x.flatten(1)
// CHECK-NEXT: shape_fixes.cpp:18: aten.scaled_dot_product_attention: query has 8 heads but key and value have 2 (query f32[batch, 8, seq, 16], key f32[batch, 2, seq, 16]); for grouped-query attention pass enable_gqa = true
// CHECK-NEXT: shape_fixes.cpp:22: h is dynamic in 2..64 but this code requires h == 2*floordiv(h, 2), which holds for the multiples of 2; declare aotc::dim("h", 2, 64).multiple_of(2)
// CHECK-NEXT: shape_fixes.cpp:24: this code requires seq == 2*half, which the ranges of the dynamic dims (half in 1..32, seq in 1..64) do not guarantee; if seq always equals 2*half, declare it as aotc::derived_dim("seq", "2*half") instead of a dim of its own
