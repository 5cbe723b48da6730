// Kernels of the reductions (sum, mean, prod, amax, amin, argmax) and of softmax and log_softmax;
// floating reductions accumulate in double, integer ones in int64 (wrapping).
#include "Kernels.h"

#include "llvm/ADT/SmallBitVector.h"

#include <cmath>
#include <limits>

namespace aotc::interp {

namespace {

constexpr double NaN = std::numeric_limits<double>::quiet_NaN();

/// Which output element each input element reduces into.
struct ReducePlan {
  Dims outShape;
  std::vector<int64_t> outIndex; // per input element, C order
  int64_t outNumel = 0;
  int64_t groupSize = 1; // input elements per output element
};

// `dims` empty reduces every dim, as torch does for `dim=None` and `dim=[]`.
llvm::Expected<ReducePlan> planReduce(const HostTensor &in, llvm::ArrayRef<int64_t> dims,
                                      bool keepdim) {
  int64_t rank = in.rank();
  llvm::SmallBitVector reduced(rank, dims.empty());
  for (int64_t d : dims) {
    auto n = normalizeDim(d, rank);
    if (!n)
      return n.takeError();
    if (rank == 0)
      continue;
    if (reduced[*n])
      return error("dim {} appears more than once in the list of dims", d);
    reduced.set(*n);
  }
  ReducePlan plan;
  Dims kept; // the output shape with reduced dims kept as 1
  for (int64_t i = 0; i < rank; ++i) {
    kept.push_back(reduced[i] ? 1 : in.shape()[i]);
    if (reduced[i])
      plan.groupSize *= in.shape()[i];
    if (!reduced[i] || keepdim)
      plan.outShape.push_back(kept.back());
  }
  Dims keptStrides = stridesOf(kept), strides(rank, 0);
  for (int64_t i = 0; i < rank; ++i)
    if (!reduced[i])
      strides[i] = keptStrides[i];
  plan.outIndex = stridedOffsets(in.shape(), strides);
  plan.outNumel = numelOf(plan.outShape);
  return plan;
}

llvm::Expected<ReducePlan> planFromAttrs(const KernelContext &ctx, const HostTensor &in,
                                         llvm::StringRef dimAttr) {
  auto dims = ctx.getInts(dimAttr);
  if (!dims)
    return dims.takeError();
  return planReduce(in, *dims, ctx.getBool("keepdim"));
}

enum class Acc { Sum, Prod, Mean };

KernelResult accumulate(const KernelContext &ctx, Acc acc, const ReducePlan &plan) {
  const HostTensor &in = *ctx.tensor("self");
  DType r = ctx.resultDType();
  // With a dtype argument torch casts the input first, so the elements are read as `r`.
  if (isFloating(r)) {
    std::vector<double> values = readDoubles(in, r);
    std::vector<double> out(plan.outNumel, acc == Acc::Prod ? 1.0 : 0.0);
    for (size_t i = 0; i < values.size(); ++i) {
      double &o = out[plan.outIndex[i]];
      o = acc == Acc::Prod ? o * values[i] : o + values[i];
    }
    if (acc == Acc::Mean)
      for (double &o : out)
        o /= static_cast<double>(plan.groupSize);
    return one(fromDoubles(r, plan.outShape, out));
  }
  if (acc == Acc::Mean)
    return error("mean needs a floating-point dtype, got {}", toString(r).str());
  std::vector<int64_t> values = readInts(in, r);
  std::vector<int64_t> out(plan.outNumel, acc == Acc::Prod ? 1 : 0);
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t &o = out[plan.outIndex[i]];
    o = acc == Acc::Prod ? wrapMul(o, values[i]) : wrapAdd(o, values[i]);
  }
  return one(fromInts(r, plan.outShape, out));
}

// amax / amin: NaN wins, as in torch; an empty reduction has no identity and is an error.
KernelResult extremum(const KernelContext &ctx, bool isMax) {
  const HostTensor &in = *ctx.tensor("self");
  auto plan = planFromAttrs(ctx, in, "dim");
  if (!plan)
    return plan.takeError();
  if (plan->groupSize == 0)
    return error("cannot reduce {} over an empty dim", describe(in.dtype(), in.shape()));
  DType r = ctx.resultDType();
  std::vector<bool> seen(plan->outNumel, false);
  if (isFloating(r)) {
    std::vector<double> values = readDoubles(in, r), out(plan->outNumel, 0.0);
    for (size_t i = 0; i < values.size(); ++i) {
      int64_t o = plan->outIndex[i];
      double v = values[i];
      if (!seen[o] || std::isnan(v) || (!std::isnan(out[o]) && (isMax ? v > out[o] : v < out[o])))
        out[o] = v;
      seen[o] = true;
    }
    return one(fromDoubles(r, plan->outShape, out));
  }
  std::vector<int64_t> values = readInts(in, r), out(plan->outNumel, 0);
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t o = plan->outIndex[i];
    if (!seen[o] || (isMax ? values[i] > out[o] : values[i] < out[o]))
      out[o] = values[i];
    seen[o] = true;
  }
  return one(fromInts(r, plan->outShape, out));
}

// The index of the first maximum; the first NaN counts as the maximum, as in torch.
KernelResult argmax(const KernelContext &ctx) {
  const HostTensor &in = *ctx.tensor("self");
  auto dim = ctx.getOptionalInt("dim");
  if (!dim)
    return dim.takeError();
  bool keepdim = ctx.getBool("keepdim");
  ReducePlan plan;
  int64_t stride = 1, size = in.numel();
  if (*dim) {
    auto n = normalizeDim(**dim, in.rank());
    if (!n)
      return n.takeError();
    auto p = planReduce(in, {**dim}, keepdim);
    if (!p)
      return p.takeError();
    plan = std::move(*p);
    if (in.rank() > 0) {
      stride = stridesOf(in.shape())[*n];
      size = in.shape()[*n];
    }
  } else {
    // Over the flattened tensor: one result, of rank 0 or all ones with keepdim.
    plan.outShape.assign(keepdim ? in.rank() : 0, 1);
    plan.outIndex.assign(in.numel(), 0);
    plan.outNumel = 1;
    plan.groupSize = in.numel();
  }
  if (plan.groupSize == 0)
    return error("argmax of an empty dim");
  bool floating = isFloating(in.dtype());
  std::vector<double> fv = floating ? readDoubles(in, in.dtype()) : std::vector<double>();
  std::vector<int64_t> iv = floating ? std::vector<int64_t>() : readInts(in, in.dtype());
  std::vector<int64_t> best(plan.outNumel, -1), index(plan.outNumel, 0);
  for (int64_t i = 0; i < in.numel(); ++i) {
    int64_t o = plan.outIndex[i];
    bool better;
    if (best[o] < 0) {
      better = true;
    } else if (floating) {
      double v = fv[i], b = fv[best[o]];
      better = !std::isnan(b) && (std::isnan(v) || v > b);
    } else {
      better = iv[i] > iv[best[o]];
    }
    if (better) {
      best[o] = i;
      index[o] = (i / stride) % size;
    }
  }
  return one(fromInts(DType::I64, plan.outShape, index));
}

// Softmax along one dim, stabilized by subtracting the maximum; a row of -inf gives NaN, as in
// torch.
KernelResult softmax(const KernelContext &ctx, bool logarithm) {
  const HostTensor &in = *ctx.tensor("self");
  auto dim = ctx.getInt("dim");
  if (!dim)
    return dim.takeError();
  auto d = normalizeDim(*dim, in.rank());
  if (!d)
    return d.takeError();
  DType r = ctx.resultDType();
  if (!isFloating(r))
    return error("needs a floating-point dtype, got {}", toString(r).str());
  std::vector<double> x = readDoubles(in, r), out(x.size());
  int64_t n = in.rank() ? in.shape()[*d] : 1;
  int64_t inner = in.rank() ? stridesOf(in.shape())[*d] : 1;
  int64_t outer = n * inner != 0 ? in.numel() / (n * inner) : 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t k) { return (o * n + k) * inner + j; };
      double mx = -std::numeric_limits<double>::infinity();
      bool nan = false;
      for (int64_t k = 0; k < n; ++k) {
        nan |= std::isnan(x[at(k)]);
        mx = std::max(mx, x[at(k)]);
      }
      double sum = 0;
      for (int64_t k = 0; k < n; ++k)
        sum += std::exp(x[at(k)] - mx);
      for (int64_t k = 0; k < n; ++k) {
        double shifted = x[at(k)] - mx;
        double v = logarithm ? shifted - std::log(sum) : std::exp(shifted) / sum;
        out[at(k)] = nan ? NaN : v;
      }
    }
  }
  return one(fromDoubles(r, in.shape(), out));
}

// log(sum(exp(x))) with the maximum taken out first; an all -inf group gives -inf, not NaN
// (torch masks infinite maxima to 0).
KernelResult logsumexp(const KernelContext &ctx) {
  const HostTensor &in = *ctx.tensor("self");
  auto plan = planFromAttrs(ctx, in, "dim");
  if (!plan)
    return plan.takeError();
  DType r = ctx.resultDType();
  std::vector<double> x = readDoubles(in, r);
  std::vector<double> mx(plan->outNumel, -std::numeric_limits<double>::infinity());
  for (size_t i = 0; i < x.size(); ++i)
    mx[plan->outIndex[i]] = std::max(mx[plan->outIndex[i]], x[i]);
  for (double &m : mx)
    if (std::isinf(m))
      m = 0;
  std::vector<double> sum(plan->outNumel, 0.0);
  for (size_t i = 0; i < x.size(); ++i)
    sum[plan->outIndex[i]] += std::exp(x[i] - mx[plan->outIndex[i]]);
  for (int64_t o = 0; o < plan->outNumel; ++o)
    sum[o] = std::log(sum[o]) + mx[o];
  return one(fromDoubles(r, plan->outShape, sum));
}

// Two passes (mean, then squared deviations) in double; divided by max(0, N - correction), so
// N <= correction gives inf or NaN as in torch.
KernelResult variance(const KernelContext &ctx, bool root) {
  const HostTensor &in = *ctx.tensor("self");
  auto plan = planFromAttrs(ctx, in, "dim");
  auto correction = ctx.getScalar("correction");
  if (!plan || !correction)
    return llvm::joinErrors(plan.takeError(), correction.takeError());
  double c = *correction ? (*correction)->asDouble() : 1.0;
  DType r = ctx.resultDType();
  std::vector<double> x = readDoubles(in, r), mean(plan->outNumel, 0.0), sq(plan->outNumel, 0.0);
  auto n = static_cast<double>(plan->groupSize);
  for (size_t i = 0; i < x.size(); ++i)
    mean[plan->outIndex[i]] += x[i];
  for (double &m : mean)
    m /= n;
  for (size_t i = 0; i < x.size(); ++i) {
    double dev = x[i] - mean[plan->outIndex[i]];
    sq[plan->outIndex[i]] += dev * dev;
  }
  for (double &v : sq) {
    v /= std::max(0.0, n - c);
    if (root)
      v = std::sqrt(v);
  }
  return one(fromDoubles(r, plan->outShape, sq));
}

// (sum |x|^ord)^(1/ord), in double.
KernelResult vectorNorm(const KernelContext &ctx) {
  const HostTensor &in = *ctx.tensor("self");
  auto plan = planFromAttrs(ctx, in, "dim");
  auto ord = ctx.getScalar("ord");
  if (!plan || !ord)
    return llvm::joinErrors(plan.takeError(), ord.takeError());
  double p = *ord ? (*ord)->asDouble() : 2.0;
  if (!(p > 0) || std::isinf(p))
    return error("ord must be a positive finite number, got {}", p);
  DType r = ctx.resultDType();
  std::vector<double> x = readDoubles(in, r), acc(plan->outNumel, 0.0);
  for (size_t i = 0; i < x.size(); ++i)
    acc[plan->outIndex[i]] += p == 1 ? std::fabs(x[i]) : std::pow(std::fabs(x[i]), p);
  for (double &a : acc)
    a = p == 1 ? a : p == 2 ? std::sqrt(a) : std::pow(a, 1 / p);
  return one(fromDoubles(r, plan->outShape, acc));
}

} // namespace

KernelResult runReduction(const KernelContext &ctx) {
  switch (ctx.kind()) {
  case OpKind::Sum:
  case OpKind::Mean: {
    auto plan = planFromAttrs(ctx, *ctx.tensor("self"), "dim");
    if (!plan)
      return plan.takeError();
    return accumulate(ctx, ctx.kind() == OpKind::Sum ? Acc::Sum : Acc::Mean, *plan);
  }
  case OpKind::Prod: {
    auto dim = ctx.getInt("dim");
    if (!dim)
      return dim.takeError();
    auto plan = planReduce(*ctx.tensor("self"), {*dim}, ctx.getBool("keepdim"));
    if (!plan)
      return plan.takeError();
    return accumulate(ctx, Acc::Prod, *plan);
  }
  case OpKind::Amax:
    return extremum(ctx, true);
  case OpKind::Amin:
    return extremum(ctx, false);
  case OpKind::Argmax:
    return argmax(ctx);
  case OpKind::Softmax:
    return softmax(ctx, false);
  case OpKind::LogSoftmax:
    return softmax(ctx, true);
  case OpKind::Logsumexp:
    return logsumexp(ctx);
  case OpKind::Var:
  case OpKind::Std:
    return variance(ctx, ctx.kind() == OpKind::Std);
  case OpKind::VectorNorm:
    return vectorNorm(ctx);
  case OpKind::Cumsum:
  case OpKind::Cumprod:
    return runPosition(ctx);
  default:
    return error("no reduction kernel for this op");
  }
}

} // namespace aotc::interp
