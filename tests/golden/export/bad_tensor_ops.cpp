// RUN: not %aotc export %s --emit=ir --report 2>&1 | FileCheck %s
// The DSL's own checks are one-line errors at the model's line, reported together: a chunk count
// of 0, one_hot without a number of classes, unbind over a dynamic dim, BatchNorm1d of a 4-d
// input. (A DSL error inside an
// entry used to terminate the model program instead.)
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  Tensor chunks(Tensor x) { return x.chunk(0, 1)[0]; }
  Tensor classes(Tensor ids) { return one_hot(ids, -1); }
  Tensor rows(Tensor x) { return x.unbind(0)[0]; }
  Tensor norm(Tensor x) { return bn(x); }
  M() { bn = register_module("bn", nn::BatchNorm1d(4)); }
  nn::BatchNorm1d bn{nullptr};
};

AOTC_MODEL(M, dim("batch", 1, 16), AOTC_ENTRY(chunks, input("x", {"batch", 4})),
           AOTC_ENTRY(classes, input("ids", {"batch"}, i64)),
           AOTC_ENTRY(rows, input("x", {"batch", 4})),
           AOTC_ENTRY(norm, input("x", {"batch", 4, 2, 2})));

// CHECK:     4 problems found:
// CHECK-DAG: bad_tensor_ops.cpp:10: chunk needs a positive number of chunks, got 0
// CHECK-DAG: bad_tensor_ops.cpp:11: one_hot needs a positive num_classes (the largest id is not known while tracing), got -1
// CHECK-DAG: bad_tensor_ops.cpp:12: this code needs batch as a plain integer, but it depends on batch (dynamic in 1..16)
// CHECK-DAG: bad_tensor_ops.cpp:13: expected 2D or 3D input, got f32[batch, 4, 2, 2]
