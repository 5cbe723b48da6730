// RUN: %aotc export %s --emit=ir --dyn seq=2..128 2>/dev/null | FileCheck %s
// Derived dims keep their names in input types and their definitions in the shape environment;
// sizes in user code are over root dims (twice_half / 2 is half); --dyn overrides a declared
// range; divisibility makes `seq / 8` exact.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  Tensor forward(Tensor a, Tensor b, Tensor c) {
    Tensor ab = cat({a, b}, 1);
    SymInt n = c.size(0) / 2;
    Tensor pairs = c.view({n, 2});
    Tensor blocks = a.view({a.size(0), a.size(1) / 8, 8});
    Tensor s = blocks.sum({2});
    Tensor p = pairs.sum({1});
    Tensor t = ab.sum({1});
    Tensor u = s.sum({1});
    Tensor v = p.sum();
    Tensor tu = t + u;
    return tu + v;
  }
};

AOTC_MODEL(M, dim("batch", 1, 16), dim("seq", 8, 64).multiple_of(8), dim("half", 1, 32),
           derived_dim("seq_plus_1", "seq + 1"), derived_dim("twice_half", "2*half"),
           AOTC_ENTRY(forward, input("a", {"batch", "seq"}), input("b", {"batch", "seq_plus_1"}),
                      input("c", {"twice_half"})));

// CHECK:      graph @M opset 1.0
// CHECK-EMPTY:
// CHECK-NEXT: dim batch in 1..16
// CHECK-NEXT: dim seq in 2..128 divisible by 8
// CHECK-NEXT: dim half in 1..32
// CHECK-NEXT: derived seq_plus_1 = seq + 1
// CHECK-NEXT: derived twice_half = 2*half
// CHECK-EMPTY:
// CHECK-NEXT: entry @forward(%0 : f32[batch, seq] = input "a", %1 : f32[batch, seq_plus_1] = input "b", %2 : f32[twice_half] = input "c") {
// CHECK-NEXT:   %3 = aten.cat(%0, %1) {dim = 1} : f32[batch, seq + seq_plus_1]  # {{.*}}derived_dims.cpp:10:{{[0-9]+}}
// CHECK-NEXT:   %4 = aten.view(%2) {size = [half, 2]} : f32[half, 2]  # {{.*}}derived_dims.cpp:12:{{[0-9]+}}
// CHECK-NEXT:   %5 = aten.view(%0) {size = [batch, floordiv(seq, 8), 8]} : f32[batch, floordiv(seq, 8), 8]  # {{.*}}derived_dims.cpp:13:{{[0-9]+}}
// CHECK-NEXT:   %6 = aten.sum.dim_IntList(%5) {dim = [2]} : f32[batch, floordiv(seq, 8)]  # {{.*}}derived_dims.cpp:14:{{[0-9]+}}
// CHECK-NEXT:   %7 = aten.sum.dim_IntList(%4) {dim = [1]} : f32[half]  # {{.*}}derived_dims.cpp:15:{{[0-9]+}}
// CHECK-NEXT:   %8 = aten.sum.dim_IntList(%3) {dim = [1]} : f32[batch]  # {{.*}}derived_dims.cpp:16:{{[0-9]+}}
// CHECK-NEXT:   %9 = aten.sum.dim_IntList(%6) {dim = [1]} : f32[batch]  # {{.*}}derived_dims.cpp:17:{{[0-9]+}}
// CHECK-NEXT:   %10 = aten.sum.dim_IntList(%7) : f32[]  # {{.*}}derived_dims.cpp:18:{{[0-9]+}}
// CHECK-NEXT:   %11 = aten.add.Tensor(%8, %9) : f32[batch]  # {{.*}}derived_dims.cpp:19:{{[0-9]+}}
// CHECK-NEXT:   %12 = aten.add.Tensor(%11, %10) : f32[batch]  # {{.*}}derived_dims.cpp:20:{{[0-9]+}}
// CHECK-NEXT:   return %12 as output "output"
// CHECK-NEXT: }
