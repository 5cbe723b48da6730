// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// Constant tensors from host values, as in PyTorch: a buffer made in the constructor from
// aotc::tensor (rotary inv_freq, which Hugging Face does not save) keeps its name, and tensors
// made inside an entry (nested lists, a flat vector with a shape, from_blob) are graph constants
// named as torch.export names them. e2e/constants.aotc checks their values.
#include <aotc/aotc.h>
using namespace aotc;

static const float Blob[3] = {0.0f, 1.5f, 3.0f};

struct M : nn::Module {
  M() { inv_freq = register_buffer("inv_freq", tensor({1.0, 0.5, 0.25})); }
  std::vector<Tensor> forward(Tensor x) {
    Tensor rows = tensor({{1, 2, 3}, {4, 5, 6}});
    Tensor flat = tensor(std::vector<double>{1, 0, 1}, {3}, i64);
    Tensor blob = from_blob(Blob, {3});
    Tensor powers = full({3}, 0.5).pow(arange(3, f32));
    return {x * inv_freq, x * powers,
            x + rows.sum({0}), x + arange(5, 11, 2, f32),
            x * blob, x * (arange(3, f32) * 1.5),
            x * flat, x * tensor({1, 0, 1})};
  }
  Tensor inv_freq;
};

AOTC_MODEL(M, dim("batch", 1, 16), AOTC_ENTRY(forward, input("x", {"batch", 3})));

// CHECK:      buffer "inv_freq" : f32[3]
// CHECK-NEXT: constant "_tensor_constant0" : f32[2, 3]
// CHECK-NEXT: constant "_tensor_constant1" : i64[3]
// CHECK-NEXT: constant "_tensor_constant2" : f32[3]
// CHECK-NEXT: constant "_tensor_constant3" : i64[3]
// CHECK:      entry @forward(%0 : f32[batch, 3] = input "x", %1 : f32[3] = buffer "inv_freq", %2 : f32[2, 3] = constant "_tensor_constant0", %3 : f32[3] = constant "_tensor_constant2", %4 : i64[3] = constant "_tensor_constant1", %5 : i64[3] = constant "_tensor_constant3") {
