// RUN: not %aotc export %s --emit=ir --report 2>&1 | FileCheck %s
// Bitwise ops on floating tensors are one line at the model's line naming the op and the dtype,
// as torch refuses them; shifts refuse bool tensors too, and a float number shifted by a tensor.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  Tensor both(Tensor x, Tensor m) { return x & m; }
  Tensor invert(Tensor x, Tensor m) { return ~x; }
  Tensor number(Tensor x, Tensor m) { return m.to(i64) | 0.5; }
  Tensor shift(Tensor x, Tensor m) { return m << m; }
  Tensor number_first(Tensor x, Tensor m) { return 1.5 >> m.to(i64); }
};

AOTC_MODEL(M, dim("batch", 1, 16),
           AOTC_ENTRY(both, input("x", {"batch", 4}), input("m", {4}, boolean)),
           AOTC_ENTRY(invert, input("x", {"batch", 4}), input("m", {4}, boolean)),
           AOTC_ENTRY(number, input("x", {"batch", 4}), input("m", {4}, boolean)),
           AOTC_ENTRY(shift, input("x", {"batch", 4}), input("m", {4}, boolean)),
           AOTC_ENTRY(number_first, input("x", {"batch", 4}), input("m", {4}, boolean)));

// CHECK:     5 problems found:
// CHECK-DAG: bad_bitwise.cpp:8: aten.bitwise_and.Tensor: not implemented for f32 inputs; it takes integer or bool tensors
// CHECK-DAG: bad_bitwise.cpp:9: aten.bitwise_not: not implemented for f32 inputs; it takes integer or bool tensors
// CHECK-DAG: bad_bitwise.cpp:10: aten.bitwise_or.Scalar: not implemented for f32 inputs; it takes integer or bool tensors
// CHECK-DAG: bad_bitwise.cpp:11: aten.bitwise_left_shift.Tensor: not implemented for bool inputs; it takes integer tensors
// CHECK-DAG: bad_bitwise.cpp:12: aten.bitwise_right_shift.Tensor: not implemented for f32 inputs; it takes integer tensors
