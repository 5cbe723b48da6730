// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// The activation modules record their ATen ops with libtorch's options, and PReLU's slopes are a
// parameter named `weight` as in PyTorch.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  M() {
    prelu = register_module("prelu", nn::PReLU(nn::PReLUOptions().num_parameters(3)));
    leaky = register_module("leaky", nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)));
    softplus = register_module("softplus", nn::Softplus(nn::SoftplusOptions().beta(2)));
  }
  Tensor forward(Tensor x) {
    x = nn::ReLU6()(x);
    x = nn::Hardswish()(x);
    x = nn::Hardsigmoid()(x);
    x = leaky(x);
    x = nn::ELU(nn::ELUOptions().alpha(0.5))(x);
    x = nn::Mish()(x);
    x = softplus(x);
    return prelu(x);
  }
  nn::PReLU prelu{nullptr};
  nn::LeakyReLU leaky{nullptr};
  nn::Softplus softplus{nullptr};
};

AOTC_MODEL(M, dim("batch", 1, 16), AOTC_ENTRY(forward, input("x", {"batch", 3, 8})));

// CHECK:      parameter "prelu.weight" : f32[3]
// CHECK:      entry @forward(%0 : f32[batch, 3, 8] = input "x", %1 : f32[3] = parameter "prelu.weight") {
// CHECK-NEXT:   %2 = aten.hardtanh(%0) {min_val = 0, max_val = 6} : f32[batch, 3, 8]  # {{.*}}activations.cpp:14:{{[0-9]+}}
// CHECK-NEXT:   %3 = aten.hardswish(%2) : f32[batch, 3, 8]
// CHECK-NEXT:   %4 = aten.hardsigmoid(%3) : f32[batch, 3, 8]
// CHECK-NEXT:   %5 = aten.leaky_relu(%4) {negative_slope = 0.2} : f32[batch, 3, 8]
// CHECK-NEXT:   %6 = aten.elu(%5) {alpha = 0.5} : f32[batch, 3, 8]
// CHECK-NEXT:   %7 = aten.mish(%6) : f32[batch, 3, 8]
// CHECK-NEXT:   %8 = aten.softplus(%7) {beta = 2.0, threshold = 20.0} : f32[batch, 3, 8]
// CHECK-NEXT:   %9 = aten.prelu(%8, %1) : f32[batch, 3, 8]  # {{.*}}activations.cpp:21:{{[0-9]+}}
// CHECK-NEXT:   return %9 as output "output"
