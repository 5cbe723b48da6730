// Kernels of pooling (max_pool2d, avg_pool2d, adaptive_avg_pool2d), normalization at inference
// (batch_norm, layer_norm, group_norm) and scaled_dot_product_attention, computed in double with
// torch's window and statistics conventions (biased variance).
#include "Kernels.h"

#include "aotc/tensor/ReferenceMath.h"

#include <cmath>
#include <limits>

namespace aotc::interp {

namespace {

constexpr double Inf = std::numeric_limits<double>::infinity();
constexpr double NaN = std::numeric_limits<double>::quiet_NaN();

llvm::Error requireFloating(DType r) {
  if (isFloating(r))
    return llvm::Error::success();
  return error("needs floating-point tensors, got {}", toString(r).str());
}

int64_t floorDiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

/// The planes and spatial size of a [C, H, W] or [N, C, H, W] pooling input.
struct Planes {
  Dims lead; // the dims before H, W
  int64_t count = 0, h = 0, w = 0;
};

llvm::Expected<Planes> planesOf(const HostTensor &x) {
  if (x.rank() != 3 && x.rank() != 4)
    return error("input must be 3-d or 4-d, got {}", describe(x.dtype(), x.shape()));
  Planes p;
  p.lead.assign(x.shape().begin(), x.shape().end() - 2);
  p.count = numelOf(p.lead);
  p.h = x.shape()[x.rank() - 2];
  p.w = x.shape().back();
  return p;
}

llvm::Expected<Dims> pairAttr(const KernelContext &ctx, llvm::StringRef name, Dims dflt) {
  auto v = ctx.getInts(name);
  if (!v)
    return v.takeError();
  if (v->empty())
    return dflt;
  if (v->size() == 1)
    return Dims(2, (*v)[0]);
  if (v->size() != 2)
    return error("{} needs 2 values, got {}", name.str(), v->size());
  return *v;
}

// torch's pooling_output_shape: in ceil mode a last window that would start in the right padding
// is dropped.
int64_t poolOut(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil) {
  int64_t out = floorDiv(in + 2 * pad - dil * (k - 1) - 1 + (ceil ? stride - 1 : 0), stride) + 1;
  if (ceil && (out - 1) * stride >= in + pad)
    --out;
  return out;
}

KernelResult pool2d(const KernelContext &ctx, bool isMax) {
  const HostTensor &x = *ctx.tensor("self");
  DType r = ctx.resultDType();
  if (auto err = requireFloating(r))
    return err;
  auto planes = planesOf(x);
  if (!planes)
    return planes.takeError();
  auto kernel = pairAttr(ctx, "kernel_size", {});
  if (!kernel)
    return kernel.takeError();
  if (kernel->size() != 2)
    return error("kernel_size needs 2 values");
  auto stride = pairAttr(ctx, "stride", *kernel);
  auto padding = pairAttr(ctx, "padding", {0, 0});
  auto dilation = isMax ? pairAttr(ctx, "dilation", {1, 1}) : llvm::Expected<Dims>(Dims{1, 1});
  if (!stride || !padding || !dilation)
    return llvm::joinErrors(llvm::joinErrors(stride.takeError(), padding.takeError()),
                            dilation.takeError());
  Dims k = *kernel, s = *stride, p = *padding, d = *dilation;
  bool ceil = ctx.getBool("ceil_mode");
  int64_t in[2] = {planes->h, planes->w}, out[2];
  for (int i = 0; i < 2; ++i) {
    if (k[i] < 1 || s[i] < 1 || d[i] < 1 || p[i] < 0 || 2 * p[i] > d[i] * (k[i] - 1) + 1)
      return error("kernel_size, stride and dilation must be positive and padding at most half "
                   "of the kernel");
    out[i] = poolOut(in[i], k[i], p[i], s[i], d[i], ceil);
    if (out[i] < 1)
      return error("the window ({}) is larger than the padded input ({})", k[i], in[i] + 2 * p[i]);
  }
  std::optional<int64_t> divisor;
  if (!isMax) {
    auto dv = ctx.getOptionalInt("divisor_override");
    if (!dv)
      return dv.takeError();
    divisor = *dv;
    if (divisor && *divisor <= 0)
      return error("divisor_override must be positive, got {}", *divisor);
  }
  bool countPad = ctx.getBool("count_include_pad");
  std::vector<double> xv = readDoubles(x, r), ov(planes->count * out[0] * out[1]);
  int64_t ih = in[0], iw = in[1];
  for (int64_t c = 0; c < planes->count; ++c) {
    const double *plane = xv.data() + c * ih * iw;
    for (int64_t oy = 0; oy < out[0]; ++oy)
      for (int64_t ox = 0; ox < out[1]; ++ox) {
        double v;
        if (isMax) {
          // NaN wins, as in torch's kernel (`val > max || isnan(val)`).
          v = -Inf;
          for (int64_t u = 0; u < k[0]; ++u)
            for (int64_t t = 0; t < k[1]; ++t) {
              int64_t y = oy * s[0] - p[0] + u * d[0], z = ox * s[1] - p[1] + t * d[1];
              if (y < 0 || y >= ih || z < 0 || z >= iw)
                continue;
              double e = plane[y * iw + z];
              if (e > v || std::isnan(e))
                v = e;
              if (std::isnan(v))
                break;
            }
        } else {
          // torch's avg_pool2d: the window clipped to the padded input decides the divisor
          // with count_include_pad, the window clipped to the input otherwise.
          int64_t y0 = oy * s[0] - p[0], z0 = ox * s[1] - p[1];
          int64_t y1 = std::min(y0 + k[0], ih + p[0]), z1 = std::min(z0 + k[1], iw + p[1]);
          int64_t poolSize = (y1 - y0) * (z1 - z0);
          y0 = std::max<int64_t>(y0, 0), z0 = std::max<int64_t>(z0, 0);
          y1 = std::min(y1, ih), z1 = std::min(z1, iw);
          if (y0 >= y1 || z0 >= z1) {
            v = 0;
          } else {
            double sum = 0;
            for (int64_t y = y0; y < y1; ++y)
              for (int64_t z = z0; z < z1; ++z)
                sum += plane[y * iw + z];
            int64_t div = divisor ? *divisor : countPad ? poolSize : (y1 - y0) * (z1 - z0);
            v = sum / static_cast<double>(div);
          }
        }
        ov[(c * out[0] + oy) * out[1] + ox] = v;
      }
  }
  Dims shape = planes->lead;
  shape.append({out[0], out[1]});
  return one(fromDoubles(r, shape, ov));
}

// Window i of n over `in` cells: [floor(i * in / n), ceil((i + 1) * in / n)).
KernelResult adaptiveAvgPool2d(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("self");
  DType r = ctx.resultDType();
  if (auto err = requireFloating(r))
    return err;
  auto planes = planesOf(x);
  auto size = ctx.getInts("output_size");
  if (!planes || !size)
    return llvm::joinErrors(planes.takeError(), size.takeError());
  if (size->size() != 2 || (*size)[0] < 1 || (*size)[1] < 1)
    return error("output_size must be 2 positive values, got {}", dimsStr(*size));
  if (planes->h == 0 || planes->w == 0)
    return error("the spatial dims of {} must not be empty", describe(x.dtype(), x.shape()));
  int64_t oh = (*size)[0], ow = (*size)[1], ih = planes->h, iw = planes->w;
  std::vector<double> xv = readDoubles(x, r), ov(planes->count * oh * ow);
  for (int64_t c = 0; c < planes->count; ++c)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        int64_t y0 = oy * ih / oh, y1 = ((oy + 1) * ih + oh - 1) / oh;
        int64_t z0 = ox * iw / ow, z1 = ((ox + 1) * iw + ow - 1) / ow;
        double sum = 0;
        for (int64_t y = y0; y < y1; ++y)
          for (int64_t z = z0; z < z1; ++z)
            sum += xv[(c * ih + y) * iw + z];
        ov[(c * oh + oy) * ow + ox] = sum / static_cast<double>((y1 - y0) * (z1 - z0));
      }
  Dims shape = planes->lead;
  shape.append({oh, ow});
  return one(fromDoubles(r, shape, ov));
}

// An optional per-channel (or per-feature) tensor of `n` elements, or `dflt` everywhere.
llvm::Expected<std::vector<double>> perChannel(const KernelContext &ctx, llvm::StringRef name,
                                               llvm::ArrayRef<int64_t> shape, double dflt) {
  const HostTensor *t = ctx.tensor(name);
  if (!t)
    return std::vector<double>(numelOf(shape), dflt);
  if (t->shape() != shape)
    return error("{} must have shape {}, got {}", name.str(), dimsStr(shape),
                 describe(t->dtype(), t->shape()));
  return readDoubles(*t, DType::F64);
}

KernelResult batchNorm(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("input");
  DType r = ctx.resultDType();
  if (auto err = requireFloating(r))
    return err;
  if (ctx.getBool("training"))
    return error("training mode is not supported; aotc runs inference graphs");
  if (x.rank() < 2)
    return error("input must have at least 2 dims, got {}", describe(x.dtype(), x.shape()));
  if (!ctx.tensor("running_mean") || !ctx.tensor("running_var"))
    return error("running_mean and running_var are required at inference");
  Dims c = {x.shape()[1]};
  auto w = perChannel(ctx, "weight", c, 1), b = perChannel(ctx, "bias", c, 0);
  auto mean = perChannel(ctx, "running_mean", c, 0), var = perChannel(ctx, "running_var", c, 1);
  if (!w || !b || !mean || !var)
    return llvm::joinErrors(llvm::joinErrors(w.takeError(), b.takeError()),
                            llvm::joinErrors(mean.takeError(), var.takeError()));
  double eps = ctx.getFloat("eps").value_or(1e-5);
  std::vector<double> v = readDoubles(x, r);
  int64_t inner = x.numel() ? x.numel() / (x.shape()[0] * c[0]) : 0;
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t ch = (static_cast<int64_t>(i) / inner) % c[0];
    v[i] = (v[i] - (*mean)[ch]) / std::sqrt((*var)[ch] + eps) * (*w)[ch] + (*b)[ch];
  }
  return one(fromDoubles(r, x.shape(), v));
}

// Normalizes consecutive blocks of `block` elements; `affine(i, y)` applies the parameters of
// element i of a block to its normalized value y.
template <typename F>
void normalizeBlocks(std::vector<double> &v, int64_t block, double eps, F affine) {
  if (block == 0)
    return;
  for (size_t start = 0; start < v.size(); start += block) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < block; ++i)
      mean += v[start + i];
    mean /= static_cast<double>(block);
    for (int64_t i = 0; i < block; ++i)
      var += (v[start + i] - mean) * (v[start + i] - mean);
    var /= static_cast<double>(block);
    double rstd = 1 / std::sqrt(var + eps);
    for (int64_t i = 0; i < block; ++i)
      v[start + i] = affine(i, (v[start + i] - mean) * rstd);
  }
}

KernelResult layerNorm(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("input");
  DType r = ctx.resultDType();
  if (auto err = requireFloating(r))
    return err;
  auto normalized = ctx.getInts("normalized_shape");
  if (!normalized)
    return normalized.takeError();
  if (normalized->empty() || normalized->size() > x.rank() ||
      x.shape().take_back(normalized->size()) != llvm::ArrayRef<int64_t>(*normalized))
    return error("normalized_shape {} must be the trailing dims of {}", dimsStr(*normalized),
                 describe(x.dtype(), x.shape()));
  auto w = perChannel(ctx, "weight", *normalized, 1), b = perChannel(ctx, "bias", *normalized, 0);
  if (!w || !b)
    return llvm::joinErrors(w.takeError(), b.takeError());
  std::vector<double> v = readDoubles(x, r);
  normalizeBlocks(v, numelOf(*normalized), ctx.getFloat("eps").value_or(1e-5),
                  [&](int64_t i, double y) { return y * (*w)[i] + (*b)[i]; });
  return one(fromDoubles(r, x.shape(), v));
}

// x / sqrt(mean(x^2) + eps) * weight over the trailing dims, in double; without eps, the
// dtype's machine epsilon (torch.finfo(dtype).eps), as torch's rms_norm.
KernelResult rmsNorm(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("input");
  DType r = ctx.resultDType();
  if (auto err = requireFloating(r))
    return err;
  auto normalized = ctx.getInts("normalized_shape");
  if (!normalized)
    return normalized.takeError();
  if (normalized->empty() || normalized->size() > x.rank() ||
      x.shape().take_back(normalized->size()) != llvm::ArrayRef<int64_t>(*normalized))
    return error("normalized_shape {} must be the trailing dims of {}", dimsStr(*normalized),
                 describe(x.dtype(), x.shape()));
  auto w = perChannel(ctx, "weight", *normalized, 1);
  if (!w)
    return w.takeError();
  double eps = ctx.getFloat("eps").value_or(machineEpsilon(r));
  std::vector<double> v = readDoubles(x, r);
  int64_t block = numelOf(*normalized);
  for (int64_t start = 0; block > 0 && start < static_cast<int64_t>(v.size()); start += block) {
    double sq = 0;
    for (int64_t i = 0; i < block; ++i)
      sq += v[start + i] * v[start + i];
    double scale = 1 / std::sqrt(sq / static_cast<double>(block) + eps);
    for (int64_t i = 0; i < block; ++i)
      v[start + i] = v[start + i] * scale * (*w)[i];
  }
  return one(fromDoubles(r, x.shape(), v));
}

KernelResult groupNorm(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("input");
  DType r = ctx.resultDType();
  if (auto err = requireFloating(r))
    return err;
  auto groups = ctx.getInt("num_groups");
  if (!groups)
    return groups.takeError();
  if (x.rank() < 2)
    return error("input must have at least 2 dims, got {}", describe(x.dtype(), x.shape()));
  int64_t c = x.shape()[1];
  if (*groups < 1 || c % *groups != 0)
    return error("channels {} must be divisible by num_groups {}", c, *groups);
  auto w = perChannel(ctx, "weight", {c}, 1), b = perChannel(ctx, "bias", {c}, 0);
  if (!w || !b)
    return llvm::joinErrors(w.takeError(), b.takeError());
  int64_t spatial = numelOf(x.shape().drop_front(2));
  int64_t perGroup = c / *groups;
  std::vector<double> v = readDoubles(x, r);
  // A block is one group of one sample: `perGroup` channels of `spatial` elements each.
  normalizeBlocks(v, perGroup * spatial, ctx.getFloat("eps").value_or(1e-5),
                  [](int64_t, double y) { return y; });
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t ch = (static_cast<int64_t>(i) / spatial) % c;
    v[i] = v[i] * (*w)[ch] + (*b)[ch];
  }
  return one(fromDoubles(r, x.shape(), v));
}

// softmax(q k^T * scale + mask) v over the last two dims; rows whose every score is -inf (all
// masked) give zeros, as torch's math backend does (_safe_softmax).
KernelResult sdpa(const KernelContext &ctx) {
  const HostTensor &q = *ctx.tensor("query"), &k = *ctx.tensor("key"), &v = *ctx.tensor("value");
  const HostTensor *mask = ctx.tensor("attn_mask");
  DType r = ctx.resultDType();
  if (auto err = requireFloating(r))
    return err;
  size_t rank = q.rank();
  if (rank < 2 || k.rank() != rank || v.rank() != rank)
    return error("query, key and value must have the same rank >= 2");
  int64_t L = q.shape()[rank - 2], E = q.shape()[rank - 1];
  int64_t S = k.shape()[rank - 2], Ev = v.shape()[rank - 1];
  if (k.shape()[rank - 1] != E || v.shape()[rank - 2] != S)
    return error("query {}, key {} and value {} do not fit together", dimsStr(q.shape()),
                 dimsStr(k.shape()), dimsStr(v.shape()));
  if (ctx.getFloat("dropout_p").value_or(0) != 0)
    return error("dropout_p must be 0 at inference");
  llvm::ArrayRef<int64_t> qBatch = q.shape().drop_back(2), kBatch = k.shape().drop_back(2);
  bool gqa = ctx.getBool("enable_gqa") && rank >= 3;
  int64_t headGroup = 1;
  for (size_t i = 0; i < qBatch.size(); ++i) {
    bool heads = gqa && i + 3 == rank;
    bool ok = kBatch[i] == v.shape()[i] &&
              (heads ? kBatch[i] > 0 && qBatch[i] % kBatch[i] == 0 : qBatch[i] == kBatch[i]);
    if (!ok)
      return error("the batch dims of query {}, key {} and value {} do not match",
                   dimsStr(q.shape()), dimsStr(k.shape()), dimsStr(v.shape()));
    if (heads)
      headGroup = qBatch[i] / kBatch[i];
  }
  bool causal = ctx.getBool("is_causal");
  if (causal && mask)
    return error("is_causal and attn_mask cannot both be set");
  Dims scoresShape(qBatch.begin(), qBatch.end());
  scoresShape.append({L, S});
  std::vector<int64_t> maskOffsets;
  std::vector<double> maskValues;
  if (mask) {
    auto b = broadcastShapes({mask->shape(), scoresShape});
    if (!b || *b != scoresShape) {
      llvm::consumeError(b.takeError());
      return error("attn_mask {} does not broadcast to the scores' shape {}",
                   describe(mask->dtype(), mask->shape()), dimsStr(scoresShape));
    }
    maskOffsets = broadcastOffsets(mask->shape(), scoresShape);
    maskValues = readDoubles(*mask, DType::F64);
  }
  double scale = ctx.getFloat("scale").value_or(1 / std::sqrt(static_cast<double>(E)));
  std::vector<double> qv = readDoubles(q, r), kv = readDoubles(k, r), vv = readDoubles(v, r);
  int64_t batches = numelOf(qBatch);
  std::vector<double> out(batches * L * Ev), scores(S);
  Dims kStrides = stridesOf(kBatch);
  for (int64_t bq = 0; bq < batches; ++bq) {
    // The key/value batch of this query batch: the same index, heads divided by the group.
    int64_t bk = 0, rest = bq;
    for (size_t i = qBatch.size(); i-- > 0;) {
      int64_t idx = rest % qBatch[i];
      rest /= qBatch[i];
      bk += (gqa && i + 3 == rank ? idx / headGroup : idx) * kStrides[i];
    }
    for (int64_t l = 0; l < L; ++l) {
      for (int64_t j = 0; j < S; ++j) {
        double s = 0;
        for (int64_t e = 0; e < E; ++e)
          s += qv[(bq * L + l) * E + e] * kv[(bk * S + j) * E + e];
        s *= scale;
        if (causal && j > l)
          s = -Inf;
        if (mask) {
          double m = maskValues[maskOffsets[(bq * L + l) * S + j]];
          s = mask->dtype() == DType::Bool ? (m != 0 ? s : -Inf) : s + m;
        }
        scores[j] = s;
      }
      attentionRow(
          scores, [&](int64_t j, int64_t e) { return vv[(bk * S + j) * Ev + e]; },
          llvm::MutableArrayRef(out).slice((bq * L + l) * Ev, Ev));
    }
  }
  Dims shape(qBatch.begin(), qBatch.end());
  shape.append({L, Ev});
  return one(fromDoubles(r, shape, out));
}

} // namespace

KernelResult runNormPool(const KernelContext &ctx) {
  switch (ctx.kind()) {
  case OpKind::MaxPool2d:
    return pool2d(ctx, true);
  case OpKind::AvgPool2d:
    return pool2d(ctx, false);
  case OpKind::AdaptiveAvgPool2d:
    return adaptiveAvgPool2d(ctx);
  case OpKind::BatchNorm:
    return batchNorm(ctx);
  case OpKind::LayerNorm:
    return layerNorm(ctx);
  case OpKind::RmsNorm:
    return rmsNorm(ctx);
  case OpKind::GroupNorm:
    return groupNorm(ctx);
  case OpKind::Sdpa:
    return sdpa(ctx);
  default:
    return error("no normalization or pooling kernel for this op");
  }
}

} // namespace aotc::interp
