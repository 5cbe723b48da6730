// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// einsum traced into sums, permutes, reshapes and bmm (mul when nothing is contracted), each
// beside the same product written with plain ops; e2e/einsum.aotc runs both and compares them.
// Forms: batch matmul, outer product, transpose, ellipsis with the implicit output, a
// contraction to a batch vector, a full sum, and a broadcast of a 2-d operand over a batch; and
// repeat_interleave (unsqueeze, expand, flatten) with and without a dim.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  std::vector<Tensor> forward(Tensor a, Tensor b, Tensor u, Tensor v, Tensor c) {
    std::vector<Tensor> out;
    out.push_back(einsum("bij,bjk->bik", {a, b}));
    out.push_back(a.bmm(b));
    out.push_back(einsum("i,j->ij", {u, v}));
    out.push_back(u.unsqueeze(1) * v.unsqueeze(0));
    out.push_back(einsum("ij->ji", {c}));
    out.push_back(c.t());
    out.push_back(einsum("...ij,...jk", {a, b}));
    out.push_back(a.matmul(b));
    out.push_back(einsum("bij, ij -> b", {a, c}));
    out.push_back((a * c).sum({1, 2}));
    out.push_back(einsum("bij->", {a}));
    out.push_back(a.sum());
    out.push_back(einsum("ij,bjk->bik", {c, b}));
    out.push_back(c.matmul(b));
    // repeat_interleave beside an index_select of positions // repeats.
    Tensor halves = arange(8, i64).div(full({}, 2, i64), "floor");
    out.push_back(c.repeat_interleave(2, -1));
    out.push_back(c.index_select(1, halves));
    Tensor thirds = arange(9, i64).div(full({}, 3, i64), "floor");
    out.push_back(u.repeat_interleave(3));
    out.push_back(u.index_select(0, thirds));
    return out;
  }
};

AOTC_MODEL(M, dim("batch", 1, 16),
           AOTC_ENTRY(forward, input("a", {"batch", 3, 4}), input("b", {"batch", 4, 5}),
                      input("u", {3}), input("v", {4}), input("c", {3, 4})));

// CHECK:      entry @forward(
// bij,bjk->bik: one bmm, nothing else.
// CHECK-NEXT:   %5 = aten.bmm(%0, %1) : f32[batch, 3, 5]
// CHECK-NEXT:   %6 = aten.bmm(%0, %1) : f32[batch, 3, 5]
// i,j->ij: a broadcast mul.
// CHECK-NEXT:   %7 = aten.reshape(%2) {shape = [1, 3, 1]} : f32[1, 3, 1]
// CHECK-NEXT:   %8 = aten.reshape(%3) {shape = [1, 1, 4]} : f32[1, 1, 4]
// CHECK-NEXT:   %9 = aten.mul.Tensor(%7, %8) : f32[1, 3, 4]
// CHECK-NEXT:   %10 = aten.reshape(%9) {shape = [3, 4]} : f32[3, 4]
// ij->ji: one permute.
// CHECK:        %14 = aten.permute(%4) {dims = [1, 0]} : f32[4, 3]
// ...ij,...jk: the implicit output ...ik, one bmm.
// CHECK:        %16 = aten.bmm(%0, %1) : f32[batch, 3, 5]
// bij,ij->b: b rows against the contracted ij.
// CHECK:        %18 = aten.reshape(%0) {shape = [1, batch, 12]} : f32[1, batch, 12]
// CHECK-NEXT:   %19 = aten.reshape(%4) {shape = [1, 12, 1]} : f32[1, 12, 1]
// CHECK-NEXT:   %20 = aten.bmm(%18, %19) : f32[1, batch, 1]
// CHECK-NEXT:   %21 = aten.reshape(%20) {shape = [batch]} : f32[batch]
// bij->: one sum.
// CHECK:        %24 = aten.sum.dim_IntList(%0) {dim = [0, 1, 2]} : f32[]
// ij,bjk->bik: b and k are columns of one GEMM, permuted back.
// CHECK:        %26 = aten.reshape(%4) {shape = [1, 3, 4]} : f32[1, 3, 4]
// CHECK-NEXT:   %27 = aten.permute(%1) {dims = [1, 0, 2]} : f32[4, batch, 5]
// CHECK-NEXT:   %28 = aten.reshape(%27) {shape = [1, 4, 5*batch]} : f32[1, 4, 5*batch]
// CHECK-NEXT:   %29 = aten.bmm(%26, %28) : f32[1, 3, 5*batch]
// CHECK-NEXT:   %30 = aten.reshape(%29) {shape = [3, batch, 5]} : f32[3, batch, 5]
// CHECK-NEXT:   %31 = aten.permute(%30) {dims = [1, 0, 2]} : f32[batch, 3, 5]
// repeat_interleave along the last dim, then of a 1-d tensor without a dim.
// CHECK:        %36 = aten.unsqueeze(%4) {dim = 2} : f32[3, 4, 1]
// CHECK-NEXT:   %37 = aten.expand(%36) {size = [3, 4, 2]} : f32[3, 4, 2]
// CHECK-NEXT:   %38 = aten.flatten.using_ints(%37) {start_dim = 1, end_dim = 2} : f32[3, 8]
// CHECK:        %43 = aten.unsqueeze(%2) {dim = 1} : f32[3, 1]
// CHECK-NEXT:   %44 = aten.expand(%43) {size = [3, 3]} : f32[3, 3]
// CHECK-NEXT:   %45 = aten.flatten.using_ints(%44) {end_dim = 1} : f32[9]
