// torchvision's LRASPP segmentation model (Howard et al., 2019: "Lite R-ASPP") on a dilated
// MobileNetV3-Large backbone, in the aotc DSL with torchvision's names: the backbone's features
// (backbone.0 ... backbone.16), and a head that gates the last features (stride 16) by their
// channel means, upsamples them bilinearly to the stride-8 features' size, and adds the two
// classifiers; the result is upsampled bilinearly to the input's size.
#ifndef AOTC_EXAMPLES_LRASPP_H
#define AOTC_EXAMPLES_LRASPP_H

#include "mobilenet_v3.h"

#include <functional>

namespace mobilenet {

/// torchvision's LRASPPHead: cbr (1x1 convolution, batch norm, ReLU) on the high features, scale
/// (their spatial mean, a 1x1 convolution, a sigmoid), and a 1x1 classifier of each.
class LRASPPHeadImpl : public nn::Module {
public:
  LRASPPHeadImpl(int64_t lowChannels, int64_t highChannels, int64_t numClasses, int64_t inter) {
    cbr = register_module(
        "cbr", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(highChannels, inter, 1).bias(false)),
                              nn::BatchNorm2d(inter), nn::ReLU()));
    scale = register_module(
        "scale", nn::Sequential(nn::AdaptiveAvgPool2d(1),
                                nn::Conv2d(nn::Conv2dOptions(highChannels, inter, 1).bias(false)),
                                nn::Sigmoid()));
    low_classifier = register_module("low_classifier",
                                     nn::Conv2d(nn::Conv2dOptions(lowChannels, numClasses, 1)));
    high_classifier =
        register_module("high_classifier", nn::Conv2d(nn::Conv2dOptions(inter, numClasses, 1)));
  }
  Tensor forward(const Tensor &low, const Tensor &high) {
    Tensor x = cbr(high) * scale(high);
    SymIntList size = low.sizes();
    x = interpolate(x, SymIntList{size[2], size[3]}, std::nullopt, kBilinear, false);
    return low_classifier(low) + high_classifier(x);
  }
  nn::Sequential cbr{nullptr}, scale{nullptr};
  nn::Conv2d low_classifier{nullptr}, high_classifier{nullptr};
};
AOTC_MODULE(LRASPPHead);

/// torchvision.models.segmentation.lraspp_mobilenet_v3_large(num_classes): the "out" logits at
/// the input's size. The low features are those of the block that last halves the size before
/// stride 8 (backbone.4, 40 channels), the high ones the backbone's last (960 channels).
class LRASPP : public nn::Module {
public:
  explicit LRASPP(int64_t numClasses) {
    std::vector<BlockConfig> settings = largeSettings(true);
    backbone = register_module("backbone", nn::ModuleList());
    forEachFeature(settings, [&](auto holder) {
      backbone->push_back(holder);
      stages.push_back([holder](const Tensor &x) { return holder(x); });
    });
    classifier =
        register_module("classifier", LRASPPHead(40, 6 * settings.back().out, numClasses, 128));
  }
  Tensor forward(const Tensor &x) {
    Tensor y = x, low;
    for (size_t i = 0; i < stages.size(); ++i) {
      y = stages[i](y);
      if (i == LowStage)
        low = y;
    }
    SymIntList size = x.sizes();
    return interpolate(classifier(low, y), SymIntList{size[2], size[3]}, std::nullopt, kBilinear,
                       false);
  }
  static constexpr size_t LowStage = 4;
  nn::ModuleList backbone{nullptr};
  LRASPPHead classifier{nullptr};
  std::vector<std::function<Tensor(const Tensor &)>> stages;
};

} // namespace mobilenet

#endif
