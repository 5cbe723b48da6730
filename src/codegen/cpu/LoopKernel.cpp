// Loop kernels: a task function over a range of the flattened parallel outer loops, the nest of
// remaining loops, and per outer point the reduce and store stages in order.
#include "codegen/IndexAnalysis.h"
#include "codegen/cpu/CpuTarget.h"
#include "codegen/cpu/Emitter.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/IR/Intrinsics.h"

#include <limits>

namespace aotc::cpu {

using namespace llvm;

namespace {

// Gathers are slow on the AVX-512 parts this code meets (a 16-lane gather costs more than the
// scalar loads): the vectorizer reads strided elements with wide loads and shuffles instead.
void preferNoGather(Function *f) { addTargetFeature(f, "+prefer-no-gather"); }

class KernelBody {
public:
  KernelBody(Builder &b, const kir::LoopKernel &kernel, const kir::EntryKernels &entry,
             ExprEmitter &ex, unsigned vecWidth)
      : B(b), K(kernel), Entry(entry), Ex(ex), VecWidth(vecWidth) {
    if (!K.outer.empty())
      Interior = interior(entry);
    Rerunnable = rerunnable();
  }

  void emit(Value *begin, Value *end) {
    unsigned n = K.outer.size();
    unsigned p = std::min<unsigned>(K.parallelLoops, n);
    for (const SymExpr &e : K.outer)
      Extents.push_back(Ex.sym(e));
    Ex.loopVars.assign(n + maxInner(), nullptr);
    Ex.reduceValues.assign(K.stages.size(), nullptr);
    Ex.reduceTypes.assign(K.stages.size(), DType::I64);
    if (p == 0) {
      // One index: the whole nest.
      emitLoop(
          B, begin, end, [&](Value *) { nest(0); }, "task");
      return;
    }
    // The flat range is cut into segments along the last parallel loop, each a canonical loop
    // the vectorizer can handle.
    Function *f = B.GetInsertBlock()->getParent();
    LLVMContext &c = f->getContext();
    AllocaInst *pos = entryAlloca(B, B.getInt64Ty(), "pos");
    B.CreateStore(begin, pos);
    BasicBlock *head = BasicBlock::Create(c, "seg.head", f);
    BasicBlock *body = BasicBlock::Create(c, "seg.body", f);
    BasicBlock *exit = BasicBlock::Create(c, "seg.exit", f);
    B.CreateBr(head);
    B.SetInsertPoint(head);
    Value *i = B.CreateLoad(B.getInt64Ty(), pos, "i");
    B.CreateCondBr(B.CreateICmpSLT(i, end), body, exit);
    B.SetInsertPoint(body);
    Value *rem = i;
    SmallVector<Value *, 4> idx(p);
    for (unsigned d = p; d-- > 0;) {
      if (d == 0) {
        idx[d] = rem;
        break;
      }
      idx[d] = B.CreateURem(rem, Extents[d]);
      rem = B.CreateUDiv(rem, Extents[d]);
    }
    for (unsigned d = 0; d + 1 < p; ++d)
      Ex.loopVars[d] = idx[d];
    Value *segEnd = B.CreateBinaryIntrinsic(
        Intrinsic::smin, end, B.CreateAdd(B.CreateSub(i, idx[p - 1]), Extents[p - 1]));
    Value *last = B.CreateAdd(idx[p - 1], B.CreateSub(segEnd, i));
    loop(p - 1, idx[p - 1], last, [&](Value *j) {
      Ex.loopVars[p - 1] = j;
      nest(p);
    });
    B.CreateStore(segEnd, pos);
    B.CreateBr(head);
    B.SetInsertPoint(exit);
  }

private:
  unsigned maxInner() const {
    size_t m = 0;
    for (const kir::Stage &s : K.stages)
      m = std::max(m, s.inner.size());
    return m;
  }

  void nest(unsigned d) {
    if (d == K.outer.size()) {
      for (unsigned s = 0; s < K.stages.size(); ++s)
        stage(s);
      return;
    }
    loop(d, B.getInt64(0), Extents[d], [&](Value *v) {
      Ex.loopVars[d] = v;
      nest(d + 1);
    });
  }

  // Where along the innermost loop no clamp of it clamps (a pooling window's padding read as
  // the nearest edge element): the stages' offsets and values over the loops' constant extents,
  // an inner loop's the largest of the stages'.
  std::optional<codegen::ClampInterior> interior(const kir::EntryKernels &entry) const {
    unsigned n = K.outer.size();
    SmallVector<kir::ExprId, 8> roots;
    for (const kir::Stage &s : K.stages)
      roots.append({s.offset, s.value});
    auto extent = [&](unsigned loop) -> std::optional<int64_t> {
      if (loop < n)
        return K.outer[loop].constant();
      std::optional<int64_t> most = 0;
      for (const kir::Stage &s : K.stages)
        if (loop - n < s.inner.size()) {
          std::optional<int64_t> e = s.inner[loop - n].constant();
          most = e && most ? std::optional<int64_t>(std::max(*most, *e)) : std::nullopt;
        }
      return most;
    };
    return codegen::clampInterior(entry, roots, n - 1, extent);
  }

  // Outer loop `d` over [begin, end).
  void loop(unsigned d, Value *begin, Value *end, function_ref<void(Value *)> body) {
    if (d + 1 == K.outer.size())
      unswitched(d, begin, end, body);
    else
      emitLoop(B, begin, end, body, "l" + Twine(d));
  }

  // The innermost outer loop `d`, once per arm of each select whose condition only the outer
  // loops around it decide (a concatenation or a padding along an outer dim): the condition is
  // computed before the loop, and each copy of the loop reads one arm's elements with no
  // per-point select of addresses. At most MaxUnswitchedLoops copies in all.
  void unswitched(unsigned d, Value *begin, Value *end, function_ref<void(Value *)> body) {
    kir::ExprId cond = Unswitched + 1 < MaxUnswitchedLoops ? invariantCondition(d) : kir::NoExpr;
    if (cond == kir::NoExpr) {
      innermost(d, begin, end, body);
      return;
    }
    ++Unswitched;
    Ex.clearCache();
    Value *taken = Ex.emit(cond);
    Ex.clearCache();
    Function *f = B.GetInsertBlock()->getParent();
    LLVMContext &c = f->getContext();
    BasicBlock *join = BasicBlock::Create(c, "unswitch.join", f);
    BasicBlock *arms[2] = {BasicBlock::Create(c, "unswitch.true", f, join),
                           BasicBlock::Create(c, "unswitch.false", f, join)};
    B.CreateCondBr(taken, arms[0], arms[1]);
    SmallVector<kir::ExprId, 8> selects = selectsOn(cond);
    for (unsigned arm = 0; arm < 2; ++arm) {
      B.SetInsertPoint(arms[arm]);
      for (kir::ExprId s : selects)
        Ex.substitutes[s] = Entry.expr(s).operands[1 + arm];
      unswitched(d, begin, end, body);
      for (kir::ExprId s : selects)
        Ex.substitutes.erase(s);
      B.CreateBr(join);
    }
    B.SetInsertPoint(join);
  }

  // Calls fn(id) on every expression the stages read (through the emitter's substitutes),
  // once each.
  void forEachReached(function_ref<void(kir::ExprId)> fn) {
    DenseSet<kir::ExprId> seen;
    SmallVector<kir::ExprId, 32> work;
    for (const kir::Stage &s : K.stages)
      work.append({s.offset, s.value});
    while (!work.empty()) {
      kir::ExprId id = work.pop_back_val();
      if (id == kir::NoExpr)
        continue;
      id = Ex.resolve(id);
      if (!seen.insert(id).second)
        continue;
      fn(id);
      work.append(Entry.expr(id).operands.begin(), Entry.expr(id).operands.end());
    }
  }

  // The condition of a select that the stages read and that no loop from `d` on decides
  // (codegen::isInvariant with the loops before d fixed); NoExpr when there is none.
  kir::ExprId invariantCondition(unsigned d) {
    auto before = [d](unsigned loop) { return loop < d; };
    auto none = [](unsigned) { return false; };
    codegen::LoopRoles roles{before, none};
    kir::ExprId found = kir::NoExpr;
    forEachReached([&](kir::ExprId id) {
      const kir::Expr &e = Entry.expr(id);
      if (found == kir::NoExpr && e.kind == kir::ExprKind::Select &&
          codegen::isInvariant(Entry, e.operands[0], roles))
        found = e.operands[0];
    });
    return found;
  }

  // The selects on `cond` that the stages read.
  SmallVector<kir::ExprId, 8> selectsOn(kir::ExprId cond) {
    SmallVector<kir::ExprId, 8> out;
    forEachReached([&](kir::ExprId id) {
      const kir::Expr &e = Entry.expr(id);
      if (e.kind == kir::ExprKind::Select && e.operands[0] == cond)
        out.push_back(id);
    });
    return out;
  }

  // Whether running a point again after later points changes nothing: no stage reads a buffer
  // that one stores (so every point reads what it read the first time; of the points writing
  // one element, the last in order stays the last), and every stage's inner window is unrolled
  // (the innermost loop is then the one that vectorizes, and a point costs one lane).
  bool rerunnable() {
    DenseSet<uint32_t> stored;
    for (const kir::Stage &s : K.stages) {
      if (s.kind == kir::Stage::Kind::Store)
        stored.insert(s.buffer);
      if (!ExprEmitter::unrollsWindow(s, MaxUnrolledPoints))
        return false;
    }
    bool reads = false;
    forEachReached([&](kir::ExprId id) {
      const kir::Expr &e = Entry.expr(id);
      reads |= e.kind == kir::ExprKind::Load && stored.count(e.index);
    });
    return !reads;
  }

  // The innermost outer loop `d` over [begin, end): marked parallel in an independent kernel.
  // Where it clamps indices, its points inside the clamps' interior go without them, so that
  // their loads are affine and vectorize; the points before and after keep them.
  void innermost(unsigned d, Value *begin, Value *end, function_ref<void(Value *)> body) {
    auto plain = [&](Value *from, Value *to, const Twine &name) {
      if (K.independent)
        emitParallelLoop(B, from, to, body, name, true);
      else
        emitLoop(B, from, to, body, name);
    };
    // A range longer than a vector whose length is not a multiple of it runs its whole vectors,
    // then the last vector's worth of points again (some for the second time) instead of a
    // scalar remainder: a 3x3 pooling's 55 interior points of a row of 56 took 3 vectors of 16
    // and 7 scalar points, which were most of its time.
    auto range = [&](Value *from, Value *to, const Twine &name) {
      if (!Rerunnable) {
        plain(from, to, name);
        return;
      }
      Value *w = B.getInt64(VecWidth);
      Value *n = B.CreateSub(to, from);
      Value *rest = B.CreateURem(n, w);
      emitIf(
          B, B.CreateAnd(B.CreateICmpSGT(n, w), B.CreateICmpNE(rest, B.getInt64(0))),
          [&] {
            plain(from, B.CreateSub(to, rest), name);
            plain(B.CreateSub(to, w), to, name + ".last");
          },
          [&] { plain(from, to, name); });
    };
    if (!Interior) {
      range(begin, end, "l" + Twine(d));
      return;
    }
    auto within = [&](int64_t at, Value *lo, Value *hi) {
      return B.CreateBinaryIntrinsic(
          Intrinsic::smin, B.CreateBinaryIntrinsic(Intrinsic::smax, B.getInt64(at), lo), hi);
    };
    Value *from = within(Interior->begin, begin, end), *to = within(Interior->end, from, end);
    range(begin, from, "l" + Twine(d) + ".lo");
    for (auto [clamp, operand] : Interior->clamps)
      Ex.substitutes[clamp] = operand;
    range(from, to, "l" + Twine(d));
    for (auto [clamp, operand] : Interior->clamps)
      Ex.substitutes.erase(clamp);
    range(to, end, "l" + Twine(d) + ".hi");
  }

  // Copies of the innermost loop that unswitched() may emit.
  static constexpr unsigned MaxUnswitchedLoops = 64;

  // Inner windows of up to this many constant points are unrolled (ExprEmitter::emitStage).
  static constexpr int64_t MaxUnrolledPoints = 16;

  void stage(unsigned si) { Ex.emitStage(si, K.stages[si], K.outer.size(), MaxUnrolledPoints); }

  Builder &B;
  const kir::LoopKernel &K;
  const kir::EntryKernels &Entry;
  ExprEmitter &Ex;
  SmallVector<Value *, 4> Extents;
  unsigned VecWidth;       // f32 lanes of the variant's vectors
  unsigned Unswitched = 0; // unswitched()'s branches so far: each adds a copy of the loop
  std::optional<codegen::ClampInterior> Interior;
  bool Rerunnable = false;
};

// The task of a loop kernel over the buffers `usedList` (by slot), which it reads from its
// step's closure (`closureType`: the entry's closure, then the buffers).
Function *emitKernelTask(ModuleEmitter &me, const kir::EntryKernels &entry,
                         const kir::LoopKernel &kernel, const StringMap<unsigned> &symIndex,
                         ArrayRef<uint32_t> usedList, StructType *closureType) {
  LLVMContext &c = me.ctx();
  // The body takes the used buffers as separate pointers, all `noalias`: distinct buffers one
  // step touches never overlap (the memory plan frees a slot only after the last step touching
  // its occupant), so the vectorizer needs no run-time overlap checks, which clamped or computed
  // indices would defeat.
  SmallVector<Type *, 16> params(usedList.size(), PointerType::getUnqual(c));
  params.append(entry.symbols.size(), Type::getInt64Ty(c));
  params.push_back(PointerType::getUnqual(c)); // the run's index-check flag
  params.append(2, Type::getInt64Ty(c));
  FunctionType *bodyType = FunctionType::get(Type::getVoidTy(c), params, false);
  std::string name = me.prefix() + kernel.name;
  Function *body = me.createFunction(bodyType, name + ".body");
  body->addFnAttr(Attribute::AlwaysInline);
  preferNoGather(body);
  for (unsigned i = 0; i < usedList.size(); ++i)
    body->addParamAttr(i, Attribute::NoAlias);
  {
    Builder b(BasicBlock::Create(c, "entry", body));
    SmallVector<Value *, 8> syms;
    for (unsigned i = 0; i < entry.symbols.size(); ++i)
      syms.push_back(body->getArg(usedList.size() + i));
    SmallVector<Value *, 16> buffers(entry.buffers.size(), nullptr);
    for (unsigned i = 0; i < usedList.size(); ++i)
      buffers[usedList[i]] = body->getArg(i);
    ExprEmitter ex(me.math(), b, entry, symIndex, syms, buffers);
    ex.failedCheck = entryAlloca(b, b.getInt32Ty(), "failed.check");
    b.CreateStore(b.getInt32(0), ex.failedCheck);
    KernelBody kb(b, kernel, entry, ex, gemmTiling(me.variant()).vecWidth);
    unsigned nargs = body->arg_size();
    kb.emit(body->getArg(nargs - 2), body->getArg(nargs - 1));
    // Kernels without checks fold this away.
    Value *failed = b.CreateLoad(b.getInt32Ty(), ex.failedCheck);
    BasicBlock *flush = BasicBlock::Create(c, "check.flush", body);
    BasicBlock *done = BasicBlock::Create(c, "check.done", body);
    b.CreateCondBr(b.CreateICmpNE(failed, b.getInt32(0)), flush, done);
    b.SetInsertPoint(flush);
    storeCheckFlag(b, body->getArg(nargs - 3), failed);
    b.CreateBr(done);
    b.SetInsertPoint(done);
    b.CreateRetVoid();
  }

  Function *task = me.createFunction(me.taskType(), name);
  preferNoGather(task);
  {
    Builder b(BasicBlock::Create(c, "entry", task));
    Value *closure = task->getArg(0);
    SmallVector<Value *, 8> syms, buffers;
    loadClosure(b, entry, b.CreateLoad(b.getPtrTy(), b.CreateStructGEP(closureType, closure, 0)),
                syms, buffers);
    SmallVector<Value *, 16> args;
    for (unsigned slot = 0; slot < usedList.size(); ++slot)
      args.push_back(b.CreateLoad(b.getPtrTy(), b.CreateStructGEP(closureType, closure, 1 + slot)));
    args.append(syms.begin(), syms.end());
    args.push_back(buffers[entry.buffers.size()]);
    args.push_back(task->getArg(1));
    args.push_back(task->getArg(2));
    b.CreateCall(body, args);
    b.CreateRetVoid();
  }
  return task;
}

} // namespace

void emitLoopKernel(ModuleEmitter &me, const kir::EntryKernels &entry,
                    const kir::LoopKernel &kernel, const StringMap<unsigned> &symIndex,
                    Builder &run, Value *exec, Value *closure, ArrayRef<Value *> runSyms,
                    ArrayRef<Value *> runBuffers) {
  LLVMContext &c = me.ctx();
  TaskKey key(entry, "kernel");
  for (const SymExpr &e : kernel.outer)
    key.sym(e);
  key.number(kernel.parallelLoops).number(kernel.independent);
  for (const kir::Stage &s : kernel.stages) {
    key.text("stage").number(unsigned(s.kind)).number(s.inner.size());
    for (const SymExpr &e : s.inner)
      key.sym(e);
    key.number(unsigned(s.reduce)).text(toString(s.accType));
    if (s.kind == kir::Stage::Kind::Store)
      key.buffer(s.buffer);
    key.expr(s.offset).expr(s.value);
  }
  ArrayRef<uint32_t> usedList = key.slots();
  // The step's closure: the entry's, then its buffers by slot; kernels of one key share the task.
  SmallVector<Type *, 8> fields(usedList.size() + 1, PointerType::getUnqual(c));
  StructType *closureType = StructType::get(c, fields);
  Value *stepClosure = entryAlloca(run, closureType, "kernel.closure");
  run.CreateStore(closure, run.CreateStructGEP(closureType, stepClosure, 0));
  for (auto [slot, id] : enumerate(usedList))
    run.CreateStore(runBuffers[id], run.CreateStructGEP(closureType, stepClosure, 1 + slot));
  auto [shared, fresh] = me.sharedTasks().try_emplace(key.str());
  if (fresh)
    shared->second = {emitKernelTask(me, entry, kernel, symIndex, usedList, closureType)};
  Function *task = shared->second[0];

  // Work estimate: parallel points x (serial outer points x summed inner points of the stages).
  unsigned p = std::min<unsigned>(kernel.parallelLoops, kernel.outer.size());
  Value *total = run.getInt64(1), *perIndex = run.getInt64(1);
  for (unsigned d = 0; d < kernel.outer.size(); ++d) {
    Value *ext = emitSym(run, kernel.outer[d], symIndex, runSyms);
    if (d < p)
      total = run.CreateMul(total, ext);
    else
      perIndex = run.CreateMul(perIndex, ext);
  }
  Value *stageWork = run.getInt64(0);
  for (const kir::Stage &s : kernel.stages) {
    Value *w = run.getInt64(1);
    for (const SymExpr &e : s.inner)
      w = run.CreateMul(w, emitSym(run, e, symIndex, runSyms));
    stageWork = run.CreateAdd(stageWork, w);
  }
  perIndex = run.CreateMul(perIndex, stageWork);
  emitDispatch(me, run, exec, task, stepClosure, total, perIndex);
}

} // namespace aotc::cpu
