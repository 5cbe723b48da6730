// RUN: %aotc weights %s --seed 3 -o %t.same.safetensors
// RUN: %aotc export %s --weights %t.same.safetensors -o %t.aotp
// RUN: %aotc weights %S/Inputs/other_model.cpp -o %t.other.safetensors
// RUN: rm -f %t.bad.aotp
// RUN: not %aotc export %s --weights %t.other.safetensors -o %t.bad.aotp 2>&1 | FileCheck %s
// RUN: test ! -e %t.bad.aotp
// RUN: not %aotc export %s --weights %t.other.safetensors --allow-missing --allow-unexpected -o %t.bad.aotp 2>&1 | FileCheck --check-prefix=RELAXED %s
// RUN: not %aotc export %s --weights %S/Inputs/missing.safetensors 2>&1 | FileCheck --check-prefix=NOFILE %s
// Weights are matched by PyTorch name: missing, unexpected and wrong-shape tensors are all listed
// in one error; --allow-missing / --allow-unexpected relax the first two, never the third.
#include <aotc/aotc.h>
using namespace aotc;

struct Net : nn::Module {
  Net() {
    fc = register_module("fc", nn::Linear(8, 4));
    norm = register_module("norm", nn::LayerNorm(nn::LayerNormOptions({4})));
  }
  Tensor forward(Tensor x) { return norm(fc(x)); }
  nn::Linear fc{nullptr};
  nn::LayerNorm norm{nullptr};
};

AOTC_MODEL(Net, dim("batch", 1, 8), AOTC_ENTRY(forward, input("x", {"batch", 8})));

// CHECK:      aotc export: error: {{.*}}other.safetensors: the weights do not match the model Net:
// CHECK-NEXT:   missing from the file (--allow-missing initializes them):
// CHECK-NEXT:     norm.weight
// CHECK-NEXT:     norm.bias
// CHECK-NEXT:   unexpected in the file (--allow-unexpected ignores them):
// CHECK-NEXT:     head.weight
// CHECK-NEXT:   wrong dtype or shape:
// CHECK-NEXT:     "fc.weight" is f32[4, 6] in the file but the model has f32[4, 8]
// RELAXED:      aotc export: error: {{.*}}other.safetensors: the weights do not match the model Net:
// RELAXED-NEXT:   wrong dtype or shape:
// RELAXED-NEXT:     "fc.weight" is f32[4, 6] in the file but the model has f32[4, 8]
// NOFILE: aotc export: error: {{.*}}missing.safetensors
