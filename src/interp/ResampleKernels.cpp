// Kernels of the resampling ops: aten.pad (constant, reflect, replicate) and the aten.upsample_*
// family, with torch's CPU conventions for source coordinates (area_pixel_compute_source_index,
// nearest_idx) computed in float for f32 and narrower inputs, in double for f64.
#include "Kernels.h"

#include "aotc/ir/Resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace aotc::interp {

namespace {

KernelResult pad(const KernelContext &ctx) {
  const HostTensor &in = *ctx.tensor("self");
  auto pads = ctx.getInts("pad");
  if (!pads)
    return pads.takeError();
  std::string mode = ctx.has("mode") ? ctx.getStr("mode") : "constant";
  double value = ctx.getFloat("value").value_or(0);
  size_t rank = in.rank();
  if (pads->size() % 2 != 0 || pads->size() / 2 > rank)
    return error("pad {} does not fit input {}", dimsStr(*pads), describe(in.dtype(), in.shape()));
  Dims lo(rank, 0), hi(rank, 0);
  for (size_t i = 0; i < pads->size() / 2; ++i) {
    lo[rank - 1 - i] = (*pads)[2 * i];
    hi[rank - 1 - i] = (*pads)[2 * i + 1];
  }
  Dims outShape(rank);
  for (size_t d = 0; d < rank; ++d) {
    outShape[d] = in.shape()[d] + lo[d] + hi[d];
    if (outShape[d] < 0)
      return error("padding ({}, {}) leaves dim {} of input {} with a negative size", lo[d], hi[d],
                   d, describe(in.dtype(), in.shape()));
    if (mode == "constant" || (lo[d] == 0 && hi[d] == 0))
      continue;
    if (in.shape()[d] < 1 ||
        (mode == "reflect" && (lo[d] >= in.shape()[d] || hi[d] >= in.shape()[d])))
      return error("{} padding ({}, {}) does not fit dim {} of input {}", mode, lo[d], hi[d], d,
                   describe(in.dtype(), in.shape()));
  }
  auto out = newTensor(in.dtype(), outShape);
  if (!out)
    return out.takeError();
  Dims strides = stridesOf(in.shape());
  size_t width = byteSize(in.dtype());
  Dims idx(rank, 0);
  for (int64_t i = 0; i < out->numel(); ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < rank && src >= 0; ++d) {
      int64_t j = idx[d] - lo[d], n = in.shape()[d];
      if (mode == "reflect")
        j = j < 0 ? -j : (j >= n ? 2 * (n - 1) - j : j);
      else if (mode == "replicate")
        j = std::clamp<int64_t>(j, 0, n - 1);
      src = j < 0 || j >= n ? -1 : src + j * strides[d];
    }
    if (src >= 0)
      std::memcpy(out->mutableData() + i * width, in.data() + src * width, width);
    else
      out->setDouble(i, value);
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++idx[d] < outShape[d])
        break;
      idx[d] = 0;
    }
  }
  return one(std::move(*out));
}

/// The input positions and weights one output position of one resampled dim reads.
template <typename T> struct Taps {
  int n = 1;
  int64_t at[4] = {0, 0, 0, 0};
  T w[4] = {1, 0, 0, 0};
};

/// torch's area_pixel_compute_scale.
template <typename T>
T linearScale(int64_t in, int64_t out, bool alignCorners, std::optional<double> scale) {
  if (alignCorners)
    return out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  return scale ? static_cast<T>(1.0 / *scale) : static_cast<T>(in) / static_cast<T>(out);
}

template <typename T>
Taps<T> tapsAt(UpsampleMode mode, int64_t o, int64_t in, int64_t out, bool alignCorners,
               std::optional<double> scale) {
  Taps<T> t;
  switch (mode) {
  case UpsampleMode::Nearest:
  case UpsampleMode::NearestExact: {
    // nearest_idx keeps the sizes that are equal or double exact, whatever the scale says.
    if (mode == UpsampleMode::Nearest && out == in) {
      t.at[0] = o;
    } else if (mode == UpsampleMode::Nearest && out == 2 * in) {
      t.at[0] = o / 2;
    } else {
      float s = scale ? static_cast<float>(1.0 / *scale)
                      : static_cast<float>(in) / static_cast<float>(out);
      float x = mode == UpsampleMode::Nearest ? static_cast<float>(o) * s
                                              : (static_cast<float>(o) + 0.5f) * s;
      t.at[0] = std::min(static_cast<int64_t>(std::floor(x)), in - 1);
    }
    return t;
  }
  case UpsampleMode::Linear: {
    if (out == in) {
      t.at[0] = o;
      return t;
    }
    T ratio = linearScale<T>(in, out, alignCorners, scale);
    T real = alignCorners ? ratio * static_cast<T>(o)
                          : std::max(ratio * (static_cast<T>(o) + T(0.5)) - T(0.5), T(0));
    int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
    T l1 = std::clamp(real - static_cast<T>(i0), T(0), T(1));
    t.n = 2;
    t.at[0] = i0;
    t.at[1] = i0 + (i0 < in - 1 ? 1 : 0);
    t.w[0] = T(1) - l1;
    t.w[1] = l1;
    return t;
  }
  case UpsampleMode::Cubic: {
    T ratio = linearScale<T>(in, out, alignCorners, scale);
    T real =
        alignCorners ? ratio * static_cast<T>(o) : ratio * (static_cast<T>(o) + T(0.5)) - T(0.5);
    int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
    T lambda = std::clamp(real - static_cast<T>(i0), T(0), T(1));
    t.n = 4;
    cubicCoefficients<T>(lambda, t.w);
    for (int j = 0; j < 4; ++j)
      t.at[j] = std::clamp<int64_t>(i0 - 1 + j, 0, in - 1);
    return t;
  }
  }
  return t;
}

template <typename T> KernelResult upsampleAs(const KernelContext &ctx, UpsampleOp op) {
  const HostTensor &in = *ctx.tensor("self");
  auto size = ctx.getInts("output_size");
  if (!size)
    return size.takeError();
  if (in.rank() != op.spatial + 2 || size->size() != op.spatial)
    return error("input {} and output_size {} do not fit a {}-d resampling",
                 describe(in.dtype(), in.shape()), dimsStr(*size), op.spatial);
  bool alignCorners = op.hasAlignCorners() && ctx.getBool("align_corners");
  // Rows are a size-1 dim of weight 1 for the 1-d ops.
  int64_t ih = op.spatial == 2 ? in.shape()[2] : 1, iw = in.shape().back();
  int64_t oh = op.spatial == 2 ? (*size)[0] : 1, ow = size->back();
  if (ih < 1 || iw < 1 || oh < 1 || ow < 1)
    return error("input {} and output_size {} must not be empty", describe(in.dtype(), in.shape()),
                 dimsStr(*size));
  std::vector<Taps<T>> rows(oh), cols(ow);
  for (int64_t o = 0; o < oh; ++o)
    if (op.spatial == 2)
      rows[o] = tapsAt<T>(op.mode, o, ih, oh, alignCorners, ctx.getFloat(op.scaleAttr(0)));
  for (int64_t o = 0; o < ow; ++o)
    cols[o] =
        tapsAt<T>(op.mode, o, iw, ow, alignCorners, ctx.getFloat(op.scaleAttr(op.spatial - 1)));
  Dims outShape(in.shape().begin(), in.shape().begin() + 2);
  if (op.spatial == 2)
    outShape.push_back(oh);
  outShape.push_back(ow);
  int64_t planes = in.shape()[0] * in.shape()[1];
  bool nearest = op.mode == UpsampleMode::Nearest || op.mode == UpsampleMode::NearestExact;
  if (nearest) {
    // A copy of the chosen element, exact for every dtype.
    auto out = newTensor(in.dtype(), outShape);
    if (!out)
      return out.takeError();
    size_t width = byteSize(in.dtype());
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x)
          std::memcpy(out->mutableData() + ((p * oh + y) * ow + x) * width,
                      in.data() + ((p * ih + rows[y].at[0]) * iw + cols[x].at[0]) * width, width);
    return one(std::move(*out));
  }
  // torch's order: the taps along the width first, then those rows weighed along the height.
  std::vector<double> out(planes * oh * ow);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x) {
        const Taps<T> &r = rows[y], &c = cols[x];
        T acc = 0;
        for (int j = 0; j < r.n; ++j) {
          T row = 0;
          for (int k = 0; k < c.n; ++k)
            row += static_cast<T>(in.getDouble((p * ih + r.at[j]) * iw + c.at[k])) * c.w[k];
          acc += row * r.w[j];
        }
        out[(p * oh + y) * ow + x] = static_cast<double>(acc);
      }
  return one(fromDoubles(in.dtype(), outShape, out));
}

} // namespace

KernelResult runResample(const KernelContext &ctx) {
  if (ctx.kind() == OpKind::Pad)
    return pad(ctx);
  std::optional<UpsampleOp> op = upsampleOp(ctx.kind());
  if (!op)
    return error("no resampling kernel for this op");
  if (ctx.tensor("self")->dtype() == DType::F64)
    return upsampleAs<double>(ctx, *op);
  return upsampleAs<float>(ctx, *op);
}

} // namespace aotc::interp
