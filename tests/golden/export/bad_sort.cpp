// RUN: not %aotc export %s --emit=ir --report 2>&1 | FileCheck %s
// sort and topk errors are one line at the model's line: a k larger than the dim, a symbolic k
// the ranges cannot bound by the dim, a dim out of range.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  Tensor big(Tensor x) { return std::get<0>(x.topk(6)); }
  Tensor unbounded(Tensor x) { return std::get<0>(x.topk(x.size(0), 1)); }
  Tensor dim(Tensor x) { return x.argsort(2); }
};

AOTC_MODEL(M, dim("batch", 1, 16), AOTC_ENTRY(big, input("x", {"batch", 5})),
           AOTC_ENTRY(unbounded, input("x", {"batch", 5})),
           AOTC_ENTRY(dim, input("x", {"batch", 5})));

// CHECK:     3 problems found:
// CHECK-DAG: bad_sort.cpp:8: aten.topk: k (6) must be at most the size 5 of dim -1 of f32[batch, 5]
// CHECK-DAG: bad_sort.cpp:9: aten.topk: k (batch) must be at most the size 5 of dim 1 of f32[batch, 5]
// CHECK-DAG: bad_sort.cpp:10: aten.sort.stable: dim 2 is out of range for a tensor of rank 2 (expected -2..1)
