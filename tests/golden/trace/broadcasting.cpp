// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// Broadcasting against size-1 and static dims keeps the dynamic dim, type promotion follows
// torch, and two dynamic dims that meet in a broadcast become an equality guard (never a
// specialization). One op per statement: operand evaluation order differs between compilers.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  Tensor forward(Tensor x, Tensor bias, Tensor ids, Tensor y) {
    Tensor a = x + bias;  // [batch, 8] + [8]
    Tensor b = a * ids;   // f32 * i64 -> f32
    Tensor c = ids * 0.5; // an i64 tensor times a Python float -> f32 (the default dtype)
    Tensor x3 = x.unsqueeze(0);
    Tensor y3 = y.unsqueeze(1);
    Tensor d = x3 + y3; // [1, batch, 8] + [other, 1, 8]: no guard needed
    Tensor e = x + y;   // batch meets other: guarded equal
    Tensor f = b + c;
    return f + e;
  }
};

AOTC_MODEL(M, dim("batch", 1, 64), dim("other", 1, 64),
           AOTC_ENTRY(forward, input("x", {"batch", 8}), input("bias", {8}),
                      input("ids", {"batch", 8}, i64), input("y", {"other", 8})));

// CHECK:      graph @M opset 1.0
// CHECK-EMPTY:
// CHECK-NEXT: dim batch in 1..64
// CHECK-NEXT: dim other in 1..64
// CHECK-NEXT: guard batch == other  # {{.*}}broadcasting.cpp:16:{{[0-9]+}}
// CHECK-EMPTY:
// CHECK-NEXT: entry @forward(%0 : f32[batch, 8] = input "x", %1 : f32[8] = input "bias", %2 : i64[batch, 8] = input "ids", %3 : f32[other, 8] = input "y") {
// CHECK-NEXT:   %4 = aten.add.Tensor(%0, %1) : f32[batch, 8]  # {{.*}}broadcasting.cpp:10:{{[0-9]+}}
// CHECK-NEXT:   %5 = aten.mul.Tensor(%4, %2) : f32[batch, 8]  # {{.*}}broadcasting.cpp:11:{{[0-9]+}}
// CHECK-NEXT:   %6 = aten.mul.Scalar(%2) {other = 0.5} : f32[batch, 8]  # {{.*}}broadcasting.cpp:12:{{[0-9]+}}
// CHECK-NEXT:   %7 = aten.unsqueeze(%0) {dim = 0} : f32[1, batch, 8]  # {{.*}}broadcasting.cpp:13:{{[0-9]+}}
// CHECK-NEXT:   %8 = aten.unsqueeze(%3) {dim = 1} : f32[other, 1, 8]  # {{.*}}broadcasting.cpp:14:{{[0-9]+}}
// CHECK-NEXT:   %9 = aten.add.Tensor(%7, %8) : f32[other, batch, 8]  # {{.*}}broadcasting.cpp:15:{{[0-9]+}}
// CHECK-NEXT:   %10 = aten.add.Tensor(%0, %3) : f32[batch, 8]  # {{.*}}broadcasting.cpp:16:{{[0-9]+}}
// CHECK-NEXT:   %11 = aten.add.Tensor(%5, %6) : f32[batch, 8]  # {{.*}}broadcasting.cpp:17:{{[0-9]+}}
// CHECK-NEXT:   %12 = aten.add.Tensor(%11, %10) : f32[batch, 8]  # {{.*}}broadcasting.cpp:18:{{[0-9]+}}
// CHECK-NEXT:   return %12 as output "output"
// CHECK-NEXT: }
