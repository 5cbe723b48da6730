// Loop kernels as CUDA kernels, correct first: one thread per point of the flattened parallel
// outer loops (a grid-stride loop with 64-bit indices), the remaining outer loops and every
// stage's inner loops serial in the thread. Parallel reductions (warp shuffles, shared memory)
// and vector accesses come with the next step; the parameter convention (CudaCodegen.h) stays.
#include "codegen/ExprEmitter.h"
#include "codegen/cuda/CudaCodegen.h"
#include "kernel/MemoryPlan.h"

#include "fmt/format.h"

#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Metadata.h"

namespace aotc::cuda {

using namespace llvm;
using codegen::Builder;
using codegen::MathFn;

namespace {

/// libdevice's functions (`__nv_*`, CUDA's libm): NVPTX has no instruction for these and LLVM's
/// intrinsics of them would become calls to symbols nothing defines. The emulator maps each name
/// to the host's libm.
class LibdeviceMath final : public codegen::MathLibrary {
public:
  explicit LibdeviceMath(Module &m) : M(m) {}

  Value *emit(Builder &b, MathFn fn, ArrayRef<Value *> args) override {
    Type *ty = args[0]->getType();
    bool f32 = ty->isFloatTy();
    auto call = [&](StringRef name) -> Value * {
      std::string full = ("__nv_" + name + (f32 ? "f" : "")).str();
      SmallVector<Type *, 2> params(args.size(), ty);
      FunctionCallee f = M.getOrInsertFunction(full, FunctionType::get(ty, params, false));
      if (auto *fn = dyn_cast<Function>(f.getCallee())) {
        fn->addFnAttr(Attribute::NoUnwind);
        fn->addFnAttr(Attribute::WillReturn);
        fn->setMemoryEffects(MemoryEffects::none());
      }
      return b.CreateCall(f, args);
    };
    switch (fn) {
    case MathFn::Exp:
      return call("exp");
    case MathFn::Log:
      return call("log");
    case MathFn::Log1p:
      return call("log1p");
    case MathFn::Sin:
      return call("sin");
    case MathFn::Cos:
      return call("cos");
    case MathFn::Tanh:
      return call("tanh");
    case MathFn::Erf:
      return call("erf");
    case MathFn::Sigmoid: {
      Value *one = ConstantFP::get(ty, 1.0);
      Value *e = emit(b, MathFn::Exp, {b.CreateFNeg(args[0])});
      return b.CreateFDiv(one, b.CreateFAdd(one, e));
    }
    case MathFn::Pow:
      return call("pow");
    case MathFn::Fmod:
      return call("fmod");
    }
    llvm_unreachable("unknown math function");
  }

private:
  Module &M;
};

Value *specialRegister(Builder &b, Intrinsic::ID id) {
  return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), b.getInt64Ty());
}

class KernelBody {
public:
  KernelBody(Builder &b, const kir::LoopKernel &kernel, codegen::ExprEmitter &ex)
      : B(b), K(kernel), Ex(ex) {}

  void emit() {
    unsigned n = K.outer.size();
    unsigned p = std::min<unsigned>(K.parallelLoops, n);
    for (const SymExpr &e : K.outer)
      Extents.push_back(Ex.sym(e));
    size_t maxInner = 0;
    for (const kir::Stage &s : K.stages)
      maxInner = std::max(maxInner, s.inner.size());
    Ex.loopVars.assign(n + maxInner, nullptr);
    Ex.reduceValues.assign(K.stages.size(), nullptr);
    Ex.reduceTypes.assign(K.stages.size(), DType::I64);
    Value *total = B.getInt64(1);
    for (unsigned d = 0; d < p; ++d)
      total = B.CreateMul(total, Extents[d]);
    // 64-bit indices: a grid of 2^31 blocks of 1024 threads, and tensors past 2^31 elements.
    // One statement per register read: as call arguments their order would be the host
    // compiler's (g++ and clang++ differ), and so would the emitted IR.
    Value *ctaid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    Value *ntid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_ntid_x);
    Value *tid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_tid_x);
    Value *first = B.CreateAdd(B.CreateMul(ctaid, ntid), tid);
    Value *nctaid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
    Value *stride = B.CreateMul(nctaid, ntid);

    Function *f = B.GetInsertBlock()->getParent();
    LLVMContext &c = f->getContext();
    BasicBlock *pre = B.GetInsertBlock();
    BasicBlock *head = BasicBlock::Create(c, "grid.head", f);
    BasicBlock *body = BasicBlock::Create(c, "grid.body", f);
    BasicBlock *exit = BasicBlock::Create(c, "grid.exit", f);
    B.CreateBr(head);
    B.SetInsertPoint(head);
    PHINode *i = B.CreatePHI(B.getInt64Ty(), 2, "point");
    i->addIncoming(first, pre);
    B.CreateCondBr(B.CreateICmpSLT(i, total), body, exit);
    B.SetInsertPoint(body);
    Value *rem = i;
    for (unsigned d = p; d-- > 0;) {
      if (d == 0) {
        Ex.loopVars[0] = rem;
        break;
      }
      Ex.loopVars[d] = B.CreateURem(rem, Extents[d]);
      rem = B.CreateUDiv(rem, Extents[d]);
    }
    nest(p);
    i->addIncoming(B.CreateAdd(i, stride, "point.next"), B.GetInsertBlock());
    B.CreateBr(head);
    B.SetInsertPoint(exit);
  }

private:
  void nest(unsigned d) {
    if (d == K.outer.size()) {
      for (unsigned s = 0; s < K.stages.size(); ++s)
        stage(s);
      return;
    }
    codegen::emitLoop(
        B, B.getInt64(0), Extents[d],
        [&](Value *v) {
          Ex.loopVars[d] = v;
          nest(d + 1);
        },
        "l" + Twine(d));
  }

  // No inner loop is unrolled on CUDA yet.
  void stage(unsigned si) { Ex.emitStage(si, K.stages[si], K.outer.size(), 0); }

  Builder &B;
  const kir::LoopKernel &K;
  codegen::ExprEmitter &Ex;
  SmallVector<Value *, 4> Extents;
};

void markKernel(Module &m, Function *f) {
  // LLVM 19's NVPTX backend knows kernels by this annotation (the ptx_kernel calling convention
  // replaces it from LLVM 20 on).
  LLVMContext &c = m.getContext();
  Metadata *ops[] = {ValueAsMetadata::get(f), MDString::get(c, "kernel"),
                     ConstantAsMetadata::get(ConstantInt::get(Type::getInt32Ty(c), 1))};
  m.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(MDNode::get(c, ops));
}

CudaKernel emitKernel(Module &m, codegen::MathLibrary &math, const kir::EntryKernels &entry,
                      const kir::Step &step, const StringMap<unsigned> &symIndex) {
  LLVMContext &c = m.getContext();
  const kir::LoopKernel &k = std::get<kir::LoopKernel>(step);
  CudaKernel out;
  std::vector<uint32_t> used = kir::buffersOfStep(entry, step);
  out.buffers.assign(used.begin(), used.end());
  SymExpr points = 1;
  for (unsigned d = 0; d < std::min<size_t>(k.parallelLoops, k.outer.size()); ++d)
    points = points * k.outer[d];
  out.launch.grid = {SymExpr::floorDiv(points + (LoopKernelBlock - 1), LoopKernelBlock)};
  out.launch.block[0] = LoopKernelBlock;
  out.launch.gridStride = true;
  out.step = &step;
  SmallVector<Type *, 16> params(entry.symbols.size(), Type::getInt64Ty(c));
  params.append(out.buffers.size() + 1, PointerType::getUnqual(c));
  Function *f = Function::Create(FunctionType::get(Type::getVoidTy(c), params, false),
                                 GlobalValue::ExternalLinkage, k.name, m);
  out.name = f->getName().str();
  f->addFnAttr(Attribute::NoUnwind);
  // Distinct buffers of one step never overlap (the memory plan), as on the CPU.
  for (unsigned i = 0; i < out.buffers.size(); ++i)
    f->addParamAttr(entry.symbols.size() + i, Attribute::NoAlias);
  markKernel(m, f);

  Builder b(BasicBlock::Create(c, "entry", f));
  SmallVector<Value *, 8> syms;
  for (unsigned i = 0; i < entry.symbols.size(); ++i)
    syms.push_back(f->getArg(i));
  SmallVector<Value *, 16> buffers(entry.buffers.size(), nullptr);
  for (auto [i, id] : enumerate(out.buffers))
    buffers[id] = f->getArg(entry.symbols.size() + i);
  codegen::ExprEmitter ex(math, b, entry, symIndex, syms, buffers);
  ex.failedCheck = codegen::entryAlloca(b, b.getInt32Ty(), "failed.check");
  b.CreateStore(b.getInt32(0), ex.failedCheck);
  KernelBody(b, k, ex).emit();
  // The first failing check of the whole run wins: one compare-and-swap per thread that saw one.
  Value *failed = b.CreateLoad(b.getInt32Ty(), ex.failedCheck);
  BasicBlock *flush = BasicBlock::Create(c, "check.flush", f);
  BasicBlock *done = BasicBlock::Create(c, "check.done", f);
  b.CreateCondBr(b.CreateICmpNE(failed, b.getInt32(0)), flush, done);
  b.SetInsertPoint(flush);
  b.CreateAtomicCmpXchg(f->getArg(f->arg_size() - 1), b.getInt32(0), failed, Align(4),
                        AtomicOrdering::Monotonic, AtomicOrdering::Monotonic);
  b.CreateBr(done);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
  return out;
}

} // namespace

Expected<CudaModule> emitEntryKernels(LLVMContext &c, const kir::EntryKernels &entry,
                                      StringRef moduleName) {
  CudaModule out;
  out.module = std::make_unique<Module>(moduleName, c);
  Module &m = *out.module;
  m.setTargetTriple(NvptxTriple);
  m.setDataLayout(NvptxDataLayout);
  LibdeviceMath math(m);
  StringMap<unsigned> symIndex;
  for (auto [i, s] : enumerate(entry.symbols))
    symIndex[s] = i;
  Error err = Error::success();
  kir::forEachStep(entry.steps, [&](const kir::Step &step) {
    if (err)
      return;
    if (std::holds_alternative<kir::LoopKernel>(step))
      out.kernels.push_back(emitKernel(m, math, entry, step, symIndex));
    else if (const auto *g = std::get_if<kir::GemmCall>(&step))
      err = createStringError(fmt::format("{}: GEMM '{}' is not supported by the CUDA backend yet",
                                          entry.name, g->name));
  });
  if (err)
    return err;
  return out;
}

} // namespace aotc::cuda
