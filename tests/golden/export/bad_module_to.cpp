// RUN: not %aotc export %s -o %t.so 2>&1 | FileCheck %s
// Module::to takes a floating dtype only (parameters stay floating), and says where it was called.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  M() {
    fc = register_module("fc", nn::Linear(8, 4));
    to(i64);
  }
  Tensor forward(Tensor x) { return fc(x); }
  nn::Linear fc{nullptr};
};

AOTC_MODEL(M, dim("batch", 1, 4), AOTC_ENTRY(forward, input("x", {"batch", 8})));

// CHECK: aotc export: error: {{.*}}bad_module_to.cpp:9: Module::to(i64): the dtype of parameters
// CHECK-SAME: must be a floating type (f16, bf16, f32, f64)
