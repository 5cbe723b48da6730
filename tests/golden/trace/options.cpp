// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// The modules take their options as libtorch spells them: `nn::LayerNorm({128})` (a braced list
// for the holder; it used to be some 85 lines of g++ errors), one int for a pair
// (`Conv2dOptions(in, out, 3).stride(2)`, `MaxPool2d(3)`, `AdaptiveAvgPool2d(1)`), the options
// structs of Linear, Embedding, GroupNorm, BatchNorm, Dropout, GELU, Flatten and ReLU, and
// `inplace` options that change nothing in a functional trace.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  M() {
    conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(3, 8, 3).stride(2).padding(1).bias(false)));
    conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(8, 8, {1, 3}).dilation(1)));
    bn = register_module("bn", nn::BatchNorm2d(nn::BatchNorm2dOptions(8).eps(1e-3).momentum(0.01).affine(true).track_running_stats(true)));
    gn = register_module("gn", nn::GroupNorm(nn::GroupNormOptions(2, 8).eps(1e-6).affine(false)));
    relu = register_module("relu", nn::ReLU(nn::ReLUOptions(true)));
    act = register_module("act", nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2).inplace(true)));
    maxpool = register_module("maxpool", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)));
    avgpool = register_module("avgpool", nn::AvgPool2d(2));
    pool = register_module("pool", nn::AdaptiveAvgPool2d(1));
    flatten = register_module("flatten", nn::Flatten(nn::FlattenOptions().start_dim(1)));
    drop = register_module("drop", nn::Dropout(nn::DropoutOptions(0.1).inplace(false)));
    fc = register_module("fc", nn::Linear(nn::LinearOptions(8, 128).bias(false)));
    norm = register_module("norm", nn::LayerNorm({128}));
    norm2 = register_module("norm2", nn::LayerNorm(nn::LayerNormOptions({128}).eps(1e-5).elementwise_affine(false)));
    gelu = register_module("gelu", nn::GELU(nn::GELUOptions().approximate("tanh")));
    emb = register_module("emb", nn::Embedding(nn::EmbeddingOptions(10, 128).padding_idx(0)));
  }
  Tensor forward(Tensor x, Tensor ids) {
    Tensor y = maxpool(act(relu(gn(bn(conv2(conv(x)))))));
    Tensor z = flatten(pool(avgpool(y)));
    Tensor h = gelu(norm2(norm(drop(fc(z)))));
    Tensor e = emb(ids); // its own statement: C++ leaves the order of + operands unspecified
    return h + e;
  }
  nn::Conv2d conv{nullptr}, conv2{nullptr};
  nn::BatchNorm2d bn{nullptr};
  nn::GroupNorm gn{nullptr};
  nn::ReLU relu{nullptr};
  nn::LeakyReLU act{nullptr};
  nn::MaxPool2d maxpool{nullptr};
  nn::AvgPool2d avgpool{nullptr};
  nn::AdaptiveAvgPool2d pool{nullptr};
  nn::Flatten flatten{nullptr};
  nn::Dropout drop{nullptr};
  nn::Linear fc{nullptr};
  nn::LayerNorm norm{nullptr}, norm2{nullptr};
  nn::GELU gelu{nullptr};
  nn::Embedding emb{nullptr};
};

AOTC_MODEL(M, dim("batch", 1, 16),
           AOTC_ENTRY(forward, input("x", {"batch", 3, 32, 32}), input("ids", {"batch"}, i64)));

// CHECK:      parameter "conv.weight" : f32[8, 3, 3, 3]
// CHECK-NEXT: parameter "conv2.weight" : f32[8, 8, 1, 3]
// CHECK-NEXT: parameter "conv2.bias" : f32[8]
// CHECK-NEXT: parameter "bn.weight" : f32[8]
// CHECK:      buffer "bn.num_batches_tracked" : i64[]
// CHECK-NEXT: parameter "fc.weight" : f32[128, 8]
// CHECK-NEXT: parameter "norm.weight" : f32[128]
// CHECK-NEXT: parameter "norm.bias" : f32[128]
// CHECK-NEXT: parameter "emb.weight" : f32[10, 128]
// CHECK:      entry @forward
// CHECK-NEXT: aten.convolution(%0, %2, none) {stride = [2, 2], padding = [1, 1], dilation = [1, 1], {{.*}}} : f32[batch, 8, 16, 16]
// CHECK-NEXT: aten.convolution({{.*}}) {stride = [1, 1], padding = [0, 0], dilation = [1, 1], {{.*}}} : f32[batch, 8, 16, 14]
// CHECK-NEXT: aten.batch_norm({{.*}} eps = 0.001
// CHECK-NEXT: aten.group_norm(%15, none, none) {num_groups = 2, eps = 1e-06}
// CHECK-NEXT: aten.relu
// CHECK-NEXT: aten.leaky_relu({{.*}}) {negative_slope = 0.2}
// CHECK-NEXT: aten.max_pool2d({{.*}}) {kernel_size = [3, 3], stride = [2, 2], padding = [1, 1]} : f32[batch, 8, 8, 7]
// CHECK-NEXT: aten.avg_pool2d({{.*}}) {kernel_size = [2, 2]} : f32[batch, 8, 4, 3]
// CHECK-NEXT: aten.adaptive_avg_pool2d({{.*}}) {output_size = [1, 1]} : f32[batch, 8, 1, 1]
// CHECK-NEXT: aten.flatten.using_ints({{.*}}) {start_dim = 1} : f32[batch, 8]
// CHECK-NEXT: aten.linear({{.*}}, none) : f32[batch, 128]
// CHECK-NEXT: aten.layer_norm({{.*}}) {normalized_shape = [128]} : f32[batch, 128]
// CHECK-NEXT: aten.layer_norm({{.*}}, none, none) {normalized_shape = [128]} : f32[batch, 128]
// CHECK-NEXT: aten.gelu({{.*}}) {approximate = "tanh"}
// CHECK-NEXT: aten.embedding
