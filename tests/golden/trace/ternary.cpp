// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// Ternary pointwise ops broadcast all three operands; masked_fill keeps self's dtype by filling
// from a 0-d tensor of that dtype.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  std::vector<Tensor> forward(Tensor x, Tensor w, Tensor mask) {
    Tensor a = x.addcmul(x, w, 0.5);
    Tensor b = x.lerp(a, w);
    Tensor c = where(mask, a, b);
    Tensor d = c.masked_fill(mask, -1e9);
    return {b, d};
  }
};

AOTC_MODEL(M, dim("batch", 1, 16),
           AOTC_ENTRY(forward, input("x", {"batch", 4}), input("w", {4}),
                      input("mask", {"batch", 1}, boolean)));

// CHECK:      graph @M opset 1.0
// CHECK-EMPTY:
// CHECK-NEXT: dim batch in 1..16
// CHECK-EMPTY:
// CHECK-NEXT: entry @forward(%0 : f32[batch, 4] = input "x", %1 : f32[4] = input "w", %2 : bool[batch, 1] = input "mask") {
// CHECK-NEXT:   %3 = aten.addcmul(%0, %0, %1) {value = 0.5} : f32[batch, 4]  # {{.*}}ternary.cpp:9:{{[0-9]+}}
// CHECK-NEXT:   %4 = aten.lerp.Tensor(%0, %3, %1) : f32[batch, 4]  # {{.*}}ternary.cpp:10:{{[0-9]+}}
// CHECK-NEXT:   %5 = aten.where.self(%2, %3, %4) : f32[batch, 4]  # {{.*}}ternary.cpp:11:{{[0-9]+}}
// CHECK-NEXT:   %6 = aten.full() {size = [], fill_value = -1000000000.0, dtype = f32} : f32[]  # {{.*}}ternary.cpp:12:{{[0-9]+}}
// CHECK-NEXT:   %7 = aten.where.self(%2, %6, %5) : f32[batch, 4]  # {{.*}}ternary.cpp:12:{{[0-9]+}}
// CHECK-NEXT:   return %4 as output "output0", %7 as output "output1"
// CHECK-NEXT: }
