// The external functions of each entry: run (buffer addresses, then every step in order) and
// shapes (dims, arena size and guards).
#include "codegen/EntryShapes.h"
#include "codegen/cpu/CpuTarget.h"
#include "codegen/cpu/Emitter.h"

#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

namespace aotc::cpu {

using namespace llvm;

static Error checkEntry(const kir::Program &program, const kir::EntryKernels &entry) {
  StringMap<unsigned> known;
  for (unsigned i = 0; i < entry.symbols.size(); ++i)
    known[entry.symbols[i]] = i;
  std::set<std::string, std::less<>> used;
  for (const kir::Buffer &buf : entry.buffers) {
    if ((buf.kind == kir::Buffer::Kind::Weight || buf.kind == kir::Buffer::Kind::State) &&
        buf.index >= program.weights.size())
      return createStringError("entry " + entry.name + ": buffer " + buf.name +
                               " names a missing weight");
    if (buf.kind == kir::Buffer::Kind::Input && buf.index >= entry.inputs.size())
      return createStringError("entry " + entry.name + ": buffer " + buf.name +
                               " names a missing input");
    if (buf.kind == kir::Buffer::Kind::Output && buf.index >= entry.outputs.size())
      return createStringError("entry " + entry.name + ": buffer " + buf.name +
                               " names a missing output");
    buf.arenaOffset.collectSymbols(used);
  }
  for (const kir::Expr &e : entry.exprs)
    e.sym.collectSymbols(used);
  std::string problem;
  kir::forEachStep(entry.steps, [&](const kir::Step &step) {
    if (const auto *k = std::get_if<kir::LoopKernel>(&step)) {
      for (const SymExpr &x : k->outer)
        x.collectSymbols(used);
      for (const kir::Stage &s : k->stages)
        for (const SymExpr &x : s.inner)
          x.collectSymbols(used);
    } else if (const auto *g = std::get_if<kir::GemmCall>(&step)) {
      if (g->dtype != DType::F32 && problem.empty())
        problem = "entry " + entry.name + ": GEMM " + g->name + " is " + toString(g->dtype).str() +
                  "; only f32 GEMMs are supported";
      if (g->a.winogradTile && problem.empty())
        problem = "entry " + entry.name + ": GEMM " + g->name +
                  " reads a Winograd filter that pack-weights has not computed";
      for (const SymExpr *x : {&g->batch, &g->m, &g->n, &g->k})
        x->collectSymbols(used);
      for (const kir::MatrixOperand *o : {&g->a, &g->b})
        for (const SymExpr *x : o->syms())
          x->collectSymbols(used);
    } else if (const auto *a = std::get_if<kir::AttentionCall>(&step)) {
      // The CPU lowering target keeps attention as GEMM -> softmax -> GEMM.
      if (problem.empty())
        problem = "entry " + entry.name + ": attention " + a->name +
                  " is not supported by the CPU backend (lower it for the CPU target)";
    } else if (std::get<kir::CondStep>(step).predicate >= entry.buffers.size()) {
      problem = "entry " + entry.name + ": a cond's predicate names a missing buffer";
    }
  });
  if (!problem.empty())
    return createStringError(problem);
  for (const auto &sig : {&entry.inputs, &entry.outputs})
    for (const kir::TensorSig &t : *sig)
      for (const SymExpr &d : t.shape)
        d.collectSymbols(used);
  entry.arenaBytes.collectSymbols(used);
  for (const Guard &g : entry.guards) {
    g.lhs.collectSymbols(used);
    g.rhs.collectSymbols(used);
  }
  for (const std::string &s : used)
    if (!known.count(s))
      return createStringError("entry " + entry.name + ": symbol " + s +
                               " is not one of the entry's root symbols");
  return Error::success();
}

static void emitSteps(ModuleEmitter &me, const kir::EntryKernels &entry,
                      const std::vector<kir::Step> &steps, const StringMap<unsigned> &symIndex,
                      Builder &b, Value *exec, Value *closure, ArrayRef<Value *> syms,
                      ArrayRef<Value *> buffers) {
  for (const kir::Step &step : steps) {
    if (const auto *k = std::get_if<kir::LoopKernel>(&step)) {
      emitLoopKernel(me, entry, *k, symIndex, b, exec, closure, syms, buffers);
    } else if (const auto *g = std::get_if<kir::GemmCall>(&step)) {
      emitGemm(me, entry, *g, symIndex, b, exec, closure, syms, buffers);
    } else if (std::holds_alternative<kir::AttentionCall>(step)) {
      llvm_unreachable("checked before emission: the CPU has no attention kernel");
    } else {
      const auto &c = std::get<kir::CondStep>(step);
      Function *f = b.GetInsertBlock()->getParent();
      LLVMContext &ctx = f->getContext();
      BasicBlock *thenBB = BasicBlock::Create(ctx, "cond.then", f);
      BasicBlock *elseBB = BasicBlock::Create(ctx, "cond.else", f);
      BasicBlock *done = BasicBlock::Create(ctx, "cond.end", f);
      Value *pred = b.CreateLoad(b.getInt8Ty(), buffers[c.predicate], "pred");
      b.CreateCondBr(b.CreateICmpNE(pred, b.getInt8(0)), thenBB, elseBB);
      b.SetInsertPoint(thenBB);
      emitSteps(me, entry, c.thenSteps, symIndex, b, exec, closure, syms, buffers);
      b.CreateBr(done);
      b.SetInsertPoint(elseBB);
      emitSteps(me, entry, c.elseSteps, symIndex, b, exec, closure, syms, buffers);
      b.CreateBr(done);
      b.SetInsertPoint(done);
    }
  }
}

static void emitRun(ModuleEmitter &me, const kir::Program &program, unsigned index,
                    const kir::EntryKernels &entry, const StringMap<unsigned> &symIndex) {
  LLVMContext &c = me.ctx();
  Type *ptr = PointerType::getUnqual(c);
  Type *i64 = Type::getInt64Ty(c);
  FunctionType *ft = FunctionType::get(Type::getInt32Ty(c), {ptr, ptr, ptr, ptr}, false);
  unsigned vnum = me.variant() == Variant::X86_64_V4 ? 4 : 3;
  Function *f =
      me.createFunction(ft, "aotc_e" + Twine(index) + "_run_v" + Twine(vnum), /*external=*/true);
  Value *exec = f->getArg(0), *inputs = f->getArg(1), *outputs = f->getArg(2),
        *symsPtr = f->getArg(3);
  Builder b(BasicBlock::Create(c, "entry", f));
  SmallVector<Value *, 8> syms;
  for (unsigned i = 0; i < entry.symbols.size(); ++i)
    syms.push_back(
        b.CreateLoad(i64, b.CreateConstInBoundsGEP1_32(i64, symsPtr, i), entry.symbols[i]));
  StructType *et = me.execType();
  Value *weights =
      b.CreateLoad(ptr, b.CreateStructGEP(et, exec, ModuleEmitter::ExecWeights), "weights");
  Value *state = b.CreateLoad(ptr, b.CreateStructGEP(et, exec, ModuleEmitter::ExecState), "state");
  Value *derived =
      b.CreateLoad(ptr, b.CreateStructGEP(et, exec, ModuleEmitter::ExecDerived), "derived");
  Value *arena = b.CreateLoad(ptr, b.CreateStructGEP(et, exec, ModuleEmitter::ExecArena), "arena");
  ArrayType *ct = closureType(c, entry);
  Value *closure = b.CreateAlloca(ct, nullptr, "closure");
  b.CreateStore(symsPtr, b.CreateConstInBoundsGEP2_32(ct, closure, 0, 0));
  SmallVector<Value *, 16> buffers;
  for (unsigned i = 0; i < entry.buffers.size(); ++i) {
    const kir::Buffer &buf = entry.buffers[i];
    Value *p = nullptr;
    switch (buf.kind) {
    case kir::Buffer::Kind::Input:
      p = b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_32(ptr, inputs, buf.index));
      break;
    case kir::Buffer::Kind::Output:
      p = b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_32(ptr, outputs, buf.index));
      if (!(buf.viewOffset == SymExpr(0)))
        p = b.CreateInBoundsGEP(
            b.getInt8Ty(), p,
            emitSym(b, buf.viewOffset * int64_t(byteSize(buf.dtype)), symIndex, syms));
      break;
    case kir::Buffer::Kind::Weight: {
      const kir::Weight &w = program.weights[buf.index];
      p = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), w.derived ? derived : weights, w.offset);
      break;
    }
    case kir::Buffer::Kind::State:
      p = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), state,
                                       program.weights[buf.index].offset - program.stateOffset);
      break;
    case kir::Buffer::Kind::Arena:
      p = b.CreateInBoundsGEP(b.getInt8Ty(), arena, emitSym(b, buf.arenaOffset, symIndex, syms));
      break;
    }
    p->setName("buf" + Twine(i));
    buffers.push_back(p);
    b.CreateStore(p, b.CreateConstInBoundsGEP2_32(ct, closure, 0, i + 1));
  }
  // The index-check flag: tasks store a failed check's number into it; the run returns it.
  Value *flag = b.CreateAlloca(b.getInt32Ty(), nullptr, "index.check");
  b.CreateStore(b.getInt32(0), flag);
  b.CreateStore(flag, b.CreateConstInBoundsGEP2_32(ct, closure, 0, entry.buffers.size() + 1));
  buffers.push_back(flag);
  emitSteps(me, entry, entry.steps, symIndex, b, exec, closure, syms, buffers);
  LoadInst *failed = b.CreateLoad(b.getInt32Ty(), flag, "failed.check");
  failed->setAtomic(AtomicOrdering::Monotonic);
  failed->setAlignment(Align(4));
  b.CreateRet(failed);
}

Error emitProgram(const kir::Program &program, Variant v, bool withShapes, TargetMachine &tm,
                  Module &module) {
  module.setDataLayout(tm.createDataLayout());
  module.setTargetTriple(tm.getTargetTriple().str());
  ModuleEmitter me(module, v, tm);
  me.setWeightsCacheResident(program.weightBytes <= GemmPolicy::CacheResidentWeightBytes);
  for (unsigned i = 0; i < program.entries.size(); ++i) {
    const kir::EntryKernels &entry = program.entries[i];
    if (Error err = checkEntry(program, entry))
      return err;
    StringMap<unsigned> symIndex;
    for (unsigned s = 0; s < entry.symbols.size(); ++s)
      symIndex[entry.symbols[s]] = s;
    emitRun(me, program, i, entry, symIndex);
    if (withShapes) {
      FunctionType *ft = FunctionType::get(
          Type::getInt32Ty(me.ctx()),
          {PointerType::getUnqual(me.ctx()), PointerType::getUnqual(me.ctx())}, false);
      codegen::emitShapes(me.createFunction(ft, "aotc_e" + Twine(i) + "_shapes", /*external=*/true),
                          entry);
    }
  }
  std::string msg;
  raw_string_ostream os(msg);
  if (verifyModule(module, &os))
    return createStringError("aotc generated invalid LLVM IR for " + program.name + ": " + msg);
  return Error::success();
}

} // namespace aotc::cpu
