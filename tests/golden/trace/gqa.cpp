// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// Grouped-query attention as libtorch spells it (enable_gqa = true): 6 query heads over 2
// key/value heads, causal prefill, and decode (one query position against `past` cached ones)
// with an additive padding mask. e2e/gqa.aotc and cuda/gqa.aotc run this model compiled.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  Tensor prefill(Tensor q, Tensor k, Tensor v) {
    return scaled_dot_product_attention(q, k, v, {}, /*is_causal=*/true, std::nullopt,
                                        /*enable_gqa=*/true);
  }
  Tensor decode(Tensor q, Tensor k, Tensor v, Tensor mask) {
    return scaled_dot_product_attention(q, k, v, mask, /*is_causal=*/false, std::nullopt,
                                        /*enable_gqa=*/true);
  }
};

AOTC_MODEL(M, dim("batch", 1, 4), dim("seq", 1, 8), dim("past", 1, 16),
           AOTC_ENTRY(prefill, input("q", {"batch", 6, "seq", 16}),
                      input("k", {"batch", 2, "seq", 16}), input("v", {"batch", 2, "seq", 16})),
           AOTC_ENTRY(decode, input("q", {"batch", 6, 1, 16}), input("k", {"batch", 2, "past", 16}),
                      input("v", {"batch", 2, "past", 16}), input("mask", {"batch", 1, 1, "past"})));

// CHECK:      entry @prefill(%0 : f32[batch, 6, seq, 16] = input "q", %1 : f32[batch, 2, seq, 16] = input "k", %2 : f32[batch, 2, seq, 16] = input "v") {
// CHECK-NEXT:   %3 = aten.scaled_dot_product_attention(%0, %1, %2, none) {is_causal = true, enable_gqa = true} : f32[batch, 6, seq, 16]
// CHECK:      entry @decode(%0 : f32[batch, 6, 1, 16] = input "q", %1 : f32[batch, 2, past, 16] = input "k", %2 : f32[batch, 2, past, 16] = input "v", %3 : f32[batch, 1, 1, past] = input "mask") {
// CHECK-NEXT:   %4 = aten.scaled_dot_product_attention(%0, %1, %2, %3) {enable_gqa = true} : f32[batch, 6, 1, 16]
