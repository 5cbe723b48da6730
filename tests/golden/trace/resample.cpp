// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// Resampling in libtorch's spelling: F::interpolate with a symbolic size or a scale factor (which
// torch passes on as the op's scale), nn::Upsample, F::pad in its three modes, ConvTranspose2d
// and ConvTranspose1d (weights [in, out / groups, kernel...], aten.convolution with
// transposed = true), Conv1d, Conv3d and the 1-d pools (the 2-d ones over a height of 1).
#include <aotc/aotc.h>
using namespace aotc;
namespace F = aotc::nn::functional;

struct M : nn::Module {
  M() {
    up = register_module("up", nn::ConvTranspose2d(nn::ConvTranspose2dOptions(4, 6, 3)
                                                       .stride(2)
                                                       .padding(1)
                                                       .output_padding(1)
                                                       .groups(2)));
    conv = register_module("conv", nn::Conv1d(nn::Conv1dOptions(4, 3, 3).padding(1)));
    deconv = register_module("deconv",
                             nn::ConvTranspose1d(nn::ConvTranspose1dOptions(3, 2, 4).stride(3)));
    upsample = register_module(
        "upsample",
        nn::Upsample(nn::UpsampleOptions().scale_factor({2}).mode(kBilinear).align_corners(true)));
    pool = register_module("pool", nn::MaxPool1d(nn::MaxPool1dOptions(3).stride(2).padding(1)));
    conv3 = register_module("conv3", nn::Conv3d(nn::Conv3dOptions(1, 2, {1, 3, 3}).padding({0, 1, 1})));
  }
  std::vector<Tensor> forward(Tensor x) {
    Tensor a = F::interpolate(
        x, F::InterpolateFuncOptions().size({x.size(2) * 2, 7}).mode(kBicubic));
    Tensor b = F::interpolate(x, F::InterpolateFuncOptions().scale_factor({3, 0.5}));
    Tensor c = F::pad(x, F::PadFuncOptions({1, 2, 2, 1}).mode(kReflect));
    Tensor d = F::pad(x, F::PadFuncOptions({1, -1}).value(0.5));
    Tensor e = up(x);
    Tensor l = x.flatten(2);
    Tensor f = deconv(conv(l));
    Tensor g = pool(l);
    Tensor h = upsample(x);
    Tensor i = interpolate(l, std::nullopt, std::vector<double>{2.0}, kLinear, false, true);
    Tensor j = conv3(x.unsqueeze(1));
    return {a, b, c, d, e, f, g, h, i, j};
  }
  nn::ConvTranspose2d up{nullptr};
  nn::Conv1d conv{nullptr};
  nn::ConvTranspose1d deconv{nullptr};
  nn::Upsample upsample{nullptr};
  nn::MaxPool1d pool{nullptr};
  nn::Conv3d conv3{nullptr};
};

AOTC_MODEL(M, dim("batch", 1, 4), dim("h", 3, 6),
           AOTC_ENTRY(forward, input("x", {"batch", 4, "h", 5})));

// CHECK:      parameter "up.weight" : f32[4, 3, 3, 3]
// CHECK-NEXT: parameter "up.bias" : f32[6]
// CHECK-NEXT: parameter "conv.weight" : f32[3, 4, 3]
// CHECK-NEXT: parameter "conv.bias" : f32[3]
// CHECK-NEXT: parameter "deconv.weight" : f32[3, 2, 4]
// CHECK-NEXT: parameter "deconv.bias" : f32[2]
// CHECK-NEXT: parameter "conv3.weight" : f32[2, 1, 1, 3, 3]
// CHECK-NEXT: parameter "conv3.bias" : f32[2]
// CHECK:      aten.upsample_bicubic2d(%0) {output_size = [2*h, 7], align_corners = false} : f32[batch, 4, 2*h, 7]
// CHECK-NEXT: aten.upsample_nearest2d(%0) {output_size = [3*h, 2], scales_h = 3.0, scales_w = 0.5} : f32[batch, 4, 3*h, 2]
// CHECK-NEXT: aten.pad(%0) {pad = [1, 2, 2, 1], mode = "reflect"} : f32[batch, 4, h + 3, 8]
// CHECK-NEXT: aten.pad(%0) {pad = [1, -1], value = 0.5} : f32[batch, 4, h, 5]
// CHECK-NEXT: aten.convolution(%0, %1, %2) {stride = [2, 2], padding = [1, 1], dilation = [1, 1], transposed = true, output_padding = [1, 1], groups = 2} : f32[batch, 6, 2*h, 10]
// CHECK-NEXT: aten.flatten.using_ints(%0) {start_dim = 2} : f32[batch, 4, 5*h]
// CHECK-NEXT: aten.convolution({{.*}}) {stride = [1], padding = [1], dilation = [1], transposed = false, output_padding = [0], groups = 1} : f32[batch, 3, 5*h]
// CHECK-NEXT: aten.convolution({{.*}}) {stride = [3], padding = [0], dilation = [1], transposed = true, output_padding = [0], groups = 1} : f32[batch, 2, 15*h + 1]
// CHECK-NEXT: aten.unsqueeze({{.*}}) {dim = -2} : f32[batch, 4, 1, 5*h]
// CHECK-NEXT: aten.max_pool2d({{.*}}) {kernel_size = [1, 3], stride = [1, 2], padding = [0, 1]} : f32[batch, 4, 1, 2*h + floordiv(h + 1, 2)]
// CHECK-NEXT: aten.squeeze.dims({{.*}}) {dim = [-2]} : f32[batch, 4, 2*h + floordiv(h + 1, 2)]
// CHECK-NEXT: aten.upsample_bilinear2d(%0) {output_size = [2*h, 10], align_corners = true, scales_h = 2.0, scales_w = 2.0} : f32[batch, 4, 2*h, 10]
// CHECK-NEXT: aten.upsample_linear1d({{.*}}) {output_size = [10*h], align_corners = false} : f32[batch, 4, 10*h]
// CHECK-NEXT: aten.unsqueeze(%0) {dim = 1} : f32[batch, 1, 4, h, 5]
// CHECK-NEXT: aten.convolution({{.*}}) {stride = [1, 1, 1], padding = [0, 1, 1], dilation = [1, 1, 1], transposed = false, output_padding = [0, 0, 0], groups = 1} : f32[batch, 2, 4, h, 5]
