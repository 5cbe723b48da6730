// RUN: not %aotc export %s --emit=ir --report 2>&1 | FileCheck %s
// Constant tensors from host values with a bad shape are one-line errors at the model's line.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  Tensor ragged(Tensor x) { return x + tensor({{1.0, 2.0}, {3.0}}); }
  Tensor count(Tensor x) { return x + tensor({1.0, 2.0, 3.0}, {2, 2}); }
  Tensor negative(Tensor x) { return x + from_blob(nullptr, {-1}); }
};

AOTC_MODEL(M, AOTC_ENTRY(ragged, input("x", {2})), AOTC_ENTRY(count, input("x", {2, 2})),
           AOTC_ENTRY(negative, input("x", {2})));

// CHECK:     3 problems found:
// CHECK-DAG: bad_constants.cpp:7: tensor rows must have the same length, got 2 and 1
// CHECK-DAG: bad_constants.cpp:8: tensor f32[2, 2] needs 4 values, got 3
// CHECK-DAG: bad_constants.cpp:9: from_blob needs non-negative sizes, got f32[-1]
