// A two-layer perceptron small enough to export in a second, with its own header.
#include "tiny_mlp_sizes.h"

#include <aotc/aotc.h>

using namespace aotc;

struct TinyMLP : nn::Module {
  TinyMLP() {
    fc1 = register_module("fc1", nn::Linear(kInputs, kHidden));
    fc2 = register_module("fc2", nn::Linear(kHidden, kOutputs));
  }

  Tensor forward(Tensor x) { return fc2(relu(fc1(x))); }

  nn::Linear fc1{nullptr}, fc2{nullptr};
};

AOTC_MODEL(TinyMLP, dim("batch", 1, 16),
           AOTC_ENTRY(forward, input("x", {"batch", kInputs}), outputs({"logits"})));
