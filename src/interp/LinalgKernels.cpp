// Kernels of the contractions: mm, bmm, matmul (torch.matmul's 1-d and batch broadcasting rules),
// addmm, linear and convolution (1-d to 3-d, stride, padding, dilation, groups; transposed).
// Floating products accumulate in double and are rounded once; integer ones accumulate in int64.
#include "Kernels.h"

#include <array>

namespace aotc::interp {

namespace {

/// `batches` products of row-major matrices [m, k] x [k, n]; `aBase` / `bBase` give the first
/// element of each batch's operand (broadcast batches share one).
template <typename T>
std::vector<T> matmulBatches(const std::vector<T> &a, const std::vector<T> &b,
                             llvm::ArrayRef<int64_t> aBase, llvm::ArrayRef<int64_t> bBase,
                             int64_t m, int64_t k, int64_t n) {
  std::vector<T> out(aBase.size() * m * n, T(0));
  for (size_t batch = 0; batch < aBase.size(); ++batch) {
    const T *x = a.data() + aBase[batch];
    const T *y = b.data() + bBase[batch];
    T *z = out.data() + batch * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        T acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          if constexpr (std::is_same_v<T, double>)
            acc += x[i * k + p] * y[p * n + j];
          else
            acc = wrapAdd(acc, wrapMul(x[i * k + p], y[p * n + j]));
        }
        z[i * n + j] = acc;
      }
  }
  return out;
}

/// torch.matmul: 1-d operands become a row (left) or a column (right) matrix whose added dim is
/// dropped from the result; the batch dims broadcast.
KernelResult matmul(DType r, const HostTensor &a, const HostTensor &b) {
  if (a.rank() == 0 || b.rank() == 0)
    return error("both operands need at least one dim, got {} and {}",
                 describe(a.dtype(), a.shape()), describe(b.dtype(), b.shape()));
  int64_t m = a.rank() >= 2 ? a.shape()[a.rank() - 2] : 1, k = a.shape().back();
  int64_t k2 = b.rank() >= 2 ? b.shape()[b.rank() - 2] : b.shape()[0];
  int64_t n = b.rank() >= 2 ? b.shape().back() : 1;
  if (k != k2)
    return error("the contracted dims differ: {} and {}", describe(a.dtype(), a.shape()),
                 describe(b.dtype(), b.shape()));
  llvm::ArrayRef<int64_t> batchA = a.shape().drop_back(std::min<size_t>(a.rank(), 2));
  llvm::ArrayRef<int64_t> batchB = b.shape().drop_back(std::min<size_t>(b.rank(), 2));
  auto batch = broadcastShapes({batchA, batchB});
  if (!batch)
    return batch.takeError();
  std::vector<int64_t> aBase = broadcastOffsets(batchA, *batch);
  std::vector<int64_t> bBase = broadcastOffsets(batchB, *batch);
  for (int64_t &o : aBase)
    o *= m * k;
  for (int64_t &o : bBase)
    o *= k * n;
  Dims shape = *batch;
  if (a.rank() >= 2)
    shape.push_back(m);
  if (b.rank() >= 2)
    shape.push_back(n);
  if (isFloating(r))
    return one(fromDoubles(
        r, shape, matmulBatches(readDoubles(a, r), readDoubles(b, r), aBase, bBase, m, k, n)));
  return one(
      fromInts(r, shape, matmulBatches(readInts(a, r), readInts(b, r), aBase, bBase, m, k, n)));
}

llvm::Error requireRank(const HostTensor &t, llvm::StringRef name, size_t rank) {
  if (t.rank() == rank)
    return llvm::Error::success();
  return error("{} must be {}-d, got {}", name.str(), rank, describe(t.dtype(), t.shape()));
}

// `beta * bias + alpha * product`, the bias broadcast to the product; a zero beta ignores the
// bias entirely (its NaNs included), as torch does.
KernelResult addBias(DType r, const HostTensor &product, const HostTensor *bias, const Scalar &beta,
                     const Scalar &alpha) {
  bool useBias = bias && beta.asDouble() != 0;
  if (useBias && !broadcastShapes({bias->shape(), product.shape()}))
    return error("the bias {} does not broadcast to {}", describe(bias->dtype(), bias->shape()),
                 describe(r, product.shape()));
  std::vector<int64_t> offsets =
      useBias ? broadcastOffsets(bias->shape(), product.shape()) : std::vector<int64_t>();
  if (isFloating(r)) {
    std::vector<double> p = readDoubles(product, DType::F64);
    std::vector<double> c = useBias ? readDoubles(*bias, r) : std::vector<double>();
    double be = scalarAsDouble(beta, r), al = scalarAsDouble(alpha, r);
    for (size_t i = 0; i < p.size(); ++i)
      p[i] = al * p[i] + (useBias ? be * c[offsets[i]] : 0.0);
    return one(fromDoubles(r, product.shape(), p));
  }
  if (beta.isFloat() || alpha.isFloat())
    return error("alpha and beta must not be floating-point numbers for integer inputs");
  std::vector<int64_t> p = readInts(product, DType::I64);
  std::vector<int64_t> c = useBias ? readInts(*bias, r) : std::vector<int64_t>();
  int64_t be = scalarAsInt(beta, r), al = scalarAsInt(alpha, r);
  for (size_t i = 0; i < p.size(); ++i)
    p[i] = wrapAdd(wrapMul(al, p[i]), useBias ? wrapMul(be, c[offsets[i]]) : 0);
  return one(fromInts(r, product.shape(), p));
}

// The unrounded product in f64 or i64, so that the bias is added before the one rounding.
KernelResult wideMatmul(DType r, const HostTensor &a, const HostTensor &b) {
  return matmul(isFloating(r) ? DType::F64 : DType::I64, a, b);
}

KernelResult addmm(const KernelContext &ctx) {
  const HostTensor &m1 = *ctx.tensor("mat1"), &m2 = *ctx.tensor("mat2");
  if (auto err = llvm::joinErrors(requireRank(m1, "mat1", 2), requireRank(m2, "mat2", 2)))
    return err;
  auto beta = ctx.getScalar("beta"), alpha = ctx.getScalar("alpha");
  if (!beta || !alpha)
    return llvm::joinErrors(beta.takeError(), alpha.takeError());
  DType r = ctx.resultDType();
  auto product = wideMatmul(r, m1, m2);
  if (!product)
    return product.takeError();
  Scalar unit;
  unit.i = 1;
  return addBias(r, (*product)[0], ctx.tensor("self"), beta->value_or(unit), alpha->value_or(unit));
}

// input [..., k] x weight [n, k] (or [k]) + bias.
KernelResult linear(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("input"), &w = *ctx.tensor("weight");
  if (w.rank() != 1 && w.rank() != 2)
    return error("weight must be 1-d or 2-d, got {}", describe(w.dtype(), w.shape()));
  if (x.rank() == 0)
    return error("input must have at least one dim");
  DType r = ctx.resultDType();
  // The weight's transpose as a strided copy, then torch.matmul's rules.
  auto wt = w.rank() == 2 ? stridedCopy(w, {w.shape()[1], w.shape()[0]}, {1, w.shape()[1]})
                          : reshapeCopy(w, w.shape());
  if (!wt)
    return wt.takeError();
  auto product = wideMatmul(r, x, *wt);
  if (!product)
    return product.takeError();
  Scalar unit;
  unit.i = 1;
  return addBias(r, (*product)[0], ctx.tensor("bias"), unit, unit);
}

// A per-spatial-dim list attribute: `n` values, one value for all, or the default when absent.
llvm::Expected<Dims> spatialList(const KernelContext &ctx, llvm::StringRef name, size_t n,
                                 int64_t dflt) {
  auto v = ctx.getInts(name);
  if (!v)
    return v.takeError();
  if (v->empty())
    return Dims(n, dflt);
  if (v->size() == 1)
    return Dims(n, (*v)[0]);
  if (v->size() != n)
    return error("{} needs {} values, got {}", name.str(), n, v->size());
  return *v;
}

/// The attributes of a convolution over 1 to 3 spatial dims, each list padded in front to 3 dims
/// (a 1-d or 2-d convolution is a 3-d one over leading sizes of 1).
struct ConvParams {
  int64_t batch, cin, groups;
  std::array<int64_t, 3> in, kernel, stride, padding, dilation, outPadding;
};

llvm::Expected<ConvParams> convParams(const KernelContext &ctx, const HostTensor &x,
                                      const HostTensor &w, bool transposed) {
  DType r = ctx.resultDType();
  if (!isFloating(r))
    return error("needs floating-point tensors, got {}", toString(r).str());
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank())
    return error("input and weight must both be 3-d, 4-d or 5-d, got {} and {}",
                 describe(x.dtype(), x.shape()), describe(w.dtype(), w.shape()));
  size_t spatial = x.rank() - 2;
  auto groups = ctx.getInt("groups");
  auto stride = spatialList(ctx, "stride", spatial, 1);
  auto padding = spatialList(ctx, "padding", spatial, 0);
  auto dilation = spatialList(ctx, "dilation", spatial, 1);
  auto outPad = spatialList(ctx, "output_padding", spatial, 0);
  if (!groups || !stride || !padding || !dilation || !outPad)
    return llvm::joinErrors(
        llvm::joinErrors(groups.takeError(), stride.takeError()),
        llvm::joinErrors(llvm::joinErrors(padding.takeError(), dilation.takeError()),
                         outPad.takeError()));
  ConvParams c{x.shape()[0], x.shape()[1], *groups, {}, {}, {}, {}, {}, {}};
  for (size_t i = 0; i < 3; ++i) {
    bool unit = i < 3 - spatial;
    size_t j = unit ? 0 : i - (3 - spatial);
    c.in[i] = unit ? 1 : x.shape()[2 + j];
    c.kernel[i] = unit ? 1 : w.shape()[2 + j];
    c.stride[i] = unit ? 1 : (*stride)[j];
    c.padding[i] = unit ? 0 : (*padding)[j];
    c.dilation[i] = unit ? 1 : (*dilation)[j];
    c.outPadding[i] = unit || !transposed ? 0 : (*outPad)[j];
    if (c.stride[i] < 1 || c.dilation[i] < 1 || c.padding[i] < 0 || c.outPadding[i] < 0 ||
        (transposed && c.outPadding[i] >= c.stride[i] && c.outPadding[i] >= c.dilation[i]))
      return error("stride and dilation must be positive and padding non-negative{}",
                   transposed ? ", output_padding smaller than stride or dilation" : "");
  }
  return c;
}

/// The result shape: [N, C] and the spatial dims that the input has.
Dims convShape(const ConvParams &c, int64_t channels, const std::array<int64_t, 3> &out,
               size_t rank) {
  Dims shape = {c.batch, channels};
  for (size_t i = 3 - (rank - 2); i < 3; ++i)
    shape.push_back(out[i]);
  return shape;
}

/// conv_transpose as its definition: every input element adds its products with the kernel at
/// output position i * stride - padding + k * dilation (the adjoint of convolution).
KernelResult convTransposed(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("input"), &w = *ctx.tensor("weight");
  const HostTensor *bias = ctx.tensor("bias");
  DType r = ctx.resultDType();
  auto params = convParams(ctx, x, w, true);
  if (!params)
    return params.takeError();
  const ConvParams &c = *params;
  int64_t g = c.groups;
  if (g < 1 || w.shape()[0] != c.cin || c.cin % g != 0)
    return error("input {} and weight {} do not fit groups = {}", describe(x.dtype(), x.shape()),
                 describe(w.dtype(), w.shape()), g);
  int64_t coutG = w.shape()[1], cout = coutG * g, cinG = c.cin / g;
  if (bias && (bias->rank() != 1 || bias->shape()[0] != cout))
    return error("bias must have shape [{}], got {}", cout, describe(bias->dtype(), bias->shape()));
  std::array<int64_t, 3> o;
  for (size_t i = 0; i < 3; ++i) {
    o[i] = (c.in[i] - 1) * c.stride[i] - 2 * c.padding[i] + c.dilation[i] * (c.kernel[i] - 1) +
           c.outPadding[i] + 1;
    if (o[i] < 1)
      return error("the output size {} is not positive", o[i]);
  }
  int64_t plane = o[0] * o[1] * o[2], inPlane = c.in[0] * c.in[1] * c.in[2];
  int64_t taps = c.kernel[0] * c.kernel[1] * c.kernel[2];
  std::vector<double> in = readDoubles(x, r), wt = readDoubles(w, r);
  std::vector<double> out(c.batch * cout * plane);
  for (int64_t nb = 0; nb < c.batch; ++nb)
    for (int64_t co = 0; co < cout; ++co)
      for (int64_t i = 0; i < plane; ++i)
        out[(nb * cout + co) * plane + i] = bias ? bias->getDouble(co) : 0.0;
  for (int64_t nb = 0; nb < c.batch; ++nb)
    for (int64_t ci = 0; ci < c.cin; ++ci)
      for (int64_t p = 0; p < inPlane; ++p) {
        std::array<int64_t, 3> at = {p / (c.in[1] * c.in[2]), p / c.in[2] % c.in[1], p % c.in[2]};
        double v = in[(nb * c.cin + ci) * inPlane + p];
        for (int64_t t = 0; t < taps; ++t) {
          std::array<int64_t, 3> k = {t / (c.kernel[1] * c.kernel[2]),
                                      t / c.kernel[2] % c.kernel[1], t % c.kernel[2]};
          int64_t pos = 0;
          bool inside = true;
          for (size_t i = 0; i < 3; ++i) {
            int64_t q = at[i] * c.stride[i] - c.padding[i] + k[i] * c.dilation[i];
            inside = inside && q >= 0 && q < o[i];
            pos = pos * o[i] + q;
          }
          if (!inside)
            continue;
          for (int64_t j = 0; j < coutG; ++j) {
            int64_t co = ci / cinG * coutG + j;
            out[(nb * cout + co) * plane + pos] += v * wt[(ci * coutG + j) * taps + t];
          }
        }
      }
  return one(fromDoubles(r, convShape(c, cout, o, x.rank()), out));
}

KernelResult convolution(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("input"), &w = *ctx.tensor("weight");
  const HostTensor *bias = ctx.tensor("bias");
  DType r = ctx.resultDType();
  if (ctx.getBool("transposed"))
    return convTransposed(ctx);
  auto params = convParams(ctx, x, w, false);
  if (!params)
    return params.takeError();
  const ConvParams &c = *params;
  int64_t g = c.groups, cout = w.shape()[0], cg = w.shape()[1];
  if (g < 1 || cg * g != c.cin || cout % g != 0)
    return error("input {} and weight {} do not fit groups = {}", describe(x.dtype(), x.shape()),
                 describe(w.dtype(), w.shape()), g);
  if (bias && (bias->rank() != 1 || bias->shape()[0] != cout))
    return error("bias must have shape [{}], got {}", cout, describe(bias->dtype(), bias->shape()));
  std::array<int64_t, 3> o;
  for (size_t i = 0; i < 3; ++i) {
    if (c.in[i] + 2 * c.padding[i] < c.dilation[i] * (c.kernel[i] - 1) + 1)
      return error("the kernel is larger than the padded input");
    o[i] = (c.in[i] + 2 * c.padding[i] - c.dilation[i] * (c.kernel[i] - 1) - 1) / c.stride[i] + 1;
  }
  int64_t plane = o[0] * o[1] * o[2], inPlane = c.in[0] * c.in[1] * c.in[2];
  int64_t taps = c.kernel[0] * c.kernel[1] * c.kernel[2];
  std::vector<double> in = readDoubles(x, r), wt = readDoubles(w, r);
  std::vector<double> b = bias ? readDoubles(*bias, r) : std::vector<double>(cout, 0.0);
  std::vector<double> out(c.batch * cout * plane);
  int64_t coutPerGroup = cout / g;
  for (int64_t nb = 0; nb < c.batch; ++nb)
    for (int64_t co = 0; co < cout; ++co) {
      int64_t group = co / coutPerGroup;
      for (int64_t p = 0; p < plane; ++p) {
        std::array<int64_t, 3> at = {p / (o[1] * o[2]), p / o[2] % o[1], p % o[2]};
        double acc = b[co];
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t t = 0; t < taps; ++t) {
            std::array<int64_t, 3> k = {t / (c.kernel[1] * c.kernel[2]),
                                        t / c.kernel[2] % c.kernel[1], t % c.kernel[2]};
            int64_t pos = 0;
            bool inside = true;
            for (size_t i = 0; i < 3; ++i) {
              int64_t q = at[i] * c.stride[i] - c.padding[i] + k[i] * c.dilation[i];
              inside = inside && q >= 0 && q < c.in[i];
              pos = pos * c.in[i] + q;
            }
            if (inside)
              acc += in[(nb * c.cin + group * cg + ci) * inPlane + pos] *
                     wt[(co * cg + ci) * taps + t];
          }
        out[(nb * cout + co) * plane + p] = acc;
      }
    }
  return one(fromDoubles(r, convShape(c, cout, o, x.rank()), out));
}

} // namespace

KernelResult runLinalg(const KernelContext &ctx) {
  DType r = ctx.resultDType();
  switch (ctx.kind()) {
  case OpKind::Mm:
  case OpKind::Bmm: {
    const HostTensor &a = *ctx.tensor("self"), &b = *ctx.tensor("mat2");
    size_t rank = ctx.kind() == OpKind::Mm ? 2 : 3;
    if (auto err = llvm::joinErrors(requireRank(a, "self", rank), requireRank(b, "mat2", rank)))
      return err;
    if (rank == 3 && a.shape()[0] != b.shape()[0])
      return error("the batch dims differ: {} and {}", describe(a.dtype(), a.shape()),
                   describe(b.dtype(), b.shape()));
    return matmul(r, a, b);
  }
  case OpKind::Matmul:
    return matmul(r, *ctx.tensor("self"), *ctx.tensor("other"));
  case OpKind::Addmm:
    return addmm(ctx);
  case OpKind::Linear:
    return linear(ctx);
  case OpKind::Convolution:
    return convolution(ctx);
  default:
    return error("no contraction kernel for this op");
  }
}

} // namespace aotc::interp
