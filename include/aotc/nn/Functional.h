// torch::nn::functional's options-struct forms of the resampling functions:
// `F::interpolate(x, F::InterpolateFuncOptions().scale_factor({2, 2}).mode(aotc::kBilinear))`.
#ifndef AOTC_NN_FUNCTIONAL_H
#define AOTC_NN_FUNCTIONAL_H

#include "aotc/Functional.h"

#include <optional>

namespace aotc::nn::functional {

struct PadFuncOptions {
  PadFuncOptions(IntList pad) : pad_(std::move(pad)) {} // NOLINT: as libtorch
  auto &mode(PadMode v) {
    mode_ = v;
    return *this;
  }
  auto &value(double v) {
    value_ = v;
    return *this;
  }
  IntList pad_;
  PadMode mode_ = kConstant;
  double value_ = 0;
};

inline Tensor pad(const Tensor &x, const PadFuncOptions &options, Loc loc = Loc::current()) {
  return aotc::pad(x, options.pad_, options.mode_, options.value_, loc);
}

struct InterpolateFuncOptions {
  auto &size(SymIntList v) {
    size_ = std::move(v);
    return *this;
  }
  auto &scale_factor(std::vector<double> v) {
    scale_factor_ = std::move(v);
    return *this;
  }
  auto &mode(InterpolateMode v) {
    mode_ = v;
    return *this;
  }
  auto &align_corners(bool v) {
    align_corners_ = v;
    return *this;
  }
  auto &recompute_scale_factor(bool v) {
    recompute_scale_factor_ = v;
    return *this;
  }
  std::optional<SymIntList> size_;
  std::optional<std::vector<double>> scale_factor_;
  InterpolateMode mode_ = kNearest;
  std::optional<bool> align_corners_;
  std::optional<bool> recompute_scale_factor_;
};

inline Tensor interpolate(const Tensor &x, const InterpolateFuncOptions &options = {},
                          Loc loc = Loc::current()) {
  return aotc::interpolate(x, options.size_, options.scale_factor_, options.mode_,
                           options.align_corners_, options.recompute_scale_factor_, loc);
}

} // namespace aotc::nn::functional

#endif
