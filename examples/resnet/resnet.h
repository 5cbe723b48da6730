// torchvision's ResNet (BasicBlock for ResNet-18/34, Bottleneck "v1.5" for ResNet-50/101) in the
// aotc DSL, with the same module tree, so parameter and buffer names equal torchvision's
// state_dict() keys and its weights load by name, strictly.
#ifndef AOTC_EXAMPLES_RESNET_H
#define AOTC_EXAMPLES_RESNET_H

#include <aotc/aotc.h>

#include <array>

namespace resnet {

using namespace aotc;

inline nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel)
                        .stride({stride, stride})
                        .padding({kernel / 2, kernel / 2})
                        .bias(false));
}

/// `downsample`: the 1x1 projection of the shortcut, a Sequential so that its names are
/// downsample.0 (conv) and downsample.1 (batch norm) as in torchvision.
inline nn::Sequential projection(int64_t in, int64_t out, int64_t stride) {
  return nn::Sequential(conv(in, out, 1, stride), nn::BatchNorm2d(out));
}

class BasicBlockImpl : public nn::Module {
public:
  static constexpr int64_t expansion = 1;
  BasicBlockImpl(int64_t in, int64_t planes, int64_t stride) {
    conv1 = register_module("conv1", conv(in, planes, 3, stride));
    bn1 = register_module("bn1", nn::BatchNorm2d(planes));
    conv2 = register_module("conv2", conv(planes, planes, 3, 1));
    bn2 = register_module("bn2", nn::BatchNorm2d(planes));
    if (stride != 1 || in != planes * expansion)
      downsample = register_module("downsample", projection(in, planes * expansion, stride));
  }
  Tensor forward(const Tensor &x) {
    Tensor y = relu(bn1(conv1(x)));
    y = bn2(conv2(y));
    return relu(y + (downsample.is_empty() ? x : downsample(x)));
  }
  nn::Conv2d conv1{nullptr}, conv2{nullptr};
  nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  nn::Sequential downsample{nullptr};
};
AOTC_MODULE(BasicBlock);

/// torchvision's Bottleneck: the stride sits on the 3x3 convolution (ResNet v1.5).
class BottleneckImpl : public nn::Module {
public:
  static constexpr int64_t expansion = 4;
  BottleneckImpl(int64_t in, int64_t planes, int64_t stride) {
    conv1 = register_module("conv1", conv(in, planes, 1, 1));
    bn1 = register_module("bn1", nn::BatchNorm2d(planes));
    conv2 = register_module("conv2", conv(planes, planes, 3, stride));
    bn2 = register_module("bn2", nn::BatchNorm2d(planes));
    conv3 = register_module("conv3", conv(planes, planes * expansion, 1, 1));
    bn3 = register_module("bn3", nn::BatchNorm2d(planes * expansion));
    if (stride != 1 || in != planes * expansion)
      downsample = register_module("downsample", projection(in, planes * expansion, stride));
  }
  Tensor forward(const Tensor &x) {
    Tensor y = relu(bn1(conv1(x)));
    y = relu(bn2(conv2(y)));
    y = bn3(conv3(y));
    return relu(y + (downsample.is_empty() ? x : downsample(x)));
  }
  nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  nn::Sequential downsample{nullptr};
};
AOTC_MODULE(Bottleneck);

/// torchvision.models.resnet.ResNet(Block, layers, num_classes), Block being BasicBlockImpl or
/// BottleneckImpl.
template <typename Block> class ResNet : public nn::Module {
public:
  ResNet(std::array<int64_t, 4> layers, int64_t num_classes) {
    conv1 = register_module("conv1", conv(3, 64, 7, 2));
    bn1 = register_module("bn1", nn::BatchNorm2d(64));
    int64_t in = 64;
    for (int64_t i = 0; i < 4; ++i) {
      int64_t planes = int64_t{64} << i;
      nn::Sequential layer;
      for (int64_t b = 0; b < layers[i]; ++b) {
        layer->push_back(nn::ModuleHolder<Block>(in, planes, b == 0 && i > 0 ? 2 : 1));
        in = planes * Block::expansion;
      }
      stages[i] = register_module("layer" + std::to_string(i + 1), layer);
    }
    fc = register_module("fc", nn::Linear(in, num_classes));
  }

  Tensor forward(Tensor x) {
    x = relu(bn1(conv1(x)));
    x = max_pool2d(x, {3, 3}, {2, 2}, {1, 1});
    for (nn::Sequential &layer : stages)
      x = layer(x);
    return fc(adaptive_avg_pool2d(x, {1, 1}).flatten(1));
  }

  nn::Conv2d conv1{nullptr};
  nn::BatchNorm2d bn1{nullptr};
  std::array<nn::Sequential, 4> stages{nn::Sequential{nullptr}, nn::Sequential{nullptr},
                                       nn::Sequential{nullptr}, nn::Sequential{nullptr}};
  nn::Linear fc{nullptr};
};

/// Draws every batch norm's affine parameters and running statistics at random instead of
/// PyTorch's (1, 0, 0, 1), with which batch norm is close to the identity: tests need weights in
/// which a mixed-up statistic changes the output. All 1-d tensors but fc.bias belong to batch
/// norms (num_batches_tracked is 0-d and unused in inference).
inline void randomize_batch_norms(nn::Module &model) {
  for (auto &[name, t] : model.named_state()) {
    if (t.dim() != 1 || name.starts_with("fc."))
      continue;
    if (name.ends_with(".running_var") || name.ends_with(".weight"))
      nn::init::uniform_(t, 0.5, 1.5);
    else
      nn::init::uniform_(t, -0.2, 0.2); // running_mean, bias
  }
}

} // namespace resnet

#endif
