// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// The norm modules with PyTorch's parameter and buffer names: RMSNorm (aten.rms_norm, eps None
// by default), BatchNorm1d on [N, C, L], InstanceNorm2d (a group_norm with one channel per group).
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  M() {
    rms = register_module("rms", nn::RMSNorm(nn::RMSNormOptions({8})));
    bn = register_module("bn", nn::BatchNorm1d(4));
    in = register_module("in", nn::InstanceNorm2d(nn::InstanceNorm2dOptions(4).affine(true)));
  }
  Tensor forward(Tensor x) {
    Tensor y = bn(rms(x));
    return in(y.view({x.size(0), 4, 2, 4}));
  }
  nn::RMSNorm rms{nullptr};
  nn::BatchNorm1d bn{nullptr};
  nn::InstanceNorm2d in{nullptr};
};

AOTC_MODEL(M, dim("batch", 1, 16), AOTC_ENTRY(forward, input("x", {"batch", 4, 8})));

// CHECK:      parameter "rms.weight" : f32[8]
// CHECK-NEXT: parameter "bn.weight" : f32[4]
// CHECK-NEXT: parameter "bn.bias" : f32[4]
// CHECK-NEXT: buffer "bn.running_mean" : f32[4]
// CHECK-NEXT: buffer "bn.running_var" : f32[4]
// CHECK-NEXT: buffer "bn.num_batches_tracked" : i64[]
// CHECK-NEXT: parameter "in.weight" : f32[4]
// CHECK-NEXT: parameter "in.bias" : f32[4]
// CHECK:      aten.rms_norm(%0, %{{[0-9]+}}) {normalized_shape = [8]} : f32[batch, 4, 8]
// CHECK-NEXT: aten.batch_norm(
// CHECK-SAME: : f32[batch, 4, 8]
// CHECK-NEXT: aten.view(
// CHECK-NEXT: aten.group_norm({{.*}}) {num_groups = 4} : f32[batch, 4, 2, 4]
