// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// Tensor ops the DSL composes from IR ops: where with numbers (0-d tensors of their default
// dtype, so an f32 tensor stays f32 and an i64 one with a float becomes f32), clamp_min and
// clamp_max as one-sided clamps, unbind as selects, one_hot as a comparison with arange; and the
// position ops, scans and statistics recorded under their ATen names.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  std::vector<Tensor> forward(Tensor x, Tensor ids, Tensor mask) {
    Tensor a = where(mask, x, 0.0);
    Tensor b = where(mask, 1.5, ids);
    Tensor c = clamp_min(x, 0).clamp_max(6);
    std::vector<Tensor> rows = x.unbind(1);
    Tensor d = one_hot(ids, 5);
    Tensor e = x.flip({-1}).roll({1}, {0}).repeat({1, 2}).tril(1).cumsum(1);
    // One op a statement: the order operands of one expression are evaluated in is unspecified.
    Tensor lse = x.logsumexp({1});
    Tensor var = x.var({1});
    Tensor std = x.std({1}, 0);
    Tensor l1 = x.norm(1, {1});
    Tensor f = lse + var + std + l1;
    return {a, b, c, rows[2], d, e, f};
  }
};

AOTC_MODEL(M, dim("batch", 1, 16),
           AOTC_ENTRY(forward, input("x", {"batch", 3}), input("ids", {"batch", 3}, i64),
                      input("mask", {"batch", 3}, boolean)));

// CHECK:      entry @forward(%0 : f32[batch, 3] = input "x", %1 : i64[batch, 3] = input "ids", %2 : bool[batch, 3] = input "mask") {
// CHECK-NEXT:   %3 = aten.full() {size = [], fill_value = 0.0, dtype = f32} : f32[]
// CHECK-NEXT:   %4 = aten.where.self(%2, %0, %3) : f32[batch, 3]
// CHECK-NEXT:   %5 = aten.full() {size = [], fill_value = 1.5, dtype = f32} : f32[]
// CHECK-NEXT:   %6 = aten.where.self(%2, %5, %1) : f32[batch, 3]
// CHECK-NEXT:   %7 = aten.clamp(%0) {min = 0} : f32[batch, 3]
// CHECK-NEXT:   %8 = aten.clamp(%7) {max = 6} : f32[batch, 3]
// CHECK-NEXT:   %9 = aten.select.int(%0) {dim = 1, index = 0} : f32[batch]
// CHECK-NEXT:   %10 = aten.select.int(%0) {dim = 1, index = 1} : f32[batch]
// CHECK-NEXT:   %11 = aten.select.int(%0) {dim = 1, index = 2} : f32[batch]
// CHECK-NEXT:   %12 = aten.arange.start_step() {start = 0, end = 5, dtype = i64} : i64[5]
// CHECK-NEXT:   %13 = aten.unsqueeze(%1) {dim = -1} : i64[batch, 3, 1]
// CHECK-NEXT:   %14 = aten.eq.Tensor(%13, %12) : bool[batch, 3, 5]
// CHECK-NEXT:   %15 = aten._to_copy(%14) {dtype = i64} : i64[batch, 3, 5]
// CHECK-NEXT:   %16 = aten.flip(%0) {dims = [-1]} : f32[batch, 3]
// CHECK-NEXT:   %17 = aten.roll(%16) {shifts = [1], dims = [0]} : f32[batch, 3]
// CHECK-NEXT:   %18 = aten.repeat(%17) {repeats = [1, 2]} : f32[batch, 6]
// CHECK-NEXT:   %19 = aten.tril(%18) {diagonal = 1} : f32[batch, 6]
// CHECK-NEXT:   %20 = aten.cumsum(%19) {dim = 1} : f32[batch, 6]
// CHECK-NEXT:   %21 = aten.logsumexp(%0) {dim = [1]} : f32[batch]
// CHECK-NEXT:   %22 = aten.var.correction(%0) {dim = [1]} : f32[batch]
// CHECK-NEXT:   %23 = aten.std.correction(%0) {dim = [1], correction = 0} : f32[batch]
// CHECK-NEXT:   %24 = aten.linalg_vector_norm(%0) {ord = 1, dim = [1]} : f32[batch]
// CHECK-NEXT:   %25 = aten.add.Tensor(%21, %22) : f32[batch]
// CHECK-NEXT:   %26 = aten.add.Tensor(%25, %23) : f32[batch]
// CHECK-NEXT:   %27 = aten.add.Tensor(%26, %24) : f32[batch]
// CHECK-NEXT:   return %4 as output "output0", %6 as output "output1", %8 as output "output2", %11 as output "output3", %15 as output "output4", %20 as output "output5", %27 as output "output6"
