// The per-module emitter context and the small IR building blocks every kernel uses: symbolic
// integers, loops, dtype conversions, element loads and stores, task dispatch.
#include "codegen/CStructLayout.h"
#include "codegen/cpu/Emitter.h"
#include "runtime/src/artifact.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/Target/TargetMachine.h"

namespace aotc::cpu {

using namespace llvm;

static_assert(unsigned(Variant::X86_64_V3) == AOTC_VARIANT_X86_64_V3 &&
              unsigned(Variant::X86_64_V4) == AOTC_VARIANT_X86_64_V4);

ModuleEmitter::ModuleEmitter(Module &m, Variant v, TargetMachine &tm) : M(m), V(v), TM(tm) {}

std::string ModuleEmitter::prefix() const {
  return V == Variant::X86_64_V4 ? "aotc_v4_" : "aotc_v3_";
}

Function *ModuleEmitter::createFunction(FunctionType *type, const Twine &name, bool external) {
  Function *f = Function::Create(
      type, external ? GlobalValue::ExternalLinkage : GlobalValue::InternalLinkage, name, M);
  f->addFnAttr(Attribute::NoUnwind);
  f->addFnAttr("target-cpu", TM.getTargetCPU());
  if (!TM.getTargetFeatureString().empty())
    f->addFnAttr("target-features", TM.getTargetFeatureString());
  if (V == Variant::X86_64_V4) {
    f->addFnAttr("prefer-vector-width", "512");
    f->addFnAttr("min-legal-vector-width", "512");
  }
  return f;
}

StructType *ModuleEmitter::execType() {
  if (!Exec) {
    Type *p = PointerType::getUnqual(ctx());
    Type *i32 = Type::getInt32Ty(ctx());
    Exec = mirrorCStruct(ctx(), M.getDataLayout(), "aotc_exec",
                         {AOTC_CFIELD(aotc_exec, weights, p), AOTC_CFIELD(aotc_exec, state, p),
                          AOTC_CFIELD(aotc_exec, arena, p), AOTC_CFIELD(aotc_exec, parallel_for, p),
                          AOTC_CFIELD(aotc_exec, pool, p), AOTC_CFIELD(aotc_exec, num_threads, i32),
                          AOTC_CFIELD(aotc_exec, reserved, i32)},
                         sizeof(aotc_exec));
  }
  return Exec;
}

FunctionType *ModuleEmitter::taskType() {
  Type *i64 = Type::getInt64Ty(ctx());
  return FunctionType::get(Type::getVoidTy(ctx()), {PointerType::getUnqual(ctx()), i64, i64},
                           false);
}

FunctionCallee ModuleEmitter::libm(StringRef name, Type *type, unsigned arity) {
  SmallVector<Type *, 2> params(arity, type);
  FunctionCallee f = M.getOrInsertFunction(name, FunctionType::get(type, params, false));
  if (auto *fn = dyn_cast<Function>(f.getCallee())) {
    fn->addFnAttr(Attribute::NoUnwind);
    fn->addFnAttr(Attribute::WillReturn);
    fn->setMemoryEffects(MemoryEffects::none());
  }
  return f;
}

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

void emitIf(Builder &b, Value *cond, function_ref<void()> then, function_ref<void()> otherwise) {
  Function *f = b.GetInsertBlock()->getParent();
  LLVMContext &c = f->getContext();
  BasicBlock *t = BasicBlock::Create(c, "then", f), *e = BasicBlock::Create(c, "else", f),
             *j = BasicBlock::Create(c, "endif", f);
  b.CreateCondBr(cond, t, e);
  b.SetInsertPoint(t);
  then();
  b.CreateBr(j);
  b.SetInsertPoint(e);
  otherwise();
  b.CreateBr(j);
  b.SetInsertPoint(j);
}

Value *smin(Builder &b, Value *x, Value *y) {
  return b.CreateBinaryIntrinsic(Intrinsic::smin, x, y);
}

Value *emitCeilDiv(Builder &b, Value *x, Value *y) {
  return b.CreateUDiv(b.CreateAdd(x, b.CreateSub(y, ConstantInt::get(y->getType(), 1))), y);
}

Value *lanesBelow(Builder &b, unsigned width, Value *n) {
  SmallVector<Constant *, 16> lanes;
  for (unsigned l = 0; l < width; ++l)
    lanes.push_back(ConstantInt::get(n->getType(), l));
  return b.CreateICmpSLT(ConstantVector::get(lanes), b.CreateVectorSplat(width, n));
}

void emitPrefetch(Builder &b, Value *ptr, int locality) {
  b.CreateIntrinsic(Intrinsic::prefetch, {b.getPtrTy()},
                    {ptr, b.getInt32(0), b.getInt32(locality), b.getInt32(1)});
}

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

void emitParallelLoop(Builder &b, Value *begin, Value *end, function_ref<void(Value *)> body,
                      const Twine &name, bool predicated) {
  Function *f = b.GetInsertBlock()->getParent();
  LLVMContext &c = f->getContext();
  SmallPtrSet<BasicBlock *, 32> before;
  for (BasicBlock &bb : *f)
    before.insert(&bb);
  emitLoop(b, begin, end, body, name);
  // The loop's blocks are the ones emitLoop and the body created, the header first; the exit
  // block (where the builder now is) has no terminator yet.
  MDNode *group = MDNode::getDistinct(c, {});
  BasicBlock *header = nullptr;
  BranchInst *latch = nullptr;
  for (BasicBlock &bb : *f) {
    if (before.count(&bb) || &bb == b.GetInsertBlock())
      continue;
    if (!header)
      header = &bb;
    for (Instruction &i : bb)
      if (i.mayReadOrWriteMemory())
        i.setMetadata(LLVMContext::MD_access_group, group);
    auto *br = dyn_cast_or_null<BranchInst>(bb.getTerminator());
    if (br && !br->isConditional() && br->getSuccessor(0) == header && &bb != header)
      latch = br;
  }
  assert(latch && "loop without a latch");
  MDNode *parallel = MDNode::get(c, {MDString::get(c, "llvm.loop.parallel_accesses"), group});
  SmallVector<Metadata *, 4> props = {nullptr, parallel};
  if (predicated) {
    auto flag = [&](StringRef key) {
      return MDNode::get(c, {MDString::get(c, key),
                             ConstantAsMetadata::get(ConstantInt::getTrue(c))});
    };
    props.push_back(flag("llvm.loop.vectorize.enable"));
    props.push_back(flag("llvm.loop.vectorize.predicate.enable"));
  }
  MDNode *loop = MDNode::getDistinct(c, props);
  loop->replaceOperandWith(0, loop);
  latch->setMetadata(LLVMContext::MD_loop, loop);
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

Value *loadElement(Builder &b, Value *base, Value *offset, DType t) {
  LLVMContext &c = b.getContext();
  Type *st = storageType(c, t);
  Value *v = b.CreateLoad(st, b.CreateInBoundsGEP(st, base, offset));
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

void storeElement(Builder &b, Value *v, Value *base, Value *offset, DType t) {
  LLVMContext &c = b.getContext();
  Type *st = storageType(c, t);
  switch (t) {
  case DType::F16:
    v = b.CreateFPTrunc(v, st);
    break;
  case DType::BF16:
    v = bf16Bits(b, v);
    break;
  case DType::Bool:
    v = b.CreateZExt(v, st);
    break;
  default:
    break;
  }
  b.CreateStore(v, b.CreateInBoundsGEP(st, base, offset));
}

ArrayType *closureType(LLVMContext &c, const kir::EntryKernels &entry) {
  return ArrayType::get(PointerType::getUnqual(c), entry.buffers.size() + 2);
}

void loadClosure(Builder &b, const kir::EntryKernels &entry, Value *closure,
                 SmallVectorImpl<Value *> &syms, SmallVectorImpl<Value *> &buffers) {
  Type *ptr = b.getPtrTy();
  ArrayType *ct = closureType(b.getContext(), entry);
  Value *symsPtr = b.CreateLoad(ptr, b.CreateConstInBoundsGEP2_32(ct, closure, 0, 0), "syms");
  for (unsigned i = 0; i < entry.symbols.size(); ++i)
    syms.push_back(
        b.CreateLoad(b.getInt64Ty(), b.CreateConstInBoundsGEP1_32(b.getInt64Ty(), symsPtr, i)));
  for (unsigned i = 0; i <= entry.buffers.size(); ++i)
    buffers.push_back(b.CreateLoad(ptr, b.CreateConstInBoundsGEP2_32(ct, closure, 0, i + 1)));
}

void emitDispatch(ModuleEmitter &me, Builder &b, Value *exec, Function *fn, Value *closure,
                  Value *total, Value *workPerIndex) {
  constexpr int64_t ParallelWork = 64 * 1024, ChunkWork = 16 * 1024;
  Function *f = b.GetInsertBlock()->getParent();
  LLVMContext &c = f->getContext();
  Value *work = b.CreateMul(total, workPerIndex);
  Value *parallel = b.CreateAnd(b.CreateICmpSGT(work, b.getInt64(ParallelWork)),
                                b.CreateICmpSGT(total, b.getInt64(1)));
  BasicBlock *par = BasicBlock::Create(c, "parallel", f);
  BasicBlock *ser = BasicBlock::Create(c, "serial", f);
  BasicBlock *done = BasicBlock::Create(c, "dispatched", f);
  b.CreateCondBr(parallel, par, ser);
  b.SetInsertPoint(par);
  Value *w = b.CreateBinaryIntrinsic(Intrinsic::smax, workPerIndex, b.getInt64(1));
  Value *grain = b.CreateBinaryIntrinsic(
      Intrinsic::smax, b.CreateSDiv(b.CreateAdd(b.getInt64(ChunkWork - 1), w), w), b.getInt64(1));
  StructType *et = me.execType();
  Value *pf = b.CreateLoad(
      b.getPtrTy(), b.CreateStructGEP(et, exec, ModuleEmitter::ExecParallelFor), "parallel_for");
  Type *i64 = b.getInt64Ty();
  FunctionType *pft =
      FunctionType::get(b.getVoidTy(), {b.getPtrTy(), i64, i64, b.getPtrTy(), b.getPtrTy()}, false);
  b.CreateCall(pft, pf, {exec, total, grain, fn, closure});
  b.CreateBr(done);
  b.SetInsertPoint(ser);
  b.CreateCall(fn, {closure, b.getInt64(0), total});
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

} // namespace aotc::cpu
