// Deterministic random tensors for `aotc run` inputs and `aotc archive` weights; the mapping
// from std::mt19937_64 draws to values is written out so that it does not depend on the standard
// library's distributions.
#include "Kernels.h"

#include <cmath>

namespace aotc {

namespace {
// A uniform double in (0, 1) from the top 53 bits of a draw; never 0, so its log is finite.
double uniformOpen(std::mt19937_64 &rng) {
  return (static_cast<double>(rng() >> 11) + 0.5) * 0x1p-53;
}
} // namespace

HostTensor randomTensor(DType dtype, llvm::ArrayRef<int64_t> shape, std::mt19937_64 &rng,
                        int64_t intValues) {
  HostTensor t(dtype, shape);
  int64_t n = t.numel();
  if (isFloating(dtype)) {
    for (int64_t i = 0; i < n; i += 2) {
      double u1 = uniformOpen(rng), u2 = uniformOpen(rng);
      double radius = std::sqrt(-2 * std::log(u1)), angle = 2 * M_PI * u2;
      t.setDouble(i, roundToFloat(dtype, radius * std::cos(angle)));
      if (i + 1 < n)
        t.setDouble(i + 1, roundToFloat(dtype, radius * std::sin(angle)));
    }
  } else if (dtype == DType::Bool) {
    for (int64_t i = 0; i < n; ++i)
      t.setInt(i, static_cast<int64_t>(rng() >> 63));
  } else {
    for (int64_t i = 0; i < n; ++i)
      t.setInt(i, static_cast<int64_t>(rng() % static_cast<uint64_t>(intValues)));
  }
  return t;
}

} // namespace aotc
