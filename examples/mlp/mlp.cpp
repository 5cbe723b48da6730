// A three-layer perceptron over flattened 28x28 images, with a dynamic batch.
#include <aotc/aotc.h>

using namespace aotc;

struct MLP : nn::Module {
  MLP() {
    fc1 = register_module("fc1", nn::Linear(784, 1024));
    fc2 = register_module("fc2", nn::Linear(1024, 1024));
    fc3 = register_module("fc3", nn::Linear(1024, 10));
  }

  Tensor forward(Tensor x) {
    x = relu(fc1(x));
    x = relu(fc2(x));
    return fc3(x);
  }

  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};

AOTC_MODEL(MLP, dim("batch", 1, 512),
           AOTC_ENTRY(forward, input("x", {"batch", 784}), outputs({"logits"})));
