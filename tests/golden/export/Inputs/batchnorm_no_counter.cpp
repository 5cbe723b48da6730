// The state dict of weights_batchnorm.cpp's Net as older PyTorch versions saved it: BatchNorm
// without num_batches_tracked.
#include <aotc/aotc.h>
using namespace aotc;

struct OldBatchNorm : nn::Module {
  OldBatchNorm() {
    weight = register_parameter("weight", ones({4}));
    bias = register_parameter("bias", zeros({4}));
    running_mean = register_buffer("running_mean", zeros({4}));
    running_var = register_buffer("running_var", ones({4}));
  }
  Tensor weight, bias, running_mean, running_var;
};

struct Inner : nn::Module {
  Inner() { bn = register_module("bn", std::make_shared<OldBatchNorm>()); }
  std::shared_ptr<OldBatchNorm> bn;
};

struct Net : nn::Module {
  Net() {
    bn = register_module("bn", std::make_shared<OldBatchNorm>());
    inner = register_module("inner", std::make_shared<Inner>());
  }
  Tensor forward(Tensor x) { return x; }
  std::shared_ptr<OldBatchNorm> bn;
  std::shared_ptr<Inner> inner;
};

AOTC_MODEL(Net, AOTC_ENTRY(forward, input("x", {4})));
