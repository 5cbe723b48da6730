// Inline f32 approximations of exp, log, tanh, sigmoid and erf as straight-line IR (selects, no
// branches or calls) so that the loop vectorizer can vectorize them. Coefficients: Cephes expf
// and logf, Cephes tanhf near 0, and N. Juffa's erff; each measured within about 1.5 ulp.
#include "codegen/cpu/Emitter.h"

#include "llvm/IR/Intrinsics.h"

#include <limits>

namespace aotc::cpu {

using namespace llvm;

static Value *cf(Builder &b, double v) { return ConstantFP::get(b.getFloatTy(), v); }
static Value *fma(Builder &b, Value *x, Value *y, Value *z) {
  return b.CreateIntrinsic(Intrinsic::fma, {x->getType()}, {x, y, z});
}
// Horner evaluation: ((c0 * x + c1) * x + c2) ...
static Value *horner(Builder &b, Value *x, std::initializer_list<double> coeffs) {
  Value *r = nullptr;
  for (double c : coeffs)
    r = r ? fma(b, r, x, cf(b, c)) : cf(b, c);
  return r;
}
static Value *inf(Builder &b) { return cf(b, std::numeric_limits<double>::infinity()); }

// 2^n for an i32 n in [-126, 127].
static Value *pow2(Builder &b, Value *n) {
  return b.CreateBitCast(b.CreateShl(b.CreateAdd(n, b.getInt32(127)), 23), b.getFloatTy());
}

Value *emitExpF32(Builder &b, Value *x) {
  // Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2; 2^n applied in two halves so that results
  // down to the subnormal range come out right. Below it (a masked score's -inf) the result is 0
  // and the lane computes exp(0): a subnormal product there cost a microcode assist per vector,
  // which made GPT-2's causal softmax 3x slower.
  Value *lowest = cf(b, -103.972084045410156);
  Value *xc =
      b.CreateSelect(b.CreateFCmpOGE(x, lowest),
                     b.CreateBinaryIntrinsic(Intrinsic::minnum, x, cf(b, 89.0)), cf(b, 0.0));
  Value *n =
      b.CreateUnaryIntrinsic(Intrinsic::roundeven, b.CreateFMul(xc, cf(b, 1.44269504088896341)));
  Value *r = fma(b, n, cf(b, -0.693359375), xc);
  r = fma(b, n, cf(b, 2.12194440e-4), r);
  Value *p = horner(b, r,
                    {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2,
                     1.6666665459E-1, 5.0000001201E-1});
  Value *y = b.CreateFAdd(fma(b, p, b.CreateFMul(r, r), r), cf(b, 1.0));
  Value *ni = b.CreateFPToSI(n, b.getInt32Ty());
  Value *n1 = b.CreateAShr(ni, 1);
  Value *n2 = b.CreateSub(ni, n1);
  y = b.CreateFMul(b.CreateFMul(y, pow2(b, n1)), pow2(b, n2));
  y = b.CreateSelect(b.CreateFCmpOGT(x, cf(b, 88.72283935546875)), inf(b), y);
  y = b.CreateSelect(b.CreateFCmpOLT(x, lowest), cf(b, 0.0), y);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, y);
}

Value *emitLogF32(Builder &b, Value *x) {
  // x = m 2^e with m in [sqrt(1/2), sqrt(2)); log(m) by Cephes' polynomial in m - 1.
  Value *tiny = b.CreateFCmpOLT(x, cf(b, 1.17549435e-38));
  Value *xs = b.CreateSelect(tiny, b.CreateFMul(x, cf(b, 8388608.0)), x);
  Value *bits = b.CreateBitCast(xs, b.getInt32Ty());
  Value *e = b.CreateSub(b.CreateLShr(bits, 23), b.getInt32(126));
  e = b.CreateSub(e, b.CreateSelect(tiny, b.getInt32(23), b.getInt32(0)));
  Value *m =
      b.CreateBitCast(b.CreateOr(b.CreateAnd(bits, b.getInt32(0x007fffff)), b.getInt32(0x3f000000)),
                      b.getFloatTy());
  Value *small = b.CreateFCmpOLT(m, cf(b, 0.707106781186547524));
  e = b.CreateSub(e, b.CreateZExt(small, b.getInt32Ty()));
  m = b.CreateSelect(small, b.CreateFSub(b.CreateFAdd(m, m), cf(b, 1.0)),
                     b.CreateFSub(m, cf(b, 1.0)));
  Value *z = b.CreateFMul(m, m);
  Value *y =
      horner(b, m,
             {7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1,
              -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1});
  y = b.CreateFMul(b.CreateFMul(y, m), z);
  Value *fe = b.CreateSIToFP(e, b.getFloatTy());
  y = fma(b, fe, cf(b, -2.12194440e-4), y);
  y = fma(b, cf(b, -0.5), z, y);
  Value *r = fma(b, fe, cf(b, 0.693359375), b.CreateFAdd(m, y));
  r = b.CreateSelect(b.CreateFCmpOEQ(x, inf(b)), inf(b), r);
  r = b.CreateSelect(b.CreateFCmpOEQ(x, cf(b, 0.0)), b.CreateFNeg(inf(b)), r);
  Value *nan = ConstantFP::getNaN(b.getFloatTy());
  return b.CreateSelect(b.CreateFCmpULT(x, cf(b, 0.0)),
                        b.CreateSelect(b.CreateFCmpUNO(x, x), x, nan), r);
}

Value *emitTanhF32(Builder &b, Value *x) {
  Value *a = b.CreateUnaryIntrinsic(Intrinsic::fabs, x);
  Value *z = b.CreateFMul(x, x);
  Value *p = horner(b, z,
                    {-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2, 1.33314422036E-1,
                     -3.33332819422E-1});
  Value *nearZero = fma(b, b.CreateFMul(p, z), x, x);
  // 1 - 2 / (e^{2|x|} + 1): no cancellation for |x| >= 0.625, and exp's overflow gives 1.
  Value *e = emitExpF32(b, b.CreateFAdd(a, a));
  Value *far = b.CreateFSub(cf(b, 1.0), b.CreateFDiv(cf(b, 2.0), b.CreateFAdd(e, cf(b, 1.0))));
  far = b.CreateBinaryIntrinsic(Intrinsic::copysign, far, x);
  return b.CreateSelect(b.CreateFCmpOLT(a, cf(b, 0.625)), nearZero, far);
}

Value *emitSigmoidF32(Builder &b, Value *x) {
  Value *e = emitExpF32(b, b.CreateFNeg(x));
  return b.CreateFDiv(cf(b, 1.0), b.CreateFAdd(cf(b, 1.0), e));
}

Value *emitErfF32(Builder &b, Value *x) {
  Value *t = b.CreateUnaryIntrinsic(Intrinsic::fabs, x);
  Value *s = b.CreateFMul(x, x);
  // |x| > 0.927734375: erf = 1 - exp(poly(|x|)), with the sign of x.
  Value *r = fma(b, cf(b, -1.72853470e-5), t, cf(b, 3.83197126e-4));
  Value *u = fma(b, cf(b, -3.88396438e-3), t, cf(b, 2.42546219e-2));
  r = fma(b, r, s, u);
  r = fma(b, r, t, cf(b, -1.06777877e-1));
  r = fma(b, r, t, cf(b, -6.34846687e-1));
  r = fma(b, r, t, cf(b, -1.28717512e-1));
  r = fma(b, r, t, b.CreateFNeg(t));
  Value *far = b.CreateFSub(cf(b, 1.0), emitExpF32(b, r));
  far = b.CreateBinaryIntrinsic(Intrinsic::copysign, far, x);
  // Otherwise an odd polynomial x + x * p(x^2).
  Value *p = horner(b, s,
                    {-5.96761703e-4, 4.99119423e-3, -2.67681349e-2, 1.12819925e-1, -3.76125336e-1,
                     1.28379166e-1});
  Value *near = fma(b, p, x, x);
  Value *res = b.CreateSelect(b.CreateFCmpOGT(t, cf(b, 0.927734375)), far, near);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, res);
}

} // namespace aotc::cpu

namespace aotc::cpu {

Value *CpuMath::emit(Builder &b, codegen::MathFn fn, ArrayRef<Value *> args) {
  using codegen::MathFn;
  Value *x = args[0];
  Type *ty = x->getType();
  bool f32 = ty->isFloatTy();
  auto call = [&](StringRef f32Name, StringRef f64Name) -> Value * {
    return b.CreateCall(ME.libm(f32 ? f32Name : f64Name, ty, args.size()), args);
  };
  switch (fn) {
  case MathFn::Exp:
    return f32 ? emitExpF32(b, x) : b.CreateUnaryIntrinsic(Intrinsic::exp, x);
  case MathFn::Log:
    return f32 ? emitLogF32(b, x) : b.CreateUnaryIntrinsic(Intrinsic::log, x);
  case MathFn::Log1p:
    return call("log1pf", "log1p");
  case MathFn::Sin:
    return call("sinf", "sin");
  case MathFn::Cos:
    return call("cosf", "cos");
  case MathFn::Tanh:
    return f32 ? emitTanhF32(b, x) : call("tanhf", "tanh");
  case MathFn::Erf:
    return f32 ? emitErfF32(b, x) : call("erff", "erf");
  case MathFn::Sigmoid:
    if (f32)
      return emitSigmoidF32(b, x);
    return b.CreateFDiv(ConstantFP::get(ty, 1.0),
                        b.CreateFAdd(ConstantFP::get(ty, 1.0),
                                     b.CreateUnaryIntrinsic(Intrinsic::exp, b.CreateFNeg(x))));
  case MathFn::Pow:
    return call("powf", "pow");
  case MathFn::Fmod:
    return b.CreateFRem(args[0], args[1]);
  }
  llvm_unreachable("unknown math function");
}

} // namespace aotc::cpu
