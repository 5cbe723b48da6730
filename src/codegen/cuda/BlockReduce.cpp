// Block-wide reductions: butterfly shuffles within each warp, one partial per warp through
// shared memory, and every thread combining the warps' partials in the same order.
#include "codegen/cuda/BlockReduce.h"
#include "codegen/cuda/KernelBuilder.h"

#include "llvm/IR/IntrinsicsNVPTX.h"

namespace aotc::cuda {

using namespace llvm;
using codegen::Builder;

namespace {

constexpr unsigned MaxWarps = 32; // 1024 threads

bool isUnsigned(DType t) { return t == DType::U8 || t == DType::Bool; }

// The bits of a register value (at most 64 of them) as an i64, and back.
Value *toBits(Builder &b, Value *v) {
  Type *ty = v->getType();
  if (ty->isFloatTy())
    v = b.CreateBitCast(v, b.getInt32Ty());
  else if (ty->isDoubleTy())
    return b.CreateBitCast(v, b.getInt64Ty());
  return b.CreateZExt(v, b.getInt64Ty());
}
Value *fromBits(Builder &b, Value *bits, Type *ty) {
  if (ty->isDoubleTy())
    return b.CreateBitCast(bits, ty);
  if (ty->isFloatTy()) {
    Value *low = b.CreateTrunc(bits, b.getInt32Ty());
    return b.CreateBitCast(low, ty);
  }
  return b.CreateTrunc(bits, ty);
}

Value *shuffleI32(Builder &b, Value *v, unsigned laneMask) {
  Value *all = b.getInt32(~0u);
  Value *lanes = b.getInt32(laneMask);
  Value *clamp = b.getInt32(31);
  return b.CreateIntrinsic(Intrinsic::nvvm_shfl_sync_bfly_i32, {}, {all, v, lanes, clamp});
}

// A value of at most 32 bits as an i32, and back.
Value *toI32(Builder &b, Value *v) {
  Type *ty = v->getType();
  if (ty->isFloatTy())
    return b.CreateBitCast(v, b.getInt32Ty());
  return b.CreateZExt(v, b.getInt32Ty());
}
Value *fromI32(Builder &b, Value *v, Type *ty) {
  if (ty->isFloatTy())
    return b.CreateBitCast(v, ty);
  return b.CreateTrunc(v, ty);
}

// Whether y's extreme replaces x's in ArgMax (max) or ArgMin.
Value *argBetter(Builder &b, bool max, DType t, Partial x, Partial y) {
  Value *earlier = b.CreateICmpSLT(y.index, x.index);
  if (isFloating(t)) {
    // Ordered compares are false on NaN: the first NaN wins, as in the serial reduction.
    Value *strict = max ? b.CreateFCmpOGT(y.value, x.value) : b.CreateFCmpOLT(y.value, x.value);
    Value *equal = b.CreateFCmpOEQ(y.value, x.value);
    Value *tie = b.CreateAnd(equal, earlier);
    Value *yNan = b.CreateFCmpUNO(y.value, y.value);
    Value *xOrdered = b.CreateFCmpORD(x.value, x.value);
    Value *nanWins = b.CreateAnd(yNan, b.CreateOr(xOrdered, earlier));
    Value *ordered = b.CreateOr(strict, tie);
    return b.CreateOr(ordered, nanWins);
  }
  bool u = isUnsigned(t);
  Value *strict = max ? (u ? b.CreateICmpUGT(y.value, x.value) : b.CreateICmpSGT(y.value, x.value))
                      : (u ? b.CreateICmpULT(y.value, x.value) : b.CreateICmpSLT(y.value, x.value));
  Value *equal = b.CreateICmpEQ(y.value, x.value);
  Value *tie = b.CreateAnd(equal, earlier);
  return b.CreateOr(strict, tie);
}

} // namespace

Value *warpShuffleXor(Builder &b, Value *v, unsigned laneMask) {
  Type *ty = v->getType();
  if (ty->getPrimitiveSizeInBits() <= 32) {
    Value *got = shuffleI32(b, toI32(b, v), laneMask);
    return fromI32(b, got, ty);
  }
  Value *bits = toBits(b, v);
  Value *low = b.CreateTrunc(bits, b.getInt32Ty());
  Value *highBits = b.CreateLShr(bits, 32);
  Value *high = b.CreateTrunc(highBits, b.getInt32Ty());
  Value *gotLow = shuffleI32(b, low, laneMask);
  Value *gotHigh = shuffleI32(b, high, laneMask);
  Value *wideLow = b.CreateZExt(gotLow, b.getInt64Ty());
  Value *wideHigh = b.CreateZExt(gotHigh, b.getInt64Ty());
  Value *shifted = b.CreateShl(wideHigh, 32);
  Value *joined = b.CreateOr(shifted, wideLow);
  return fromBits(b, joined, ty);
}

Partial combinePartials(Builder &b, kir::ReduceOp op, DType t, Partial x, Partial y) {
  bool f = isFloating(t), u = isUnsigned(t);
  switch (op) {
  case kir::ReduceOp::Sum:
    return {f ? codegen::reassocAdd(b, x.value, y.value) : b.CreateAdd(x.value, y.value)};
  case kir::ReduceOp::Prod:
    return {f ? codegen::reassocMul(b, x.value, y.value) : b.CreateMul(x.value, y.value)};
  case kir::ReduceOp::Max:
    return {b.CreateBinaryIntrinsic(f   ? Intrinsic::maximum
                                    : u ? Intrinsic::umax
                                        : Intrinsic::smax,
                                    x.value, y.value)};
  case kir::ReduceOp::Min:
    return {b.CreateBinaryIntrinsic(f   ? Intrinsic::minimum
                                    : u ? Intrinsic::umin
                                        : Intrinsic::smin,
                                    x.value, y.value)};
  case kir::ReduceOp::ArgMax:
  case kir::ReduceOp::ArgMin: {
    Value *better = argBetter(b, op == kir::ReduceOp::ArgMax, t, x, y);
    Value *value = b.CreateSelect(better, y.value, x.value);
    Value *index = b.CreateSelect(better, y.index, x.index);
    return {value, index};
  }
  }
  llvm_unreachable("unknown reduction");
}

BlockScratch blockScratch(Module &m) {
  Type *i64 = Type::getInt64Ty(m.getContext());
  return {sharedArray(m, i64, MaxWarps, "partials"),
          sharedArray(m, i64, MaxWarps, "partial_indices")};
}

Partial blockReduce(Builder &b, kir::ReduceOp op, DType t, Partial mine,
                    const BlockScratch &scratch, Value *tid, Value *ntid) {
  bool arg = op == kir::ReduceOp::ArgMax || op == kir::ReduceOp::ArgMin;
  Type *ty = mine.value->getType();
  Partial p = mine;
  for (unsigned laneMask = 16; laneMask; laneMask /= 2) {
    Partial other;
    other.value = warpShuffleXor(b, p.value, laneMask);
    if (arg)
      other.index = warpShuffleXor(b, p.index, laneMask);
    p = combinePartials(b, op, t, p, other);
  }
  // Lane 0 of each warp publishes the warp's result.
  Function *f = b.GetInsertBlock()->getParent();
  LLVMContext &c = f->getContext();
  Value *lane = b.CreateAnd(tid, b.getInt64(31));
  Value *warp = b.CreateLShr(tid, 5, "warp");
  Value *zero = b.getInt64(0);
  BasicBlock *publish = BasicBlock::Create(c, "warp.publish", f);
  BasicBlock *published = BasicBlock::Create(c, "warp.published", f);
  b.CreateCondBr(b.CreateICmpEQ(lane, zero), publish, published);
  b.SetInsertPoint(publish);
  Value *bits = toBits(b, p.value);
  b.CreateStore(bits,
                b.CreateInBoundsGEP(scratch.values->getValueType(), scratch.values, {zero, warp}));
  if (arg)
    b.CreateStore(p.index, b.CreateInBoundsGEP(scratch.indices->getValueType(), scratch.indices,
                                               {zero, warp}));
  b.CreateBr(published);
  b.SetInsertPoint(published);
  b.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {});
  // Every thread folds the warps' partials in warp order, so all get the same result.
  AllocaInst *acc = codegen::entryAlloca(b, ty, "block.acc");
  AllocaInst *accIdx = arg ? codegen::entryAlloca(b, b.getInt64Ty(), "block.acc.idx") : nullptr;
  auto load = [&](Value *w) {
    Partial q;
    Value *slot = b.CreateInBoundsGEP(scratch.values->getValueType(), scratch.values, {zero, w});
    Value *loaded = b.CreateLoad(b.getInt64Ty(), slot);
    q.value = fromBits(b, loaded, ty);
    if (arg) {
      Value *islot =
          b.CreateInBoundsGEP(scratch.indices->getValueType(), scratch.indices, {zero, w});
      q.index = b.CreateLoad(b.getInt64Ty(), islot);
    }
    return q;
  };
  Partial first = load(zero);
  b.CreateStore(first.value, acc);
  if (arg)
    b.CreateStore(first.index, accIdx);
  Value *roundUp = b.CreateAdd(ntid, b.getInt64(31));
  Value *warps = b.CreateLShr(roundUp, 5, "warps");
  codegen::emitLoop(
      b, b.getInt64(1), warps,
      [&](Value *w) {
        Partial cur;
        cur.value = b.CreateLoad(ty, acc);
        if (arg)
          cur.index = b.CreateLoad(b.getInt64Ty(), accIdx);
        Partial next = combinePartials(b, op, t, cur, load(w));
        b.CreateStore(next.value, acc);
        if (arg)
          b.CreateStore(next.index, accIdx);
      },
      "w");
  Partial out;
  out.value = b.CreateLoad(ty, acc, "block.reduced");
  if (arg)
    out.index = b.CreateLoad(b.getInt64Ty(), accIdx, "block.argidx");
  // The scratch is reused by the next reduction only after every thread has read it.
  b.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {});
  return out;
}

} // namespace aotc::cuda
