// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// The scatters as libtorch spells them, out of place: scatter with a tensor or a number (a full
// of the index's shape in self's dtype), scatter_add, and index_put with one index tensor for
// dim 0, recorded as a scatter along dim 0 of the flattened ids (negatives wrapped) expanded over
// the other dims (accumulate: scatter_add).
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  std::vector<Tensor> forward(Tensor x, Tensor ids, Tensor src) {
    Tensor a = x.scatter(1, ids, src);
    Tensor b = scatter_add(x, -1, ids, src);
    Tensor c = x.scatter(1, ids, 0.5);
    // The index and the values in statements of their own: C++ leaves the order in which a call's
    // arguments are evaluated (and so traced) unspecified.
    Tensor rows = ids.select(1, 0);
    Tensor values = src.slice(1, 0, 1);
    Tensor d = x.index_put({rows}, values, /*accumulate=*/true);
    return {a, b, c, d};
  }
};

AOTC_MODEL(M, dim("batch", 1, 16),
           AOTC_ENTRY(forward, input("x", {"batch", 3}), input("ids", {"batch", 2}, i64),
                      input("src", {"batch", 2})));

// CHECK:      entry @forward(%0 : f32[batch, 3] = input "x", %1 : i64[batch, 2] = input "ids", %2 : f32[batch, 2] = input "src") {
// CHECK-NEXT:   %3 = aten.scatter.src(%0, %1, %2) {dim = 1} : f32[batch, 3]
// CHECK-NEXT:   %4 = aten.scatter_add(%0, %1, %2) {dim = -1} : f32[batch, 3]
// CHECK-NEXT:   %5 = aten.full() {size = [batch, 2], fill_value = 0.5, dtype = f32} : f32[batch, 2]
// CHECK-NEXT:   %6 = aten.scatter.src(%0, %1, %5) {dim = 1} : f32[batch, 3]
// CHECK-NEXT:   %7 = aten.select.int(%1) {dim = 1, index = 0} : i64[batch]
// CHECK-NEXT:   %8 = aten.slice.Tensor(%2) {dim = 1, start = 0, end = 1} : f32[batch, 1]
// CHECK-NEXT:   %9 = aten.full() {size = [], fill_value = batch, dtype = i64} : i64[]
// CHECK-NEXT:   %10 = aten.add.Tensor(%7, %9) : i64[batch]
// CHECK-NEXT:   %11 = aten.lt.Scalar(%7) {other = 0} : bool[batch]
// CHECK-NEXT:   %12 = aten.where.self(%11, %10, %7) : i64[batch]
// CHECK-NEXT:   %13 = aten.expand(%8) {size = [batch, 3]} : f32[batch, 3]
// CHECK-NEXT:   %14 = aten.reshape(%13) {shape = [batch, 3]} : f32[batch, 3]
// CHECK-NEXT:   %15 = aten.view(%12) {size = [batch, 1]} : i64[batch, 1]
// CHECK-NEXT:   %16 = aten.expand(%15) {size = [batch, 3]} : i64[batch, 3]
// CHECK-NEXT:   %17 = aten.scatter_add(%0, %16, %14) {dim = 0} : f32[batch, 3]
// CHECK-NEXT:   return %3 as output "output0", %4 as output "output1", %6 as output "output2", %17 as output "output3"
