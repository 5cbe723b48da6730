// The building blocks torchvision's mobile networks share (torchvision.ops.misc), in the aotc DSL
// with torchvision's module names: Conv2dNormActivation and SqueezeExcitation, and
// _make_divisible.
#ifndef AOTC_EXAMPLES_MOBILENET_BLOCKS_H
#define AOTC_EXAMPLES_MOBILENET_BLOCKS_H

#include <aotc/aotc.h>

#include <algorithm>
#include <set>
#include <string>

namespace mobilenet {

using namespace aotc;

/// torchvision's _make_divisible(v, 8): the nearest multiple of 8, at least 8 and not below 90 %
/// of v.
inline int64_t divisible(int64_t v) {
  int64_t out = std::max<int64_t>(8, (v + 4) / 8 * 8);
  return 10 * out < 9 * v ? out + 8 : out;
}

enum class Activation { None, ReLU, Hardswish, SiLU };

inline Tensor activate(Activation act, const Tensor &x) {
  switch (act) {
  case Activation::ReLU:
    return relu(x);
  case Activation::Hardswish:
    return hardswish(x);
  case Activation::SiLU:
    return silu(x);
  case Activation::None:
    break;
  }
  return x;
}

/// Conv2dNormActivation: a Sequential of the convolution (no bias; "same" padding for odd
/// kernels at stride 1), its batch norm and the activation, named .0, .1 and .2 as in torchvision.
inline nn::Sequential convNormActivation(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                                         int64_t groups, Activation act, double eps,
                                         int64_t dilation = 1) {
  int64_t padding = (kernel - 1) / 2 * dilation;
  nn::Sequential s(nn::Conv2d(nn::Conv2dOptions(in, out, kernel)
                                  .stride({stride, stride})
                                  .padding({padding, padding})
                                  .dilation({dilation, dilation})
                                  .groups(groups)
                                  .bias(false)),
                   nn::BatchNorm2d(nn::BatchNorm2dOptions(out).eps(eps)));
  if (act == Activation::ReLU)
    s->push_back(nn::ReLU());
  else if (act == Activation::Hardswish)
    s->push_back(nn::Hardswish());
  else if (act == Activation::SiLU)
    s->push_back(nn::SiLU());
  return s;
}

/// torchvision.ops.SqueezeExcitation: x times a per-channel gate computed from its spatial mean
/// through fc1, the activation, fc2 and a hardsigmoid (MobileNetV3) or sigmoid (EfficientNet).
class SqueezeExcitationImpl : public nn::Module {
public:
  SqueezeExcitationImpl(int64_t channels, int64_t squeezed, Activation act, bool hardGate)
      : act(act), hardGate(hardGate) {
    fc1 = register_module("fc1", nn::Conv2d(nn::Conv2dOptions(channels, squeezed, 1)));
    fc2 = register_module("fc2", nn::Conv2d(nn::Conv2dOptions(squeezed, channels, 1)));
  }
  Tensor forward(const Tensor &x) {
    Tensor scale = fc2(activate(act, fc1(adaptive_avg_pool2d(x, {1, 1}))));
    return x * (hardGate ? hardsigmoid(scale) : sigmoid(scale));
  }
  nn::Conv2d fc1{nullptr}, fc2{nullptr};
  Activation act;
  bool hardGate;
};
AOTC_MODULE(SqueezeExcitation);

/// What torchvision's InvertedResidual (MobileNetV3) and MBConv (EfficientNet) share: their
/// layers in `block` (block.0, block.1, ...), the input added back where the block keeps its
/// size and channels.
class ResidualBlock : public nn::Module {
public:
  Tensor forward(const Tensor &x) {
    Tensor y = block(x);
    return residual ? y + x : y;
  }
  nn::Sequential block{nullptr};
  bool residual = false;

protected:
  void setBlock(nn::Sequential layers, bool addsInput) {
    block = register_module("block", layers);
    residual = addsInput;
  }
};

/// Draws every batch norm's affine parameters and running statistics at random instead of
/// PyTorch's (1, 0, 0, 1), so that a mixed-up statistic changes the output.
inline void randomize_batch_norms(nn::Module &model) {
  std::set<std::string> norms; // the names of the modules with a running_var
  for (auto &[name, t] : model.named_state())
    if (name.ends_with(".running_var"))
      norms.insert(name.substr(0, name.size() - std::string(".running_var").size()));
  for (auto &[name, t] : model.named_state()) {
    size_t dot = name.rfind('.');
    if (t.dim() != 1 || !norms.count(name.substr(0, dot)))
      continue;
    if (name.ends_with(".running_var") || name.ends_with(".weight"))
      nn::init::uniform_(t, 0.5, 1.5);
    else
      nn::init::uniform_(t, -0.2, 0.2); // running_mean, bias
  }
}

} // namespace mobilenet

#endif
