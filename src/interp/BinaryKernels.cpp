// Kernels of the pointwise ops with several operands: arithmetic (tensor and scalar overloads),
// comparisons, logic, bitwise ops and shifts, where, addcmul and lerp, with broadcasting and
// PyTorch's type promotion.
#include "Kernels.h"

#include <cmath>
#include <limits>

namespace aotc::interp {

namespace {

constexpr double NaN = std::numeric_limits<double>::quiet_NaN();

enum class BinOp { Add, Sub, Mul, Div, DivTrunc, DivFloor, Rem, Pow, Max, Min };

// ATen's div_floor for floating types: exact where floor(a / b) would round wrongly.
double floorDivide(double a, double b) {
  if (b == 0)
    return a / b;
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0))
    div -= 1;
  if (div == 0)
    return std::copysign(0.0, a / b);
  double floored = std::floor(div);
  if (div - floored > 0.5)
    floored += 1;
  return floored;
}

// Python's remainder: the result takes the sign of the divisor.
double remainderFloat(double a, double b) {
  double mod = std::fmod(a, b);
  if (mod != 0 && (b < 0) != (mod < 0))
    mod += b;
  return mod;
}

double applyFloat(BinOp op, double a, double b, double alpha) {
  switch (op) {
  case BinOp::Add:
    return a + alpha * b;
  case BinOp::Sub:
    return a - alpha * b;
  case BinOp::Mul:
    return a * b;
  case BinOp::Div:
    return a / b;
  case BinOp::DivTrunc:
    return std::trunc(a / b);
  case BinOp::DivFloor:
    return floorDivide(a, b);
  case BinOp::Rem:
    return remainderFloat(a, b);
  case BinOp::Pow:
    return std::pow(a, b);
  case BinOp::Max:
    return std::isnan(a) || std::isnan(b) ? NaN : std::max(a, b);
  case BinOp::Min:
    return std::isnan(a) || std::isnan(b) ? NaN : std::min(a, b);
  }
  return NaN;
}

// Divisions by zero are rejected before this runs; INT64_MIN / -1 wraps.
int64_t applyInt(BinOp op, int64_t a, int64_t b, int64_t alpha) {
  switch (op) {
  case BinOp::Add:
    return wrapAdd(a, wrapMul(alpha, b));
  case BinOp::Sub:
    return wrapSub(a, wrapMul(alpha, b));
  case BinOp::Mul:
    return wrapMul(a, b);
  case BinOp::Div:
  case BinOp::DivTrunc:
    return b == -1 ? wrapSub(0, a) : a / b;
  case BinOp::DivFloor: {
    if (b == -1)
      return wrapSub(0, a);
    int64_t q = a / b;
    return a % b != 0 && (a < 0) != (b < 0) ? q - 1 : q;
  }
  case BinOp::Rem: {
    if (b == -1)
      return 0;
    int64_t m = a % b;
    return m != 0 && (m < 0) != (b < 0) ? m + b : m;
  }
  case BinOp::Pow:
    return powInteger(a, b);
  case BinOp::Max:
    return std::max(a, b);
  case BinOp::Min:
    return std::min(a, b);
  }
  return 0;
}

bool isDivision(BinOp op) {
  return op == BinOp::Div || op == BinOp::DivTrunc || op == BinOp::DivFloor || op == BinOp::Rem;
}

// `a op b` (with `alpha` scaling b for add and sub), computed in the result dtype.
KernelResult binary(const KernelContext &ctx, BinOp op, const HostTensor &a, const HostTensor &b,
                    std::optional<Scalar> alpha = std::nullopt) {
  DType r = ctx.resultDType();
  if (r == DType::Bool && op == BinOp::Sub)
    return error("subtraction of bool tensors is not supported; use aten.logical_xor");
  if (isFloating(r)) {
    double al = alpha ? scalarAsDouble(*alpha, r) : 1.0;
    return mapElements<double>({&a, &b}, r, r,
                               [&](const double *v) { return applyFloat(op, v[0], v[1], al); });
  }
  if (alpha && alpha->isFloat())
    return error("alpha must not be a floating-point number for integer inputs");
  if (isDivision(op))
    for (int64_t v : readInts(b, r))
      if (v == 0)
        return error("integer division by zero");
  int64_t al = alpha ? scalarAsInt(*alpha, r) : 1;
  return mapElements<int64_t>({&a, &b}, r, r,
                              [&](const int64_t *v) { return applyInt(op, v[0], v[1], al); });
}

enum class CmpOp { EQ, NE, LT, LE, GT, GE };

template <typename T> bool compare(CmpOp op, T a, T b) {
  switch (op) {
  case CmpOp::EQ:
    return a == b;
  case CmpOp::NE:
    return a != b;
  case CmpOp::LT:
    return a < b;
  case CmpOp::LE:
    return a <= b;
  case CmpOp::GT:
    return a > b;
  case CmpOp::GE:
    return a >= b;
  }
  return false;
}

// Comparisons run in the promoted dtype of both sides: an i64 tensor against 0.5 compares in f32.
KernelResult comparison(const KernelContext &ctx, CmpOp op, const HostTensor &a,
                        const HostTensor &b, DType common) {
  DType r = ctx.resultDType();
  if (isFloating(common))
    return mapElements<double>({&a, &b}, common, r,
                               [&](const double *v) -> double { return compare(op, v[0], v[1]); });
  return mapElements<int64_t>({&a, &b}, common, r,
                              [&](const int64_t *v) -> int64_t { return compare(op, v[0], v[1]); });
}

llvm::Expected<Scalar> requiredScalar(const KernelContext &ctx, llvm::StringRef name) {
  auto s = ctx.getScalar(name);
  if (!s)
    return s.takeError();
  if (!*s)
    return error("attribute '{}' is missing", name.str());
  return **s;
}

KernelResult scalarOp(const KernelContext &ctx, BinOp op, bool reversed, bool withAlpha) {
  auto other = requiredScalar(ctx, "other");
  if (!other)
    return other.takeError();
  std::optional<Scalar> alpha;
  if (withAlpha) {
    auto a = requiredScalar(ctx, "alpha");
    if (!a)
      return a.takeError();
    alpha = *a;
  }
  HostTensor s = scalarTensor(*other);
  const HostTensor &self = *ctx.tensor("self");
  return reversed ? binary(ctx, op, s, self, alpha) : binary(ctx, op, self, s, alpha);
}

KernelResult tensorCompare(const KernelContext &ctx, CmpOp op) {
  const HostTensor *self = ctx.tensor("self"), *other = ctx.tensor("other");
  auto common = ctx.commonDType({self, other});
  if (!common)
    return common.takeError();
  return comparison(ctx, op, *self, *other, *common);
}

KernelResult scalarCompare(const KernelContext &ctx, CmpOp op) {
  auto other = requiredScalar(ctx, "other");
  if (!other)
    return other.takeError();
  const HostTensor *self = ctx.tensor("self");
  auto common = ctx.commonDType({self}, {"other"});
  if (!common)
    return common.takeError();
  return comparison(ctx, op, *self, scalarTensor(*other), *common);
}

KernelResult logical(const KernelContext &ctx, bool isAnd) {
  return mapElements<int64_t>(
      {ctx.tensor("self"), ctx.tensor("other")}, DType::Bool, ctx.resultDType(),
      [=](const int64_t *v) -> int64_t { return isAnd ? v[0] && v[1] : v[0] || v[1]; });
}

enum class BitOp { And, Or, Xor, Shl, Shr };

// ATen's CPU semantics in the result dtype: a shift by a negative amount or by the dtype's width
// or more gives 0 to the left, and to the right the sign fill (signed) or 0 (unsigned).
int64_t applyBits(BitOp op, DType t, int64_t a, int64_t b) {
  int64_t width = static_cast<int64_t>(byteSize(t)) * 8;
  switch (op) {
  case BitOp::And:
    return a & b;
  case BitOp::Or:
    return a | b;
  case BitOp::Xor:
    return a ^ b;
  case BitOp::Shl:
    return b < 0 || b >= width ? 0 : static_cast<int64_t>(static_cast<uint64_t>(a) << b);
  case BitOp::Shr:
    // Values of a narrow signed dtype are held sign-extended, so shifting the i64 by up to 63 is
    // the arithmetic shift of the narrow value; unsigned values are held non-negative.
    if (b < 0 || b >= width)
      return isSigned(t) ? (a < 0 ? -1 : 0) : 0;
    return a >> b;
  }
  return 0;
}

KernelResult bitwise(const KernelContext &ctx, BitOp op, const HostTensor &a, const HostTensor &b) {
  DType r = ctx.resultDType();
  if (isFloating(r))
    return error("not implemented for {} inputs", toString(r).str());
  return mapElements<int64_t>({&a, &b}, r, r,
                              [=](const int64_t *v) { return applyBits(op, r, v[0], v[1]); });
}

KernelResult bitwiseTensor(const KernelContext &ctx, BitOp op) {
  return bitwise(ctx, op, *ctx.tensor("self"), *ctx.tensor("other"));
}

KernelResult bitwiseScalar(const KernelContext &ctx, BitOp op) {
  auto other = requiredScalar(ctx, "other");
  if (!other)
    return other.takeError();
  if (other->isFloat())
    return error("not implemented for a floating-point number");
  return bitwise(ctx, op, *ctx.tensor("self"), scalarTensor(*other));
}

KernelResult where(const KernelContext &ctx) {
  DType r = ctx.resultDType();
  llvm::SmallVector<const HostTensor *, 3> in = {ctx.tensor("condition"), ctx.tensor("self"),
                                                 ctx.tensor("other")};
  // The condition is bool, so casting it to the result dtype keeps it 0 or 1.
  if (isFloating(r))
    return mapElements<double>(in, r, r, [](const double *v) { return v[0] != 0 ? v[1] : v[2]; });
  return mapElements<int64_t>(in, r, r, [](const int64_t *v) { return v[0] != 0 ? v[1] : v[2]; });
}

KernelResult addcmul(const KernelContext &ctx) {
  auto value = requiredScalar(ctx, "value");
  if (!value)
    return value.takeError();
  DType r = ctx.resultDType();
  llvm::SmallVector<const HostTensor *, 3> in = {ctx.tensor("self"), ctx.tensor("tensor1"),
                                                 ctx.tensor("tensor2")};
  if (isFloating(r)) {
    double v = scalarAsDouble(*value, r);
    return mapElements<double>(in, r, r, [&](const double *a) { return a[0] + v * a[1] * a[2]; });
  }
  if (value->isFloat())
    return error("value must not be a floating-point number for integer inputs");
  int64_t v = scalarAsInt(*value, r);
  return mapElements<int64_t>(
      in, r, r, [&](const int64_t *a) { return wrapAdd(a[0], wrapMul(v, wrapMul(a[1], a[2]))); });
}

KernelResult lerp(const KernelContext &ctx) {
  DType r = ctx.resultDType();
  if (!isFloating(r))
    return error("needs floating-point tensors, got {}", toString(r).str());
  // ATen's formula, exact at both ends of the interval.
  return mapElements<double>(
      {ctx.tensor("self"), ctx.tensor("end"), ctx.tensor("weight")}, r, r, [](const double *v) {
        double self = v[0], end = v[1], w = v[2];
        return std::fabs(w) < 0.5 ? self + w * (end - self) : end - (end - self) * (1 - w);
      });
}

} // namespace

KernelResult runBinary(const KernelContext &ctx) {
  const HostTensor *self = ctx.tensor("self");
  auto tensorOp = [&](BinOp op, llvm::StringRef otherName, bool withAlpha) -> KernelResult {
    std::optional<Scalar> alpha;
    if (withAlpha) {
      auto a = requiredScalar(ctx, "alpha");
      if (!a)
        return a.takeError();
      alpha = *a;
    }
    return binary(ctx, op, *self, *ctx.tensor(otherName), alpha);
  };
  switch (ctx.kind()) {
  case OpKind::AddTensor:
    return tensorOp(BinOp::Add, "other", true);
  case OpKind::SubTensor:
    return tensorOp(BinOp::Sub, "other", true);
  case OpKind::MulTensor:
    return tensorOp(BinOp::Mul, "other", false);
  case OpKind::DivTensor:
    return tensorOp(BinOp::Div, "other", false);
  case OpKind::DivTensorMode: {
    std::string mode = ctx.getStr("rounding_mode");
    if (mode.empty())
      return tensorOp(BinOp::Div, "other", false);
    if (mode != "trunc" && mode != "floor")
      return error("rounding_mode must be \"trunc\" or \"floor\", got \"{}\"", mode);
    return tensorOp(mode == "trunc" ? BinOp::DivTrunc : BinOp::DivFloor, "other", false);
  }
  case OpKind::Remainder:
    return tensorOp(BinOp::Rem, "other", false);
  case OpKind::PowTensor:
    return tensorOp(BinOp::Pow, "exponent", false);
  case OpKind::Maximum:
    return tensorOp(BinOp::Max, "other", false);
  case OpKind::Minimum:
    return tensorOp(BinOp::Min, "other", false);
  case OpKind::AddScalar:
    return scalarOp(ctx, BinOp::Add, false, true);
  case OpKind::SubScalar:
    return scalarOp(ctx, BinOp::Sub, false, true);
  case OpKind::RsubScalar:
    return scalarOp(ctx, BinOp::Sub, true, true);
  case OpKind::MulScalar:
    return scalarOp(ctx, BinOp::Mul, false, false);
  case OpKind::DivScalar:
    return scalarOp(ctx, BinOp::Div, false, false);
  case OpKind::EqTensor:
    return tensorCompare(ctx, CmpOp::EQ);
  case OpKind::NeTensor:
    return tensorCompare(ctx, CmpOp::NE);
  case OpKind::LtTensor:
    return tensorCompare(ctx, CmpOp::LT);
  case OpKind::LeTensor:
    return tensorCompare(ctx, CmpOp::LE);
  case OpKind::GtTensor:
    return tensorCompare(ctx, CmpOp::GT);
  case OpKind::GeTensor:
    return tensorCompare(ctx, CmpOp::GE);
  case OpKind::EqScalar:
    return scalarCompare(ctx, CmpOp::EQ);
  case OpKind::NeScalar:
    return scalarCompare(ctx, CmpOp::NE);
  case OpKind::LtScalar:
    return scalarCompare(ctx, CmpOp::LT);
  case OpKind::LeScalar:
    return scalarCompare(ctx, CmpOp::LE);
  case OpKind::GtScalar:
    return scalarCompare(ctx, CmpOp::GT);
  case OpKind::GeScalar:
    return scalarCompare(ctx, CmpOp::GE);
  case OpKind::LogicalAnd:
    return logical(ctx, true);
  case OpKind::LogicalOr:
    return logical(ctx, false);
  case OpKind::BitwiseAndTensor:
    return bitwiseTensor(ctx, BitOp::And);
  case OpKind::BitwiseOrTensor:
    return bitwiseTensor(ctx, BitOp::Or);
  case OpKind::BitwiseXorTensor:
    return bitwiseTensor(ctx, BitOp::Xor);
  case OpKind::BitwiseLeftShiftTensor:
    return bitwiseTensor(ctx, BitOp::Shl);
  case OpKind::BitwiseRightShiftTensor:
    return bitwiseTensor(ctx, BitOp::Shr);
  case OpKind::BitwiseAndScalar:
    return bitwiseScalar(ctx, BitOp::And);
  case OpKind::BitwiseOrScalar:
    return bitwiseScalar(ctx, BitOp::Or);
  case OpKind::BitwiseXorScalar:
    return bitwiseScalar(ctx, BitOp::Xor);
  case OpKind::BitwiseLeftShiftScalar:
    return bitwiseScalar(ctx, BitOp::Shl);
  case OpKind::BitwiseRightShiftScalar:
    return bitwiseScalar(ctx, BitOp::Shr);
  case OpKind::Where:
    return where(ctx);
  case OpKind::Addcmul:
    return addcmul(ctx);
  case OpKind::Lerp:
    return lerp(ctx);
  default:
    return error("no pointwise kernel for this op");
  }
}

} // namespace aotc::interp
