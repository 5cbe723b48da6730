// RUN: not %aotc export %s --emit=ir --report 2>&1 | FileCheck %s
// RUN: not %aotc export %s --emit=ir 2>&1 | FileCheck --check-prefix=FIRST %s
// --report does not stop at the first problem: every violation and unsupported construct of
// every entry is listed with its fix. Without it, the first problem ends the export.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  Tensor forward(Tensor x) {
    SymInt b = x.size(0);
    if (b > 4)
      x = x.relu();
    if (x.sum() > 0)
      x = x.neg();
    int64_t n = x.size(1).value();
    return x.view({b * n});
  }
  Tensor other(Tensor y) {
    if (y.size(0) == 3)
      return y;
    return y.neg();
  }
};

AOTC_MODEL(M, dim("batch", 1, 512), dim("seq", 1, 64),
           AOTC_ENTRY(forward, input("x", {"batch", "seq"})),
           AOTC_ENTRY(other, input("y", {"seq"})));

// CHECK:      aotc export: error: 4 problems found:
// CHECK-NEXT: {{.*}}report.cpp:11: batch is dynamic in 1..512 but this code requires batch > 4; export with --dyn batch=5..512
// CHECK-NEXT: {{.*}}report.cpp:13: a branch on a tensor's value (bool[]) cannot be traced
// CHECK-NEXT: {{.*}}report.cpp:15: this code needs seq as a plain integer, but it depends on seq (dynamic in 1..64); keep it as an aotc::SymInt, or make the dim static
// CHECK-NEXT: {{.*}}report.cpp:19: seq is dynamic in 1..64 but this code requires seq == 3; export with --dyn seq=3..3
// FIRST:     aotc export: error: {{.*}}report.cpp:11: batch is dynamic
// FIRST-NOT: report.cpp:13
