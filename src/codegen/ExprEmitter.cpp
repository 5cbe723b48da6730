// Kernel expressions -> LLVM values at one loop point: loads, casts, and every unary and binary
// op with torch's semantics (Python floor division and modulo, NaN-propagating min/max).
#include "codegen/ExprEmitter.h"
#include "codegen/IndexAnalysis.h"

#include "llvm/IR/Intrinsics.h"

#include <optional>

namespace aotc::codegen {

using namespace llvm;

static DType typeOf(const kir::EntryKernels &entry, kir::ExprId id) { return entry.expr(id).type; }

Value *ExprEmitter::emit(kir::ExprId id) {
  id = resolve(id);
  auto it = Cache.find(id);
  if (it != Cache.end())
    return it->second;
  Value *v = emitUncached(Entry.expr(id));
  Cache[id] = v;
  return v;
}

Value *ExprEmitter::emitUncached(const kir::Expr &e) {
  LLVMContext &c = B.getContext();
  Type *vt = valueType(c, e.type);
  auto operand = [&](unsigned i, DType as) {
    kir::ExprId id = e.operands[i];
    return convert(B, emit(id), typeOf(Entry, id), as);
  };
  switch (e.kind) {
  case kir::ExprKind::Const:
    if (isFloating(e.type))
      return convert(B, ConstantFP::get(valueType(c, DType::F64), e.fval), DType::F64, e.type);
    return ConstantInt::get(vt, e.ival, /*IsSigned=*/true);
  case kir::ExprKind::LoopVar:
    assert(e.index < loopVars.size() && loopVars[e.index] && "loop variable out of scope");
    return convert(B, loopVars[e.index], DType::I64, e.type);
  case kir::ExprKind::Dim:
    return convert(B, sym(e.sym), DType::I64, e.type);
  case kir::ExprKind::Load: {
    const kir::Buffer &buf = Entry.buffers[e.index];
    Value *off = operand(0, DType::I64);
    return convert(B, loadElement(B, Buffers[e.index], off, buf.dtype), buf.dtype, e.type);
  }
  case kir::ExprKind::Unary: {
    // Logical ops and float functions of integers compute in the result type.
    DType in = typeOf(Entry, e.operands[0]);
    DType t = isFloating(e.type) || e.unary == kir::UnaryOp::Not ? e.type : in;
    return convert(B, unary(e.unary, operand(0, t), t), t, e.type);
  }
  case kir::ExprKind::Binary: {
    DType l = typeOf(Entry, e.operands[0]), r = typeOf(Entry, e.operands[1]);
    DType t = e.type;
    switch (e.binary) {
    case kir::BinaryOp::Eq:
    case kir::BinaryOp::Ne:
    case kir::BinaryOp::Lt:
    case kir::BinaryOp::Le:
    case kir::BinaryOp::Gt:
    case kir::BinaryOp::Ge:
      t = l == r ? l : promoteTypes(l, r);
      break;
    case kir::BinaryOp::And:
    case kir::BinaryOp::Or:
      t = DType::Bool;
      break;
    default:
      break;
    }
    Value *v = binary(e.binary, operand(0, t), operand(1, t), t);
    DType produced = v->getType()->isIntegerTy(1) ? DType::Bool : t;
    return convert(B, v, produced, e.type);
  }
  case kir::ExprKind::Select:
    if (lazySelects && isLoadingSelect(Entry, e))
      return branchingSelect(e, operand(0, DType::Bool));
    return B.CreateSelect(operand(0, DType::Bool), operand(1, e.type), operand(2, e.type));
  case kir::ExprKind::Cast:
    return operand(0, e.type);
  case kir::ExprKind::ReduceValue:
    assert(e.index < reduceValues.size() && reduceValues[e.index] && "reduction not computed");
    return convert(B, reduceValues[e.index], reduceTypes[e.index], e.type);
  case kir::ExprKind::Acc:
    assert(acc && "Acc outside a GEMM epilogue");
    return convert(B, acc, DType::F32, e.type);
  case kir::ExprKind::CheckIndex:
    return checkIndex(e);
  }
  llvm_unreachable("unknown expression kind");
}

// cond ? arm 1 : arm 2 with each arm in its own block. What an arm emits does not dominate the
// join, so the cache forgets it.
Value *ExprEmitter::branchingSelect(const kir::Expr &e, Value *cond) {
  Function *f = B.GetInsertBlock()->getParent();
  LLVMContext &c = f->getContext();
  BasicBlock *from = B.GetInsertBlock();
  assert(B.GetInsertPoint() == from->end() && "a branch ends the block");
  BasicBlock *join = BasicBlock::Create(c, "select.join", f);
  PHINode *phi = PHINode::Create(valueType(c, e.type), 2, "select");
  auto arm = [&](unsigned i, const Twine &name) {
    BasicBlock *bb = BasicBlock::Create(c, name, f, join);
    B.SetInsertPoint(bb);
    DenseMap<kir::ExprId, Value *> before = Cache;
    kir::ExprId id = e.operands[i];
    Value *v = convert(B, emit(id), Entry.expr(id).type, e.type);
    Cache = std::move(before);
    phi->addIncoming(v, B.GetInsertBlock());
    B.CreateBr(join);
    return bb;
  };
  BasicBlock *onTrue = arm(1, "select.true");
  BasicBlock *onFalse = arm(2, "select.false");
  B.SetInsertPoint(from);
  B.CreateCondBr(cond, onTrue, onFalse);
  B.SetInsertPoint(join);
  B.Insert(phi);
  return phi;
}

// The number of inner points of stage `s` from inner loop `j` on, when all those extents are
// constants of at most `most` each.
static std::optional<int64_t> constantPoints(const kir::Stage &s, unsigned j, int64_t most) {
  int64_t points = 1;
  for (unsigned d = j; d < s.inner.size(); ++d) {
    std::optional<int64_t> e = s.inner[d].constant();
    if (!e || *e < 0 || *e > most)
      return std::nullopt;
    points *= *e;
  }
  return points;
}

bool ExprEmitter::unrollsWindow(const kir::Stage &s, int64_t maxUnrolledPoints) {
  if (s.inner.empty())
    return true;
  std::optional<int64_t> points =
      maxUnrolledPoints ? constantPoints(s, 0, maxUnrolledPoints) : std::nullopt;
  return points && *points <= maxUnrolledPoints;
}

void ExprEmitter::innerLoops(const kir::Stage &s, unsigned j, Value *lin, unsigned firstInnerLoop,
                             int64_t maxUnrolledPoints, function_ref<void(Value *)> body) {
  if (j == s.inner.size()) {
    clearCache();
    body(lin);
    clearCache();
    return;
  }
  // A small constant window (pooling, a direct convolution's taps) is unrolled, so that the
  // outer loop becomes the innermost one and vectorizes.
  if (std::optional<int64_t> points =
          maxUnrolledPoints ? constantPoints(s, j, maxUnrolledPoints) : std::nullopt;
      points && *points <= maxUnrolledPoints) {
    int64_t ext = *s.inner[j].constant();
    for (int64_t v = 0; v < ext; ++v) {
      loopVars[firstInnerLoop + j] = B.getInt64(v);
      innerLoops(s, j + 1, B.CreateAdd(B.CreateMul(lin, B.getInt64(ext)), B.getInt64(v)),
                 firstInnerLoop, maxUnrolledPoints, body);
    }
    return;
  }
  Value *ext = sym(s.inner[j]);
  emitLoop(
      B, B.getInt64(0), ext,
      [&](Value *v) {
        loopVars[firstInnerLoop + j] = v;
        innerLoops(s, j + 1, B.CreateAdd(B.CreateMul(lin, ext), v), firstInnerLoop,
                   maxUnrolledPoints, body);
      },
      "s" + Twine(j));
}

void ExprEmitter::emitStage(unsigned si, const kir::Stage &s, unsigned firstInnerLoop,
                            int64_t maxUnrolledPoints) {
  auto forEachPoint = [&](function_ref<void(Value *)> body) {
    innerLoops(s, 0, B.getInt64(0), firstInnerLoop, maxUnrolledPoints, body);
  };
  if (s.kind == kir::Stage::Kind::Store) {
    const kir::Buffer &buf = Entry.buffers[s.buffer];
    forEachPoint([&](Value *) {
      Value *v = convert(B, emit(s.value), Entry.expr(s.value).type, buf.dtype);
      Value *off = convert(B, emit(s.offset), Entry.expr(s.offset).type, DType::I64);
      storeElement(B, v, Buffers[s.buffer], off, buf.dtype);
    });
    return;
  }
  DType at = s.accType;
  Type *ty = valueType(B.getContext(), at);
  bool arg = s.reduce == kir::ReduceOp::ArgMax || s.reduce == kir::ReduceOp::ArgMin;
  AllocaInst *acc = entryAlloca(B, ty, "acc");
  AllocaInst *accIdx = arg ? entryAlloca(B, B.getInt64Ty(), "acc.idx") : nullptr;
  B.CreateStore(reduceIdentity(B, s.reduce, at), acc);
  if (arg)
    B.CreateStore(B.getInt64(0), accIdx);
  forEachPoint([&](Value *lin) {
    Value *v = convert(B, emit(s.value), Entry.expr(s.value).type, at);
    emitReduceStep(B, s.reduce, at, acc, accIdx, v, lin);
  });
  if (arg) {
    reduceValues[si] = B.CreateLoad(B.getInt64Ty(), accIdx, "argidx");
    reduceTypes[si] = DType::I64;
  } else {
    reduceValues[si] = B.CreateLoad(ty, acc, "reduced");
    reduceTypes[si] = at;
  }
}

Value *ExprEmitter::checkIndex(const kir::Expr &e) {
  Value *i = convert(B, emit(e.operands[0]), typeOf(Entry, e.operands[0]), DType::I64);
  Value *size = sym(e.sym);
  // One unsigned compare also catches negative indices.
  Value *ok = B.CreateICmpULT(i, size, "index.ok");
  Value *clamped = B.CreateBinaryIntrinsic(
      Intrinsic::smax,
      B.CreateBinaryIntrinsic(Intrinsic::smin, i, B.CreateSub(size, B.getInt64(1))), B.getInt64(0));
  Constant *check = B.getInt32(e.index);
  if (failedCheck) {
    // A select on a local keeps the loop branch-free; the kernel flushes it once at its end.
    Value *cur = B.CreateLoad(B.getInt32Ty(), failedCheck);
    B.CreateStore(B.CreateSelect(ok, cur, check), failedCheck);
  } else if (Buffers.size() > Entry.buffers.size()) {
    Function *f = B.GetInsertBlock()->getParent();
    BasicBlock *bad = BasicBlock::Create(B.getContext(), "index.bad", f);
    BasicBlock *cont = BasicBlock::Create(B.getContext(), "index.cont", f);
    B.CreateCondBr(ok, cont, bad);
    B.SetInsertPoint(bad);
    storeCheckFlag(B, Buffers[Entry.buffers.size()], check);
    B.CreateBr(cont);
    B.SetInsertPoint(cont);
  }
  return clamped;
}

void storeCheckFlag(Builder &b, Value *flag, Value *check) {
  // Every writer stores a nonzero check number: racing stores are benign, any one is reported.
  StoreInst *st = b.CreateStore(check, flag);
  st->setAtomic(AtomicOrdering::Monotonic);
  st->setAlignment(Align(4));
}

static bool isUnsignedType(DType t) { return t == DType::U8 || t == DType::Bool; }

Value *ExprEmitter::unary(kir::UnaryOp op, Value *x, DType t) {
  Type *ty = x->getType();
  auto intrinsic = [&](Intrinsic::ID id) { return B.CreateUnaryIntrinsic(id, x); };
  auto math = [&](MathFn fn) { return Math.emit(B, fn, {x}); };
  if (!isFloating(t)) {
    switch (op) {
    case kir::UnaryOp::Neg:
      return B.CreateNeg(x);
    case kir::UnaryOp::Abs:
      return isUnsignedType(t) ? x : B.CreateBinaryIntrinsic(Intrinsic::abs, x, B.getFalse());
    case kir::UnaryOp::Not:
    case kir::UnaryOp::BitNot:
      return B.CreateNot(x);
    case kir::UnaryOp::Floor:
    case kir::UnaryOp::Ceil:
    case kir::UnaryOp::Round:
      return x;
    default:
      // A float function of an integer: compute in f32.
      return convert(B, unary(op, convert(B, x, t, DType::F32), DType::F32), DType::F32, t);
    }
  }
  switch (op) {
  case kir::UnaryOp::Neg:
    return B.CreateFNeg(x);
  case kir::UnaryOp::Abs:
    return intrinsic(Intrinsic::fabs);
  case kir::UnaryOp::Exp:
    return math(MathFn::Exp);
  case kir::UnaryOp::Log:
    return math(MathFn::Log);
  case kir::UnaryOp::Log1p:
    return math(MathFn::Log1p);
  case kir::UnaryOp::Sqrt:
    return intrinsic(Intrinsic::sqrt);
  case kir::UnaryOp::Rsqrt:
    return B.CreateFDiv(ConstantFP::get(ty, 1.0), intrinsic(Intrinsic::sqrt));
  case kir::UnaryOp::Reciprocal:
    return B.CreateFDiv(ConstantFP::get(ty, 1.0), x);
  case kir::UnaryOp::Sin:
    return math(MathFn::Sin);
  case kir::UnaryOp::Cos:
    return math(MathFn::Cos);
  case kir::UnaryOp::Tanh:
    return math(MathFn::Tanh);
  case kir::UnaryOp::Erf:
    return math(MathFn::Erf);
  case kir::UnaryOp::Sigmoid:
    return math(MathFn::Sigmoid);
  case kir::UnaryOp::Floor:
    return intrinsic(Intrinsic::floor);
  case kir::UnaryOp::Ceil:
    return intrinsic(Intrinsic::ceil);
  case kir::UnaryOp::Round:
    return intrinsic(Intrinsic::roundeven);
  case kir::UnaryOp::Not:
    return B.CreateFCmpOEQ(x, ConstantFP::get(ty, 0.0));
  case kir::UnaryOp::BitNot:
    break;
  }
  llvm_unreachable("unknown unary op");
}

Value *ExprEmitter::binary(kir::BinaryOp op, Value *x, Value *y, DType t) {
  Type *ty = x->getType();
  if (isFloating(t)) {
    switch (op) {
    case kir::BinaryOp::Add:
      return B.CreateFAdd(x, y);
    case kir::BinaryOp::Sub:
      return B.CreateFSub(x, y);
    case kir::BinaryOp::Mul:
      return B.CreateFMul(x, y);
    case kir::BinaryOp::Div:
      return B.CreateFDiv(x, y);
    case kir::BinaryOp::FloorDiv:
      return B.CreateUnaryIntrinsic(Intrinsic::floor, B.CreateFDiv(x, y));
    case kir::BinaryOp::Mod: {
      // fmod, then Python's sign rule: a nonzero remainder takes the divisor's sign, and a zero
      // one the divisor's sign too.
      Value *r = Math.emit(B, MathFn::Fmod, {x, y});
      Value *zero = ConstantFP::get(ty, 0.0);
      Value *differ = B.CreateXor(B.CreateFCmpOLT(r, zero), B.CreateFCmpOLT(y, zero));
      Value *fix = B.CreateAnd(B.CreateFCmpONE(r, zero), differ);
      r = B.CreateSelect(fix, B.CreateFAdd(r, y), r);
      Value *signedZero = B.CreateBinaryIntrinsic(Intrinsic::copysign, zero, y);
      return B.CreateSelect(B.CreateFCmpOEQ(r, zero), signedZero, r);
    }
    case kir::BinaryOp::Pow:
      if (auto *cy = dyn_cast<ConstantFP>(y)) {
        if (cy->isExactlyValue(1.0))
          return x;
        if (cy->isExactlyValue(2.0))
          return B.CreateFMul(x, x);
        if (cy->isExactlyValue(3.0))
          return B.CreateFMul(B.CreateFMul(x, x), x);
      }
      return Math.emit(B, MathFn::Pow, {x, y});
    case kir::BinaryOp::Min:
      return B.CreateBinaryIntrinsic(Intrinsic::minimum, x, y);
    case kir::BinaryOp::Max:
      return B.CreateBinaryIntrinsic(Intrinsic::maximum, x, y);
    case kir::BinaryOp::Eq:
      return B.CreateFCmpOEQ(x, y);
    case kir::BinaryOp::Ne:
      return B.CreateFCmpUNE(x, y);
    case kir::BinaryOp::Lt:
      return B.CreateFCmpOLT(x, y);
    case kir::BinaryOp::Le:
      return B.CreateFCmpOLE(x, y);
    case kir::BinaryOp::Gt:
      return B.CreateFCmpOGT(x, y);
    case kir::BinaryOp::Ge:
      return B.CreateFCmpOGE(x, y);
    case kir::BinaryOp::And:
    case kir::BinaryOp::Or:
    case kir::BinaryOp::BitAnd:
    case kir::BinaryOp::BitOr:
    case kir::BinaryOp::BitXor:
    case kir::BinaryOp::Shl:
    case kir::BinaryOp::Shr:
      break;
    }
    llvm_unreachable("logical or bitwise op on floats");
  }
  bool u = isUnsignedType(t);
  switch (op) {
  case kir::BinaryOp::Add:
    return B.CreateAdd(x, y);
  case kir::BinaryOp::Sub:
    return B.CreateSub(x, y);
  case kir::BinaryOp::Mul:
    return B.CreateMul(x, y);
  case kir::BinaryOp::Div: {
    // Truncating division; a zero divisor gives 0 rather than a trap.
    Value *zero = ConstantInt::get(ty, 0);
    Value *isZero = B.CreateICmpEQ(y, zero);
    Value *d = B.CreateSelect(isZero, ConstantInt::get(ty, 1), y);
    return B.CreateSelect(isZero, zero, u ? B.CreateUDiv(x, d) : B.CreateSDiv(x, d));
  }
  case kir::BinaryOp::FloorDiv:
    if (u) {
      Value *zero = ConstantInt::get(ty, 0);
      Value *isZero = B.CreateICmpEQ(y, zero);
      Value *d = B.CreateSelect(isZero, ConstantInt::get(ty, 1), y);
      return B.CreateSelect(isZero, zero, B.CreateUDiv(x, d));
    }
    return emitFloorDivI(B, x, y);
  case kir::BinaryOp::Mod:
    if (u) {
      Value *zero = ConstantInt::get(ty, 0);
      Value *isZero = B.CreateICmpEQ(y, zero);
      Value *d = B.CreateSelect(isZero, ConstantInt::get(ty, 1), y);
      return B.CreateSelect(isZero, zero, B.CreateURem(x, d));
    }
    return emitModI(B, x, y);
  case kir::BinaryOp::Pow: {
    // Exact for results below 2^53, which is all an integer pow can hold without overflow.
    Type *f64 = B.getDoubleTy();
    Value *fx = u ? B.CreateUIToFP(x, f64) : B.CreateSIToFP(x, f64);
    Value *fy = u ? B.CreateUIToFP(y, f64) : B.CreateSIToFP(y, f64);
    Value *p = Math.emit(B, MathFn::Pow, {fx, fy});
    return B.CreateTrunc(B.CreateFPToSI(p, B.getInt64Ty()), ty);
  }
  case kir::BinaryOp::Min:
    return B.CreateBinaryIntrinsic(u ? Intrinsic::umin : Intrinsic::smin, x, y);
  case kir::BinaryOp::Max:
    return B.CreateBinaryIntrinsic(u ? Intrinsic::umax : Intrinsic::smax, x, y);
  case kir::BinaryOp::Eq:
    return B.CreateICmpEQ(x, y);
  case kir::BinaryOp::Ne:
    return B.CreateICmpNE(x, y);
  case kir::BinaryOp::Lt:
    return u ? B.CreateICmpULT(x, y) : B.CreateICmpSLT(x, y);
  case kir::BinaryOp::Le:
    return u ? B.CreateICmpULE(x, y) : B.CreateICmpSLE(x, y);
  case kir::BinaryOp::Gt:
    return u ? B.CreateICmpUGT(x, y) : B.CreateICmpSGT(x, y);
  case kir::BinaryOp::Ge:
    return u ? B.CreateICmpUGE(x, y) : B.CreateICmpSGE(x, y);
  case kir::BinaryOp::And:
    return B.CreateAnd(x, y);
  case kir::BinaryOp::Or:
  case kir::BinaryOp::BitOr:
    return B.CreateOr(x, y);
  case kir::BinaryOp::BitAnd:
    return B.CreateAnd(x, y);
  case kir::BinaryOp::BitXor:
    return B.CreateXor(x, y);
  case kir::BinaryOp::Shl:
  case kir::BinaryOp::Shr: {
    // LLVM's shifts are poison from the type's width on; ATen gives 0, or the sign fill to the
    // right. One unsigned compare also catches negative amounts.
    unsigned width = ty->getIntegerBitWidth();
    Value *inRange = B.CreateICmpULT(y, ConstantInt::get(ty, width));
    Value *amount = B.CreateSelect(inRange, y, ConstantInt::get(ty, width - 1));
    if (op == kir::BinaryOp::Shl)
      return B.CreateSelect(inRange, B.CreateShl(x, amount), ConstantInt::get(ty, 0));
    if (u)
      return B.CreateSelect(inRange, B.CreateLShr(x, amount), ConstantInt::get(ty, 0));
    return B.CreateAShr(x, amount);
  }
  }
  llvm_unreachable("unknown binary op");
}

} // namespace aotc::codegen
