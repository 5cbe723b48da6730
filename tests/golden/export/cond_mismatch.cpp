// RUN: not %aotc export %s --emit=ir 2>&1 | FileCheck %s
// The branches of cond must return the same dtypes and shapes.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  Tensor forward(Tensor x) {
    Tensor pred = x.sum() > 0;
    auto out = cond(
        pred, [](const std::vector<Tensor> &in) { return std::vector<Tensor>{in[0]}; },
        [](const std::vector<Tensor> &in) { return std::vector<Tensor>{in[0].sum({1})}; }, {x});
    return out[0];
  }
};

AOTC_MODEL(M, dim("batch", 1, 512), AOTC_ENTRY(forward, input("x", {"batch", 8})));

// CHECK: aotc export: error: {{.*}}cond_mismatch.cpp:9: aten.cond: output 0 differs between branches: then returns f32[batch, 8] but else returns f32[batch]
