// What the interpolation ops of Ops.def (aten.upsample_*) share: their mode, how many trailing
// dims they resample and the names of their scale attributes, for the meta functions, the
// interpreter and the lowering alike.
#ifndef AOTC_IR_RESAMPLE_H
#define AOTC_IR_RESAMPLE_H

#include "aotc/ir/Attribute.h"
#include "aotc/ir/OpSchema.h"

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace aotc {

enum class UpsampleMode { Nearest, NearestExact, Linear, Cubic };

struct UpsampleOp {
  UpsampleMode mode;
  unsigned spatial; // 1: [N, C, W]; 2: [N, C, H, W]
  bool hasAlignCorners() const {
    return mode == UpsampleMode::Linear || mode == UpsampleMode::Cubic;
  }
  /// The attribute holding the scale of resampled dim `i` (0 is the first resampled dim).
  llvm::StringRef scaleAttr(unsigned i) const {
    if (spatial == 1)
      return "scales";
    return i == 0 ? "scales_h" : "scales_w";
  }
};

inline std::optional<UpsampleOp> upsampleOp(OpKind kind) {
  switch (kind) {
  case OpKind::UpsampleNearest1d:
    return UpsampleOp{UpsampleMode::Nearest, 1};
  case OpKind::UpsampleNearest2d:
    return UpsampleOp{UpsampleMode::Nearest, 2};
  case OpKind::UpsampleNearestExact1d:
    return UpsampleOp{UpsampleMode::NearestExact, 1};
  case OpKind::UpsampleNearestExact2d:
    return UpsampleOp{UpsampleMode::NearestExact, 2};
  case OpKind::UpsampleLinear1d:
    return UpsampleOp{UpsampleMode::Linear, 1};
  case OpKind::UpsampleBilinear2d:
    return UpsampleOp{UpsampleMode::Linear, 2};
  case OpKind::UpsampleBicubic2d:
    return UpsampleOp{UpsampleMode::Cubic, 2};
  default:
    return std::nullopt;
  }
}

/// A float attribute written either way (`2.0` or `2`); nullopt when absent or symbolic.
inline std::optional<double> numberAttr(const Attribute *a) {
  if (!a)
    return std::nullopt;
  if (a->kind() == Attribute::Kind::Float)
    return a->getFloat();
  if (a->kind() == Attribute::Kind::Int)
    if (auto c = a->getInt().constant())
      return static_cast<double>(*c);
  return std::nullopt;
}

/// The coefficients of torch's bicubic convolution (A = -0.75): taps at -1, 0, 1, 2 of the source
/// index get cubic1(t + 1)... as get_cubic_upsample_coefficients computes them.
template <typename T> void cubicCoefficients(T t, T out[4]) {
  const T a = T(-0.75);
  auto near = [a](T x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  auto far = [a](T x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
  out[0] = far(t + T(1));
  out[1] = near(t);
  out[2] = near(T(1) - t);
  out[3] = far((T(1) - t) + T(1));
}

} // namespace aotc

#endif
