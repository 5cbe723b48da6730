// torchvision's MobileNetV3 (Howard et al., 2019) in the aotc DSL, with the same module tree, so
// that parameter and buffer names equal torchvision's state_dict() keys and its weights load by
// name, strictly: inverted residual blocks of a 1x1 expansion, a depthwise convolution and a 1x1
// projection, squeeze-and-excitation on some, ReLU or hardswish, batch norms with eps 1e-3.
#ifndef AOTC_EXAMPLES_MOBILENET_V3_H
#define AOTC_EXAMPLES_MOBILENET_V3_H

#include "blocks.h"

#include <vector>

namespace mobilenet {

using namespace aotc;

/// MobileNetV3's batch norms.
constexpr double Eps = 1e-3;

/// One row of torchvision's inverted residual settings. A dilated block (segmentation
/// backbones) keeps its input's size: its depthwise convolution takes the dilation, not the
/// stride.
struct BlockConfig {
  int64_t in, kernel, expanded, out;
  bool squeeze;
  Activation act;
  int64_t stride, dilation = 1;
};

/// torchvision's InvertedResidual.
class InvertedResidualImpl : public ResidualBlock {
public:
  explicit InvertedResidualImpl(const BlockConfig &c) {
    nn::Sequential layers;
    if (c.expanded != c.in)
      layers->push_back(convNormActivation(c.in, c.expanded, 1, 1, 1, c.act, Eps));
    int64_t stride = c.dilation > 1 ? 1 : c.stride;
    layers->push_back(convNormActivation(c.expanded, c.expanded, c.kernel, stride, c.expanded,
                                         c.act, Eps, c.dilation));
    if (c.squeeze)
      layers->push_back(
          SqueezeExcitation(c.expanded, divisible(c.expanded / 4), Activation::ReLU, true));
    layers->push_back(convNormActivation(c.expanded, c.out, 1, 1, 1, Activation::None, Eps));
    setBlock(layers, c.stride == 1 && c.in == c.out);
  }
};
AOTC_MODULE(InvertedResidual);

/// MobileNetV3's features in order, each passed to `add` as its module holder: the stem, the
/// blocks, a 1x1 convolution to 6 x the last block's channels.
template <typename Add> void forEachFeature(const std::vector<BlockConfig> &settings, Add add) {
  add(convNormActivation(3, settings.front().in, 3, 2, 1, Activation::Hardswish, Eps));
  for (const BlockConfig &c : settings)
    add(InvertedResidual(c));
  int64_t last = settings.back().out;
  add(convNormActivation(last, 6 * last, 1, 1, 1, Activation::Hardswish, Eps));
}

/// torchvision.models.mobilenetv3.MobileNetV3(settings, last_channel, num_classes): features,
/// the spatial mean, and the classifier Linear, hardswish, dropout (identity in inference),
/// Linear.
class MobileNetV3 : public nn::Module {
public:
  MobileNetV3(const std::vector<BlockConfig> &settings, int64_t lastChannel, int64_t numClasses) {
    nn::Sequential layers;
    forEachFeature(settings, [&](auto holder) { layers->push_back(holder); });
    features = register_module("features", layers);
    int64_t head = 6 * settings.back().out;
    classifier = register_module(
        "classifier", nn::Sequential(nn::Linear(head, lastChannel), nn::Hardswish(),
                                     nn::Dropout(0.2), nn::Linear(lastChannel, numClasses)));
  }
  Tensor forward(Tensor x) {
    x = features(x);
    return classifier(adaptive_avg_pool2d(x, {1, 1}).flatten(1));
  }
  nn::Sequential features{nullptr}, classifier{nullptr};
};

/// mobilenet_v3_small's settings (torchvision's _mobilenet_v3_conf).
inline std::vector<BlockConfig> smallSettings() {
  using A = Activation;
  return {{16, 3, 16, 16, true, A::ReLU, 2},       {16, 3, 72, 24, false, A::ReLU, 2},
          {24, 3, 88, 24, false, A::ReLU, 1},      {24, 5, 96, 40, true, A::Hardswish, 2},
          {40, 5, 240, 40, true, A::Hardswish, 1}, {40, 5, 240, 40, true, A::Hardswish, 1},
          {40, 5, 120, 48, true, A::Hardswish, 1}, {48, 5, 144, 48, true, A::Hardswish, 1},
          {48, 5, 288, 96, true, A::Hardswish, 2}, {96, 5, 576, 96, true, A::Hardswish, 1},
          {96, 5, 576, 96, true, A::Hardswish, 1}};
}

/// mobilenet_v3_large's settings; `dilated` (segmentation): the last three blocks at dilation 2.
inline std::vector<BlockConfig> largeSettings(bool dilated) {
  using A = Activation;
  int64_t d = dilated ? 2 : 1;
  return {
      {16, 3, 16, 16, false, A::ReLU, 1},           {16, 3, 64, 24, false, A::ReLU, 2},
      {24, 3, 72, 24, false, A::ReLU, 1},           {24, 5, 72, 40, true, A::ReLU, 2},
      {40, 5, 120, 40, true, A::ReLU, 1},           {40, 5, 120, 40, true, A::ReLU, 1},
      {40, 3, 240, 80, false, A::Hardswish, 2},     {80, 3, 200, 80, false, A::Hardswish, 1},
      {80, 3, 184, 80, false, A::Hardswish, 1},     {80, 3, 184, 80, false, A::Hardswish, 1},
      {80, 3, 480, 112, true, A::Hardswish, 1},     {112, 3, 672, 112, true, A::Hardswish, 1},
      {112, 5, 672, 160, true, A::Hardswish, 2, d}, {160, 5, 960, 160, true, A::Hardswish, 1, d},
      {160, 5, 960, 160, true, A::Hardswish, 1, d}};
}

} // namespace mobilenet

#endif
