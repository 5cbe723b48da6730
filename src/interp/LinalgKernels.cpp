// Kernels of the contractions: mm, bmm, matmul (torch.matmul's 1-d and batch broadcasting rules),
// addmm, linear and convolution (1-d and 2-d, stride, padding, dilation, groups). Floating
// products accumulate in double and are rounded once; integer ones accumulate in int64.
#include "Kernels.h"

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

KernelResult convolution(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("input"), &w = *ctx.tensor("weight");
  const HostTensor *bias = ctx.tensor("bias");
  DType r = ctx.resultDType();
  if (ctx.getBool("transposed"))
    return error("transposed convolution is not supported");
  if (!isFloating(r))
    return error("needs floating-point tensors, got {}", toString(r).str());
  if ((x.rank() != 3 && x.rank() != 4) || w.rank() != x.rank())
    return error("input and weight must both be 3-d or 4-d, got {} and {}",
                 describe(x.dtype(), x.shape()), describe(w.dtype(), w.shape()));
  size_t spatial = x.rank() - 2;
  auto groups = ctx.getInt("groups");
  auto stride = spatialList(ctx, "stride", spatial, 1);
  auto padding = spatialList(ctx, "padding", spatial, 0);
  auto dilation = spatialList(ctx, "dilation", spatial, 1);
  if (!groups || !stride || !padding || !dilation)
    return llvm::joinErrors(llvm::joinErrors(groups.takeError(), stride.takeError()),
                            llvm::joinErrors(padding.takeError(), dilation.takeError()));
  // 1-d convolution is 2-d convolution over a height of 1.
  auto dims2d = [&](llvm::ArrayRef<int64_t> d, int64_t unit) {
    return spatial == 1 ? Dims{unit, d[0]} : Dims(d.begin(), d.end());
  };
  Dims s = dims2d(*stride, 1), p = dims2d(*padding, 0), dl = dims2d(*dilation, 1);
  int64_t batch = x.shape()[0], cin = x.shape()[1], cout = w.shape()[0], cg = w.shape()[1];
  int64_t ih = spatial == 2 ? x.shape()[2] : 1, iw = x.shape().back();
  int64_t kh = spatial == 2 ? w.shape()[2] : 1, kw = w.shape().back();
  int64_t g = *groups;
  if (g < 1 || cg * g != cin || cout % g != 0)
    return error("input {} and weight {} do not fit groups = {}", describe(x.dtype(), x.shape()),
                 describe(w.dtype(), w.shape()), g);
  if (bias && (bias->rank() != 1 || bias->shape()[0] != cout))
    return error("bias must have shape [{}], got {}", cout, describe(bias->dtype(), bias->shape()));
  for (size_t i = 0; i < 2; ++i)
    if (s[i] < 1 || dl[i] < 1 || p[i] < 0)
      return error("stride and dilation must be positive and padding non-negative");
  int64_t oh = (ih + 2 * p[0] - dl[0] * (kh - 1) - 1) / s[0] + 1;
  int64_t ow = (iw + 2 * p[1] - dl[1] * (kw - 1) - 1) / s[1] + 1;
  if (ih + 2 * p[0] < dl[0] * (kh - 1) + 1 || iw + 2 * p[1] < dl[1] * (kw - 1) + 1)
    return error("the kernel is larger than the padded input");

  std::vector<double> in = readDoubles(x, r), wt = readDoubles(w, r);
  std::vector<double> b = bias ? readDoubles(*bias, r) : std::vector<double>(cout, 0.0);
  std::vector<double> out(batch * cout * oh * ow);
  int64_t coutPerGroup = cout / g;
  for (int64_t nb = 0; nb < batch; ++nb)
    for (int64_t co = 0; co < cout; ++co) {
      int64_t group = co / coutPerGroup;
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          double acc = b[co];
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t u = 0; u < kh; ++u) {
              int64_t yi = y * s[0] - p[0] + u * dl[0];
              if (yi < 0 || yi >= ih)
                continue;
              for (int64_t v = 0; v < kw; ++v) {
                int64_t zi = z * s[1] - p[1] + v * dl[1];
                if (zi < 0 || zi >= iw)
                  continue;
                int64_t c = group * cg + ci;
                acc += in[((nb * cin + c) * ih + yi) * iw + zi] *
                       wt[((co * cg + ci) * kh + u) * kw + v];
              }
            }
          out[((nb * cout + co) * oh + y) * ow + z] = acc;
        }
    }
  Dims shape = {batch, cout};
  if (spatial == 2)
    shape.push_back(oh);
  shape.push_back(ow);
  return one(fromDoubles(r, shape, out));
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
