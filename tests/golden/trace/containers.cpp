// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// Sequential and ModuleList name their children "0", "1", ... as PyTorch does, so their
// parameters get PyTorch's state_dict keys.
#include <aotc/aotc.h>
using namespace aotc;

struct Blocks : nn::Module {
  Blocks() {
    stem = register_module("stem", nn::Sequential(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 8)));
    layers = register_module("layers", nn::ModuleList(nn::Linear(8, 8), nn::LayerNorm(nn::LayerNormOptions({8}))));
  }
  Tensor forward(Tensor x) {
    Tensor h = stem(x);
    h = layers->at<nn::LinearImpl>(0).forward(h);
    return layers->at<nn::LayerNormImpl>(1).forward(h);
  }
  nn::Sequential stem{nullptr};
  nn::ModuleList layers{nullptr};
};

AOTC_MODEL(Blocks, dim("batch", 1, 8), AOTC_ENTRY(forward, input("x", {"batch", 4})));

// CHECK:      parameter "stem.0.weight" : f32[8, 4]
// CHECK-NEXT: parameter "stem.0.bias" : f32[8]
// CHECK-NEXT: parameter "stem.2.weight" : f32[8, 8]
// CHECK-NEXT: parameter "stem.2.bias" : f32[8]
// CHECK-NEXT: parameter "layers.0.weight" : f32[8, 8]
// CHECK-NEXT: parameter "layers.0.bias" : f32[8]
// CHECK-NEXT: parameter "layers.1.weight" : f32[8]
// CHECK-NEXT: parameter "layers.1.bias" : f32[8]
// CHECK:      aten.linear
// CHECK-NEXT: aten.relu
// CHECK-NEXT: aten.linear
// CHECK-NEXT: aten.linear
// CHECK-NEXT: aten.layer_norm
