// Kernels of the unary pointwise ops (math, activations, clamp, casts); ops with several operands
// are in BinaryKernels.cpp.
#include "Kernels.h"

#include <cmath>
#include <limits>

namespace aotc::interp {

namespace {

constexpr double NaN = std::numeric_limits<double>::quiet_NaN();

// Float math: the input is cast to the (floating) result dtype first, as torch computes
// int -> float ops in the default dtype.
template <typename F> KernelResult unaryFloat(const KernelContext &ctx, F f) {
  DType r = ctx.resultDType();
  if (!isFloating(r))
    return error("needs a floating-point result, got {}", toString(r).str());
  return mapElements<double>({ctx.tensor("self")}, r, r, [&](const double *a) { return f(a[0]); });
}

// Ops defined on every dtype: `fd` on floats, `fi` on integers and bools (as 0 and 1).
template <typename FD, typename FI>
KernelResult unaryNumeric(const KernelContext &ctx, FD fd, FI fi) {
  DType r = ctx.resultDType();
  const HostTensor *self = ctx.tensor("self");
  if (isFloating(r))
    return mapElements<double>({self}, r, r, [&](const double *a) { return fd(a[0]); });
  return mapElements<int64_t>({self}, r, r, [&](const int64_t *a) { return fi(a[0]); });
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

double gelu(double x, bool tanhApprox) {
  if (!tanhApprox)
    return 0.5 * x * (1 + std::erf(x * M_SQRT1_2));
  const double k = std::sqrt(2 / M_PI);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

// Maximum and minimum that propagate NaN, as torch's clamp does.
double maxNaN(double a, double b) { return std::isnan(a) || std::isnan(b) ? NaN : std::max(a, b); }
double minNaN(double a, double b) { return std::isnan(a) || std::isnan(b) ? NaN : std::min(a, b); }

KernelResult clamp(const KernelContext &ctx) {
  auto lo = ctx.getScalar("min"), hi = ctx.getScalar("max");
  if (!lo || !hi)
    return llvm::joinErrors(lo.takeError(), hi.takeError());
  if (!*lo && !*hi)
    return error("at least one of min and max must be given");
  DType r = ctx.resultDType();
  const HostTensor *self = ctx.tensor("self");
  if (isFloating(r)) {
    std::optional<double> l, h;
    if (*lo)
      l = scalarAsDouble(**lo, r);
    if (*hi)
      h = scalarAsDouble(**hi, r);
    return mapElements<double>({self}, r, r, [&](const double *a) {
      double x = a[0];
      if (l)
        x = maxNaN(x, *l);
      if (h)
        x = minNaN(x, *h);
      return x;
    });
  }
  std::optional<int64_t> l, h;
  if (*lo)
    l = scalarAsInt(**lo, r);
  if (*hi)
    h = scalarAsInt(**hi, r);
  return mapElements<int64_t>({self}, r, r, [&](const int64_t *a) {
    int64_t x = a[0];
    if (l)
      x = std::max(x, *l);
    if (h)
      x = std::min(x, *h);
    return x;
  });
}

// Integer power by squaring, wrapping on overflow. Negative exponents follow ATen's powi:
// 1 stays 1, -1 alternates, anything else truncates to 0.
int64_t powInt(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 1)
      return 1;
    if (base == -1)
      return exp % 2 == 0 ? 1 : -1;
    return 0;
  }
  int64_t result = 1;
  while (exp) {
    if (exp & 1)
      result = wrapMul(result, base);
    base = wrapMul(base, base);
    exp >>= 1;
  }
  return result;
}

KernelResult powScalar(const KernelContext &ctx) {
  auto e = ctx.getScalar("exponent");
  if (!e)
    return e.takeError();
  if (!*e)
    return error("attribute 'exponent' is missing");
  DType r = ctx.resultDType();
  const HostTensor *self = ctx.tensor("self");
  if (isFloating(r)) {
    double exponent = scalarAsDouble(**e, r);
    return mapElements<double>({self}, r, r,
                               [&](const double *a) { return std::pow(a[0], exponent); });
  }
  int64_t exponent = scalarAsInt(**e, r);
  if (exponent < 0)
    return error("integers to negative integer powers are not allowed");
  return mapElements<int64_t>({self}, r, r,
                              [&](const int64_t *a) { return powInt(a[0], exponent); });
}

/// A Scalar attribute (with its schema default) as a double.
llvm::Expected<double> scalarValue(const KernelContext &ctx, llvm::StringRef name) {
  auto s = ctx.getScalar(name);
  if (!s)
    return s.takeError();
  if (!*s)
    return error("attribute '{}' is missing", name.str());
  return (*s)->asDouble();
}

/// An activation with scalar parameters `names`: `f(x, params)` in double on each element.
template <size_t N, typename F>
KernelResult activation(const KernelContext &ctx, const char *const (&names)[N], F f) {
  double params[N > 0 ? N : 1] = {};
  for (size_t i = 0; i < N; ++i) {
    auto v = scalarValue(ctx, names[i]);
    if (!v)
      return v.takeError();
    params[i] = *v;
  }
  return unaryFloat(ctx, [&](double x) { return f(x, params); });
}

// log(1 + exp(x)), or x itself where beta * x passes the threshold (torch's softplus).
double softplus(double x, double beta, double threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}

// The slopes of PReLU follow dim 1 (the channels), or are one for every element.
KernelResult prelu(const KernelContext &ctx) {
  const HostTensor *self = ctx.tensor("self"), *weight = ctx.tensor("weight");
  DType r = ctx.resultDType();
  std::vector<double> x = readDoubles(*self, r), w = readDoubles(*weight, r);
  llvm::ArrayRef<int64_t> shape = self->shape();
  int64_t channels = shape.size() > 1 ? shape[1] : 1;
  if (w.size() != 1 && static_cast<int64_t>(w.size()) != channels)
    return error("weight has {} slopes for {} channels", w.size(), channels);
  // Elements of one channel are contiguous runs of `inner` (the dims after dim 1).
  int64_t inner = shape.size() > 2 ? numelOf(shape.drop_front(2)) : 1;
  for (size_t i = 0; i < x.size(); ++i) {
    double slope = w.size() == 1 ? w[0] : w[(static_cast<int64_t>(i) / inner) % channels];
    x[i] = x[i] > 0 ? x[i] : slope * x[i];
  }
  return one(fromDoubles(r, shape, x));
}

} // namespace

int64_t powInteger(int64_t base, int64_t exp) { return powInt(base, exp); }

KernelResult runPointwise(const KernelContext &ctx) {
  const HostTensor *self = ctx.tensor("self");
  DType r = ctx.resultDType();
  auto identity = [](auto x) { return x; };
  switch (ctx.kind()) {
  case OpKind::Abs:
    return unaryNumeric(
        ctx, [](double x) { return std::fabs(x); },
        [](int64_t x) { return x < 0 ? wrapSub(0, x) : x; });
  case OpKind::Neg:
    if (r == DType::Bool)
      return error("negation of a bool tensor is not supported; use aten.logical_not");
    return unaryNumeric(
        ctx, [](double x) { return -x; }, [](int64_t x) { return wrapSub(0, x); });
  case OpKind::Exp:
    return unaryFloat(ctx, [](double x) { return std::exp(x); });
  case OpKind::Log:
    return unaryFloat(ctx, [](double x) { return std::log(x); });
  case OpKind::Log1p:
    return unaryFloat(ctx, [](double x) { return std::log1p(x); });
  case OpKind::Sqrt:
    return unaryFloat(ctx, [](double x) { return std::sqrt(x); });
  case OpKind::Rsqrt:
    return unaryFloat(ctx, [](double x) { return 1 / std::sqrt(x); });
  case OpKind::Reciprocal:
    return unaryFloat(ctx, [](double x) { return 1 / x; });
  case OpKind::Sin:
    return unaryFloat(ctx, [](double x) { return std::sin(x); });
  case OpKind::Cos:
    return unaryFloat(ctx, [](double x) { return std::cos(x); });
  case OpKind::Tanh:
    return unaryFloat(ctx, [](double x) { return std::tanh(x); });
  case OpKind::Erf:
    return unaryFloat(ctx, [](double x) { return std::erf(x); });
  case OpKind::Sigmoid:
    return unaryFloat(ctx, sigmoid);
  case OpKind::Silu:
    return unaryFloat(ctx, [](double x) { return x * sigmoid(x); });
  case OpKind::Gelu: {
    std::string mode = ctx.getStr("approximate");
    if (mode != "none" && mode != "tanh")
      return error("approximate must be \"none\" or \"tanh\", got \"{}\"", mode);
    bool tanhApprox = mode == "tanh";
    return unaryFloat(ctx, [=](double x) { return gelu(x, tanhApprox); });
  }
  case OpKind::Floor:
    return unaryNumeric(
        ctx, [](double x) { return std::floor(x); }, identity);
  case OpKind::Ceil:
    return unaryNumeric(
        ctx, [](double x) { return std::ceil(x); }, identity);
  case OpKind::Round:
    // Half to even, as torch.round (nearbyint in the default rounding mode).
    return unaryNumeric(
        ctx, [](double x) { return std::nearbyint(x); }, identity);
  case OpKind::Relu:
    return unaryNumeric(
        ctx, [](double x) { return x < 0 ? 0.0 : x; },
        [](int64_t x) { return x < 0 ? int64_t(0) : x; });
  case OpKind::Hardtanh: {
    static const char *const names[] = {"min_val", "max_val"};
    return activation(ctx, names,
                      [](double x, const double *p) { return minNaN(maxNaN(x, p[0]), p[1]); });
  }
  case OpKind::Hardswish:
    return unaryFloat(ctx, [](double x) { return x * minNaN(maxNaN(x + 3, 0), 6) / 6; });
  case OpKind::Hardsigmoid:
    return unaryFloat(ctx, [](double x) { return minNaN(maxNaN(x + 3, 0), 6) / 6; });
  case OpKind::LeakyRelu: {
    static const char *const names[] = {"negative_slope"};
    return activation(ctx, names, [](double x, const double *p) { return x > 0 ? x : x * p[0]; });
  }
  case OpKind::Elu: {
    static const char *const names[] = {"alpha", "scale", "input_scale"};
    return activation(ctx, names, [](double x, const double *p) {
      return x > 0 ? x * p[1] : std::expm1(x * p[2]) * p[0] * p[1];
    });
  }
  case OpKind::Mish:
    return unaryFloat(ctx, [](double x) { return x * std::tanh(softplus(x, 1, 20)); });
  case OpKind::Softplus: {
    static const char *const names[] = {"beta", "threshold"};
    return activation(ctx, names,
                      [](double x, const double *p) { return softplus(x, p[0], p[1]); });
  }
  case OpKind::Prelu:
    return prelu(ctx);
  case OpKind::Clamp:
    return clamp(ctx);
  case OpKind::PowScalar:
    return powScalar(ctx);
  case OpKind::LogicalNot:
    return mapElements<int64_t>({self}, DType::Bool, r,
                                [](const int64_t *a) -> int64_t { return !a[0]; });
  case OpKind::BitwiseNot:
    if (isFloating(r))
      return error("not implemented for {} inputs", toString(r).str());
    return mapElements<int64_t>({self}, r, r, [r](const int64_t *a) -> int64_t {
      return r == DType::Bool ? !a[0] : ~a[0];
    });
  case OpKind::ToCopy:
    return one(castTensor(*self, r));
  default:
    return runBinary(ctx);
  }
}

} // namespace aotc::interp
