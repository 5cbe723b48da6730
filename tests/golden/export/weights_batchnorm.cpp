// RUN: %aotc weights %s --seed 3 -o %t.same.safetensors
// RUN: %aotc export %s --weights %t.same.safetensors --emit=ir | FileCheck %s
// RUN: %aotc weights %S/Inputs/batchnorm_no_counter.cpp --seed 3 -o %t.old.safetensors
// RUN: %aotc export %s --weights %t.old.safetensors --emit=ir | FileCheck %s
// Weights load as PyTorch loads them: a BatchNorm's num_batches_tracked may be missing from the
// file (checkpoints older than that buffer lack it, and PyTorch's BatchNorm sets it to 0), so
// neither its absence nor its presence needs --allow-missing or --allow-unexpected.
#include <aotc/aotc.h>
using namespace aotc;

struct Net : nn::Module {
  Net() {
    bn = register_module("bn", nn::BatchNorm2d(4));
    inner = register_module("inner", std::make_shared<Inner>());
  }
  struct Inner : nn::Module {
    Inner() { bn = register_module("bn", nn::BatchNorm1d(4)); }
    nn::BatchNorm1d bn{nullptr};
  };
  Tensor forward(Tensor x) { return inner->bn(bn(x).mean({2, 3})); }
  nn::BatchNorm2d bn{nullptr};
  std::shared_ptr<Inner> inner;
};

AOTC_MODEL(Net, dim("batch", 1, 8), AOTC_ENTRY(forward, input("x", {"batch", 4, 3, 3})));

// CHECK: buffer "bn.num_batches_tracked" : i64[]
// CHECK: buffer "inner.bn.num_batches_tracked" : i64[]
// CHECK: aten.batch_norm
