// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// In-place updates of buffers become functional ops plus buffer-mutation outputs (torch.export's
// graph signature); parameters are inputs of the entry, bound on first use.
#include <aotc/aotc.h>
using namespace aotc;

struct Counter : nn::Module {
  Counter() {
    scale = register_parameter("scale", ones({4}));
    steps = register_buffer("steps", zeros({}, i64));
    last = register_buffer("last", zeros({4}));
  }
  Tensor forward(Tensor x) {
    Tensor y = x * scale;
    steps.add_(ones({}, i64));
    last.copy_(y.sum({0}));
    return y;
  }
  Tensor scale, steps, last;
};

AOTC_MODEL(Counter, dim("batch", 1, 8), AOTC_ENTRY(forward, input("x", {"batch", 4})));

// CHECK:      graph @Counter opset 1.0
// CHECK-EMPTY:
// CHECK-NEXT: dim batch in 1..8
// CHECK-EMPTY:
// CHECK-NEXT: parameter "scale" : f32[4]
// CHECK-NEXT: buffer "steps" : i64[]
// CHECK-NEXT: buffer "last" : f32[4]
// CHECK-EMPTY:
// CHECK-NEXT: entry @forward(%0 : f32[batch, 4] = input "x", %1 : f32[4] = parameter "scale", %2 : i64[] = buffer "steps") {
// CHECK-NEXT:   %3 = aten.mul.Tensor(%0, %1) : f32[batch, 4]  # {{.*}}inplace_buffer.cpp:14:{{[0-9]+}}
// CHECK-NEXT:   %4 = aten.ones() {size = [], dtype = i64} : i64[]  # {{.*}}inplace_buffer.cpp:15:{{[0-9]+}}
// CHECK-NEXT:   %5 = aten.add.Tensor(%2, %4) : i64[]  # {{.*}}inplace_buffer.cpp:15:{{[0-9]+}}
// CHECK-NEXT:   %6 = aten.sum.dim_IntList(%3) {dim = [0]} : f32[4]  # {{.*}}inplace_buffer.cpp:16:{{[0-9]+}}
// CHECK-NEXT:   %7 = aten._to_copy(%6) {dtype = f32} : f32[4]  # {{.*}}inplace_buffer.cpp:16:{{[0-9]+}}
// CHECK-NEXT:   %8 = aten.expand(%7) {size = [4]} : f32[4]  # {{.*}}inplace_buffer.cpp:16:{{[0-9]+}}
// CHECK-NEXT:   return %3 as output "output", %5 as mutates "steps", %8 as mutates "last"
// CHECK-NEXT: }
