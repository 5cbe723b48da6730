// RUN: not %aotc export %s --emit=ir 2>&1 | FileCheck %s
// RUN: %aotc export %s --emit=ir --dyn batch=1..16 2>/dev/null | FileCheck --check-prefix=FIXED %s
// A comparison the ranges cannot prove, over a dim the user made dynamic, is a constraint
// violation naming the dim, the line, the guard and the fix; with the fix the export succeeds.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  Tensor forward(Tensor x) {
    if (x.size(0) <= 16)
      return x.relu();
    return x;
  }
};

AOTC_MODEL(M, dim("batch", 1, 512), AOTC_ENTRY(forward, input("x", {"batch", 8})));

// CHECK: aotc export: error: {{.*}}constraint_violation.cpp:10: batch is dynamic in 1..512 but this code requires batch <= 16; export with --dyn batch=1..16
// FIXED: dim batch in 1..16
// FIXED: aten.relu
