// RUN: not %aotc export %s --emit=ir 2>&1 | FileCheck %s
// A branch on a tensor's value cannot be traced: the error names the line of the comparison and
// points to aotc::cond.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  Tensor forward(Tensor x) {
    Tensor total = x.sum();
    if (total.item() > 0)
      return x.relu();
    return x;
  }
};

AOTC_MODEL(M, dim("batch", 1, 512), AOTC_ENTRY(forward, input("x", {"batch", 8})));

// CHECK: aotc export: error: {{.*}}data_dependent.cpp:10: a branch on a tensor's value (bool[]) cannot be traced: the value is not known at export time; use aotc::cond(pred, then_fn, else_fn, operands) to trace both branches
