// The host code of CUDA entries: one launch through aotc_cuda_exec per kernel, in step order, a
// cond's predicate read back from the device. Grids come from the root symbols of the call, so a
// new shape needs no recompile.
#include "codegen/cuda/HostCode.h"
#include "codegen/CStructLayout.h"
#include "codegen/EntryShapes.h"
#include "codegen/ExprEmitter.h"
#include "runtime/src/artifact.h"

#include "llvm/IR/Verifier.h"

namespace aotc::cuda {

using namespace llvm;
using codegen::Builder;

namespace {

class HostEmitter {
public:
  HostEmitter(Module &m, const kir::Program &program,
              const DenseMap<uint32_t, uint64_t> &deviceOffset,
              const std::function<void(Function *)> &setAttributes)
      : M(m), C(m.getContext()), P(program), DeviceOffset(deviceOffset),
        SetAttributes(setAttributes), Ptr(PointerType::getUnqual(C)), I32(Type::getInt32Ty(C)),
        I64(Type::getInt64Ty(C)) {
    ExecTy = mirrorCStruct(
        C, m.getDataLayout(), "aotc_cuda_exec",
        {AOTC_CFIELD(aotc_cuda_exec, weights, I64), AOTC_CFIELD(aotc_cuda_exec, state, I64),
         AOTC_CFIELD(aotc_cuda_exec, arena, I64), AOTC_CFIELD(aotc_cuda_exec, check_flag, I64),
         AOTC_CFIELD(aotc_cuda_exec, launch, Ptr), AOTC_CFIELD(aotc_cuda_exec, read_byte, Ptr),
         AOTC_CFIELD(aotc_cuda_exec, runtime, Ptr)},
        sizeof(aotc_cuda_exec));
    LaunchTy = FunctionType::get(I32, {Ptr, I32, Ptr, Ptr, I32, Ptr}, false);
    ReadTy = FunctionType::get(I32, {Ptr, I64, Ptr}, false);
  }

  void emitEntry(unsigned index, const EntryLaunches &launches, bool withShapes) {
    const kir::EntryKernels &e = P.entries[index];
    for (unsigned s = 0; s < e.symbols.size(); ++s)
      SymIndex[e.symbols[s]] = s;
    emitRun(index, e, launches);
    emitArena(index, e);
    if (withShapes)
      codegen::emitShapes(
          function(FunctionType::get(I32, {Ptr, Ptr}, false), "aotc_e" + Twine(index) + "_shapes"),
          e);
    SymIndex.clear();
  }

private:
  Function *function(FunctionType *type, const Twine &name) {
    Function *f = Function::Create(type, GlobalValue::ExternalLinkage, name, M);
    f->addFnAttr(Attribute::NoUnwind);
    SetAttributes(f);
    return f;
  }

  SmallVector<Value *, 8> loadSyms(Builder &b, Value *symsPtr, const kir::EntryKernels &e) {
    SmallVector<Value *, 8> syms;
    for (unsigned i = 0; i < e.symbols.size(); ++i)
      syms.push_back(
          b.CreateLoad(I64, b.CreateConstInBoundsGEP1_32(I64, symsPtr, i), e.symbols[i]));
    return syms;
  }

  void emitArena(unsigned index, const kir::EntryKernels &e) {
    Function *f =
        function(FunctionType::get(I64, {Ptr}, false), "aotc_e" + Twine(index) + "_cuda_arena");
    Builder b(BasicBlock::Create(C, "entry", f));
    SmallVector<Value *, 8> syms = loadSyms(b, f->getArg(0), e);
    b.CreateRet(codegen::emitSym(b, e.arenaBytes, SymIndex, syms));
  }

  void emitRun(unsigned index, const kir::EntryKernels &e, const EntryLaunches &launches) {
    Function *f = function(FunctionType::get(I32, {Ptr, Ptr, Ptr, Ptr}, false),
                           "aotc_e" + Twine(index) + "_cuda_run");
    Value *exec = f->getArg(0), *inputs = f->getArg(1), *outputs = f->getArg(2),
          *symsPtr = f->getArg(3);
    Builder b(BasicBlock::Create(C, "entry", f));
    Run r{f, exec, symsPtr, loadSyms(b, symsPtr, e), {}, nullptr, nullptr};
    auto field = [&](unsigned i, const Twine &name) {
      return b.CreateLoad(I64, b.CreateStructGEP(ExecTy, exec, i), name);
    };
    Value *weights = field(0, "weights");
    Value *state = field(1, "state");
    Value *arena = field(2, "arena");
    // Each parameter is passed by the address of its value (cuLaunchKernel's convention): a slot
    // per buffer holds its device address for the whole run.
    for (unsigned i = 0; i < e.buffers.size(); ++i) {
      const kir::Buffer &buf = e.buffers[i];
      Value *addr = nullptr;
      switch (buf.kind) {
      case kir::Buffer::Kind::Input:
        addr = b.CreateLoad(I64, b.CreateConstInBoundsGEP1_32(I64, inputs, buf.index));
        break;
      case kir::Buffer::Kind::Output:
        addr = b.CreateLoad(I64, b.CreateConstInBoundsGEP1_32(I64, outputs, buf.index));
        if (!(buf.viewOffset == SymExpr(0)))
          addr =
              b.CreateAdd(addr, codegen::emitSym(b, buf.viewOffset * int64_t(byteSize(buf.dtype)),
                                                 SymIndex, r.syms));
        break;
      case kir::Buffer::Kind::Weight:
        addr = b.CreateAdd(weights, b.getInt64(DeviceOffset.lookup(buf.index)));
        break;
      case kir::Buffer::Kind::State:
        addr = b.CreateAdd(state, b.getInt64(P.weights[buf.index].offset - P.stateOffset));
        break;
      case kir::Buffer::Kind::Arena:
        addr = b.CreateAdd(arena, codegen::emitSym(b, buf.arenaOffset, SymIndex, r.syms));
        break;
      }
      Value *slot = codegen::entryAlloca(b, I64, "buf" + Twine(i));
      b.CreateStore(addr, slot);
      r.slots.push_back(slot);
    }
    r.flagSlot = codegen::entryAlloca(b, I64, "check.flag");
    b.CreateStore(field(3, "check_flag"), r.flagSlot);
    r.fail = BasicBlock::Create(C, "failed", f);
    emitSteps(b, r, e, e.steps, launches);
    b.CreateRet(b.getInt32(0));
    b.SetInsertPoint(r.fail);
    b.CreateRet(b.getInt32(-1));
  }

  struct Run {
    Function *f;
    Value *exec, *symsPtr;
    SmallVector<Value *, 8> syms;
    SmallVector<Value *, 16> slots;
    Value *flagSlot;
    BasicBlock *fail;
  };

  void emitSteps(Builder &b, Run &r, const kir::EntryKernels &e,
                 const std::vector<kir::Step> &steps, const EntryLaunches &launches) {
    for (const kir::Step &step : steps) {
      if (const auto *c = std::get_if<kir::CondStep>(&step)) {
        emitCond(b, r, e, *c, launches);
        continue;
      }
      for (auto [kernel, index] : launches.byStep.lookup(&step))
        emitLaunch(b, r, e, *kernel, index);
    }
  }

  // Stops the run with -1 when `status` is nonzero.
  void checkStatus(Builder &b, Run &r, Value *status) {
    BasicBlock *ok = BasicBlock::Create(C, "ok", r.f);
    b.CreateCondBr(b.CreateICmpEQ(status, b.getInt32(0)), ok, r.fail);
    b.SetInsertPoint(ok);
  }

  void emitCond(Builder &b, Run &r, const kir::EntryKernels &e, const kir::CondStep &c,
                const EntryLaunches &launches) {
    Value *byte = codegen::entryAlloca(b, b.getInt8Ty(), "pred");
    Value *read = b.CreateLoad(Ptr, b.CreateStructGEP(ExecTy, r.exec, 5), "read_byte");
    Value *addr = b.CreateLoad(I64, r.slots[c.predicate]);
    checkStatus(b, r, b.CreateCall(ReadTy, read, {r.exec, addr, byte}));
    BasicBlock *thenBB = BasicBlock::Create(C, "cond.then", r.f);
    BasicBlock *elseBB = BasicBlock::Create(C, "cond.else", r.f);
    BasicBlock *done = BasicBlock::Create(C, "cond.end", r.f);
    Value *pred = b.CreateLoad(b.getInt8Ty(), byte);
    b.CreateCondBr(b.CreateICmpNE(pred, b.getInt8(0)), thenBB, elseBB);
    b.SetInsertPoint(thenBB);
    emitSteps(b, r, e, c.thenSteps, launches);
    b.CreateBr(done);
    b.SetInsertPoint(elseBB);
    emitSteps(b, r, e, c.elseSteps, launches);
    b.CreateBr(done);
    b.SetInsertPoint(done);
  }

  void emitLaunch(Builder &b, Run &r, const kir::EntryKernels &e, const CudaKernel &k,
                  int32_t index) {
    // The grid from this call's symbols; an empty one launches nothing.
    Value *gridArr = codegen::entryAlloca(b, ArrayType::get(I32, 3), "grid");
    Value *empty = b.getFalse();
    for (unsigned d = 0; d < 3; ++d) {
      Value *extent = d < k.launch.grid.size()
                          ? codegen::emitSym(b, k.launch.grid[d], SymIndex, r.syms)
                          : b.getInt64(1);
      if (d == 0 && k.launch.gridStride)
        extent = b.CreateSelect(b.CreateICmpSGT(extent, b.getInt64(MaxGridStrideBlocks)),
                                b.getInt64(MaxGridStrideBlocks), extent);
      empty = b.CreateOr(empty, b.CreateICmpSLE(extent, b.getInt64(0)));
      b.CreateStore(b.CreateTrunc(extent, I32),
                    b.CreateConstInBoundsGEP2_32(ArrayType::get(I32, 3), gridArr, 0, d));
    }
    Value *blockArr = codegen::entryAlloca(b, ArrayType::get(I32, 3), "block");
    for (unsigned d = 0; d < 3; ++d)
      b.CreateStore(b.getInt32(k.launch.block[d]),
                    b.CreateConstInBoundsGEP2_32(ArrayType::get(I32, 3), blockArr, 0, d));
    unsigned n = e.symbols.size() + k.buffers.size() + 1;
    ArrayType *paramsTy = ArrayType::get(Ptr, n);
    Value *params = codegen::entryAlloca(b, paramsTy, "params");
    unsigned p = 0;
    auto put = [&](Value *v) {
      b.CreateStore(v, b.CreateConstInBoundsGEP2_32(paramsTy, params, 0, p++));
    };
    for (unsigned s = 0; s < e.symbols.size(); ++s)
      put(b.CreateConstInBoundsGEP1_32(I64, r.symsPtr, s));
    for (uint32_t buf : k.buffers)
      put(r.slots[buf]);
    put(r.flagSlot);
    BasicBlock *launch = BasicBlock::Create(C, "launch", r.f);
    BasicBlock *next = BasicBlock::Create(C, "next", r.f);
    b.CreateCondBr(empty, next, launch);
    b.SetInsertPoint(launch);
    Value *fn = b.CreateLoad(Ptr, b.CreateStructGEP(ExecTy, r.exec, 4), "launch");
    Value *status = b.CreateCall(
        LaunchTy, fn,
        {r.exec, b.getInt32(index), gridArr, blockArr, b.getInt32(k.launch.dynamicShared), params});
    checkStatus(b, r, status);
    b.CreateBr(next);
    b.SetInsertPoint(next);
  }

  Module &M;
  LLVMContext &C;
  const kir::Program &P;
  const DenseMap<uint32_t, uint64_t> &DeviceOffset;
  const std::function<void(Function *)> &SetAttributes;
  PointerType *Ptr;
  IntegerType *I32, *I64;
  StructType *ExecTy;
  FunctionType *LaunchTy, *ReadTy;
  StringMap<unsigned> SymIndex;
};

} // namespace

Error emitHostCode(Module &m, const kir::Program &program, ArrayRef<EntryLaunches> launches,
                   const DenseMap<uint32_t, uint64_t> &deviceOffset, bool withShapes,
                   const std::function<void(Function *)> &setAttributes) {
  HostEmitter emitter(m, program, deviceOffset, setAttributes);
  for (unsigned i = 0; i < program.entries.size(); ++i)
    emitter.emitEntry(i, launches[i], withShapes);
  std::string msg;
  raw_string_ostream os(msg);
  if (verifyModule(m, &os))
    return createStringError("aotc generated invalid host code for CUDA: " + msg);
  return Error::success();
}

} // namespace aotc::cuda
