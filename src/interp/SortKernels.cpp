// Kernels of sort and topk: a stable sort of each row along the dim, NaN counted as the largest
// value (torch's order), values copied and positions returned as i64.
#include "Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace aotc::interp {

namespace {

/// For each row along `dim`, the positions of its first `k` elements in sorted order.
template <typename T>
std::vector<int64_t> sortedPositions(const std::vector<T> &values, int64_t n, int64_t inner,
                                     int64_t outer, int64_t k, bool descending) {
  // x before y when its key is strictly greater (descending) or smaller; NaN is the largest key.
  auto greater = [](T x, T y) {
    if constexpr (std::is_floating_point_v<T>)
      return (std::isnan(x) && !std::isnan(y)) || x > y;
    else
      return x > y;
  };
  std::vector<int64_t> out(outer * inner * k);
  std::vector<int64_t> row(n);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t i) { return values[(o * n + i) * inner + j]; };
      std::iota(row.begin(), row.end(), 0);
      std::stable_sort(row.begin(), row.end(), [&](int64_t a, int64_t b) {
        return descending ? greater(at(a), at(b)) : greater(at(b), at(a));
      });
      for (int64_t i = 0; i < k; ++i)
        out[(o * k + i) * inner + j] = row[i];
    }
  return out;
}

KernelResult sortOrTopk(const KernelContext &ctx) {
  const HostTensor &self = *ctx.tensor("self");
  auto dim = ctx.getInt("dim");
  if (!dim)
    return dim.takeError();
  auto d = normalizeDim(*dim, self.rank());
  if (!d)
    return d.takeError();
  bool topk = ctx.kind() == OpKind::Topk;
  bool descending = topk ? ctx.getBool("largest") : ctx.getBool("descending");
  int64_t n = self.rank() ? self.shape()[*d] : 1;
  int64_t k = n;
  if (topk) {
    auto kk = ctx.getInt("k");
    if (!kk)
      return kk.takeError();
    if (*kk < 0 || *kk > n)
      return error("selected index k = {} is out of range for dim {} of size {}", *kk, *dim, n);
    k = *kk;
  }
  int64_t inner = self.rank() ? stridesOf(self.shape())[*d] : 1;
  int64_t outer = n * inner != 0 ? self.numel() / (n * inner) : 0;
  std::vector<int64_t> positions =
      isFloating(self.dtype())
          ? sortedPositions(readDoubles(self, DType::F64), n, inner, outer, k, descending)
          : sortedPositions(readInts(self, DType::I64), n, inner, outer, k, descending);
  Dims shape(self.shape().begin(), self.shape().end());
  if (self.rank())
    shape[*d] = k;
  auto values = newTensor(self.dtype(), shape);
  if (!values)
    return values.takeError();
  auto indices = fromInts(DType::I64, shape, positions);
  if (!indices)
    return indices.takeError();
  size_t bytes = byteSize(self.dtype());
  for (size_t p = 0; p < positions.size(); ++p) {
    int64_t o = p / (k * inner), j = p % inner;
    std::memcpy(values->mutableData() + p * bytes,
                self.data() + ((o * n + positions[p]) * inner + j) * bytes, bytes);
  }
  llvm::SmallVector<HostTensor, 1> out;
  out.push_back(std::move(*values));
  out.push_back(std::move(*indices));
  return out;
}

} // namespace

KernelResult runSort(const KernelContext &ctx) {
  switch (ctx.kind()) {
  case OpKind::Sort:
  case OpKind::Topk:
    return sortOrTopk(ctx);
  default:
    return error("no sort kernel for this op");
  }
}

} // namespace aotc::interp
