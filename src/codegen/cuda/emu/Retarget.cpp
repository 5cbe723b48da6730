// NVPTX-bound IR -> host IR calling the emulator's runtime: special registers, barriers, warp
// collectives, shared memory, libdevice, kernel trampolines.
#include "codegen/cuda/emu/Retarget.h"
#include "codegen/cuda/emu/BlockRunner.h"

#include "fmt/format.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/ReplaceConstant.h"
#include "llvm/IR/Verifier.h"

#include <optional>

namespace aotc::cuda::emu {

using namespace llvm;

namespace {

std::optional<unsigned> sregIndex(StringRef intrinsic) {
  if (!intrinsic.consume_front("llvm.nvvm.read.ptx.sreg."))
    return std::nullopt;
  if (intrinsic == "laneid")
    return SregLaneId;
  if (intrinsic == "warpsize")
    return SregWarpSize;
  static const char *regs[] = {"tid", "ntid", "ctaid", "nctaid"};
  for (unsigned r = 0; r < 4; ++r) {
    StringRef rest = intrinsic;
    if (!rest.consume_front(regs[r]) || !rest.consume_front("."))
      continue;
    if (rest == "x" || rest == "y" || rest == "z")
      return r * 3 + unsigned(rest[0] - 'x');
  }
  return std::nullopt;
}

// llvm.nvvm.shfl.sync.<mode>.{i32,f32} and llvm.nvvm.vote.<mode>.sync -> the runtime's mode.
std::optional<WarpOp> warpOp(StringRef intrinsic) {
  static const std::pair<const char *, WarpOp> ops[] = {
      {"llvm.nvvm.shfl.sync.up.i32", WarpOp::ShflUp},
      {"llvm.nvvm.shfl.sync.up.f32", WarpOp::ShflUp},
      {"llvm.nvvm.shfl.sync.down.i32", WarpOp::ShflDown},
      {"llvm.nvvm.shfl.sync.down.f32", WarpOp::ShflDown},
      {"llvm.nvvm.shfl.sync.bfly.i32", WarpOp::ShflBfly},
      {"llvm.nvvm.shfl.sync.bfly.f32", WarpOp::ShflBfly},
      {"llvm.nvvm.shfl.sync.idx.i32", WarpOp::ShflIdx},
      {"llvm.nvvm.shfl.sync.idx.f32", WarpOp::ShflIdx},
      {"llvm.nvvm.vote.all.sync", WarpOp::All},
      {"llvm.nvvm.vote.any.sync", WarpOp::Any},
      {"llvm.nvvm.vote.uni.sync", WarpOp::Uni},
      {"llvm.nvvm.vote.ballot.sync", WarpOp::Ballot},
  };
  for (auto [name, op] : ops)
    if (intrinsic == name)
      return op;
  return std::nullopt;
}

// llvm.nvvm.mma.m16n8k*.row.col.* -> aotc_emu_mma's kind.
std::optional<MmaKind> mmaKind(StringRef intrinsic) {
  if (intrinsic == "llvm.nvvm.mma.m16n8k8.row.col.tf32")
    return MmaKind::M16N8K8Tf32;
  if (intrinsic == "llvm.nvvm.mma.m16n8k16.row.col.bf16")
    return MmaKind::M16N8K16Bf16;
  if (intrinsic == "llvm.nvvm.mma.m16n8k16.row.col.f32.f32")
    return MmaKind::M16N8K16F16;
  return std::nullopt;
}

// llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].b16.p<addrspace> -> aotc_emu_ldmatrix's
// mode.
std::optional<uint32_t> ldmatrixMode(StringRef intrinsic) {
  intrinsic = intrinsic.rsplit(".p").first;
  if (!intrinsic.consume_front("llvm.nvvm.ldmatrix.sync.aligned.m8n8.x") ||
      !intrinsic.consume_back(".b16"))
    return std::nullopt;
  uint32_t trans = intrinsic.consume_back(".trans") ? LdmatrixTrans : 0;
  if (intrinsic != "1" && intrinsic != "2" && intrinsic != "4")
    return std::nullopt;
  return uint32_t(intrinsic[0] - '0') | trans;
}

// llvm.nvvm.cp.async.{ca,cg}.shared.global.{4,8,16}[.s] -> its size in bytes, and whether it
// takes a source size (the rest zero-filled).
std::optional<std::pair<uint32_t, bool>> cpAsync(StringRef intrinsic) {
  if (!intrinsic.consume_front("llvm.nvvm.cp.async.") ||
      !(intrinsic.consume_front("ca.") || intrinsic.consume_front("cg.")) ||
      !intrinsic.consume_front("shared.global."))
    return std::nullopt;
  bool sized = intrinsic.consume_back(".s");
  uint32_t bytes = 0;
  if (intrinsic.getAsInteger(10, bytes) || (bytes != 4 && bytes != 8 && bytes != 16))
    return std::nullopt;
  return std::pair(bytes, sized);
}

// libdevice's name -> the host libm's. Every function the CUDA backend calls maps to the libm
// function of the same name and type; results may differ from libdevice's in the last ulps
// (libdevice documents its error bounds per function, glibc its own), well inside the 1e-5
// the tests allow.
std::optional<std::string> hostMathName(StringRef name) {
  static const char *known[] = {"exp", "log", "log1p", "sin", "cos", "tanh", "erf", "pow", "fmod"};
  if (!name.consume_front("__nv_"))
    return std::nullopt;
  StringRef base = name.ends_with("f") ? name.drop_back() : name;
  for (const char *k : known)
    if (base == k)
      return name.str();
  return std::nullopt;
}

class Retargeter {
public:
  Retargeter(Module &m) : M(m), C(m.getContext()) {}

  Expected<RetargetInfo> run(const DataLayout &hostLayout, const std::string &hostTriple) {
    if (NamedMDNode *ann = M.getNamedMetadata("nvvm.annotations")) {
      for (MDNode *op : ann->operands())
        if (auto *f = mdconst::dyn_extract_or_null<Function>(op->getOperand(0)))
          Info.kernels.push_back(f->getName().str());
      M.eraseNamedMetadata(ann);
    }
    Type *i32 = Type::getInt32Ty(C), *ptr = PointerType::getUnqual(C);
    Sreg = M.getOrInsertFunction("aotc_emu_sreg", FunctionType::get(i32, {i32}, false));
    Shared = M.getOrInsertFunction("aotc_emu_shared", FunctionType::get(ptr, false));
    Barrier =
        M.getOrInsertFunction("aotc_emu_barrier", FunctionType::get(Type::getVoidTy(C), false));
    Shfl = M.getOrInsertFunction("aotc_emu_shfl",
                                 FunctionType::get(i32, {i32, i32, i32, i32, i32}, false));
    Vote = M.getOrInsertFunction("aotc_emu_vote", FunctionType::get(i32, {i32, i32, i32}, false));
    Type *voidTy = Type::getVoidTy(C);
    Mma = M.getOrInsertFunction("aotc_emu_mma", FunctionType::get(voidTy, {i32, ptr}, false));
    Ldmatrix = M.getOrInsertFunction("aotc_emu_ldmatrix",
                                     FunctionType::get(voidTy, {i32, ptr, ptr}, false));
    CpAsync = M.getOrInsertFunction("aotc_emu_cp_async",
                                    FunctionType::get(voidTy, {ptr, ptr, i32, i32}, false));
    CpAsyncCommit =
        M.getOrInsertFunction("aotc_emu_cp_async_commit", FunctionType::get(voidTy, false));
    CpAsyncWait =
        M.getOrInsertFunction("aotc_emu_cp_async_wait", FunctionType::get(voidTy, {i32}, false));
    Type *f32 = Type::getFloatTy(C);
    F2Tf32 = M.getOrInsertFunction("aotc_emu_f2tf32", FunctionType::get(i32, {f32}, false));
    F2x2 = M.getOrInsertFunction("aotc_emu_f2x2", FunctionType::get(i32, {i32, f32, f32}, false));
    if (Error err = sharedMemory())
      return err;
    for (Function &f : make_early_inc_range(M)) {
      f.removeFnAttr("target-cpu");
      f.removeFnAttr("target-features");
      if (f.isDeclaration() && !f.getName().starts_with("aotc_emu_"))
        if (Error err = declaration(f))
          return err;
    }
    markFiberKernels();
    M.setTargetTriple(hostTriple);
    M.setDataLayout(hostLayout);
    for (const std::string &name : Info.kernels)
      trampoline(*M.getFunction(name));
    std::string msg;
    raw_string_ostream err(msg);
    if (verifyModule(M, &err))
      return createStringError("the retargeted module is invalid: " + msg);
    return std::move(Info);
  }

private:
  // Every addrspace(3) global becomes the block's shared memory at an offset: the defined ones
  // (static shared) one after another, the external ones (dynamic shared, as CUDA's `extern
  // __shared__` arrays, which all alias) after them.
  Error sharedMemory() {
    SmallVector<GlobalVariable *, 8> globals;
    SmallVector<Constant *, 8> constants;
    for (GlobalVariable &g : M.globals())
      if (g.getAddressSpace() == 3) {
        globals.push_back(&g);
        constants.push_back(&g);
      }
    if (globals.empty())
      return Error::success();
    const DataLayout &dl = M.getDataLayout();
    DenseMap<GlobalVariable *, uint64_t> offset;
    uint64_t end = 0;
    for (GlobalVariable *g : globals) {
      if (g->isDeclaration())
        continue;
      uint64_t align = std::max<uint64_t>(16, g->getAlign().valueOrOne().value());
      end = alignTo(end, align);
      offset[g] = end;
      end += dl.getTypeAllocSize(g->getValueType());
    }
    end = alignTo(end, 16);
    for (GlobalVariable *g : globals)
      if (g->isDeclaration())
        offset[g] = end;
    Info.staticShared = end;
    // Constant expressions over a global (a GEP with constant indices) become instructions, so
    // that each use can take the per-block address.
    convertUsersOfConstantsToInstructions(constants);
    DenseMap<Function *, Value *> base;
    for (GlobalVariable *g : globals) {
      for (Use &u : make_early_inc_range(g->uses())) {
        auto *inst = dyn_cast<Instruction>(u.getUser());
        if (!inst)
          return createStringError(fmt::format(
              "the emulated CUDA device cannot place shared variable {}: it is used outside a "
              "function",
              g->getName().str()));
        Function *f = inst->getFunction();
        Value *&b = base[f];
        if (!b) {
          IRBuilder<> entry(&*f->getEntryBlock().getFirstInsertionPt());
          b = entry.CreateCall(Shared, {}, "shared");
        }
        IRBuilder<> at(cast<Instruction>(b)->getNextNode());
        Value *p = at.CreateConstInBoundsGEP1_64(at.getInt8Ty(), b, offset[g]);
        u.set(at.CreateAddrSpaceCast(p, g->getType(), g->getName()));
      }
      g->eraseFromParent();
    }
    return Error::success();
  }

  Error declaration(Function &f) {
    StringRef name = f.getName();
    if (std::optional<unsigned> r = sregIndex(name))
      return replaceCalls(f, [&](IRBuilder<> &b, CallInst *) -> Expected<Value *> {
        return b.CreateCall(Sreg, {b.getInt32(*r)});
      });
    if (name == "llvm.nvvm.barrier0" || name == "llvm.nvvm.barrier.sync")
      return replaceCalls(f, [&](IRBuilder<> &b, CallInst *call) -> Expected<Value *> {
        auto *id = call->arg_size() ? dyn_cast<ConstantInt>(call->getArgOperand(0)) : nullptr;
        if (call->arg_size() && (!id || !id->isZero()))
          return createStringError("the emulated CUDA device implements only barrier 0 (" +
                                   name.str() + ")");
        return b.CreateCall(Barrier, {});
      });
    if (std::optional<WarpOp> op = warpOp(name))
      return replaceCalls(f, [&](IRBuilder<> &b, CallInst *call) -> Expected<Value *> {
        return warpCall(b, call, *op);
      });
    if (std::optional<MmaKind> kind = mmaKind(name))
      return replaceCalls(f, [&](IRBuilder<> &b, CallInst *call) -> Expected<Value *> {
        return mmaCall(b, call, *kind);
      });
    if (std::optional<uint32_t> mode = ldmatrixMode(name))
      return replaceCalls(f, [&](IRBuilder<> &b, CallInst *call) -> Expected<Value *> {
        return ldmatrixCall(b, call, *mode);
      });
    if (std::optional<std::pair<uint32_t, bool>> copy = cpAsync(name))
      return replaceCalls(f, [&](IRBuilder<> &b, CallInst *call) -> Expected<Value *> {
        Value *dst = b.CreateAddrSpaceCast(call->getArgOperand(0), b.getPtrTy());
        Value *src = b.CreateAddrSpaceCast(call->getArgOperand(1), b.getPtrTy());
        Value *srcBytes = copy->second ? call->getArgOperand(2) : b.getInt32(copy->first);
        return b.CreateCall(CpAsync, {dst, src, b.getInt32(copy->first), srcBytes});
      });
    if (name == "llvm.nvvm.cp.async.commit.group")
      return replaceCalls(f, [&](IRBuilder<> &b, CallInst *) -> Expected<Value *> {
        return b.CreateCall(CpAsyncCommit, {});
      });
    if (name == "llvm.nvvm.cp.async.wait.group")
      return replaceCalls(f, [&](IRBuilder<> &b, CallInst *call) -> Expected<Value *> {
        return b.CreateCall(CpAsyncWait, {call->getArgOperand(0)});
      });
    if (name == "llvm.nvvm.cp.async.wait.all") // commit_group, then wait_group 0
      return replaceCalls(f, [&](IRBuilder<> &b, CallInst *) -> Expected<Value *> {
        b.CreateCall(CpAsyncCommit, {});
        return b.CreateCall(CpAsyncWait, {b.getInt32(0)});
      });
    if (name == "llvm.nvvm.ff2bf16x2.rn" || name == "llvm.nvvm.ff2f16x2.rn")
      return replaceCalls(f, [&](IRBuilder<> &b, CallInst *call) -> Expected<Value *> {
        Value *half = b.getInt32(name == "llvm.nvvm.ff2f16x2.rn");
        Value *bits = b.CreateCall(F2x2, {half, call->getArgOperand(0), call->getArgOperand(1)});
        return b.CreateBitCast(bits, call->getType());
      });
    if (name == "llvm.nvvm.f2tf32.rna")
      return replaceCalls(f, [&](IRBuilder<> &b, CallInst *call) -> Expected<Value *> {
        return b.CreateCall(F2Tf32, {call->getArgOperand(0)});
      });
    if (std::optional<std::string> host = hostMathName(name)) {
      f.setName(*host);
      return Error::success();
    }
    if (!f.isIntrinsic() || name.starts_with("llvm.nvvm."))
      return createStringError(
          fmt::format("the emulated CUDA device does not implement {} yet", name.str()));
    return Error::success();
  }

  Value *warpCall(IRBuilder<> &b, CallInst *call, WarpOp op) {
    Type *i32 = b.getInt32Ty();
    Value *mask = call->getArgOperand(0);
    Value *mode = b.getInt32(uint32_t(op));
    if (op >= WarpOp::All) {
      Value *pred = b.CreateZExt(call->getArgOperand(1), i32);
      Value *r = b.CreateCall(Vote, {mode, mask, pred});
      return op == WarpOp::Ballot ? r : b.CreateICmpNE(r, b.getInt32(0));
    }
    Value *v = call->getArgOperand(1);
    Type *ty = v->getType();
    Value *bits = b.CreateBitCast(v, i32);
    Value *r =
        b.CreateCall(Shfl, {mode, mask, bits, call->getArgOperand(2), call->getArgOperand(3)});
    return b.CreateBitCast(r, ty);
  }

  // An alloca of `n` i32 at the start of the call's function: a lane's registers for a matrix
  // collective (the fiber's stack keeps them while the warp gathers).
  Value *registers(CallInst *call, unsigned n) {
    Function *f = call->getFunction();
    IRBuilder<> entry(&*f->getEntryBlock().getFirstInsertionPt());
    return entry.CreateAlloca(ArrayType::get(entry.getInt32Ty(), n), nullptr, "regs");
  }

  // The mma's 10 operand registers into an MmaFragment, its 4 results out of it.
  Value *mmaCall(IRBuilder<> &b, CallInst *call, MmaKind kind) {
    static_assert(sizeof(MmaFragment) == 14 * sizeof(uint32_t), "a, b, c and d in order");
    Value *frag = registers(call, 14);
    for (unsigned i = 0; i < 10; ++i) {
      Value *v = call->getArgOperand(i);
      Value *bits = b.CreateBitCast(v, b.getInt32Ty());
      Value *slot = b.CreateConstInBoundsGEP1_32(b.getInt32Ty(), frag, i);
      b.CreateStore(bits, slot);
    }
    b.CreateCall(Mma, {b.getInt32(uint32_t(kind)), frag});
    Value *result = PoisonValue::get(call->getType());
    for (unsigned i = 0; i < 4; ++i) {
      Value *slot = b.CreateConstInBoundsGEP1_32(b.getInt32Ty(), frag, 10 + i);
      Value *d = b.CreateLoad(b.getFloatTy(), slot);
      result = b.CreateInsertValue(result, d, i);
    }
    return result;
  }

  Value *ldmatrixCall(IRBuilder<> &b, CallInst *call, uint32_t mode) {
    unsigned count = mode & 0xff;
    Value *regs = registers(call, count);
    Value *row = b.CreateAddrSpaceCast(call->getArgOperand(0), b.getPtrTy());
    b.CreateCall(Ldmatrix, {b.getInt32(mode), row, regs});
    if (count == 1)
      return b.CreateLoad(b.getInt32Ty(), regs);
    Value *result = PoisonValue::get(call->getType());
    for (unsigned i = 0; i < count; ++i) {
      Value *slot = b.CreateConstInBoundsGEP1_32(b.getInt32Ty(), regs, i);
      Value *r = b.CreateLoad(b.getInt32Ty(), slot);
      result = b.CreateInsertValue(result, r, i);
    }
    return result;
  }

  template <typename Fn> Error replaceCalls(Function &f, Fn &&make) {
    for (User *u : make_early_inc_range(f.users())) {
      auto *call = dyn_cast<CallInst>(u);
      if (!call)
        return createStringError(fmt::format(
            "the emulated CUDA device cannot take the address of {}", f.getName().str()));
      IRBuilder<> b(call);
      Expected<Value *> v = make(b, call);
      if (!v)
        return v.takeError();
      call->replaceAllUsesWith(*v);
      call->eraseFromParent();
    }
    f.eraseFromParent();
    return Error::success();
  }

  // A kernel needs fibers when it, or a function it calls, reaches a barrier or collective.
  void markFiberKernels() {
    SmallPtrSet<const Function *, 8> sync;
    for (FunctionCallee callee : {Barrier, Shfl, Vote, Mma, Ldmatrix})
      for (User *u : callee.getCallee()->users())
        if (auto *call = dyn_cast<CallInst>(u))
          sync.insert(call->getFunction());
    for (bool changed = true; changed;) {
      changed = false;
      for (Function &f : M)
        if (!sync.contains(&f) && any_of(instructions(f), [&](const Instruction &i) {
              auto *call = dyn_cast<CallInst>(&i);
              return call && sync.contains(call->getCalledFunction());
            }))
          changed = sync.insert(&f).second;
    }
    for (const std::string &k : Info.kernels)
      if (sync.contains(M.getFunction(k)))
        Info.fiberKernels.insert(k);
  }

  // cuLaunchKernel's convention: the trampoline takes the array of pointers to the parameters'
  // values and calls the kernel with them.
  void trampoline(Function &k) {
    Function *t =
        Function::Create(FunctionType::get(Type::getVoidTy(C), {PointerType::getUnqual(C)}, false),
                         GlobalValue::ExternalLinkage, k.getName() + ".launch", M);
    IRBuilder<> b(BasicBlock::Create(C, "entry", t));
    SmallVector<Value *, 16> args;
    for (Argument &a : k.args()) {
      Value *slot = b.CreateConstInBoundsGEP1_32(b.getPtrTy(), t->getArg(0), a.getArgNo());
      Value *p = b.CreateLoad(b.getPtrTy(), slot);
      args.push_back(b.CreateLoad(a.getType(), p));
    }
    b.CreateCall(&k, args);
    b.CreateRetVoid();
  }

  Module &M;
  LLVMContext &C;
  RetargetInfo Info;
  FunctionCallee Sreg, Shared, Barrier, Shfl, Vote, Mma, Ldmatrix, CpAsync, CpAsyncCommit,
      CpAsyncWait, F2Tf32, F2x2;
};

} // namespace

Expected<RetargetInfo> retarget(Module &m, const DataLayout &hostLayout,
                                const std::string &hostTriple) {
  return Retargeter(m).run(hostLayout, hostTriple);
}

} // namespace aotc::cuda::emu
