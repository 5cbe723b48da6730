// RUN: not %aotc export %s -o %t.so 2>&1 | FileCheck %s
// Module::to while an entry traces would change the weights under the traced graph: an error
// naming the call, which belongs in the constructor.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  M() { fc = register_module("fc", nn::Linear(8, 4)); }
  Tensor forward(Tensor x) {
    Tensor y = fc(x);
    to(bf16);
    return y;
  }
  nn::Linear fc{nullptr};
};

AOTC_MODEL(M, dim("batch", 1, 4), AOTC_ENTRY(forward, input("x", {"batch", 8})));

// CHECK: aotc export: error: {{.*}}bad_module_to_tracing.cpp:11: Module::to(bf16) while an
// CHECK-SAME: entry traces: call it before, in the model's constructor
