// Loop kernels as CUDA kernels, correct first. A kernel without a sizeable reduction runs one
// thread per point of the flattened parallel outer loops (a grid-stride loop with 64-bit
// indices), the remaining outer loops and every stage's inner loops serial in the thread. A
// kernel that reduces (softmax, layer_norm, sum/max/argmax along a dim) runs one block per
// point instead (a block-stride loop): its threads split each stage's inner points, reductions
// are combined across the block (BlockReduce.h) and their results reach every thread for the
// later stages, all stages in one kernel. A thread-per-point kernel whose innermost loop runs
// contiguously in its stores takes VectorAccessBytes of consecutive points at a time instead
// (VectorPlan): vector loads and stores, the expressions per lane as the scalar kernel computes
// them, so that the results are bitwise the same.
#include "codegen/ExprEmitter.h"
#include "codegen/IndexAnalysis.h"
#include "codegen/cuda/Attention.h"
#include "codegen/cuda/BlockReduce.h"
#include "codegen/cuda/CudaCodegen.h"
#include "codegen/cuda/Gemm.h"
#include "codegen/cuda/GemmOperands.h"
#include "codegen/cuda/KernelBuilder.h"
#include "kernel/MemoryPlan.h"

#include "fmt/format.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

namespace aotc::cuda {

using namespace llvm;
using codegen::Builder;

namespace {

/// The threads of a block per point when `k` reduces: the most inner points of its stages
/// rounded up to whole warps, at most ReductionBlock; nullopt (a thread per point) when no
/// reduction stage has ReductionMinPoints inner points or a symbolic count.
std::optional<unsigned> reductionThreads(const kir::LoopKernel &k) {
  bool reduces = false, symbolic = false;
  int64_t most = 1;
  for (const kir::Stage &s : k.stages) {
    int64_t points = 1;
    bool constant = true;
    for (const SymExpr &e : s.inner) {
      std::optional<int64_t> c = e.constant();
      constant = constant && c;
      points *= c.value_or(1);
    }
    symbolic = symbolic || !constant;
    most = std::max(most, points);
    if (s.kind == kir::Stage::Kind::Reduce && (!constant || points >= ReductionMinPoints))
      reduces = true;
  }
  if (!reduces)
    return std::nullopt;
  if (symbolic)
    return ReductionBlock;
  return unsigned(std::min<int64_t>(ReductionBlock, (most + 31) / 32 * 32));
}

/// How a thread-per-point kernel takes `lanes` consecutive points of its innermost loop at once:
/// one vector load per load that runs contiguously along the loop, one scalar load for all lanes
/// per load that does not read it, per-lane loads for the others and for those in the arms of a
/// select (which branches: a concatenation's lanes load the input they take only), and one vector
/// store per stage.
struct VectorPlan {
  unsigned lanes = 1;
  /// The innermost extent is symbolic: the kernel checks that it is a multiple of `lanes` and
  /// runs the scalar loop where it is not.
  bool checkExtent = false;
  /// By stage, the loads of its value (not those inside another load's offset).
  std::vector<SmallVector<kir::ExprId, 4>> contiguous, broadcast;
};

/// The VectorPlan of `k`, which runs a thread per point: nullopt unless every outer loop is
/// parallel, every stage stores one element per point at an offset contiguous along the innermost
/// loop, and that loop's extent may be a multiple of the lanes. The lanes fill VectorAccessBytes
/// with the widest element that is accessed as a vector.
std::optional<VectorPlan> vectorPlan(const kir::EntryKernels &entry, const kir::LoopKernel &k) {
  unsigned n = k.outer.size();
  if (n == 0 || k.parallelLoops < n)
    return std::nullopt;
  unsigned d = n - 1;
  auto fixed = [d](unsigned loop) { return loop != d; };
  auto along = [d](unsigned loop) { return loop == d; };
  codegen::LoopRoles roles{fixed, along};
  auto contiguous = [&](kir::ExprId offset) {
    unsigned uses = 0;
    return codegen::isAffine(entry, offset, roles, d, uses) && uses == 1;
  };
  VectorPlan plan;
  size_t widest = 1;
  auto widen = [&](uint32_t buffer) {
    widest = std::max(widest, byteSize(entry.buffers[buffer].dtype));
  };
  for (const kir::Stage &s : k.stages) {
    if (s.kind != kir::Stage::Kind::Store || !s.inner.empty() || !contiguous(s.offset))
      return std::nullopt;
    widen(s.buffer);
    SmallVector<kir::ExprId, 4> &vec = plan.contiguous.emplace_back();
    SmallVector<kir::ExprId, 4> &one = plan.broadcast.emplace_back();
    SmallVector<kir::ExprId, 16> work = {s.value};
    DenseSet<kir::ExprId> seen;
    while (!work.empty()) {
      kir::ExprId id = work.pop_back_val();
      if (!seen.insert(id).second)
        continue;
      const kir::Expr &e = entry.expr(id);
      if (codegen::isLoadingSelect(entry, e)) {
        work.push_back(e.operands[0]); // its arms load per lane, the arm it takes only
        continue;
      }
      if (e.kind != kir::ExprKind::Load) {
        work.append(e.operands.begin(), e.operands.end());
        continue;
      }
      if (!codegen::readsLoop(entry, e.operands[0], d)) {
        one.push_back(id);
      } else if (contiguous(e.operands[0])) {
        vec.push_back(id);
        widen(e.index);
      }
    }
  }
  if (widest > VectorAccessBytes)
    return std::nullopt;
  plan.lanes = unsigned(VectorAccessBytes / widest);
  if (std::optional<int64_t> extent = k.outer[d].constant())
    return *extent % plan.lanes == 0 ? std::optional(plan) : std::nullopt;
  plan.checkExtent = true;
  return plan;
}

class KernelBody {
public:
  /// With `scratch`, a block per point; else a thread per point, or, with `plan`, a thread per
  /// plan->lanes points.
  KernelBody(Builder &b, const kir::EntryKernels &entry, const kir::LoopKernel &kernel,
             codegen::ExprEmitter &ex, ArrayRef<Value *> buffers, const BlockScratch *scratch,
             const VectorPlan *plan)
      : B(b), Entry(entry), K(kernel), Ex(ex), Buffers(buffers), Scratch(scratch), Plan(plan) {}

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
    Value *first, *stride;
    if (Scratch) {
      // Every thread of a block walks the same points: the barriers inside are reached by all.
      Tid = tid;
      Ntid = ntid;
      first = ctaid;
      stride = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
    } else {
      first = B.CreateAdd(B.CreateMul(ctaid, ntid), tid);
      Value *nctaid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
      stride = B.CreateMul(nctaid, ntid);
    }

    auto points = [&](Value *i) {
      setOuterLoopVars(i, p);
      nest(p);
    };
    if (!Plan) {
      gridLoop(total, first, stride, points, "point");
      return;
    }
    Value *lanes = B.getInt64(Plan->lanes);
    auto vectors = [&] {
      gridLoop(
          B.CreateUDiv(total, lanes), first, stride,
          [&](Value *i) { lanePoints(B.CreateMul(i, lanes)); }, "vpoint");
    };
    if (!Plan->checkExtent) {
      vectors();
      return;
    }
    Function *f = B.GetInsertBlock()->getParent();
    LLVMContext &c = f->getContext();
    BasicBlock *vec = BasicBlock::Create(c, "vector", f);
    BasicBlock *scalar = BasicBlock::Create(c, "scalar", f);
    BasicBlock *done = BasicBlock::Create(c, "kernel.done", f);
    Value *rest = B.CreateURem(Extents[p - 1], lanes);
    B.CreateCondBr(B.CreateICmpEQ(rest, B.getInt64(0)), vec, scalar);
    B.SetInsertPoint(vec);
    vectors();
    B.CreateBr(done);
    B.SetInsertPoint(scalar);
    gridLoop(total, first, stride, points, "point");
    B.CreateBr(done);
    B.SetInsertPoint(done);
  }

private:
  // for (i = first; i < total; i += stride) body(i), a loop named after `name`.
  void gridLoop(Value *total, Value *first, Value *stride, function_ref<void(Value *)> body,
                const Twine &name) {
    Function *f = B.GetInsertBlock()->getParent();
    LLVMContext &c = f->getContext();
    BasicBlock *pre = B.GetInsertBlock();
    BasicBlock *head = BasicBlock::Create(c, "grid.head", f);
    BasicBlock *loop = BasicBlock::Create(c, "grid.body", f);
    BasicBlock *exit = BasicBlock::Create(c, "grid.exit", f);
    B.CreateBr(head);
    B.SetInsertPoint(head);
    PHINode *i = B.CreatePHI(B.getInt64Ty(), 2, name);
    i->addIncoming(first, pre);
    B.CreateCondBr(B.CreateICmpSLT(i, total), loop, exit);
    B.SetInsertPoint(loop);
    // Values of one loop's body dominate neither the other loop's nor what follows.
    Ex.clearCache();
    body(i);
    Ex.clearCache();
    i->addIncoming(B.CreateAdd(i, stride, name + ".next"), B.GetInsertBlock());
    B.CreateBr(head);
    B.SetInsertPoint(exit);
  }

  // The loop vars of the first `p` outer loops at flat point `i` (row-major).
  void setOuterLoopVars(Value *i, unsigned p) {
    Value *rem = i;
    for (unsigned d = p; d-- > 0;) {
      if (d == 0) {
        Ex.loopVars[0] = rem;
        break;
      }
      Ex.loopVars[d] = B.CreateURem(rem, Extents[d]);
      rem = B.CreateUDiv(rem, Extents[d]);
    }
  }

  // The Plan->lanes points from flat point `first` on, a multiple of the lanes and so within one
  // row of the innermost loop: vector accesses where every one is aligned to its size (an
  // input's pointer, a view's offset may not be), else the points one at a time.
  void lanePoints(Value *first) {
    unsigned d = K.outer.size() - 1, lanes = Plan->lanes;
    setOuterLoopVars(first, d + 1);
    Value *base = Ex.loopVars[d];
    Value *aligned = nullptr;
    auto address = [&](kir::ExprId offset, uint32_t buffer) {
      DType t = Entry.buffers[buffer].dtype;
      Value *off = codegen::convert(B, Ex.emit(offset), Ex.exprType(offset), DType::I64);
      Value *ptr =
          B.CreateInBoundsGEP(codegen::storageType(B.getContext(), t), Buffers[buffer], off);
      Value *low = B.CreateAnd(B.CreatePtrToInt(ptr, B.getInt64Ty()), lanes * byteSize(t) - 1);
      Value *ok = B.CreateICmpEQ(low, B.getInt64(0));
      aligned = aligned ? B.CreateAnd(aligned, ok) : ok;
      return ptr;
    };
    SmallVector<Value *, 4> stores;
    DenseMap<kir::ExprId, Value *> loads;
    for (auto [si, s] : enumerate(K.stages)) {
      stores.push_back(address(s.offset, s.buffer));
      for (kir::ExprId id : Plan->contiguous[si])
        if (!loads.count(id))
          loads[id] = address(Entry.expr(id).operands[0], Entry.expr(id).index);
    }
    Function *f = B.GetInsertBlock()->getParent();
    LLVMContext &c = f->getContext();
    BasicBlock *vec = BasicBlock::Create(c, "lanes.vector", f);
    BasicBlock *each = BasicBlock::Create(c, "lanes.each", f);
    BasicBlock *done = BasicBlock::Create(c, "lanes.done", f);
    B.CreateCondBr(aligned, vec, each);

    B.SetInsertPoint(vec);
    Ex.clearCache();
    SmallVector<Value *, 16> laneVars;
    for (unsigned l = 0; l < lanes; ++l)
      laneVars.push_back(l ? B.CreateAdd(base, B.getInt64(l)) : base);
    // One cache per lane, as the scalar kernel has one per point.
    std::vector<DenseMap<kir::ExprId, Value *>> caches(lanes);
    auto atLane = [&](unsigned l, function_ref<Value *()> emit) {
      Ex.loopVars[d] = laneVars[l];
      Ex.swapCache(caches[l]);
      Value *v = emit();
      Ex.swapCache(caches[l]);
      return v;
    };
    DenseSet<kir::ExprId> seen;
    for (auto [si, s] : enumerate(K.stages)) {
      for (kir::ExprId id : Plan->contiguous[si]) {
        if (!seen.insert(id).second)
          continue;
        const kir::Expr &e = Entry.expr(id);
        DType t = Entry.buffers[e.index].dtype;
        auto *ty = FixedVectorType::get(codegen::storageType(c, t), lanes);
        Value *v = B.CreateAlignedLoad(ty, loads[id], Align(lanes * byteSize(t)));
        for (unsigned l = 0; l < lanes; ++l) {
          Value *x = codegen::fromStorage(B, B.CreateExtractElement(v, l), t);
          caches[l][id] = codegen::convert(B, x, t, e.type);
        }
      }
      for (kir::ExprId id : Plan->broadcast[si]) {
        if (!seen.insert(id).second)
          continue;
        Value *v = atLane(0, [&] { return Ex.emit(id); });
        for (unsigned l = 1; l < lanes; ++l)
          caches[l][id] = v;
      }
      DType t = Entry.buffers[s.buffer].dtype;
      Type *st = codegen::storageType(c, t);
      Value *out = PoisonValue::get(FixedVectorType::get(st, lanes));
      for (unsigned l = 0; l < lanes; ++l) {
        Value *v = atLane(l, [&] { return Ex.emit(s.value); });
        v = codegen::convert(B, v, Ex.exprType(s.value), t);
        out = B.CreateInsertElement(out, codegen::toStorage(B, v, t), l);
      }
      B.CreateAlignedStore(out, stores[si], Align(lanes * byteSize(t)));
    }
    B.CreateBr(done);

    B.SetInsertPoint(each);
    codegen::emitLoop(
        B, B.getInt64(0), B.getInt64(lanes),
        [&](Value *l) {
          Ex.loopVars[d] = B.CreateAdd(base, l);
          Ex.clearCache();
          for (unsigned si = 0; si < K.stages.size(); ++si)
            stage(si);
          Ex.clearCache();
        },
        "lane");
    B.CreateBr(done);
    B.SetInsertPoint(done);
  }

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
  void stage(unsigned si) {
    const kir::Stage &s = K.stages[si];
    if (!Scratch) {
      Ex.emitStage(si, s, K.outer.size(), 0);
      return;
    }
    if (s.kind == kir::Stage::Kind::Reduce) {
      blockReduceStage(si, s);
      return;
    }
    blockStoreStage(s);
    // A later stage may load what this one stored at another thread's points.
    if (si + 1 < K.stages.size())
      B.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {});
  }

  // Runs `body` at the inner points of `s` this thread takes: linear points tid, tid + ntid, ...
  // (row-major), with the stage's inner loop vars set.
  void stridedPoints(const kir::Stage &s, function_ref<void(Value *)> body) {
    unsigned firstInner = K.outer.size();
    SmallVector<Value *, 4> extents;
    Value *total = B.getInt64(1);
    for (const SymExpr &e : s.inner) {
      extents.push_back(Ex.sym(e));
      total = B.CreateMul(total, extents.back());
    }
    Function *f = B.GetInsertBlock()->getParent();
    LLVMContext &c = f->getContext();
    BasicBlock *pre = B.GetInsertBlock();
    BasicBlock *head = BasicBlock::Create(c, "inner.head", f);
    BasicBlock *loop = BasicBlock::Create(c, "inner.body", f);
    BasicBlock *exit = BasicBlock::Create(c, "inner.exit", f);
    B.CreateBr(head);
    B.SetInsertPoint(head);
    PHINode *lin = B.CreatePHI(B.getInt64Ty(), 2, "lin");
    lin->addIncoming(Tid, pre);
    B.CreateCondBr(B.CreateICmpSLT(lin, total), loop, exit);
    B.SetInsertPoint(loop);
    Value *rem = lin;
    for (unsigned j = extents.size(); j-- > 0;) {
      if (j == 0) {
        Ex.loopVars[firstInner] = rem;
        break;
      }
      Ex.loopVars[firstInner + j] = B.CreateURem(rem, extents[j]);
      rem = B.CreateUDiv(rem, extents[j]);
    }
    // Expressions cached before the loop may not dominate its body, nor those of the body what
    // follows the loop.
    Ex.clearCache();
    body(lin);
    Ex.clearCache();
    lin->addIncoming(B.CreateAdd(lin, Ntid, "lin.next"), B.GetInsertBlock());
    B.CreateBr(head);
    B.SetInsertPoint(exit);
  }

  // Each thread reduces its points serially, then the block combines the partials; every
  // thread gets the result for the later stages.
  void blockReduceStage(unsigned si, const kir::Stage &s) {
    DType at = s.accType;
    Type *ty = codegen::valueType(B.getContext(), at);
    bool arg = s.reduce == kir::ReduceOp::ArgMax || s.reduce == kir::ReduceOp::ArgMin;
    AllocaInst *acc = codegen::entryAlloca(B, ty, "acc");
    AllocaInst *accIdx = arg ? codegen::entryAlloca(B, B.getInt64Ty(), "acc.idx") : nullptr;
    B.CreateStore(codegen::reduceIdentity(B, s.reduce, at), acc);
    if (arg)
      B.CreateStore(B.getInt64(0), accIdx);
    stridedPoints(s, [&](Value *lin) {
      Value *v = Ex.emit(s.value);
      v = codegen::convert(B, v, Ex.exprType(s.value), at);
      codegen::emitReduceStep(B, s.reduce, at, acc, accIdx, v, lin);
    });
    Partial mine;
    mine.value = B.CreateLoad(ty, acc);
    if (arg)
      mine.index = B.CreateLoad(B.getInt64Ty(), accIdx);
    Partial all = blockReduce(B, s.reduce, at, mine, *Scratch, Tid, Ntid);
    Ex.reduceValues[si] = arg ? all.index : all.value;
    Ex.reduceTypes[si] = arg ? DType::I64 : at;
  }

  void blockStoreStage(const kir::Stage &s) {
    const kir::Buffer &buf = Entry.buffers[s.buffer];
    auto store = [&](Value *) {
      Value *v = Ex.emit(s.value);
      v = codegen::convert(B, v, Ex.exprType(s.value), buf.dtype);
      Value *off = Ex.emit(s.offset);
      off = codegen::convert(B, off, Ex.exprType(s.offset), DType::I64);
      codegen::storeElement(B, v, Buffers[s.buffer], off, buf.dtype);
    };
    if (!s.inner.empty()) {
      stridedPoints(s, store);
      return;
    }
    // One point: thread 0 stores it.
    Function *f = B.GetInsertBlock()->getParent();
    BasicBlock *one = BasicBlock::Create(f->getContext(), "store.one", f);
    BasicBlock *done = BasicBlock::Create(f->getContext(), "store.done", f);
    B.CreateCondBr(B.CreateICmpEQ(Tid, B.getInt64(0)), one, done);
    B.SetInsertPoint(one);
    Ex.clearCache();
    store(nullptr);
    Ex.clearCache();
    B.CreateBr(done);
    B.SetInsertPoint(done);
  }

  Builder &B;
  const kir::EntryKernels &Entry;
  const kir::LoopKernel &K;
  codegen::ExprEmitter &Ex;
  ArrayRef<Value *> Buffers;
  const BlockScratch *Scratch;
  const VectorPlan *Plan;
  Value *Tid = nullptr, *Ntid = nullptr;
  SmallVector<Value *, 4> Extents;
};

CudaKernel emitKernel(Module &m, codegen::MathLibrary &math, const kir::EntryKernels &entry,
                      const kir::Step &step, const StringMap<unsigned> &symIndex) {
  LLVMContext &c = m.getContext();
  const kir::LoopKernel &k = std::get<kir::LoopKernel>(step);
  CudaKernel out;
  std::vector<uint32_t> used = kir::buffersInOrderOfUse(entry, step);
  out.buffers.assign(used.begin(), used.end());
  SymExpr points = 1;
  for (unsigned d = 0; d < std::min<size_t>(k.parallelLoops, k.outer.size()); ++d)
    points = points * k.outer[d];
  std::optional<unsigned> blockPerPoint = reductionThreads(k);
  std::optional<VectorPlan> plan;
  if (blockPerPoint) {
    out.launch.grid = {points};
    out.launch.block[0] = *blockPerPoint;
  } else {
    plan = vectorPlan(entry, k);
    int64_t perBlock = int64_t(LoopKernelBlock) * (plan ? plan->lanes : 1);
    out.launch.grid = {SymExpr::floorDiv(points + (perBlock - 1), perBlock)};
    out.launch.block[0] = LoopKernelBlock;
  }
  out.launch.gridStride = true;
  out.step = &step;
  Builder b(c);
  KernelFunction kf = beginKernel(m, entry, k.name, out, b);
  out.name = kf.fn->getName().str();
  codegen::ExprEmitter ex(math, b, entry, symIndex, kf.syms, kf.buffers);
  ex.failedCheck = codegen::entryAlloca(b, b.getInt32Ty(), "failed.check");
  b.CreateStore(b.getInt32(0), ex.failedCheck);
  ex.lazySelects = true;
  std::optional<BlockScratch> scratch;
  if (blockPerPoint)
    scratch = blockScratch(m);
  KernelBody(b, entry, k, ex, kf.buffers, scratch ? &*scratch : nullptr, plan ? &*plan : nullptr)
      .emit();
  endKernel(b, kf, ex.failedCheck);
  return out;
}

/// A tensor-core kernel of a bf16 or fp16 GEMM: its tiles, the suffix of its name and the term
/// of its gate (none: always).
struct HalfGemmTier {
  const MmaGemmTiles &tiles;
  std::optional<SymExpr> gate;
  std::string suffix;
};

/// The tensor-core kernels of a bf16 or fp16 GEMM. A convolution takes the 16-bit buffers on
/// 128 x 64 tiles. A plain GEMM takes 128 x 128 tiles where it has at least GemmFewBlocks of
/// those, and 128 x 64 tiles where it has fewer: the f32 buffers, which were faster at the sizes
/// of transformer layers on an H200 (docs/cuda.md), unless an operand is stored in 16 bits
/// (half-weights): then the 16-bit buffers, as a convolution's. A GEMM whose operands are both
/// stored in 16 bits in 16-byte chunks (asyncChunks) takes the cp.async 16-bit buffers on either
/// tiles. With symbolic dims both kernels are emitted where the dims' ranges reach both (a
/// model's 4096^3 product with every dim dynamic launches the large tiles), each where its gate
/// says.
SmallVector<HalfGemmTier, 2> halfGemmTiers(const kir::EntryKernels &entry, const kir::GemmCall &g) {
  if (g.b.conv)
    return {{ConvTensorCoreGemmTiles, std::nullopt, ""}};
  bool async = asyncChunks(entry, g);
  const MmaGemmTiles &big = async ? AsyncHalfGemmTiles : HalfTensorCoreGemmTiles;
  const MmaGemmTiles &few = async                         ? AsyncHalfFewGemmTiles
                            : sixteenBitOperand(entry, g) ? ConvTensorCoreGemmTiles
                                                          : TensorCoreGemmTiles;
  SymExpr tiles = gemmTileCount(g, big.blockM, big.blockN);
  return {{big, tiles - SymExpr(GemmFewBlocks - 1), ""},
          {few, SymExpr(GemmFewBlocks) - tiles, fmt::format("_t{}", few.blockN)}};
}

/// Appends the kernel `emit` makes to `out` where its gate, the minimum of `terms` (and 1), is
/// positive for some size in the dims' declared ranges; a symbolic gate becomes the y extent of
/// its grid (1 where it serves, at most 0: no launch, elsewhere).
Error addGatedKernel(const kir::EntryKernels &entry, ArrayRef<SymExpr> terms,
                     function_ref<Expected<CudaKernel>()> emit, std::vector<CudaKernel> &out) {
  SmallVector<SymExpr, 4> all = {SymExpr(1)};
  all.append(terms.begin(), terms.end());
  SymExpr gate = SymExpr::minOf(all);
  if (rangeOf(gate, entry.facts).hi <= 0)
    return Error::success();
  std::optional<int64_t> fixed = gate.constant();
  Expected<CudaKernel> k = emit();
  if (!k)
    return k.takeError();
  if (!fixed)
    k->launch.grid.push_back(gate);
  out.push_back(std::move(*k));
  return Error::success();
}

/// The kernels of a GEMM step: a small-m kernel for each tier its m may fall in; for more rows,
/// fp32 GEMMs in f32 on the CUDA cores (on the largest of CudaCoreGemmTiles of which there are
/// enough blocks to fill the GPU), tf32, bf16 and fp16 ones on the tensor cores (which every arch
/// of CudaTarget.h has; bf16 and fp16 on the tiles of halfGemmTiers). Each kernel serves where its
/// gate, the minimum of some terms, is positive: a kernel whose gate is not positive for any size
/// in the dims' declared ranges (a constant one included) is not emitted; any other symbolic gate
/// becomes the y extent of the kernel's grid, 1 where the kernel serves and at most 0 (no launch)
/// elsewhere, so that a run launches one kernel of the step.
Error emitGemmKernels(Module &m, codegen::MathLibrary &math, const kir::EntryKernels &entry,
                      const kir::Step &step, const StringMap<unsigned> &symIndex,
                      std::vector<CudaKernel> &out) {
  const kir::GemmCall &g = std::get<kir::GemmCall>(step);
  auto add = [&](ArrayRef<SymExpr> terms, function_ref<Expected<CudaKernel>()> emit) {
    return addGatedKernel(entry, terms, emit, out);
  };
  for (const SmallGemmTier &t : SmallGemmTiers)
    if (Error e = add({g.m - SymExpr(t.minM - 1), SymExpr(t.maxM + 1) - g.m},
                      [&] { return emitSmallGemmKernel(m, math, entry, step, symIndex, t); }))
      return e;
  const SymExpr more = g.m - SymExpr(SmallGemmTiers[std::size(SmallGemmTiers) - 1].maxM);
  if (g.precision == kir::Precision::TF32)
    return add({more}, [&] {
      return emitMmaGemmKernel(m, math, entry, step, symIndex, TensorCoreGemmTiles);
    });
  if (g.precision != kir::Precision::FP32) {
    for (const HalfGemmTier &t : halfGemmTiers(entry, g)) {
      SmallVector<SymExpr, 2> terms = {more};
      if (t.gate)
        terms.push_back(*t.gate);
      if (Error e = add(terms, [&] {
            return emitMmaGemmKernel(m, math, entry, step, symIndex, t.tiles, t.suffix);
          }))
        return e;
    }
    return Error::success();
  }
  // The largest CUDA-core tiles of which the GEMM has at least GemmFewBlocks: tiles i serve
  // where tiles i - 1 are too few and tiles i are not.
  std::optional<SymExpr> fewer; // GemmFewBlocks - the previous tiles' count
  ArrayRef<GemmTiles> tiers = g.b.conv ? ArrayRef(CudaCoreConvTiles) : ArrayRef(CudaCoreGemmTiles);
  for (auto [i, t] : enumerate(tiers)) {
    SmallVector<SymExpr, 3> terms = {more};
    if (fewer)
      terms.push_back(*fewer);
    SymExpr blocks = gemmTileCount(g, t.blockM, t.blockN);
    if (i + 1 < tiers.size())
      terms.push_back(blocks - SymExpr(GemmFewBlocks - 1));
    std::string suffix = i == 0 ? "" : fmt::format("_t{}", t.blockN);
    if (Error e =
            add(terms, [&] { return emitGemmKernel(m, math, entry, step, symIndex, t, suffix); }))
      return e;
    fewer = SymExpr(GemmFewBlocks) - blocks;
  }
  return Error::success();
}

} // namespace

Expected<std::vector<CudaKernel>> emitEntryKernels(Module &m, const kir::EntryKernels &entry) {
  std::vector<CudaKernel> out;
  LibdeviceMath math(m);
  StringMap<unsigned> symIndex;
  for (auto [i, s] : enumerate(entry.symbols))
    symIndex[s] = i;
  Error err = Error::success();
  kir::forEachStep(entry.steps, [&](const kir::Step &step) {
    if (err)
      return;
    if (std::holds_alternative<kir::LoopKernel>(step))
      out.push_back(emitKernel(m, math, entry, step, symIndex));
    else if (std::holds_alternative<kir::GemmCall>(step))
      err = emitGemmKernels(m, math, entry, step, symIndex, out);
    else if (const auto *a = std::get_if<kir::AttentionCall>(&step))
      for (const AttentionVariant &v : attentionVariants(*a, CudaCoreAttentionTiles))
        if (!err)
          err = addGatedKernel(
              entry, v.gate, [&] { return emitAttentionKernel(m, math, entry, step, symIndex, v); },
              out);
  });
  if (err)
    return err;
  return out;
}

Expected<CudaModule> emitEntryKernels(LLVMContext &c, const kir::EntryKernels &entry,
                                      StringRef moduleName) {
  CudaModule out;
  out.module = std::make_unique<Module>(moduleName, c);
  out.module->setTargetTriple(NvptxTriple);
  out.module->setDataLayout(NvptxDataLayout);
  Expected<std::vector<CudaKernel>> kernels = emitEntryKernels(*out.module, entry);
  if (!kernels)
    return kernels.takeError();
  out.kernels = std::move(*kernels);
  return out;
}

} // namespace aotc::cuda
