// torchvision's EfficientNet (Tan and Le, 2019; the B0..B7 family, v1) in the aotc DSL, with the
// same module tree, so that parameter and buffer names equal torchvision's state_dict() keys:
// stages of MBConv blocks (a 1x1 expansion, a depthwise convolution, squeeze-and-excitation with
// SiLU and a sigmoid gate, a 1x1 projection), SiLU, batch norms with eps 1e-5. Stochastic depth
// is the identity in inference.
#ifndef AOTC_EXAMPLES_EFFICIENTNET_H
#define AOTC_EXAMPLES_EFFICIENTNET_H

#include "blocks.h"

#include <vector>

namespace mobilenet {

/// One row of torchvision's MBConvConfig list: a stage of `layers` blocks, the first with the
/// stride and the stage's input channels.
struct StageConfig {
  int64_t expandRatio, kernel, stride, in, out, layers;
};

/// torchvision's MBConv. The squeeze width is a quarter of the block's input channels.
class MBConvImpl : public ResidualBlock {
public:
  MBConvImpl(int64_t expandRatio, int64_t kernel, int64_t stride, int64_t in, int64_t out) {
    constexpr double eps = 1e-5;
    constexpr Activation act = Activation::SiLU;
    int64_t expanded = divisible(in * expandRatio);
    nn::Sequential layers;
    if (expanded != in)
      layers->push_back(convNormActivation(in, expanded, 1, 1, 1, act, eps));
    layers->push_back(convNormActivation(expanded, expanded, kernel, stride, expanded, act, eps));
    layers->push_back(SqueezeExcitation(expanded, std::max<int64_t>(1, in / 4), act, false));
    layers->push_back(convNormActivation(expanded, out, 1, 1, 1, Activation::None, eps));
    setBlock(layers, stride == 1 && in == out);
  }
};
AOTC_MODULE(MBConv);

/// torchvision.models.efficientnet.EfficientNet(settings, dropout, last_channel=None): features
/// (the stem, one Sequential of MBConv blocks per stage, a 1x1 convolution to 4 x the last
/// stage's channels), the spatial mean, and the classifier dropout (identity in inference),
/// Linear.
class EfficientNet : public nn::Module {
public:
  EfficientNet(const std::vector<StageConfig> &stages, int64_t numClasses) {
    constexpr double eps = 1e-5;
    nn::Sequential layers;
    layers->push_back(convNormActivation(3, stages.front().in, 3, 2, 1, Activation::SiLU, eps));
    for (const StageConfig &s : stages) {
      nn::Sequential stage;
      for (int64_t i = 0; i < s.layers; ++i)
        stage->push_back(
            MBConv(s.expandRatio, s.kernel, i == 0 ? s.stride : 1, i == 0 ? s.in : s.out, s.out));
      layers->push_back(stage);
    }
    int64_t last = stages.back().out, head = 4 * last;
    layers->push_back(convNormActivation(last, head, 1, 1, 1, Activation::SiLU, eps));
    features = register_module("features", layers);
    classifier = register_module("classifier",
                                 nn::Sequential(nn::Dropout(0.2), nn::Linear(head, numClasses)));
  }
  Tensor forward(Tensor x) {
    x = features(x);
    return classifier(adaptive_avg_pool2d(x, {1, 1}).flatten(1));
  }
  nn::Sequential features{nullptr}, classifier{nullptr};
};

/// efficientnet_b0's stages (width and depth multipliers 1).
inline std::vector<StageConfig> b0Stages() {
  return {{1, 3, 1, 32, 16, 1},  {6, 3, 2, 16, 24, 2},  {6, 5, 2, 24, 40, 2},
          {6, 3, 2, 40, 80, 3},  {6, 5, 1, 80, 112, 3}, {6, 5, 2, 112, 192, 4},
          {6, 3, 1, 192, 320, 1}};
}

} // namespace mobilenet

#endif
