// The scalar IR building blocks both LLVM backends use: symbolic integers, loops, dtype
// conversions (f16/bf16 storage), element loads and stores, reduction steps.
#include "codegen/ExprEmitter.h"

#include "llvm/IR/Intrinsics.h"

#include <limits>

namespace aotc::codegen {

using namespace llvm;

// Python floor division and modulo; a zero divisor yields 0 rather than a trap.
Value *emitFloorDivI(Builder &b, Value *x, Value *y) {
  Value *zero = ConstantInt::get(y->getType(), 0);
  Value *isZero = b.CreateICmpEQ(y, zero);
  Value *d = b.CreateSelect(isZero, ConstantInt::get(y->getType(), 1), y);
  Value *q = b.CreateSDiv(x, d);
  Value *r = b.CreateSRem(x, d);
  Value *adjust = b.CreateAnd(b.CreateICmpNE(r, zero), b.CreateICmpSLT(b.CreateXor(r, d), zero));
  q = b.CreateSub(q, b.CreateZExt(adjust, q->getType()));
  return b.CreateSelect(isZero, zero, q);
}

Value *emitModI(Builder &b, Value *x, Value *y) {
  Value *zero = ConstantInt::get(y->getType(), 0);
  Value *isZero = b.CreateICmpEQ(y, zero);
  Value *d = b.CreateSelect(isZero, ConstantInt::get(y->getType(), 1), y);
  Value *r = b.CreateSRem(x, d);
  Value *adjust = b.CreateAnd(b.CreateICmpNE(r, zero), b.CreateICmpSLT(b.CreateXor(r, d), zero));
  r = b.CreateSelect(adjust, b.CreateAdd(r, d), r);
  return b.CreateSelect(isZero, zero, r);
}

static Value *emitAtom(Builder &b, const SymAtom &atom, const StringMap<unsigned> &symIndex,
                       ArrayRef<Value *> syms) {
  auto arg = [&](unsigned i) { return emitSym(b, atom.args[i], symIndex, syms); };
  switch (atom.kind) {
  case SymAtom::Kind::Symbol: {
    auto it = symIndex.find(atom.name);
    assert(it != symIndex.end() && "symbol is not a root symbol of the entry");
    return syms[it->second];
  }
  case SymAtom::Kind::FloorDiv:
    return emitFloorDivI(b, arg(0), arg(1));
  case SymAtom::Kind::Mod:
    return emitModI(b, arg(0), arg(1));
  case SymAtom::Kind::Min:
  case SymAtom::Kind::Max: {
    Value *v = arg(0);
    for (unsigned i = 1; i < atom.args.size(); ++i)
      v = atom.kind == SymAtom::Kind::Min ? b.CreateBinaryIntrinsic(Intrinsic::smin, v, arg(i))
                                          : b.CreateBinaryIntrinsic(Intrinsic::smax, v, arg(i));
    return v;
  }
  case SymAtom::Kind::Add:
    return b.CreateAdd(arg(0), arg(1));
  case SymAtom::Kind::Mul:
    return b.CreateMul(arg(0), arg(1));
  }
  llvm_unreachable("unknown SymAtom kind");
}

Value *emitSym(Builder &b, const SymExpr &e, const StringMap<unsigned> &symIndex,
               ArrayRef<Value *> syms) {
  Type *i64 = b.getInt64Ty();
  const SymNode &node = e.node();
  Value *sum = nullptr;
  for (const SymTerm &term : node.terms()) {
    Value *prod = nullptr;
    for (const SymAtom &atom : term.factors) {
      Value *a = emitAtom(b, atom, symIndex, syms);
      prod = prod ? b.CreateMul(prod, a) : a;
    }
    if (term.coeff != 1)
      prod = b.CreateMul(prod, ConstantInt::get(i64, term.coeff));
    sum = sum ? b.CreateAdd(sum, prod) : prod;
  }
  if (!sum)
    return ConstantInt::get(i64, node.constant());
  if (node.constant() != 0)
    sum = b.CreateAdd(sum, ConstantInt::get(i64, node.constant()));
  return sum;
}

static Value *withReassoc(Value *v) {
  FastMathFlags fmf;
  fmf.setAllowReassoc();
  fmf.setAllowContract();
  if (auto *i = dyn_cast<Instruction>(v))
    i->setFastMathFlags(fmf);
  return v;
}
Value *reassocAdd(Builder &b, Value *x, Value *y) { return withReassoc(b.CreateFAdd(x, y)); }
Value *reassocMul(Builder &b, Value *x, Value *y) { return withReassoc(b.CreateFMul(x, y)); }

AllocaInst *entryAlloca(Builder &b, Type *type, const Twine &name) {
  Function *f = b.GetInsertBlock()->getParent();
  IRBuilder<> eb(&f->getEntryBlock(), f->getEntryBlock().begin());
  return eb.CreateAlloca(type, nullptr, name);
}

void emitLoop(Builder &b, Value *begin, Value *end, function_ref<void(Value *)> body,
              const Twine &name) {
  Function *f = b.GetInsertBlock()->getParent();
  LLVMContext &c = f->getContext();
  BasicBlock *pre = b.GetInsertBlock();
  BasicBlock *header = BasicBlock::Create(c, name + ".header", f);
  BasicBlock *bodyBB = BasicBlock::Create(c, name + ".body", f);
  BasicBlock *exit = BasicBlock::Create(c, name + ".exit", f);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  PHINode *iv = b.CreatePHI(begin->getType(), 2, name);
  iv->addIncoming(begin, pre);
  b.CreateCondBr(b.CreateICmpSLT(iv, end), bodyBB, exit);
  b.SetInsertPoint(bodyBB);
  body(iv);
  Value *next = b.CreateAdd(iv, ConstantInt::get(iv->getType(), 1), name + ".next", true, true);
  iv->addIncoming(next, b.GetInsertBlock());
  b.CreateBr(header);
  b.SetInsertPoint(exit);
}

Type *valueType(LLVMContext &c, DType t) {
  switch (t) {
  case DType::F64:
    return Type::getDoubleTy(c);
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    return Type::getFloatTy(c);
  case DType::I64:
    return Type::getInt64Ty(c);
  case DType::I32:
    return Type::getInt32Ty(c);
  case DType::I16:
    return Type::getInt16Ty(c);
  case DType::I8:
  case DType::U8:
    return Type::getInt8Ty(c);
  case DType::Bool:
    return Type::getInt1Ty(c);
  }
  llvm_unreachable("unknown dtype");
}

Type *storageType(LLVMContext &c, DType t) {
  switch (t) {
  case DType::F16:
    return Type::getHalfTy(c);
  case DType::BF16:
    return Type::getInt16Ty(c);
  case DType::Bool:
    return Type::getInt8Ty(c);
  default:
    return valueType(c, t);
  }
}

// bf16 bits of an f32, rounded to nearest even; NaNs stay (quiet) NaNs.
static Value *bf16Bits(Builder &b, Value *f) {
  Value *bits = b.CreateBitCast(f, b.getInt32Ty());
  Value *lsb = b.CreateAnd(b.CreateLShr(bits, 16), 1);
  Value *rounded = b.CreateAdd(bits, b.CreateAdd(lsb, b.getInt32(0x7fff)));
  Value *quiet = b.CreateOr(bits, b.getInt32(0x00400000));
  Value *isNaN = b.CreateFCmpUNO(f, f);
  return b.CreateTrunc(b.CreateLShr(b.CreateSelect(isNaN, quiet, rounded), 16), b.getInt16Ty());
}

static Value *bf16ToFloat(Builder &b, Value *bits16) {
  return b.CreateBitCast(b.CreateShl(b.CreateZExt(bits16, b.getInt32Ty()), 16), b.getFloatTy());
}

// An f32 value rounded to the precision of f16/bf16 (kept in f32).
static Value *roundTo(Builder &b, Value *f, DType t) {
  if (t == DType::F16)
    return b.CreateFPExt(b.CreateFPTrunc(f, b.getHalfTy()), b.getFloatTy());
  if (t == DType::BF16)
    return bf16ToFloat(b, bf16Bits(b, f));
  return f;
}

Value *convert(Builder &b, Value *v, DType from, DType to) {
  if (from == to)
    return v;
  LLVMContext &c = b.getContext();
  Type *dst = valueType(c, to);
  if (to == DType::Bool)
    return isFloating(from) ? b.CreateFCmpUNE(v, ConstantFP::get(v->getType(), 0.0))
                            : b.CreateICmpNE(v, ConstantInt::get(v->getType(), 0));
  bool fromUnsigned = from == DType::Bool || from == DType::U8;
  if (isFloating(to)) {
    Value *r;
    if (isFloating(from)) {
      r = v->getType() == dst ? v
          : dst->isDoubleTy() ? b.CreateFPExt(v, dst)
                              : b.CreateFPTrunc(v, dst);
    } else {
      r = fromUnsigned ? b.CreateUIToFP(v, dst) : b.CreateSIToFP(v, dst);
    }
    return roundTo(b, r, to);
  }
  if (isFloating(from)) {
    // Through i64 so that u8 and narrow types wrap like torch's casts on in-range values.
    Value *wide = b.CreateFPToSI(v, b.getInt64Ty());
    return b.CreateTrunc(wide, dst);
  }
  return b.CreateIntCast(v, dst, !fromUnsigned);
}

Value *fromStorage(Builder &b, Value *v, DType t) {
  switch (t) {
  case DType::F16:
    return b.CreateFPExt(v, b.getFloatTy());
  case DType::BF16:
    return bf16ToFloat(b, v);
  case DType::Bool:
    return b.CreateICmpNE(v, b.getInt8(0));
  default:
    return v;
  }
}

Value *toStorage(Builder &b, Value *v, DType t) {
  Type *st = storageType(b.getContext(), t);
  switch (t) {
  case DType::F16:
    return b.CreateFPTrunc(v, st);
  case DType::BF16:
    return bf16Bits(b, v);
  case DType::Bool:
    return b.CreateZExt(v, st);
  default:
    return v;
  }
}

Value *loadElement(Builder &b, Value *base, Value *offset, DType t) {
  Type *st = storageType(b.getContext(), t);
  return fromStorage(b, b.CreateLoad(st, b.CreateInBoundsGEP(st, base, offset)), t);
}

void storeElement(Builder &b, Value *v, Value *base, Value *offset, DType t) {
  Type *st = storageType(b.getContext(), t);
  b.CreateStore(toStorage(b, v, t), b.CreateInBoundsGEP(st, base, offset));
}

Value *reduceIdentity(Builder &b, kir::ReduceOp op, DType t) {
  Type *ty = valueType(b.getContext(), t);
  bool isMax = op == kir::ReduceOp::Max || op == kir::ReduceOp::ArgMax;
  switch (op) {
  case kir::ReduceOp::Sum:
    return isFloating(t) ? ConstantFP::get(ty, 0.0) : ConstantInt::get(ty, 0);
  case kir::ReduceOp::Prod:
    return isFloating(t) ? ConstantFP::get(ty, 1.0) : ConstantInt::get(ty, 1);
  default:
    if (isFloating(t))
      return ConstantFP::get(ty, isMax ? -std::numeric_limits<double>::infinity()
                                       : std::numeric_limits<double>::infinity());
    if (t == DType::U8 || t == DType::Bool)
      return isMax ? ConstantInt::get(ty, 0) : ConstantInt::getAllOnesValue(ty);
    unsigned bits = ty->getIntegerBitWidth();
    return ConstantInt::get(ty, isMax ? APInt::getSignedMinValue(bits)
                                      : APInt::getSignedMaxValue(bits));
  }
}

void emitReduceStep(Builder &b, kir::ReduceOp op, DType t, Value *acc, Value *accIdx, Value *v,
                    Value *lin) {
  Type *ty = valueType(b.getContext(), t);
  Value *cur = b.CreateLoad(ty, acc);
  Value *next = nullptr;
  bool f = isFloating(t), u = t == DType::U8 || t == DType::Bool;
  switch (op) {
  case kir::ReduceOp::Sum:
    next = f ? reassocAdd(b, cur, v) : b.CreateAdd(cur, v);
    break;
  case kir::ReduceOp::Prod:
    next = f ? reassocMul(b, cur, v) : b.CreateMul(cur, v);
    break;
  case kir::ReduceOp::Max:
    next = b.CreateBinaryIntrinsic(f   ? Intrinsic::maximum
                                   : u ? Intrinsic::umax
                                       : Intrinsic::smax,
                                   cur, v);
    break;
  case kir::ReduceOp::Min:
    next = b.CreateBinaryIntrinsic(f   ? Intrinsic::minimum
                                   : u ? Intrinsic::umin
                                       : Intrinsic::smin,
                                   cur, v);
    break;
  case kir::ReduceOp::ArgMax:
  case kir::ReduceOp::ArgMin: {
    bool mx = op == kir::ReduceOp::ArgMax;
    Value *better;
    if (f) {
      // The first NaN wins, as in torch.
      better = mx ? b.CreateFCmpOGT(v, cur) : b.CreateFCmpOLT(v, cur);
      better = b.CreateOr(better, b.CreateAnd(b.CreateFCmpUNO(v, v), b.CreateFCmpORD(cur, cur)));
    } else if (u) {
      better = mx ? b.CreateICmpUGT(v, cur) : b.CreateICmpULT(v, cur);
    } else {
      better = mx ? b.CreateICmpSGT(v, cur) : b.CreateICmpSLT(v, cur);
    }
    // The first point always replaces the identity, so an all-identity input gives index 0.
    next = b.CreateSelect(better, v, cur);
    b.CreateStore(b.CreateSelect(better, lin, b.CreateLoad(b.getInt64Ty(), accIdx)), accIdx);
    break;
  }
  }
  b.CreateStore(next, acc);
}

} // namespace aotc::codegen
