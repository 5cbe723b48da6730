// The parts every CUDA kernel of the backend shares: libdevice math, special registers, the
// kernel function's convention and its index-check flush.
#include "codegen/cuda/KernelBuilder.h"
#include "kernel/MemoryPlan.h"

#include "llvm/IR/Metadata.h"
#include "llvm/Support/raw_ostream.h"

namespace aotc::cuda {

using namespace llvm;
using codegen::Builder;
using codegen::MathFn;

namespace {

void markKernel(Module &m, Function *f) {
  // LLVM 19's NVPTX backend knows kernels by this annotation (the ptx_kernel calling convention
  // replaces it from LLVM 20 on).
  LLVMContext &c = m.getContext();
  Metadata *ops[] = {ValueAsMetadata::get(f), MDString::get(c, "kernel"),
                     ConstantAsMetadata::get(ConstantInt::get(Type::getInt32Ty(c), 1))};
  m.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(MDNode::get(c, ops));
}

} // namespace

Value *LibdeviceMath::emit(Builder &b, MathFn fn, ArrayRef<Value *> args) {
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

Value *specialRegister(Builder &b, Intrinsic::ID id) {
  return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), b.getInt64Ty());
}

KernelFunction beginKernel(Module &m, const kir::EntryKernels &entry, StringRef name,
                           const CudaKernel &out, Builder &b) {
  LLVMContext &c = m.getContext();
  SmallVector<Type *, 16> params(entry.symbols.size(), Type::getInt64Ty(c));
  params.append(out.buffers.size() + 1, PointerType::getUnqual(c));
  KernelFunction k;
  Function *f = Function::Create(FunctionType::get(Type::getVoidTy(c), params, false),
                                 GlobalValue::ExternalLinkage, name, m);
  k.fn = f;
  f->addFnAttr(Attribute::NoUnwind);
  // Distinct buffers of one step never overlap (the memory plan), as on the CPU.
  for (unsigned i = 0; i < out.buffers.size(); ++i)
    f->addParamAttr(entry.symbols.size() + i, Attribute::NoAlias);
  markKernel(m, f);
  b.SetInsertPoint(BasicBlock::Create(c, "entry", f));
  for (unsigned i = 0; i < entry.symbols.size(); ++i)
    k.syms.push_back(f->getArg(i));
  k.buffers.assign(entry.buffers.size(), nullptr);
  for (auto [i, id] : enumerate(out.buffers))
    k.buffers[id] = f->getArg(entry.symbols.size() + i);
  k.flag = f->getArg(f->arg_size() - 1);
  return k;
}

void endKernel(Builder &b, const KernelFunction &k, Value *failedCheck) {
  LLVMContext &c = k.fn->getContext();
  Value *failed = b.CreateLoad(b.getInt32Ty(), failedCheck);
  BasicBlock *flush = BasicBlock::Create(c, "check.flush", k.fn);
  BasicBlock *done = BasicBlock::Create(c, "check.done", k.fn);
  b.CreateCondBr(b.CreateICmpNE(failed, b.getInt32(0)), flush, done);
  b.SetInsertPoint(flush);
  b.CreateAtomicCmpXchg(k.flag, b.getInt32(0), failed, Align(4), AtomicOrdering::Monotonic,
                        AtomicOrdering::Monotonic);
  b.CreateBr(done);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
}

CudaKernel emitLibraryKernel(
    Module &m, codegen::MathLibrary &math, const kir::EntryKernels &entry, const kir::Step &step,
    const StringMap<unsigned> &symIndex, const SymExpr &blocks, unsigned threads, StringRef name,
    function_ref<void(Builder &, codegen::ExprEmitter &, const KernelFunction &)> body) {
  CudaKernel out;
  std::vector<uint32_t> used = kir::buffersInOrderOfUse(entry, step);
  out.buffers.assign(used.begin(), used.end());
  out.step = &step;
  out.launch.grid = {blocks};
  out.launch.block[0] = threads;
  Builder b(m.getContext());
  KernelFunction kf = beginKernel(m, entry, name, out, b);
  out.name = kf.fn->getName().str();
  codegen::ExprEmitter ex(math, b, entry, symIndex, kf.syms, kf.buffers);
  ex.failedCheck = codegen::entryAlloca(b, b.getInt32Ty(), "failed.check");
  b.CreateStore(b.getInt32(0), ex.failedCheck);
  body(b, ex, kf);
  endKernel(b, kf, ex.failedCheck);
  return out;
}

GlobalVariable *sharedArray(Module &m, Type *elem, uint64_t count, StringRef role) {
  std::string name;
  raw_string_ostream os(name);
  os << "shared_" << role << '_' << count << 'x' << *elem;
  if (GlobalVariable *g = m.getGlobalVariable(name, /*AllowInternal=*/true))
    return g;
  auto *ty = ArrayType::get(elem, count);
  auto *g = new GlobalVariable(m, ty, false, GlobalValue::InternalLinkage, UndefValue::get(ty),
                               name, nullptr, GlobalValue::NotThreadLocal, /*AddressSpace=*/3);
  g->setAlignment(Align(16));
  return g;
}

GlobalVariable *dynamicSharedArray(Module &m, Type *elem) {
  std::string name;
  raw_string_ostream os(name);
  os << "dynamic_shared_" << *elem;
  if (GlobalVariable *g = m.getGlobalVariable(name))
    return g;
  auto *g = new GlobalVariable(m, ArrayType::get(elem, 0), false, GlobalValue::ExternalLinkage,
                               nullptr, name, nullptr, GlobalValue::NotThreadLocal,
                               /*AddressSpace=*/3);
  g->setAlignment(Align(16));
  return g;
}

} // namespace aotc::cuda
