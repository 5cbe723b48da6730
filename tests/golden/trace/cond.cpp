// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// aotc::cond traces both branches into closed regions; tensors a branch uses from outside (here
// a parameter) become extra operands, in the same order for both branches.
#include <aotc/aotc.h>
using namespace aotc;

struct Gate : nn::Module {
  Gate() { w = register_parameter("w", ones({8})); }
  Tensor forward(Tensor x) {
    Tensor total = x.sum();
    Tensor pred = total > 0;
    auto out = cond(
        pred, [&](const std::vector<Tensor> &in) { return std::vector<Tensor>{in[0] * w}; },
        [&](const std::vector<Tensor> &in) { return std::vector<Tensor>{in[0].neg()}; }, {x});
    return out[0];
  }
  Tensor w;
};

AOTC_MODEL(Gate, dim("batch", 1, 8), AOTC_ENTRY(forward, input("x", {"batch", 8})));

// CHECK:      graph @Gate opset 1.0
// CHECK-EMPTY:
// CHECK-NEXT: dim batch in 1..8
// CHECK-EMPTY:
// CHECK-NEXT: parameter "w" : f32[8]
// CHECK-EMPTY:
// CHECK-NEXT: entry @forward(%0 : f32[batch, 8] = input "x", %1 : f32[8] = parameter "w") {
// CHECK-NEXT:   %2 = aten.sum.dim_IntList(%0) : f32[]  # {{.*}}cond.cpp:10:{{[0-9]+}}
// CHECK-NEXT:   %3 = aten.gt.Scalar(%2) {other = 0} : bool[]  # {{.*}}cond.cpp:11:{{[0-9]+}}
// CHECK-NEXT:   %4 = aten.cond(%3, %0, %1) : f32[batch, 8] {  # {{.*}}cond.cpp:12:{{[0-9]+}}
// CHECK-NEXT:     region(%5 : f32[batch, 8], %6 : f32[8]) {
// CHECK-NEXT:       %7 = aten.mul.Tensor(%5, %6) : f32[batch, 8]  # {{.*}}cond.cpp:13:{{[0-9]+}}
// CHECK-NEXT:       return %7
// CHECK-NEXT:     }
// CHECK-NEXT:     region(%8 : f32[batch, 8], %9 : f32[8]) {
// CHECK-NEXT:       %10 = aten.neg(%8) : f32[batch, 8]  # {{.*}}cond.cpp:14:{{[0-9]+}}
// CHECK-NEXT:       return %10
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   return %4 as output "output"
// CHECK-NEXT: }
