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
                          AOTC_CFIELD(aotc_exec, derived, p), AOTC_CFIELD(aotc_exec, arena, p),
                          AOTC_CFIELD(aotc_exec, parallel_for, p), AOTC_CFIELD(aotc_exec, pool, p),
                          AOTC_CFIELD(aotc_exec, num_threads, i32),
                          AOTC_CFIELD(aotc_exec, cpu_features, i32)},
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

void addTargetFeature(Function *f, StringRef feature) {
  std::string features = f->getFnAttribute("target-features").getValueAsString().str();
  f->addFnAttr("target-features",
               features.empty() ? feature.str() : features + "," + feature.str());
}

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
      return MDNode::get(c,
                         {MDString::get(c, key), ConstantAsMetadata::get(ConstantInt::getTrue(c))});
    };
    props.push_back(flag("llvm.loop.vectorize.enable"));
    props.push_back(flag("llvm.loop.vectorize.predicate.enable"));
  }
  MDNode *loop = MDNode::getDistinct(c, props);
  loop->replaceOperandWith(0, loop);
  latch->setMetadata(LLVMContext::MD_loop, loop);
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
