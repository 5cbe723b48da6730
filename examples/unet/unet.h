// A U-Net (Ronneberger et al., 2015) in the aotc DSL, in the common PyTorch layout of
// milesial/Pytorch-UNet: double 3x3 convolutions with batch norm and ReLU, max-pooling on the way
// down, ConvTranspose2d (2x2, stride 2) on the way up with the skip connection concatenated, and a
// 1x1 classifier. Parameter names are that module tree's (inc, down1.maxpool_conv.1.double_conv.0,
// up1.up, ..., outc.conv).
#ifndef AOTC_EXAMPLES_UNET_H
#define AOTC_EXAMPLES_UNET_H

#include "../mobilenet/blocks.h"

#include <vector>

namespace unet {

using namespace aotc;

inline nn::Conv2d conv3x3(int64_t in, int64_t out) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, 3).padding({1, 1}).bias(false));
}

/// (convolution, batch norm, ReLU) twice, as `double_conv`.
class DoubleConvImpl : public nn::Module {
public:
  DoubleConvImpl(int64_t in, int64_t out) {
    double_conv = register_module(
        "double_conv", nn::Sequential(conv3x3(in, out), nn::BatchNorm2d(out), nn::ReLU(),
                                      conv3x3(out, out), nn::BatchNorm2d(out), nn::ReLU()));
  }
  Tensor forward(const Tensor &x) { return double_conv(x); }
  nn::Sequential double_conv{nullptr};
};
AOTC_MODULE(DoubleConv);

/// Half the size, then a DoubleConv: `maxpool_conv`.
class DownImpl : public nn::Module {
public:
  DownImpl(int64_t in, int64_t out) {
    maxpool_conv =
        register_module("maxpool_conv", nn::Sequential(nn::MaxPool2d(nn::MaxPool2dOptions(2)),
                                                       DoubleConv(in, out)));
  }
  Tensor forward(const Tensor &x) { return maxpool_conv(x); }
  nn::Sequential maxpool_conv{nullptr};
};
AOTC_MODULE(Down);

/// Twice the size by a transposed convolution (`up`), the skip connection's channels first, then
/// a DoubleConv (`conv`).
class UpImpl : public nn::Module {
public:
  UpImpl(int64_t in, int64_t out) {
    up = register_module(
        "up", nn::ConvTranspose2d(nn::ConvTranspose2dOptions(in, in / 2, 2).stride({2, 2})));
    conv = register_module("conv", DoubleConv(in, out));
  }
  Tensor forward(const Tensor &x, const Tensor &skip) { return conv(cat({skip, up(x)}, 1)); }
  nn::ConvTranspose2d up{nullptr};
  DoubleConv conv{nullptr};
};
AOTC_MODULE(Up);

/// A U-Net of `depth` levels below the first, `base` channels at the top, doubling per level.
class UNet : public nn::Module {
public:
  UNet(int64_t inChannels, int64_t classes, int64_t base, int64_t depth) {
    inc = register_module("inc", DoubleConv(inChannels, base));
    for (int64_t i = 0; i < depth; ++i)
      downs.push_back(
          register_module("down" + std::to_string(i + 1), Down(base << i, base << (i + 1))));
    for (int64_t i = depth; i > 0; --i)
      ups.push_back(
          register_module("up" + std::to_string(depth - i + 1), Up(base << i, base << (i - 1))));
    outc = register_module("outc", std::make_shared<nn::Module>());
    classifier = outc->register_module("conv", nn::Conv2d(nn::Conv2dOptions(base, classes, 1)));
  }
  Tensor forward(const Tensor &x) {
    std::vector<Tensor> skips = {inc(x)};
    for (Down &down : downs)
      skips.push_back(down(skips.back()));
    Tensor y = skips.back();
    for (size_t i = 0; i < ups.size(); ++i)
      y = ups[i](y, skips[skips.size() - 2 - i]);
    return classifier(y);
  }
  DoubleConv inc{nullptr};
  std::vector<Down> downs;
  std::vector<Up> ups;
  std::shared_ptr<nn::Module> outc;
  nn::Conv2d classifier{nullptr};
};

} // namespace unet

#endif
