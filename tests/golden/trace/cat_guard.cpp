// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// Two dynamic dims that meet in a cat (outside its dim) or a stack become an equality guard, as
// in a broadcast; the cat used to fail with "tensors must match except in dim 1".
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  Tensor forward(Tensor x, Tensor y, Tensor z) {
    Tensor c = cat({x, y}, 1);
    Tensor s = stack({x, z}, 0);
    return c.sum() + s.sum();
  }
};

AOTC_MODEL(M, dim("a", 1, 8), dim("b", 1, 8), dim("c", 1, 8),
           AOTC_ENTRY(forward, input("x", {"a", 3}), input("y", {"b", 5}), input("z", {"c", 3})));

// CHECK:      guard a == b  # {{.*}}cat_guard.cpp:9:{{[0-9]+}}
// CHECK-NEXT: guard a == c  # {{.*}}cat_guard.cpp:10:{{[0-9]+}}
// CHECK:      aten.cat(%0, %1) {dim = 1} : f32[a, 8]
// CHECK-NEXT: aten.stack(%0, %2) : f32[2, a, 3]
