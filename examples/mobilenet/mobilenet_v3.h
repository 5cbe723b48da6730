// torchvision's MobileNetV3 (Howard et al., 2019) in the aotc DSL, with the same module tree, so
// that parameter and buffer names equal torchvision's state_dict() keys and its weights load by
// name, strictly: inverted residual blocks of a 1x1 expansion, a depthwise convolution and a 1x1
// projection, squeeze-and-excitation on some, ReLU or hardswish, batch norms with eps 1e-3.
#ifndef AOTC_EXAMPLES_MOBILENET_V3_H
#define AOTC_EXAMPLES_MOBILENET_V3_H

#include <aotc/aotc.h>

#include <vector>

namespace mobilenet {

using namespace aotc;

/// torchvision's _make_divisible(v, 8): the nearest multiple of 8, at least 8 and not below 90 %
/// of v.
inline int64_t divisible(int64_t v) {
  int64_t out = std::max<int64_t>(8, (v + 4) / 8 * 8);
  return 10 * out < 9 * v ? out + 8 : out;
}

enum class Activation { None, ReLU, Hardswish };

/// Conv2dNormActivation: a Sequential of the convolution (no bias), its batch norm and the
/// activation, named .0, .1 and .2 as in torchvision.
inline nn::Sequential convNormActivation(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                                         int64_t groups, Activation act) {
  nn::Sequential s(nn::Conv2d(nn::Conv2dOptions(in, out, kernel)
                                  .stride({stride, stride})
                                  .padding({(kernel - 1) / 2, (kernel - 1) / 2})
                                  .groups(groups)
                                  .bias(false)),
                   nn::BatchNorm2d(nn::BatchNorm2dOptions(out).eps(1e-3)));
  if (act == Activation::ReLU)
    s->push_back(nn::ReLU());
  else if (act == Activation::Hardswish)
    s->push_back(nn::Hardswish());
  return s;
}

/// torchvision.ops.SqueezeExcitation with MobileNetV3's hardsigmoid: x times a per-channel scale
/// computed from its spatial mean.
class SqueezeExcitationImpl : public nn::Module {
public:
  SqueezeExcitationImpl(int64_t channels, int64_t squeezed) {
    fc1 = register_module("fc1", nn::Conv2d(nn::Conv2dOptions(channels, squeezed, 1)));
    fc2 = register_module("fc2", nn::Conv2d(nn::Conv2dOptions(squeezed, channels, 1)));
  }
  Tensor forward(const Tensor &x) {
    Tensor scale = adaptive_avg_pool2d(x, {1, 1});
    scale = hardsigmoid(fc2(relu(fc1(scale))));
    return x * scale;
  }
  nn::Conv2d fc1{nullptr}, fc2{nullptr};
};
AOTC_MODULE(SqueezeExcitation);

/// One row of torchvision's inverted residual settings.
struct BlockConfig {
  int64_t in, kernel, expanded, out;
  bool squeeze;
  Activation act;
  int64_t stride;
};

/// torchvision's InvertedResidual: its layers in `block` (block.0, block.1, ...), the input added
/// back when the block keeps its size and channels.
class InvertedResidualImpl : public nn::Module {
public:
  explicit InvertedResidualImpl(const BlockConfig &c) : residual(c.stride == 1 && c.in == c.out) {
    nn::Sequential layers;
    if (c.expanded != c.in)
      layers->push_back(convNormActivation(c.in, c.expanded, 1, 1, 1, c.act));
    layers->push_back(
        convNormActivation(c.expanded, c.expanded, c.kernel, c.stride, c.expanded, c.act));
    if (c.squeeze)
      layers->push_back(SqueezeExcitation(c.expanded, divisible(c.expanded / 4)));
    layers->push_back(convNormActivation(c.expanded, c.out, 1, 1, 1, Activation::None));
    block = register_module("block", layers);
  }
  Tensor forward(const Tensor &x) {
    Tensor y = block(x);
    return residual ? y + x : y;
  }
  nn::Sequential block{nullptr};
  bool residual;
};
AOTC_MODULE(InvertedResidual);

/// torchvision.models.mobilenetv3.MobileNetV3(settings, last_channel, num_classes): features
/// (the stem, the blocks, a 1x1 convolution to 6 x the last block's channels), the spatial mean,
/// and the classifier Linear, hardswish, dropout (identity in inference), Linear.
class MobileNetV3 : public nn::Module {
public:
  MobileNetV3(const std::vector<BlockConfig> &settings, int64_t lastChannel, int64_t numClasses) {
    nn::Sequential layers;
    layers->push_back(convNormActivation(3, settings.front().in, 3, 2, 1, Activation::Hardswish));
    for (const BlockConfig &c : settings)
      layers->push_back(InvertedResidual(c));
    int64_t last = settings.back().out, head = 6 * last;
    layers->push_back(convNormActivation(last, head, 1, 1, 1, Activation::Hardswish));
    features = register_module("features", layers);
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

/// Draws every batch norm's affine parameters and running statistics at random instead of
/// PyTorch's (1, 0, 0, 1), so that a mixed-up statistic changes the output: the 1-d tensors of
/// the features but the squeeze-excitation biases.
inline void randomize_batch_norms(nn::Module &model) {
  for (auto &[name, t] : model.named_state()) {
    if (t.dim() != 1 || !name.starts_with("features.") || name.find(".fc") != std::string::npos)
      continue;
    if (name.ends_with(".running_var") || name.ends_with(".weight"))
      nn::init::uniform_(t, 0.5, 1.5);
    else
      nn::init::uniform_(t, -0.2, 0.2); // running_mean, bias
  }
}

} // namespace mobilenet

#endif
