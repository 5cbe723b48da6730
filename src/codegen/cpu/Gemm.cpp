// f32 GEMM library kernels: a BLIS-style blocked GEMM (B packed into NR-column panels per KC x NC
// block, or read in place where pack-weights stored it as panels; A packed into MR-row
// micro-panels, an MR x NR register tile of LLVM vectors updated with llvm.fma; tiles accumulate
// across k blocks in C itself through masked vector accesses),
// a GEMV-like path for m <= 8 that streams B without packing, and a dot-product path for small m
// when A and B both run contiguously along k (no packing at all). B may be an im2col view of a
// convolution's input (kir::ConvWindow), gathered while packing. All apply the epilogue after the
// full k sum. Pack buffers live on the task's stack (gemmStackBytes), so no allocation happens
// per call; blocked tasks are (batch, m-chunk, n-block) triples run by parallel_for.
#include "codegen/cpu/GemmEmitter.h"
#include "runtime/src/artifact.h"

#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsX86.h"

#include <functional>
#include <limits>
#include <optional>

namespace aotc::cpu {

using namespace llvm;

static constexpr int64_t SmallM = GemmPolicy::SmallM, SmallNChunk = GemmPolicy::SmallNChunk;
static constexpr int64_t DotMaxM = GemmPolicy::DotMaxM, DotNChunk = GemmPolicy::DotNChunk;
// The most bytes of C one blocked task's k blocks may pass back and forth: the smallest L2 of the
// AVX-512 parts. Past it (GPT-2 at batch x seq = 1024: 2 MiB of C a task), AMX on a B read in
// place takes K up to AmxMaxDepth in one k block, C never read back: 294 -> 274 ms for the
// bf16 prefill at batch 8. Below it the shallower blocks were faster (39.1 against 41.0 ms at
// batch 1).
static constexpr int64_t CBlockL2Bytes = 1 << 20;

namespace gemm {
uint64_t convTableEntries(const GemmTiling &t) {
  return 3ull * t.paddedNc() + uint64_t(t.paddedNc() / t.vecWidth) * SegmentStride;
}
} // namespace gemm

uint64_t gemmStackBytes(Variant v) {
  GemmTiling t = gemmTiling(v);
  // The B block, an A micro-panel (f32, or an AMX panel of bf16 rows) and a conv view's tables;
  // AMX's kernel keeps its tile of sums on the stack too.
  uint64_t blocked = 4ull * (uint64_t(t.kc) * t.paddedNc() +
                             std::max<uint64_t>(uint64_t(t.mr) * t.kc, gemm::amxAPanelWords(t)) +
                             gemm::convTableEntries(t)) +
                     8ull * gemm::AmxRows * gemm::AmxCols + 320;
  uint64_t small = 4ull * SmallM * 2 * SmallNChunk + 64;
  return std::max(blocked, small);
}

namespace gemm {

GemmValues gemmValues(Builder &b, const kir::EntryKernels &entry, const kir::GemmCall &g,
                      const StringMap<unsigned> &symIndex, ArrayRef<Value *> syms,
                      ArrayRef<Value *> buffers) {
  auto s = [&](const SymExpr &e) { return emitSym(b, e, symIndex, syms); };
  GemmValues v = {s(g.batch),
                  s(g.m),
                  s(g.n),
                  s(g.k),
                  s(g.a.offset),
                  s(g.a.batchStride),
                  s(g.a.rowStride),
                  s(g.a.colStride),
                  s(g.b.offset),
                  s(g.b.batchStride),
                  s(g.b.rowStride),
                  s(g.b.colStride),
                  buffers[g.a.buffer],
                  buffers[g.b.buffer],
                  buffers[g.out],
                  std::nullopt,
                  g.a.panelRows,
                  entry.buffers[g.a.buffer].dtype == DType::BF16,
                  entry.buffers[g.b.buffer].dtype == DType::BF16,
                  g.b.pairPanelCols,
                  g.b.panelCols};
  assert((!v.bPairCols || (v.bBf16 && !g.b.conv)) && "k-pair panels hold a bf16 weight");
  assert((!v.bPanelCols || (!v.bBf16 && !v.aBf16 && !g.b.conv)) && "f32 panels hold an f32 B");
  assert((!v.bBf16 || !g.b.conv) && "a conv view reads an f32 activation");
  assert((!v.aBf16 || (!v.bBf16 && !v.aPanelRows)) && "a bf16 A is dense, its B f32");
  if (const kir::ConvWindow *w = g.b.conv ? &*g.b.conv : nullptr)
    v.win = WindowValues{s(w->channelStride), s(w->heightStride), s(w->widthStride), s(w->height),
                         s(w->width),         s(w->kernelH),      s(w->kernelW),     s(w->strideH),
                         s(w->strideW),       s(w->padH),         s(w->padW),        s(w->dilH),
                         s(w->dilW),          s(w->outWidth)};
  return v;
}

// kir::panelOffset(row, col, k, panelRows) of row and col >= 0.
static Value *panelOffset(Builder &b, Value *row, Value *col, Value *k, unsigned panelRows) {
  Value *rows = b.getInt64(panelRows);
  Value *panel = b.CreateMul(b.CreateMul(b.CreateUDiv(row, rows), rows), k);
  return b.CreateAdd(panel, b.CreateAdd(b.CreateMul(col, rows), b.CreateURem(row, rows)));
}

Value *ptrA(Builder &b, const GemmValues &v, Value *bi, Value *row, Value *col) {
  Value *off = b.CreateAdd(v.aOff, b.CreateMul(bi, v.aBs));
  if (v.aPanelRows) {
    off = b.CreateAdd(off, panelOffset(b, row, col, v.k, v.aPanelRows));
  } else {
    off = b.CreateAdd(off, b.CreateAdd(b.CreateMul(row, v.aRs), b.CreateMul(col, v.aCs)));
  }
  return b.CreateInBoundsGEP(aElementType(b, v), v.a, off);
}
Type *aElementType(Builder &b, const GemmValues &v) {
  return v.aBf16 ? b.getInt16Ty() : b.getFloatTy();
}
Type *bElementType(Builder &b, const GemmValues &v) {
  return v.bBf16 ? b.getInt16Ty() : b.getFloatTy();
}
Value *pairWordRows(Builder &b, const GemmValues &v) {
  Value *unit = b.getInt64(v.bPairCols / 2);
  return b.CreateMul(emitCeilDiv(b, emitCeilDiv(b, v.k, b.getInt64(2)), unit), unit);
}
Value *ptrB(Builder &b, const GemmValues &v, Value *bi, Value *row, Value *col) {
  Value *off = b.CreateAdd(v.bOff, b.CreateMul(bi, v.bBs));
  if (v.bPairCols) {
    // kir::pairPanelOffset
    Value *cols = b.getInt64(v.bPairCols), *wordRows = pairWordRows(b, v);
    Value *word =
        b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(b.CreateUDiv(col, cols), wordRows),
                                            b.CreateUDiv(row, b.getInt64(2))),
                                cols),
                    b.CreateURem(col, cols));
    off = b.CreateAdd(
        off, b.CreateAdd(b.CreateMul(word, b.getInt64(2)), b.CreateURem(row, b.getInt64(2))));
    return b.CreateInBoundsGEP(bElementType(b, v), v.b, off);
  }
  if (v.bPanelCols) {
    off = b.CreateAdd(off, panelOffset(b, col, row, v.k, v.bPanelCols));
    return b.CreateInBoundsGEP(b.getFloatTy(), v.b, off);
  }
  off = b.CreateAdd(off, b.CreateAdd(b.CreateMul(row, v.bRs), b.CreateMul(col, v.bCs)));
  return b.CreateInBoundsGEP(bElementType(b, v), v.b, off);
}
// A bf16's bits are the high half of the f32 of the same value.
static Value *widenBf16(Builder &b, Value *bits, Type *f32Type) {
  Type *i32Type = bits->getType()->getWithNewBitWidth(32);
  Value *wide = b.CreateShl(b.CreateZExt(bits, i32Type), ConstantInt::get(i32Type, 16));
  return b.CreateBitCast(wide, f32Type);
}
// `lanes` f32 or bf16 (`bf16`) elements at `at`, as f32.
static Value *loadVector(Builder &b, bool bf16, Value *at, unsigned lanes, Value *mask) {
  auto *vt = FixedVectorType::get(bf16 ? b.getInt16Ty() : b.getFloatTy(), lanes);
  Align align(bf16 ? 2 : 4);
  Value *x = mask ? static_cast<Value *>(
                        b.CreateMaskedLoad(vt, at, align, mask, ConstantAggregateZero::get(vt)))
                  : b.CreateAlignedLoad(vt, at, align);
  return bf16 ? widenBf16(b, x, FixedVectorType::get(b.getFloatTy(), lanes)) : x;
}
Value *loadAVector(Builder &b, const GemmValues &v, Value *at, unsigned lanes, Value *mask) {
  return loadVector(b, v.aBf16, at, lanes, mask);
}
Value *loadBVector(Builder &b, const GemmValues &v, Value *at, unsigned lanes, Value *mask) {
  return loadVector(b, v.bBf16, at, lanes, mask);
}
// One f32 or bf16 (`bf16`) element at `at`, as f32.
static Value *loadScalar(Builder &b, bool bf16, Value *at) {
  if (bf16)
    return widenBf16(b, b.CreateLoad(b.getInt16Ty(), at), b.getFloatTy());
  return b.CreateLoad(b.getFloatTy(), at);
}
Value *loadA(Builder &b, const GemmValues &v, Value *bi, Value *row, Value *col) {
  return loadScalar(b, v.aBf16, ptrA(b, v, bi, row, col));
}
// B[bi, row, col], through the window of a conv view (0 outside the input).
Value *loadB(Builder &b, const GemmValues &v, Value *bi, Value *row, Value *col) {
  Type *f32 = b.getFloatTy();
  if (!v.win)
    return loadScalar(b, v.bBf16, ptrB(b, v, bi, row, col));
  const WindowValues &w = *v.win;
  Value *taps = b.CreateMul(w.kh, w.kw);
  Value *ci = b.CreateUDiv(row, taps), *tap = b.CreateURem(row, taps);
  Value *fh = b.CreateUDiv(tap, w.kw), *fw = b.CreateURem(tap, w.kw);
  Value *ih = b.CreateAdd(b.CreateSub(b.CreateMul(b.CreateUDiv(col, w.ow), w.sh), w.ph),
                          b.CreateMul(fh, w.dh));
  Value *iw = b.CreateAdd(b.CreateSub(b.CreateMul(b.CreateURem(col, w.ow), w.sw), w.pw),
                          b.CreateMul(fw, w.dw));
  Value *ok = b.CreateAnd(b.CreateICmpULT(ih, w.h), b.CreateICmpULT(iw, w.w));
  Value *plane = b.CreateAdd(b.CreateMul(ih, w.hs), b.CreateMul(iw, w.ws));
  Value *off = b.CreateAdd(b.CreateAdd(v.bOff, b.CreateMul(bi, v.bBs)), b.CreateMul(ci, w.chs));
  off = b.CreateAdd(off, b.CreateSelect(ok, plane, b.getInt64(0)));
  Value *x = b.CreateLoad(f32, b.CreateInBoundsGEP(f32, v.b, off));
  return b.CreateSelect(ok, x, ConstantFP::get(f32, 0.0));
}

Value *outOffset(Builder &b, const GemmValues &v, Value *bi, Value *i, Value *j) {
  return b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(bi, v.m), i), v.n), j);
}

// Stores out[bi, i, j] = epilogue(s), or s when there is no epilogue or `withEpilogue` is false.
void storeOut(Builder &b, ExprEmitter &ex, const kir::GemmCall &g, const GemmValues &v, Value *bi,
              Value *i, Value *j, Value *s, bool withEpilogue) {
  Value *val = s;
  if (withEpilogue && g.epilogue != kir::NoExpr) {
    ex.clearCache();
    ex.loopVars = {bi, i, j};
    ex.acc = s;
    val = ex.emit(g.epilogue);
    val = convert(b, val, ex.exprType(g.epilogue), DType::F32);
    ex.clearCache();
  }
  b.CreateStore(val, b.CreateInBoundsGEP(b.getFloatTy(), v.out, outOffset(b, v, bi, i, j)));
}

// GEMM task closure: { ptr entryClosure, i64 mChunk, i64 mChunks, i64 nBlocks, i64 nBlock (the
// small path: its chunk width), i64 group (images per blocked task), i64 fold (a group's columns
// packed without padding),
// ptr slot 0, ptr slot 1, ... (the GEMM's buffers, TaskKey::slots) }.
StructType *gemmClosureType(LLVMContext &c, unsigned slots) {
  Type *i64 = Type::getInt64Ty(c), *ptr = PointerType::getUnqual(c);
  SmallVector<Type *, 12> fields = {ptr, i64, i64, i64, i64, i64, i64};
  assert(fields.size() == GemmClosureSlots && "the slots follow the fixed fields");
  fields.append(slots, ptr);
  return StructType::get(c, fields);
}

TaskKey gemmKey(const kir::EntryKernels &entry, const kir::GemmCall &g) {
  TaskKey key(entry, "gemm");
  key.text(toString(g.dtype)).sym(g.batch).sym(g.m).sym(g.n).sym(g.k);
  for (const kir::MatrixOperand *o : {&g.a, &g.b}) {
    key.buffer(o->buffer)
        .number(o->panelRows)
        .number(o->pairPanelCols)
        .number(o->panelCols)
        .number(o->winogradTile)
        .number(o->conv.has_value());
    for (const SymExpr *x : o->syms())
      key.sym(*x);
  }
  key.buffer(g.out).expr(g.epilogue);
  return key;
}

Function *GemmEmitter::startTask(const Twine &suffix, Builder &b, TaskSetup &ts) {
  LLVMContext &c = ME.ctx();
  ts.fn = ME.createFunction(ME.taskType(), ME.prefix() + G.name + suffix);
  b.SetInsertPoint(BasicBlock::Create(c, "entry", ts.fn));
  ts.gclosure = ts.fn->getArg(0);
  StructType *gct = gemmClosureType(c, Slots.size());
  Value *closure = b.CreateLoad(b.getPtrTy(), b.CreateStructGEP(gct, ts.gclosure, 0));
  loadClosure(b, Entry, closure, ts.syms, ts.buffers);
  // The GEMM's own buffers come from its closure, so that GEMMs of one key share the tasks.
  for (auto [slot, id] : enumerate(Slots))
    ts.buffers[id] =
        b.CreateLoad(b.getPtrTy(), b.CreateStructGEP(gct, ts.gclosure, GemmClosureSlots + slot));
  ts.begin = ts.fn->getArg(1);
  ts.end = ts.fn->getArg(2);
  return ts.fn;
}

Function *GemmEmitter::kernelFunction(const std::string &name, ArrayRef<Type *> params,
                                      Builder &b) {
  Function *f = ME.createFunction(FunctionType::get(b.getVoidTy(), params, false), name);
  f->addFnAttr(Attribute::NoInline);
  for (unsigned arg : {0u, 1u}) {
    f->addParamAttr(arg, Attribute::ReadOnly);
    f->addParamAttr(arg, Attribute::NoCapture);
  }
  b.SetInsertPoint(BasicBlock::Create(ME.ctx(), "entry", f));
  return f;
}

// Adds the tileRows x (tileVecs vectors) product of an A micro-panel (its first tileRows rows) and
// the first columns of a B panel (NR wide) to the `rows` x `cols` block of C at `c` (rows `ldc`
// apart), or stores it there when `loadC` is false; the tile's next `cols2`
// columns (folded images: the next image's first columns) go to the block at `c2`. Edge tiles
// read and write C with masked vector accesses, so they need no scratch tile and nothing outside
// the blocks is touched.
void GemmEmitter::microKernel(Builder &b, unsigned tileRows, unsigned tileVecs, bool bf16Dot,
                              Value *ap, unsigned aStride, Value *bp, Value *ldb, Value *kc,
                              Value *c, Value *ldc, Value *rows, Value *cols, Value *c2,
                              Value *cols2, Value *loadC, const TileEpilogueArgs &epi, Value *pf,
                              Value *pfCount) {
  b.CreateCall(microKernelFunction(tileRows, tileVecs, aStride, bf16Dot),
               {ap, bp, kc, c, ldc, rows, cols, c2, cols2, loadC, epi.bias, epi.residual, epi.ldr,
                epi.residual2, epi.flags, ldb, pf, pfCount});
}

// One function per tile shape and module, called by every GEMM's tasks: a GEMM inlining its own
// copies made most of the module's code (ResNet-50's ~60 GEMMs, two tile heights each), and the
// call costs nothing beside the tile's kc x tileRows x tileVecs vector multiply-adds. The builder
// is inside the new function while its body is emitted.
Value *GemmEmitter::multiplyAdd(Builder &b, bool bf16Dot, Value *a, Value *bv, Value *acc) {
  if (!bf16Dot)
    return b.CreateIntrinsic(Intrinsic::fma, {acc->getType()}, {a, bv, acc});
  assert(T.vecWidth == 16 && "vdpbf16ps is AVX-512's");
  auto *pairs = FixedVectorType::get(b.getBFloatTy(), 2 * T.vecWidth);
  return b.CreateIntrinsic(Intrinsic::x86_avx512bf16_dpbf16ps_512, {},
                           {acc, b.CreateBitCast(a, pairs), b.CreateBitCast(bv, pairs)});
}

Function *GemmEmitter::microKernelFunction(unsigned tileRows, unsigned tileVecs, unsigned aStride,
                                           bool bf16Dot) {
  std::string name = ME.prefix() + (bf16Dot ? "ukernel_bf16dot_" : "ukernel_") +
                     std::to_string(tileRows) + "x" + std::to_string(tileVecs * T.vecWidth) + "_a" +
                     std::to_string(aStride);
  if (Function *existing = ME.module().getFunction(name))
    return existing;
  LLVMContext &ctx = ME.ctx();
  Builder b(ctx);
  Type *ptr = b.getPtrTy(), *i64 = b.getInt64Ty();
  Function *f = kernelFunction(name,
                               {ptr, ptr, i64, ptr, i64, i64, i64, ptr, i64, b.getInt1Ty(), ptr,
                                ptr, i64, ptr, b.getInt32Ty(), i64, ptr, i64},
                               b);
  if (bf16Dot)
    addTargetFeature(f, "+avx512bf16");
  Value *ap = f->getArg(0), *bp = f->getArg(1), *kc = f->getArg(2), *c = f->getArg(3),
        *ldc = f->getArg(4), *rows = f->getArg(5), *cols = f->getArg(6), *c2 = f->getArg(7),
        *cols2 = f->getArg(8), *loadC = f->getArg(9), *bias = f->getArg(10), *res = f->getArg(11),
        *ldr = f->getArg(12), *res2 = f->getArg(13), *flags = f->getArg(14), *ldb = f->getArg(15),
        *pf = f->getArg(16), *pfCount = f->getArg(17);
  Type *f32 = b.getFloatTy();
  unsigned vw = T.vecWidth;
  auto *vt = FixedVectorType::get(f32, vw);
  unsigned nacc = tileRows * tileVecs;
  Value *zeroV = ConstantAggregateZero::get(vt);
  auto cVec = [&](unsigned i, unsigned j) {
    return b.CreateInBoundsGEP(f32, c,
                               b.CreateAdd(b.CreateMul(b.getInt64(i), ldc), b.getInt64(j * vw)));
  };
  // Whole tiles use plain accesses; edge tiles masks made where used, so that none is live
  // across the k loop.
  Value *full = b.CreateAnd(b.CreateICmpEQ(rows, b.getInt64(tileRows)),
                            b.CreateICmpEQ(cols, b.getInt64(tileVecs * vw)));
  // Column masks of the first block's lanes and of the second's; rows past `rows` are skipped
  // by branches, so no per-row mask exists.
  auto colMasks = [&](bool second) {
    SmallVector<Value *, 4> m;
    for (unsigned j = 0; j < tileVecs; ++j) {
      // Lane l is column j * vw + l.
      Value *at = b.getInt64(j * vw);
      Value *colMask = lanesBelow(b, vw, b.CreateSub(cols, at));
      if (second)
        colMask = b.CreateAnd(b.CreateNot(colMask),
                              lanesBelow(b, vw, b.CreateSub(b.CreateAdd(cols, cols2), at)));
      m.push_back(colMask);
    }
    return m;
  };
  // Vector (i, j) of the second block: lane l is its column j * vw + l - cols.
  auto cVec2 = [&](unsigned i, unsigned j) {
    return b.CreateGEP(
        f32, c2,
        b.CreateSub(b.CreateAdd(b.CreateMul(b.getInt64(i), ldc), b.getInt64(j * vw)), cols));
  };
  BasicBlock *load = BasicBlock::Create(ctx, "uk.loadc", f);
  BasicBlock *loadFull = BasicBlock::Create(ctx, "uk.loadc.full", f);
  BasicBlock *loadEdge = BasicBlock::Create(ctx, "uk.loadc.edge", f);
  BasicBlock *zero = BasicBlock::Create(ctx, "uk.zero", f);
  BasicBlock *pre = BasicBlock::Create(ctx, "uk.pre", f);
  b.CreateCondBr(loadC, load, zero);
  b.SetInsertPoint(load);
  b.CreateCondBr(full, loadFull, loadEdge);
  b.SetInsertPoint(loadFull);
  SmallVector<Value *, 32> initFull(nacc), initEdge(nacc);
  for (unsigned i = 0; i < tileRows; ++i)
    for (unsigned j = 0; j < tileVecs; ++j)
      initFull[i * tileVecs + j] = b.CreateAlignedLoad(vt, cVec(i, j), Align(4));
  b.CreateBr(pre);
  b.SetInsertPoint(loadEdge);
  {
    SmallVector<Value *, 4> m = colMasks(false), m2 = colMasks(true);
    for (unsigned i = 0; i < tileRows; ++i) {
      // Row i when it exists, else zeros.
      BasicBlock *from = b.GetInsertBlock();
      BasicBlock *row = BasicBlock::Create(ctx, "uk.loadc.row", f);
      BasicBlock *join = BasicBlock::Create(ctx, "uk.loadc.next", f);
      b.CreateCondBr(b.CreateICmpSLT(b.getInt64(i), rows), row, join);
      b.SetInsertPoint(row);
      SmallVector<Value *, 4> got;
      for (unsigned j = 0; j < tileVecs; ++j) {
        Value *second = b.CreateMaskedLoad(vt, cVec2(i, j), Align(4), m2[j], zeroV);
        got.push_back(b.CreateMaskedLoad(vt, cVec(i, j), Align(4), m[j], second));
      }
      b.CreateBr(join);
      b.SetInsertPoint(join);
      for (unsigned j = 0; j < tileVecs; ++j) {
        PHINode *phi = b.CreatePHI(vt, 2, "acc.row");
        phi->addIncoming(got[j], row);
        phi->addIncoming(zeroV, from);
        initEdge[i * tileVecs + j] = phi;
      }
    }
  }
  loadEdge = b.GetInsertBlock();
  b.CreateBr(pre);
  b.SetInsertPoint(zero);
  b.CreateBr(pre);
  b.SetInsertPoint(pre);
  SmallVector<Value *, 32> start(nacc);
  for (unsigned i = 0; i < nacc; ++i) {
    PHINode *phi = b.CreatePHI(vt, 3, "acc.init");
    phi->addIncoming(initFull[i], loadFull);
    phi->addIncoming(initEdge[i], loadEdge);
    phi->addIncoming(zeroV, zero);
    start[i] = phi;
  }
  BasicBlock *exit = BasicBlock::Create(ctx, "uk.exit", f);
  // The k loop (kc >= 1 always: it is bottom-tested) from the current block to `exit`; returns
  // the sums and the block that branches to exit.
  auto kLoop = [&](Value *pfTable, Value *pfStep) {
    BasicBlock *from = b.GetInsertBlock();
    BasicBlock *loop = BasicBlock::Create(ctx, "uk.loop", f);
    b.CreateBr(loop);
    b.SetInsertPoint(loop);
    PHINode *p = b.CreatePHI(b.getInt64Ty(), 2, "p");
    p->addIncoming(b.getInt64(0), from);
    SmallVector<PHINode *, 32> accs;
    for (unsigned i = 0; i < nacc; ++i) {
      PHINode *phi = b.CreatePHI(vt, 2, "acc");
      phi->addIncoming(start[i], from);
      accs.push_back(phi);
    }
    if (pfTable) {
      Value *line = b.CreateLShr(b.CreateMul(p, pfStep), 32);
      emitPrefetch(b, b.CreateLoad(b.getPtrTy(), b.CreateInBoundsGEP(b.getPtrTy(), pfTable, line)),
                   2);
    }
    SmallVector<Value *, 4> bv;
    // B's panel rows are 64-byte aligned when packed, not always when read in place (k-pair
    // panels: as aligned as the weights are).
    Value *brow = b.CreateInBoundsGEP(f32, bp, b.CreateMul(p, ldb));
    for (unsigned j = 0; j < tileVecs; ++j)
      bv.push_back(
          b.CreateAlignedLoad(vt, b.CreateConstInBoundsGEP1_32(f32, brow, j * vw), Align(4)));
    Value *arow = b.CreateInBoundsGEP(f32, ap, b.CreateMul(p, b.getInt64(aStride)));
    SmallVector<Value *, 32> sums(nacc);
    for (unsigned i = 0; i < tileRows; ++i) {
      Value *a = b.CreateLoad(f32, b.CreateConstInBoundsGEP1_32(f32, arow, i));
      Value *splat = b.CreateVectorSplat(vw, a);
      for (unsigned j = 0; j < tileVecs; ++j) {
        unsigned idx = i * tileVecs + j;
        sums[idx] = multiplyAdd(b, bf16Dot, splat, bv[j], accs[idx]);
      }
    }
    Value *pn = b.CreateAdd(p, b.getInt64(1), "p.next", true, true);
    p->addIncoming(pn, loop);
    for (unsigned i = 0; i < nacc; ++i)
      accs[i]->addIncoming(sums[i], loop);
    b.CreateCondBr(b.CreateICmpSLT(pn, kc), loop, exit);
    return std::pair(sums, loop);
  };
  SmallVector<Value *, 32> next(nacc);
  if (bf16Dot) {
    next = kLoop(nullptr, nullptr).first;
  } else {
    // The f32 kernel, given lines to fetch, spreads them over its steps: step p prefetches
    // line (p * step) >> 32 of the table, step = ceil(pfCount * 2^32 / kc), so each of them
    // once or more where pfCount <= kc and none past the last (kc (kc - 1) < 2^32 pfCount).
    // The next block's B issued in a burst before the call stalled on full fill buffers
    // (GPT-2's prefill on a Xeon). A loop without them where there are none: their four
    // instructions a step cost ResNet-50 2 %.
    BasicBlock *withPf = BasicBlock::Create(ctx, "uk.pf", f);
    BasicBlock *plain = BasicBlock::Create(ctx, "uk.plain", f);
    b.CreateCondBr(b.CreateICmpSGT(pfCount, b.getInt64(0)), withPf, plain);
    b.SetInsertPoint(withPf);
    Value *pfStep =
        b.CreateUDiv(b.CreateAdd(b.CreateShl(pfCount, 32), b.CreateSub(kc, b.getInt64(1))), kc);
    auto [fetching, fetchingEnd] = kLoop(pf, pfStep);
    b.SetInsertPoint(plain);
    auto [sums, plainEnd] = kLoop(nullptr, nullptr);
    b.SetInsertPoint(exit);
    for (unsigned i = 0; i < nacc; ++i) {
      PHINode *phi = b.CreatePHI(vt, 2, "acc.out");
      phi->addIncoming(fetching[i], fetchingEnd);
      phi->addIncoming(sums[i], plainEnd);
      next[i] = phi;
    }
  }
  b.SetInsertPoint(exit);
  // The epilogue (TileEpilogue, by `flags`) on the sums in registers: no pass over C after the
  // tile, whose reloads would wait for the stores' lines to arrive. Rows past `rows` read row
  // rows - 1 (in bounds; their results are not stored).
  Value *lastRow = b.CreateSub(rows, b.getInt64(1));
  auto rowAt = [&](unsigned i) { return smin(b, b.getInt64(i), lastRow); };
  auto applyEpilogue = [&](SmallVectorImpl<Value *> &acc,
                           function_ref<Value *(unsigned, unsigned)> residual) {
    auto when = [&](unsigned flag, function_ref<void()> fn) {
      SmallVector<Value *, 32> before(acc.begin(), acc.end());
      BasicBlock *from = b.GetInsertBlock();
      BasicBlock *then = BasicBlock::Create(ctx, "uk.epi", f);
      BasicBlock *join = BasicBlock::Create(ctx, "uk.epi.next", f);
      b.CreateCondBr(b.CreateICmpNE(b.CreateAnd(flags, b.getInt32(flag)), b.getInt32(0)), then,
                     join);
      b.SetInsertPoint(then);
      fn();
      BasicBlock *thenEnd = b.GetInsertBlock();
      b.CreateBr(join);
      b.SetInsertPoint(join);
      for (unsigned i = 0; i < nacc; ++i) {
        PHINode *phi = b.CreatePHI(vt, 2, "acc.epi");
        phi->addIncoming(before[i], from);
        phi->addIncoming(acc[i], thenEnd);
        acc[i] = phi;
      }
    };
    when(AddBias, [&] {
      for (unsigned i = 0; i < tileRows; ++i) {
        Value *x = b.CreateLoad(f32, b.CreateInBoundsGEP(f32, bias, rowAt(i)));
        Value *splat = b.CreateVectorSplat(vw, x);
        for (unsigned j = 0; j < tileVecs; ++j)
          acc[i * tileVecs + j] = b.CreateFAdd(acc[i * tileVecs + j], splat);
      }
    });
    when(AddResidual, [&] {
      for (unsigned i = 0; i < tileRows; ++i)
        for (unsigned j = 0; j < tileVecs; ++j)
          acc[i * tileVecs + j] = b.CreateFAdd(acc[i * tileVecs + j], residual(i, j));
    });
    when(Relu, [&] {
      for (Value *&x : acc)
        x = b.CreateBinaryIntrinsic(Intrinsic::maximum, x, zeroV);
    });
  };
  auto resAt = [&](Value *base, unsigned i, unsigned j) {
    return b.CreateGEP(f32, base, b.CreateAdd(b.CreateMul(rowAt(i), ldr), b.getInt64(j * vw)));
  };
  emitIf(
      b, full,
      [&] {
        SmallVector<Value *, 32> out(next.begin(), next.end());
        applyEpilogue(out, [&](unsigned i, unsigned j) {
          return b.CreateAlignedLoad(vt, resAt(res, i, j), Align(4));
        });
        for (unsigned i = 0; i < nacc; ++i)
          b.CreateAlignedStore(out[i], cVec(i / tileVecs, i % tileVecs), Align(4));
      },
      [&] {
        SmallVector<Value *, 4> m = colMasks(false), m2 = colMasks(true);
        SmallVector<Value *, 32> out(next.begin(), next.end());
        applyEpilogue(out, [&](unsigned i, unsigned j) {
          // Lanes of the second block: columns j * vw + l - cols of its residual.
          Value *second = b.CreateMaskedLoad(
              vt, b.CreateGEP(f32, resAt(res2, i, j), b.CreateNeg(cols)), Align(4), m2[j], zeroV);
          return b.CreateMaskedLoad(vt, resAt(res, i, j), Align(4), m[j], second);
        });
        Value *twoBlocks = b.CreateICmpSGT(cols2, b.getInt64(0));
        for (unsigned i = 0; i < tileRows; ++i)
          emitIf(
              b, b.CreateICmpSLT(b.getInt64(i), rows),
              [&] {
                for (unsigned j = 0; j < tileVecs; ++j)
                  b.CreateMaskedStore(out[i * tileVecs + j], cVec(i, j), Align(4), m[j]);
                emitIf(
                    b, twoBlocks,
                    [&] {
                      for (unsigned j = 0; j < tileVecs; ++j)
                        b.CreateMaskedStore(out[i * tileVecs + j], cVec2(i, j), Align(4), m2[j]);
                    },
                    [] {});
              },
              [] {});
      });
  b.CreateRetVoid();
  return f;
}

Function *GemmEmitter::columnKernelFunction(unsigned aStride, bool bf16Dot, unsigned cols) {
  assert(cols >= 1 && cols <= TailColumns && "the kernel of columns takes 1 to 4");
  const unsigned panels = columnPanels(cols);
  std::string name = ME.prefix() + (bf16Dot ? "ukernel_bf16dot_columns_" : "ukernel_columns_") +
                     std::to_string(cols) + "x" + std::to_string(panels) + "_a" +
                     std::to_string(aStride);
  if (Function *existing = ME.module().getFunction(name))
    return existing;
  LLVMContext &ctx = ME.ctx();
  Builder b(ctx);
  Type *ptr = b.getPtrTy(), *i64 = b.getInt64Ty(), *f32 = b.getFloatTy();
  Function *f =
      kernelFunction(name, {ptr, ptr, i64, ptr, i64, i64, i64, b.getInt1Ty(), i64, i64}, b);
  if (bf16Dot)
    addTargetFeature(f, "+avx512bf16");
  Value *ap = f->getArg(0), *bp = f->getArg(1), *kc = f->getArg(2), *c = f->getArg(3),
        *ldc = f->getArg(4), *rows = f->getArg(5), *present = f->getArg(6), *loadC = f->getArg(7),
        *ldb = f->getArg(8), *aPanelStride = f->getArg(9);
  unsigned vw = T.vecWidth;
  auto *vt = FixedVectorType::get(f32, vw);
  Value *zeroV = ConstantAggregateZero::get(vt);
  // Lane i of panel q is row q * MR + i: an A micro-panel's rows are adjacent at every k, C's
  // are ldc apart. Panels past `present` read the first one's A and store nothing.
  Value *aLanes = lanesBelow(b, vw, b.getInt64(T.mr));
  SmallVector<Value *, 8> aPanels, rowLanes, rowOffsets;
  SmallVector<Constant *, 16> iota;
  for (unsigned l = 0; l < vw; ++l)
    iota.push_back(ConstantInt::get(i64, l));
  for (unsigned q = 0; q < panels; ++q) {
    Value *here = b.CreateICmpULT(b.getInt64(q), present);
    aPanels.push_back(b.CreateInBoundsGEP(
        f32, ap, b.CreateSelect(here, b.CreateMul(b.getInt64(q), aPanelStride), b.getInt64(0))));
    rowLanes.push_back(lanesBelow(b, vw, b.CreateSub(rows, b.getInt64(q * T.mr))));
    rowOffsets.push_back(b.CreateMul(
        b.CreateAdd(ConstantVector::get(iota), b.CreateVectorSplat(vw, b.getInt64(q * T.mr))),
        b.CreateVectorSplat(vw, ldc)));
  }
  auto columnPtrs = [&](unsigned q, unsigned j) {
    return b.CreateGEP(f32, b.CreateConstGEP1_32(f32, c, j), rowOffsets[q]);
  };
  // Accumulator q * cols + j: panel q's rows of column j.
  SmallVector<Value *, 8> start;
  for (unsigned q = 0; q < panels; ++q) {
    Value *mask = b.CreateAnd(rowLanes[q], b.CreateVectorSplat(vw, loadC));
    for (unsigned j = 0; j < cols; ++j)
      start.push_back(b.CreateMaskedGather(vt, columnPtrs(q, j), Align(4), mask, zeroV));
  }
  BasicBlock *pre = b.GetInsertBlock();
  BasicBlock *loop = BasicBlock::Create(ctx, "uc.loop", f);
  BasicBlock *exit = BasicBlock::Create(ctx, "uc.exit", f);
  // kc >= 1 always: the loop is bottom-tested.
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  PHINode *p = b.CreatePHI(i64, 2, "p");
  p->addIncoming(b.getInt64(0), pre);
  SmallVector<PHINode *, 8> accs;
  for (Value *s : start) {
    accs.push_back(b.CreatePHI(vt, 2, "acc"));
    accs.back()->addIncoming(s, pre);
  }
  Value *brow = b.CreateInBoundsGEP(f32, bp, b.CreateMul(p, ldb));
  SmallVector<Value *, TailColumns> x;
  for (unsigned j = 0; j < cols; ++j)
    x.push_back(
        b.CreateVectorSplat(vw, b.CreateLoad(f32, b.CreateConstInBoundsGEP1_32(f32, brow, j))));
  SmallVector<Value *, 8> next;
  for (unsigned q = 0; q < panels; ++q) {
    Value *a = b.CreateMaskedLoad(
        vt, b.CreateInBoundsGEP(f32, aPanels[q], b.CreateMul(p, b.getInt64(aStride))), Align(4),
        aLanes, zeroV);
    for (unsigned j = 0; j < cols; ++j) {
      unsigned i = q * cols + j;
      next.push_back(multiplyAdd(b, bf16Dot, a, x[j], accs[i]));
      accs[i]->addIncoming(next[i], loop);
    }
  }
  Value *pn = b.CreateAdd(p, b.getInt64(1), "p.next", true, true);
  p->addIncoming(pn, loop);
  b.CreateCondBr(b.CreateICmpSLT(pn, kc), loop, exit);
  b.SetInsertPoint(exit);
  for (unsigned q = 0; q < panels; ++q)
    for (unsigned j = 0; j < cols; ++j)
      b.CreateMaskedScatter(next[q * cols + j], columnPtrs(q, j), Align(4), rowLanes[q]);
  b.CreateRetVoid();
  return f;
}

namespace {
// The micro-kernel's epilogue arguments for the tile at rows i0.. and columns col0.. of image bi
// (and, folded, image bi2's from column 0): the flags are 0 but on the last k block.
TileEpilogueArgs tileEpilogueArgs(Builder &b, ExprEmitter &ex,
                                  const std::optional<TileEpilogue> &te, ArrayRef<Value *> buffers,
                                  Value *last, Value *bi, Value *bi2, Value *i0, Value *col0) {
  Type *f32 = b.getFloatTy();
  Value *null = ConstantPointerNull::get(b.getPtrTy());
  TileEpilogueArgs a{null, null, b.getInt64(0), null, b.getInt32(0)};
  if (!te)
    return a;
  a.flags = b.CreateSelect(last, b.getInt32(tileEpilogueFlags(te)), b.getInt32(0));
  if (te->bias)
    a.bias = b.CreateInBoundsGEP(f32, buffers[te->bias->index], i0);
  if (te->residual) {
    auto offset = [&](Value *image, Value *row, Value *col) {
      ex.clearCache();
      ex.loopVars = {image, row, col};
      Value *o = ex.emit(te->residual->operands[0]);
      ex.clearCache();
      return o;
    };
    // Affine (matchTileEpilogue): rows are ldr apart, columns adjacent.
    Value *base = offset(bi, i0, col0);
    Value *buffer = buffers[te->residual->index];
    a.residual = b.CreateGEP(f32, buffer, base);
    a.ldr = b.CreateSub(offset(bi, b.CreateAdd(i0, b.getInt64(1)), col0), base);
    a.residual2 = b.CreateGEP(f32, buffer, offset(bi2, i0, b.getInt64(0)));
  }
  return a;
}

// Slot `slot` of a kernel call's prefetch table gets `line` while the table has room (the
// micro-kernel issues it along its k loop); past that, the line is prefetched now.
void tableOrPrefetch(Builder &b, Value *table, Value *slot, Value *line) {
  emitIf(
      b, b.CreateICmpSLT(slot, b.getInt64(PrefetchTable)),
      [&] { b.CreateStore(line, b.CreateInBoundsGEP(b.getPtrTy(), table, slot)); },
      [&] { emitPrefetch(b, line, 2); });
}

// The table's line count after the lines first .. end - 1 went in from slot inTable on.
Value *tableCount(Builder &b, Value *inTable, Value *first, Value *end) {
  Value *added = b.CreateBinaryIntrinsic(Intrinsic::smax, b.getInt64(0), b.CreateSub(end, first));
  return smin(b, b.getInt64(PrefetchTable), b.CreateAdd(inTable, added));
}
} // namespace

// The next k block's B (rows k0 + kc ..) streams from memory while this block is multiplied:
// each of the block's `calls` kernel calls prefetches an equal share of that block's lines into
// L2, B's contiguous runs (a row along n, a column along k, a panel's rows) one after another.
// GPT-2's weights stream from memory once per call, and packing a block waited for them with
// the FMAs idle. Shares of whole runs were uneven: a block of 12 panels fetched 256 lines in
// each of the first 12 of 132 calls and none in the rest, and those prefetches stalled on full
// fill buffers (BERT-base's GEMMs' own time, perf annotate on a Xeon).
NextBlockPrefetch GemmEmitter::nextBlockPrefetch(Builder &b, const GemmValues &v, Value *bi,
                                                 Value *k0, Value *kc, Value *kcEven, Value *n0,
                                                 Value *n1, Value *calls) {
  Value *k1 = b.CreateAdd(k0, kc);
  Value *kNext = b.CreateBinaryIntrinsic(Intrinsic::smax, b.getInt64(0),
                                         smin(b, kcEven, b.CreateSub(v.k, k1)));
  // Along n (bCs == 1): a unit is one of kNext rows, n1 - n0 long; along k (bRs == 1): one of
  // n1 - n0 columns, kNext long; else nothing.
  Value *alongN = b.CreateICmpEQ(v.bCs, b.getInt64(1));
  Value *alongK = b.CreateAnd(b.CreateNot(alongN), b.CreateICmpEQ(v.bRs, b.getInt64(1)));
  Value *units =
      b.CreateSelect(alongN, kNext, b.CreateSelect(alongK, b.CreateSub(n1, n0), b.getInt64(0)));
  Value *length = b.CreateSelect(alongN, b.CreateSub(n1, n0), kNext);
  if (v.bPanelCols) {
    // Panels: a unit is the next block's rows of one panel, contiguous.
    Value *cols = b.getInt64(v.bPanelCols);
    alongN = b.getFalse();
    units = emitCeilDiv(b, b.CreateSub(n1, n0), cols);
    length = b.CreateMul(kNext, cols);
  }
  NextBlockPrefetch p;
  p.bi = bi;
  p.k1 = k1;
  p.n0 = n0;
  p.alongN = alongN;
  Value *lines = emitCeilDiv(b, length, b.getInt64(FloatsPerLine));
  p.total = b.CreateMul(units, lines);
  // At least 1, so that prefetchShare divides by it (a last block has none to fetch).
  p.lines = b.CreateBinaryIntrinsic(Intrinsic::smax, lines, b.getInt64(1));
  p.per = emitCeilDiv(b, p.total, b.CreateBinaryIntrinsic(Intrinsic::smax, calls, b.getInt64(1)));
  p.v = &v;
  return p;
}

Value *GemmEmitter::prefetchShare(Builder &b, const NextBlockPrefetch &p, Value *call,
                                  Value *table) {
  const GemmValues &v = *p.v;
  // Line `index` of the block is line l of run u (u = index / lines): divided once, then
  // counted (a division a line was a tenth of BERT-base's GEMM tasks).
  Value *first = b.CreateMul(call, p.per);
  Value *end = smin(b, p.total, b.CreateAdd(first, p.per));
  Type *i64 = b.getInt64Ty();
  Value *runVar = entryAlloca(b, i64, "pf.run"), *lineVar = entryAlloca(b, i64, "pf.line");
  b.CreateStore(b.CreateUDiv(first, p.lines), runVar);
  b.CreateStore(b.CreateURem(first, p.lines), lineVar);
  emitLoop(
      b, first, end,
      [&](Value *index) {
        Value *u = b.CreateLoad(i64, runVar), *l = b.CreateLoad(i64, lineVar);
        Value *nextL = b.CreateAdd(l, b.getInt64(1));
        Value *wrap = b.CreateICmpEQ(nextL, p.lines);
        b.CreateStore(b.CreateSelect(wrap, b.getInt64(0), nextL), lineVar);
        b.CreateStore(b.CreateAdd(u, b.CreateZExt(wrap, i64)), runVar);
        Value *row = b.CreateSelect(p.alongN, b.CreateAdd(p.k1, u), p.k1);
        Value *col = b.CreateSelect(p.alongN, p.n0, b.CreateAdd(p.n0, u));
        Value *step = b.CreateSelect(p.alongN, v.bCs, v.bRs);
        if (v.bPanelCols) {
          col = b.CreateAdd(p.n0, b.CreateMul(u, b.getInt64(v.bPanelCols)));
          step = b.getInt64(1);
        }
        Value *at = b.CreateGEP(bElementType(b, v), ptrB(b, v, p.bi, row, col),
                                b.CreateMul(b.CreateMul(l, b.getInt64(FloatsPerLine)), step));
        tableOrPrefetch(b, table, b.CreateSub(index, first), at);
      },
      "pfl");
  return tableCount(b, b.getInt64(0), first, end);
}

// A stored in panels streams from memory one stored panel's block at a time, each in pages the
// hardware prefetcher starts on anew: each of the `calls` kernel calls of a stored panel's first
// row tile also fetches into L2 an equal share of the next stored panel's block (k0 .. k0 + kc),
// after the table's first `inTable` lines. (AVX2's 6-row tiles take a 12-row panel in two.)
Value *GemmEmitter::prefetchNextAPanel(Builder &b, const GemmValues &v, Value *bi, Value *i0,
                                       Value *m1, Value *k0, Value *kc, Value *call, Value *calls,
                                       Value *table, Value *inTable) {
  assert(v.aPanelRows && "A read in place as panels");
  Value *panelRows = b.getInt64(v.aPanelRows);
  Value *within = b.CreateURem(i0, panelRows);
  Value *next = b.CreateAdd(b.CreateSub(i0, within), panelRows);
  const int64_t perLine = v.aBf16 ? 2 * FloatsPerLine : FloatsPerLine;
  Value *lines =
      b.CreateSelect(b.CreateAnd(b.CreateICmpEQ(within, b.getInt64(0)), b.CreateICmpSLT(next, m1)),
                     emitCeilDiv(b, b.CreateMul(kc, b.getInt64(v.aPanelRows)), b.getInt64(perLine)),
                     b.getInt64(0));
  Value *per =
      emitCeilDiv(b, lines, b.CreateBinaryIntrinsic(Intrinsic::smax, calls, b.getInt64(1)));
  Value *first = b.CreateMul(call, per);
  Value *end = smin(b, lines, b.CreateAdd(first, per));
  Value *at = ptrA(b, v, bi, smin(b, next, b.CreateSub(m1, b.getInt64(1))), k0);
  emitLoop(
      b, first, end,
      [&](Value *l) {
        Value *line = b.CreateGEP(aElementType(b, v), at, b.CreateMul(l, b.getInt64(perLine)));
        tableOrPrefetch(b, table, b.CreateAdd(inTable, b.CreateSub(l, first)), line);
      },
      "pfa");
  return tableCount(b, inTable, first, end);
}

Function *GemmEmitter::blockedTask(BlockedKind kind) {
  LLVMContext &c = ME.ctx();
  Builder b(c);
  TaskSetup ts;
  // bf16Dot and amx both pack bf16 k-pairs of B; amx packs A's rows along k.
  const bool amx = kind == BlockedKind::Amx, bf16Dot = kind == BlockedKind::Bf16Dot,
             pairs = amx || bf16Dot;
  Function *fn = startTask(amx ? ".blocked.amx" : bf16Dot ? ".blocked.bf16dot" : ".blocked", b, ts);
  if (pairs)
    addTargetFeature(fn, "+avx512bf16");
  GemmValues v = gemmValues(b, Entry, G, SymIndex, ts.syms, ts.buffers);
  assert((!pairs || ((v.aBf16 || v.bBf16) && !v.aPanelRows)) &&
         "bf16 arithmetic is for a bf16 weight, A packed");
  // B in k-pair panels (one image) is read in place by the pair kinds: its panels are theirs.
  const bool inPlaceB = pairs && v.bPairCols;
  assert((!v.bPairCols || v.bPairCols % T.nr() == 0) && (!inPlaceB || v.bPairCols == T.nr()) &&
         "k-pair panels are whole panels of the variant's");
  StructType *gct = gemmClosureType(c, Slots.size());
  Value *mChunk = b.CreateLoad(b.getInt64Ty(), b.CreateStructGEP(gct, ts.gclosure, 1));
  Value *mChunks = b.CreateLoad(b.getInt64Ty(), b.CreateStructGEP(gct, ts.gclosure, 2));
  Value *nBlocks = b.CreateLoad(b.getInt64Ty(), b.CreateStructGEP(gct, ts.gclosure, 3));
  Value *nBlock = b.CreateLoad(b.getInt64Ty(), b.CreateStructGEP(gct, ts.gclosure, 4));
  Type *f32 = b.getFloatTy();
  auto stackBuf = [&](unsigned n, const Twine &name) {
    AllocaInst *a = entryAlloca(b, ArrayType::get(f32, n), name);
    a->setAlignment(Align(64));
    return a;
  };
  Value *bp = stackBuf(T.kc * T.paddedNc(), "bpack");
  Value *ap = stackBuf(std::max(T.mr * T.kc, amxAPanelWords(T)), "apack");
  Value *pfTable = entryAlloca(b, ArrayType::get(b.getPtrTy(), PrefetchTable), "pftable");
  Value *cols = nullptr;
  if (v.win) {
    AllocaInst *a = entryAlloca(b, ArrayType::get(b.getInt32Ty(), convTableEntries(T)), "convcols");
    a->setAlignment(Align(64));
    cols = a;
  }
  ExprEmitter ex(ME.math(), b, Entry, SymIndex, ts.syms, ts.buffers);
  Value *group = b.CreateLoad(b.getInt64Ty(), b.CreateStructGEP(gct, ts.gclosure, 5));
  // The pair packers (and AMX's kernel) take each image's columns apart: they never fold.
  Value *fold =
      pairs ? b.getFalse()
            : b.CreateICmpNE(b.CreateLoad(b.getInt64Ty(), b.CreateStructGEP(gct, ts.gclosure, 6)),
                             b.getInt64(0));
  // A k block of pairs fills the B block's words with twice the depth.
  Value *nr = b.getInt64(T.nr()), *mr = b.getInt64(amx ? AmxRows : T.mr),
        *kcMax = b.getInt64(pairs ? 2 * T.kc : T.kcF32);
  std::optional<TileEpilogue> tileEpilogue = matchTileEpilogue(Entry, G);
  emitLoop(
      b, ts.begin, ts.end,
      [&](Value *t) {
        Value *nb = b.CreateURem(t, nBlocks);
        Value *rest = b.CreateUDiv(t, nBlocks);
        Value *mc = b.CreateURem(rest, mChunks);
        // Images bi0 .. bi0 + images share A (its batch stride is 0 whenever group > 1): each A
        // micro-panel is packed once for all of them.
        Value *bi0 = b.CreateMul(b.CreateUDiv(rest, mChunks), group);
        Value *images = smin(b, group, b.CreateSub(v.batch, bi0));
        Value *m0 = b.CreateMul(mc, mChunk);
        Value *m1 = smin(b, v.m, b.CreateAdd(m0, mChunk));
        Value *n0 = b.CreateMul(nb, nBlock);
        Value *n1 = smin(b, v.n, b.CreateAdd(n0, nBlock));
        Value *imagePanels = emitCeilDiv(b, b.CreateSub(n1, n0), nr);
        Value *kcTask = kcMax;
        if (amx && inPlaceB)
          kcTask = b.CreateSelect(
              b.CreateICmpUGT(b.CreateMul(b.CreateMul(b.CreateSub(m1, m0), nBlock), b.getInt64(4)),
                              b.getInt64(CBlockL2Bytes)),
              b.getInt64(AmxMaxDepth), kcMax);
        // A packed B's AMX k blocks as deep as the block's panels fit the B buffer (a narrow
        // n-block's deeper), at most AmxMaxDepth (the A buffer's): each k block ends in a
        // pass over C and the wait for the tiles' last products (ResNet-50 bf16 b1 10.9 ->
        // 10.4 ms).
        if (amx && !inPlaceB) {
          Value *words = b.getInt64(uint64_t(T.kc) * T.paddedNc());
          Value *pairsFit = b.CreateUDiv(words, b.CreateMul(b.CreateMul(images, imagePanels), nr));
          Value *depth = b.CreateMul(b.CreateUDiv(pairsFit, b.getInt64(AmxTileRows)),
                                     b.getInt64(2 * AmxTileRows));
          depth = b.CreateBinaryIntrinsic(Intrinsic::umin, depth, b.getInt64(AmxMaxDepth));
          kcTask = b.CreateBinaryIntrinsic(Intrinsic::umax, kcMax, depth);
        }
        Value *kBlocks = emitCeilDiv(b, v.k, kcTask);
        // k blocks of equal depth (k = 576: 192 x 3, not 256 + 256 + 64), so that no short block
        // pays a whole pass over C for little work.
        Value *kcEven = emitCeilDiv(b, v.k, kBlocks);
        // k-pairs do not straddle blocks: every block but the last even; with AMX whole tiles
        // deep (32), so that a bf16 A's tiles can be read in place. (kcTask is a multiple of
        // 32: the blocks stay kBlocks at most.)
        if (pairs) {
          Value *unit = b.getInt64(amx ? 2 * AmxTileRows : 2);
          kcEven = b.CreateMul(emitCeilDiv(b, kcEven, unit), unit);
        }
        // Folded, the images' columns follow one another without padding (the n-block is all of
        // n, at least NR wide): panel jp holds columns jp*NR .. of the concatenation, a tile
        // spans at most two images. Else each image's columns start a panel.
        Value *folded = b.CreateAnd(fold, b.CreateICmpSGT(images, b.getInt64(1)));
        Value *panels = b.CreateSelect(folded, emitCeilDiv(b, b.CreateMul(images, v.n), nr),
                                       b.CreateMul(images, imagePanels));
        if (v.win)
          convColumns(b, v, n0, n1, folded, images, cols);
        emitLoop(
            b, b.getInt64(0), kBlocks,
            [&](Value *kb) {
              Value *k0 = b.CreateMul(kb, kcEven);
              Value *kc = smin(b, kcEven, b.CreateSub(v.k, k0));
              Value *first = b.CreateICmpEQ(kb, b.getInt64(0));
              Value *last = b.CreateICmpEQ(b.CreateAdd(kb, b.getInt64(1)), kBlocks);
              // The depth the kernels step through: k rows, or k-pairs (whole AMX tiles of them).
              Value *kSteps = pairs ? emitCeilDiv(b, kc, b.getInt64(2)) : kc;
              if (amx)
                kSteps = b.CreateMul(emitCeilDiv(b, kSteps, b.getInt64(AmxTileRows)),
                                     b.getInt64(AmxTileRows));
              // Image g's panels follow image g-1's in the B block.
              Value *imageBlock = b.CreateMul(b.CreateMul(imagePanels, kSteps), nr);
              if (inPlaceB || v.bPanelCols) {
                // Nothing to pack: the kernels read the panels where they are.
              } else if (pairs) {
                emitLoop(
                    b, b.getInt64(0), images,
                    [&](Value *g) {
                      Value *bi = b.CreateAdd(bi0, g);
                      Value *at = b.CreateInBoundsGEP(f32, bp, b.CreateMul(g, imageBlock));
                      if (v.win)
                        packBConv(b, v, bi, k0, kc, imagePanels, at, cols, kSteps);
                      else
                        packBPairs(b, v, bi, k0, kc, kSteps, n0, n1, at);
                    },
                    "pg");
              } else if (v.win) {
                // The column tables hold every image's columns (folded) or the block's.
                emitIf(
                    b, folded, [&] { packBConv(b, v, bi0, k0, kc, panels, bp, cols); },
                    [&] {
                      emitLoop(
                          b, b.getInt64(0), images,
                          [&](Value *g) {
                            packBConv(b, v, b.CreateAdd(bi0, g), k0, kc, imagePanels,
                                      b.CreateInBoundsGEP(f32, bp, b.CreateMul(g, imageBlock)),
                                      cols);
                          },
                          "pg");
                    });
              } else {
                // B whose rows are contiguous (an activation; a [k, n] weight that pack-weights
                // did not store as panels) is packed too: read in place, rows bRs apart (whole
                // panels), GPT-2's prefill at batch 1 and 8 and ResNet-50 at batch 1 ran 1-3 %
                // slower (a Xeon, Emerald Rapids; the next block prefetched into L2 along the
                // kernel's loop).
                emitIf(
                    b, folded, [&] { packBFolded(b, v, bi0, images, k0, kc, bp); },
                    [&] {
                      emitLoop(
                          b, b.getInt64(0), images,
                          [&](Value *g) {
                            packB(b, v, b.CreateAdd(bi0, g), k0, kc, n0, n1,
                                  b.CreateInBoundsGEP(f32, bp, b.CreateMul(g, imageBlock)));
                          },
                          "pg");
                    });
              }
              Value *rowPanels = emitCeilDiv(b, b.CreateSub(m1, m0), mr);
              std::optional<NextBlockPrefetch> ahead;
              if (!pairs && !v.win)
                ahead = nextBlockPrefetch(b, v, bi0, k0, kc, kcEven, n0, n1,
                                          b.CreateMul(rowPanels, panels));
              emitLoop(
                  b, b.getInt64(0), rowPanels,
                  [&](Value *ip) {
                    Value *i0 = b.CreateAdd(m0, b.CreateMul(ip, mr));
                    Value *mrEff = smin(b, mr, b.CreateSub(m1, i0));
                    // A stored as panels (packed at compile time) is read where it is: a
                    // panel holds MR rows (or two of the 6-row tiles, AVX2) at offset i0 % 12.
                    Value *aPanel = ap;
                    // AMX's A rows, 4 * kSteps bytes apart in the micro-panel.
                    Value *lda = b.CreateMul(kSteps, b.getInt64(4));
                    if (v.aPanelRows) {
                      aPanel = ptrA(b, v, bi0, i0, k0);
                    } else if (amx && v.aBf16) {
                      // A bf16 A's tiles are read in place where the block's are whole: all
                      // rows, k a multiple of 32, rows along k.
                      Value *inPlace = b.CreateAnd(
                          b.CreateICmpEQ(mrEff, mr),
                          b.CreateAnd(b.CreateICmpEQ(v.aCs, b.getInt64(1)),
                                      b.CreateICmpEQ(b.CreateMul(kSteps, b.getInt64(2)), kc)));
                      emitIf(
                          b, inPlace, [] {},
                          [&] { packARowsBf16(b, v, bi0, i0, mrEff, k0, kc, kSteps, ap); });
                      aPanel = b.CreateSelect(inPlace, ptrA(b, v, bi0, i0, k0), ap);
                      lda = b.CreateSelect(inPlace, b.CreateMul(v.aRs, b.getInt64(2)), lda);
                    } else if (amx) {
                      packARowsBf16(b, v, bi0, i0, mrEff, k0, kc, kSteps, ap);
                    } else if (bf16Dot) {
                      packAPairs(b, v, bi0, i0, mrEff, k0, kc, ap);
                    } else {
                      packA(b, v, bi0, i0, mrEff, k0, kc, ap);
                    }
                    // AMX takes an image's whole row of panels in one call: its tile
                    // configuration is loaded once per call. (Never folded.)
                    if (amx)
                      emitLoop(
                          b, b.getInt64(0), images,
                          [&](Value *g) {
                            Value *bi = b.CreateAdd(bi0, g);
                            TileEpilogueArgs epi = tileEpilogueArgs(b, ex, tileEpilogue, ts.buffers,
                                                                    last, bi, bi, i0, n0);
                            // The kernel with the epilogue on the last k block.
                            Function *plain = amxKernelFunction(0),
                                     *withEpilogue =
                                         amxKernelFunction(tileEpilogueFlags(tileEpilogue));
                            // In k-pair panels, the block's first panel at word row k0 / 2.
                            Value *bBlock =
                                inPlaceB ? ptrB(b, v, bi, k0, n0)
                                         : b.CreateInBoundsGEP(f32, bp, b.CreateMul(g, imageBlock));
                            Value *panelWords = inPlaceB ? b.CreateMul(pairWordRows(b, v), nr)
                                                         : b.CreateMul(kSteps, nr);
                            // B read in place streams from memory (where the first row panel
                            // reads it): each panel's rows are fetched into L2 while the panel
                            // before is multiplied.
                            Value *ahead =
                                inPlaceB ? b.CreateMul(panelWords, b.getInt64(4)) : b.getInt64(0);
                            b.CreateCall(
                                plain->getFunctionType(), b.CreateSelect(last, withEpilogue, plain),
                                {aPanel, bBlock, b.CreateUDiv(kSteps, b.getInt64(AmxTileRows)),
                                 panelWords, imagePanels,
                                 b.CreateInBoundsGEP(f32, v.out, outOffset(b, v, bi, i0, n0)), v.n,
                                 mrEff, b.CreateSub(n1, n0), lda, b.CreateNot(first), epi.bias,
                                 epi.residual, epi.ldr, ahead});
                          },
                          "ag");
                    emitLoop(
                        b, b.getInt64(0), panels,
                        [&](Value *jp) {
                          // The tile's columns: nrEff of image bi from col0, then (folded)
                          // nrEff2 of image bi + 1 from its first column.
                          Value *vcol = b.CreateMul(jp, nr);
                          Value *foldedBi = b.CreateAdd(bi0, b.CreateUDiv(vcol, v.n));
                          Value *foldedCol = b.CreateURem(vcol, v.n);
                          Value *bi = b.CreateSelect(
                              folded, foldedBi, b.CreateAdd(bi0, b.CreateUDiv(jp, imagePanels)));
                          Value *col0 = b.CreateSelect(
                              folded, foldedCol,
                              b.CreateAdd(n0, b.CreateMul(b.CreateURem(jp, imagePanels), nr)));
                          Value *colEnd = b.CreateSelect(folded, v.n, n1);
                          Value *nrEff = smin(b, nr, b.CreateSub(colEnd, col0));
                          Value *rest =
                              smin(b, b.CreateSub(nr, nrEff),
                                   b.CreateSub(b.CreateMul(images, v.n), b.CreateAdd(vcol, nrEff)));
                          Value *nrEff2 = b.CreateSelect(folded, rest, b.getInt64(0));
                          Value *bi2 = smin(b, b.CreateAdd(bi, b.getInt64(1)),
                                            b.CreateSub(v.batch, b.getInt64(1)));
                          Value *panel =
                              inPlaceB ? ptrB(b, v, bi, k0, col0)
                                       : b.CreateInBoundsGEP(
                                             f32, bp, b.CreateMul(b.CreateMul(jp, kSteps), nr));
                          Value *ldb = nr;
                          if (v.bPanelCols) {
                            // The panels' padding columns are zero: edge tiles read them too.
                            panel = ptrB(b, v, bi, k0, col0);
                            ldb = b.getInt64(v.bPanelCols);
                          }
                          // Every tile accumulates in C itself; the epilogue runs in place once
                          // the last k block is in.
                          Value *cBlock =
                              b.CreateInBoundsGEP(f32, v.out, outOffset(b, v, bi, i0, col0));
                          Value *cBlock2 = b.CreateInBoundsGEP(
                              f32, v.out, outOffset(b, v, bi2, i0, b.getInt64(0)));
                          // A panel of few rows (m = 64 leaves 4 of 12) takes a shorter tile.
                          unsigned aStride = v.aPanelRows ? v.aPanelRows : T.mr;
                          // So does a panel of few columns (n = 196 leaves 4 of 32): one vector
                          // wide when they fit in one.
                          Value *vw = b.getInt64(T.vecWidth);
                          Value *narrow = b.CreateICmpSLE(b.CreateAdd(nrEff, nrEff2), vw);
                          // A few columns past whole vectors (n = 49: 32 + 16 + 1) go one A
                          // vector at a time, rows in lanes: the kernel of columns.
                          Value *vecCols =
                              b.CreateSelect(b.CreateICmpSGT(nrEff, vw), vw, b.getInt64(0));
                          Value *tailCols = b.CreateSub(nrEff, vecCols);
                          // AMX tiles take every panel whole, edges masked.
                          Value *columns =
                              amx ? b.getFalse()
                                  : b.CreateAnd(b.CreateICmpEQ(nrEff2, b.getInt64(0)),
                                                b.CreateICmpSLE(tailCols, b.getInt64(TailColumns)));
                          TileEpilogueArgs epi = tileEpilogueArgs(b, ex, tileEpilogue, ts.buffers,
                                                                  last, bi, bi2, i0, col0);
                          Value *pfCount = b.getInt64(0);
                          if (ahead)
                            pfCount = prefetchShare(
                                b, *ahead, b.CreateAdd(b.CreateMul(ip, panels), jp), pfTable);
                          if (v.aPanelRows && !pairs)
                            pfCount = prefetchNextAPanel(b, v, bi0, i0, m1, k0, kc, jp, panels,
                                                         pfTable, pfCount);
                          // A micro-panels stored in place take their tail columns a group
                          // of row panels at a time (the last of a group calls the kernel of
                          // columns for all of them): one panel alone keeps few sums in flight.
                          const bool groupTail = v.aPanelRows == T.mr && !pairs;
                          Value *groupSize = b.getInt64(1), *inGroup = b.getInt64(0);
                          if (groupTail) {
                            // columnPanels(tailCols); tailCols >= 1.
                            groupSize = emitCeilDiv(b, b.getInt64(ColumnSums), tailCols);
                            inGroup = b.CreateURem(ip, groupSize);
                          }
                          Value *groupEnd = b.CreateOr(
                              b.CreateICmpEQ(inGroup, b.CreateSub(groupSize, b.getInt64(1))),
                              b.CreateICmpEQ(ip, b.CreateSub(rowPanels, b.getInt64(1))));
                          Value *groupRow0 = b.CreateSub(i0, b.CreateMul(inGroup, mr));
                          Value *groupRows = b.CreateSub(b.CreateAdd(i0, mrEff), groupRow0);
                          auto tailColumns = [&] {
                            Value *aFirst = groupTail ? ptrA(b, v, bi0, groupRow0, k0) : aPanel;
                            Value *aPanelStride =
                                groupTail ? b.CreateMul(v.k, b.getInt64(T.mr)) : b.getInt64(0);
                            Value *cFirst = b.CreateInBoundsGEP(
                                f32, v.out,
                                outOffset(b, v, bi, groupRow0, b.CreateAdd(col0, vecCols)));
                            auto call = [&](unsigned cols) {
                              b.CreateCall(columnKernelFunction(aStride, bf16Dot, cols),
                                           {aFirst, b.CreateInBoundsGEP(f32, panel, vecCols),
                                            kSteps, cFirst, v.n, groupRows,
                                            b.CreateAdd(inGroup, b.getInt64(1)), b.CreateNot(first),
                                            ldb, aPanelStride});
                            };
                            emitIf(
                                b, groupEnd,
                                [&] {
                                  // tailCols is 1 .. TailColumns.
                                  BasicBlock *done = BasicBlock::Create(c, "tail.done", fn);
                                  SwitchInst *byCols = b.CreateSwitch(tailCols, done, TailColumns);
                                  for (unsigned cols = 1; cols <= TailColumns; ++cols) {
                                    BasicBlock *kernel = BasicBlock::Create(c, "tail.cols", fn);
                                    byCols->addCase(b.getInt64(cols), kernel);
                                    b.SetInsertPoint(kernel);
                                    call(cols);
                                    b.CreateBr(done);
                                  }
                                  b.SetInsertPoint(done);
                                },
                                [] {});
                          };
                          auto call = [&](unsigned tileRows, unsigned vecs, Value *cols,
                                          Value *pfLines) {
                            microKernel(b, tileRows, vecs, bf16Dot, aPanel, aStride, panel, ldb,
                                        kSteps, cBlock, v.n, mrEff, cols, cBlock2, nrEff2,
                                        b.CreateNot(first), epi, pfTable, pfLines);
                          };
                          // m = 128 (a sequence of 128) ends in 8 rows of 12: a tile of two
                          // thirds (BERT-base at seq 128: 118.0 -> 113.9 ms).
                          auto byHeight = [&](function_ref<void(unsigned)> tile) {
                            emitIf(
                                b, b.CreateICmpSGT(mrEff, b.getInt64(2 * T.mr / 3)),
                                [&] { tile(T.mr); },
                                [&] {
                                  emitIf(
                                      b, b.CreateICmpSGT(mrEff, b.getInt64(T.mr / 3)),
                                      [&] { tile(2 * T.mr / 3); }, [&] { tile(T.mr / 3); });
                                });
                          };
                          if (!amx)
                            emitIf(
                                b, columns,
                                [&] {
                                  // The kernel of columns prefetches nothing: the table's lines
                                  // go here.
                                  emitLoop(
                                      b, b.getInt64(0), pfCount,
                                      [&](Value *i) {
                                        emitPrefetch(b,
                                                     b.CreateLoad(b.getPtrTy(),
                                                                  b.CreateInBoundsGEP(b.getPtrTy(),
                                                                                      pfTable, i)),
                                                     2);
                                      },
                                      "pft");
                                  emitIf(
                                      b, b.CreateICmpSGT(vecCols, b.getInt64(0)),
                                      [&] {
                                        byHeight([&](unsigned rows) {
                                          call(rows, 1, vecCols, b.getInt64(0));
                                        });
                                      },
                                      [] {});
                                  tailColumns();
                                },
                                [&] {
                                  byHeight([&](unsigned rows) {
                                    emitIf(
                                        b, narrow, [&] { call(rows, 1, nrEff, pfCount); },
                                        [&] { call(rows, T.nrVecs, nrEff, pfCount); });
                                  });
                                });
                          if (G.epilogue == kir::NoExpr)
                            return;
                          auto epilogue = [&](Value *image, Value *from, Value *count, Value *row0,
                                              Value *rows) {
                            emitLoop(
                                b, b.getInt64(0), rows,
                                [&](Value *i) {
                                  Value *row = b.CreateAdd(row0, i);
                                  emitParallelLoop(
                                      b, b.getInt64(0), count,
                                      [&](Value *j) {
                                        Value *col = b.CreateAdd(from, j);
                                        Value *s = b.CreateLoad(
                                            f32, b.CreateInBoundsGEP(
                                                     f32, v.out, outOffset(b, v, image, row, col)));
                                        storeOut(b, ex, G, v, image, row, col, s, true);
                                      },
                                      "ej");
                                },
                                "ei");
                          };
                          // The kernel of columns applies no epilogue: its columns' goes over
                          // its group's rows once they are in.
                          auto tailEpilogue = [&] {
                            emitIf(
                                b, b.CreateAnd(columns, groupEnd),
                                [&] {
                                  epilogue(bi, b.CreateAdd(col0, vecCols), tailCols, groupRow0,
                                           groupRows);
                                },
                                [] {});
                          };
                          if (tileEpilogue) {
                            // The micro-kernel applied it.
                            emitIf(b, last, tailEpilogue, [] {});
                            return;
                          }
                          emitIf(
                              b, last,
                              [&] {
                                epilogue(bi, col0, b.CreateSelect(columns, vecCols, nrEff), i0,
                                         mrEff);
                                tailEpilogue();
                                epilogue(bi2, b.getInt64(0), nrEff2, i0, mrEff);
                              },
                              [] {});
                        },
                        "jp");
                  },
                  "ip");
            },
            "kb");
      },
      "task");
  b.CreateRetVoid();
  return fn;
}

Function *GemmEmitter::smallTask() {
  LLVMContext &c = ME.ctx();
  Builder b(c);
  TaskSetup ts;
  Function *fn = startTask(".small", b, ts);
  GemmValues v = gemmValues(b, Entry, G, SymIndex, ts.syms, ts.buffers);
  Type *f32 = b.getFloatTy();
  // Row i of the accumulator at i * accRow, whatever the chunk: a constant stride.
  const unsigned accRowFloats = 2 * SmallNChunk;
  AllocaInst *accBuf = entryAlloca(b, ArrayType::get(f32, SmallM * accRowFloats), "acc");
  Value *accRow = b.getInt64(accRowFloats);
  accBuf->setAlignment(Align(64));
  ExprEmitter ex(ME.math(), b, Entry, SymIndex, ts.syms, ts.buffers);
  // The chunk width the dispatch chose (at most 2 * SmallNChunk).
  StructType *gct = gemmClosureType(c, Slots.size());
  Value *chunk = b.CreateLoad(b.getInt64Ty(), b.CreateStructGEP(gct, ts.gclosure, 4));
  Value *nChunks = emitCeilDiv(b, v.n, chunk);
  emitLoop(
      b, ts.begin, ts.end,
      [&](Value *t) {
        Value *bi = b.CreateUDiv(t, nChunks);
        Value *n0 = b.CreateMul(b.CreateURem(t, nChunks), chunk);
        Value *jn = smin(b, chunk, b.CreateSub(v.n, n0));
        if (v.bPairCols || v.bPanelCols) {
          smallPanels(b, v, bi, n0, jn, accBuf, accRow, ex);
          return;
        }
        // B's k runs contiguously (nn.Linear's transposed weight): dot products along k.
        // An empty k sum takes this path too, for any m.
        Value *dotForm =
            b.CreateAnd(b.CreateICmpEQ(v.bRs, b.getInt64(1)), b.CreateICmpNE(v.bCs, b.getInt64(1)));
        emitIf(
            b, b.CreateOr(dotForm, b.CreateICmpSLE(v.k, b.getInt64(0))),
            [&] {
              emitLoop(
                  b, b.getInt64(0), jn,
                  [&](Value *j) {
                    Value *col = b.CreateAdd(n0, j);
                    emitLoop(
                        b, b.getInt64(0), v.m,
                        [&](Value *i) {
                          AllocaInst *s = entryAlloca(b, f32, "dot");
                          b.CreateStore(ConstantFP::get(f32, 0.0), s);
                          emitLoop(
                              b, b.getInt64(0), v.k,
                              [&](Value *kk) {
                                Value *x = loadA(b, v, bi, i, kk);
                                Value *y = loadB(b, v, bi, kk, col);
                                b.CreateStore(
                                    reassocAdd(b, b.CreateLoad(f32, s), reassocMul(b, x, y)), s);
                              },
                              "kk");
                          storeOut(b, ex, G, v, bi, i, col, b.CreateLoad(f32, s), true);
                        },
                        "i");
                  },
                  "j");
            },
            [&] {
              // Otherwise rank-1 updates of an m x chunk accumulator, streaming rows of B.
              emitLoop(
                  b, b.getInt64(0), v.m,
                  [&](Value *i) {
                    emitLoop(
                        b, b.getInt64(0), jn,
                        [&](Value *j) {
                          b.CreateStore(ConstantFP::get(f32, 0.0),
                                        b.CreateInBoundsGEP(
                                            f32, accBuf, b.CreateAdd(b.CreateMul(i, accRow), j)));
                        },
                        "zj");
                  },
                  "zi");
              // The updates over `cols` columns: a whole SmallNChunk chunk (the common case)
              // has a constant width.
              auto updates = [&](Value *cols) {
                emitLoop(
                    b, b.getInt64(0), v.k,
                    [&](Value *kk) {
                      prefetchRow(b, v, rowAhead(b, v, bi, b.getInt64(0), v.k, kk, n0),
                                  b.getInt64(0), cols);
                      emitLoop(
                          b, b.getInt64(0), v.m,
                          [&](Value *i) {
                            Value *a = loadA(b, v, bi, i, kk);
                            emitLoop(
                                b, b.getInt64(0), cols,
                                [&](Value *j) {
                                  Value *y = loadB(b, v, bi, kk, b.CreateAdd(n0, j));
                                  Value *dst = b.CreateInBoundsGEP(
                                      f32, accBuf, b.CreateAdd(b.CreateMul(i, accRow), j));
                                  Value *acc = b.CreateLoad(f32, dst);
                                  b.CreateStore(
                                      b.CreateIntrinsic(Intrinsic::fma, {f32}, {a, y, acc}), dst);
                                },
                                "j");
                          },
                          "i");
                    },
                    "kk");
              };
              emitIf(
                  b, b.CreateICmpEQ(jn, b.getInt64(SmallNChunk)),
                  [&] { updates(b.getInt64(SmallNChunk)); }, [&] { updates(jn); });
              storeSums(b, ex, v, bi, accBuf, accRow, n0, jn);
            });
      },
      "task");
  b.CreateRetVoid();
  return fn;
}

void GemmEmitter::storeSums(Builder &b, ExprEmitter &ex, const GemmValues &v, Value *bi,
                            Value *accBuf, Value *accRow, Value *col0, Value *cols) {
  Type *f32 = b.getFloatTy();
  emitLoop(
      b, b.getInt64(0), v.m,
      [&](Value *i) {
        emitLoop(
            b, b.getInt64(0), cols,
            [&](Value *j) {
              Value *s = b.CreateLoad(
                  f32, b.CreateInBoundsGEP(f32, accBuf, b.CreateAdd(b.CreateMul(i, accRow), j)));
              storeOut(b, ex, G, v, bi, i, b.CreateAdd(col0, j), s, true);
            },
            "wj");
      },
      "wi");
}

void GemmEmitter::smallPanels(Builder &b, const GemmValues &v, Value *bi, Value *n0, Value *jn,
                              Value *accBuf, Value *accRow, ExprEmitter &ex) {
  // Rows in groups of R, R x (panel width) sums in registers: up to 8 rows in zmm (16 sums, 2
  // words and their 4 halves of 32), 2 in ymm. A group's rows past m repeat row m - 1 and are
  // not stored. The chunk's columns start a panel (chunks are multiples of 4 vectors). Each
  // panel streams front to back: bf16 k-pairs a word row at a time, f32 panels a row.
  Type *f32 = b.getFloatTy(), *i32 = b.getInt32Ty();
  const unsigned width = v.bPairCols ? v.bPairCols : v.bPanelCols,
                 maxRows = T.vecWidth >= 16 ? 8 : 2;
  auto *words = FixedVectorType::get(i32, width);
  auto *sums = FixedVectorType::get(f32, width);
  Value *cols = b.getInt64(width);
  Value *pairs = b.CreateUDiv(v.k, b.getInt64(2));
  Value *oddK = b.CreateICmpNE(b.CreateAnd(v.k, b.getInt64(1)), b.getInt64(0));
  Value *lastRow = b.CreateSub(v.m, b.getInt64(1));
  auto panelRows = [&](unsigned rows, Value *col0) {
    SmallVector<AllocaInst *, 8> acc;
    for (unsigned r = 0; r < rows; ++r)
      acc.push_back(entryAlloca(b, sums, "pacc"));
    Value *groups = emitCeilDiv(b, v.m, b.getInt64(rows));
    emitLoop(
        b, b.getInt64(0), groups,
        [&](Value *gi) {
          Value *i0 = b.CreateMul(gi, b.getInt64(rows));
          SmallVector<Value *, 8> row;
          for (unsigned r = 0; r < rows; ++r) {
            row.push_back(smin(b, b.CreateAdd(i0, b.getInt64(r)), lastRow));
            b.CreateStore(ConstantAggregateZero::get(sums), acc[r]);
          }
          // Sums over k rows 2p (and 2p + 1 when `both`) of word row p.
          auto step = [&](Value *p, bool both) {
            Value *kk = b.CreateMul(p, b.getInt64(2));
            Value *x = b.CreateAlignedLoad(words, ptrB(b, v, bi, kk, col0), Align(4));
            Value *lo = b.CreateBitCast(b.CreateShl(x, ConstantInt::get(words, 16)), sums);
            Value *hi = b.CreateBitCast(b.CreateAnd(x, ConstantInt::get(words, 0xffff0000u)), sums);
            for (unsigned r = 0; r < rows; ++r) {
              Value *s = b.CreateLoad(sums, acc[r]);
              Value *a0 = b.CreateVectorSplat(width, loadA(b, v, bi, row[r], kk));
              s = b.CreateIntrinsic(Intrinsic::fma, {sums}, {a0, lo, s});
              if (both) {
                Value *a1 = b.CreateVectorSplat(
                    width, loadA(b, v, bi, row[r], b.CreateAdd(kk, b.getInt64(1))));
                s = b.CreateIntrinsic(Intrinsic::fma, {sums}, {a1, hi, s});
              }
              b.CreateStore(s, acc[r]);
            }
          };
          if (v.bPairCols) {
            emitLoop(
                b, b.getInt64(0), pairs, [&](Value *p) { step(p, true); }, "pp");
            emitIf(
                b, oddK, [&] { step(pairs, false); }, [] {});
          } else {
            emitLoop(
                b, b.getInt64(0), v.k,
                [&](Value *kk) {
                  Value *x = b.CreateAlignedLoad(sums, ptrB(b, v, bi, kk, col0), Align(4));
                  for (unsigned r = 0; r < rows; ++r) {
                    Value *a = b.CreateVectorSplat(width, loadA(b, v, bi, row[r], kk));
                    b.CreateStore(b.CreateIntrinsic(Intrinsic::fma, {sums},
                                                    {a, x, b.CreateLoad(sums, acc[r])}),
                                  acc[r]);
                  }
                },
                "pk");
          }
          for (unsigned r = 0; r < rows; ++r)
            emitIf(
                b, b.CreateICmpSLT(b.CreateAdd(i0, b.getInt64(r)), v.m),
                [&] {
                  Value *at = b.CreateInBoundsGEP(
                      f32, accBuf, b.CreateMul(b.CreateAdd(i0, b.getInt64(r)), accRow));
                  b.CreateAlignedStore(b.CreateLoad(sums, acc[r]), at, Align(4));
                },
                [] {});
        },
        "pg");
  };
  emitLoop(
      b, b.getInt64(0), emitCeilDiv(b, jn, cols),
      [&](Value *q) {
        Value *col0 = b.CreateAdd(n0, b.CreateMul(q, cols));
        // The fewest rows per group that take m at once, at most maxRows.
        std::function<void(unsigned)> pick = [&](unsigned rows) {
          if (rows >= maxRows)
            return panelRows(maxRows, col0);
          emitIf(
              b, b.CreateICmpSLE(v.m, b.getInt64(rows)), [&] { panelRows(rows, col0); },
              [&] { pick(rows * 2); });
        };
        pick(1);
        storeSums(b, ex, v, bi, accBuf, accRow, col0, smin(b, cols, b.CreateSub(v.n, col0)));
      },
      "pq");
}

Function *GemmEmitter::dotTask() {
  LLVMContext &c = ME.ctx();
  Builder b(c);
  TaskSetup ts;
  Function *fn = startTask(".dot", b, ts);
  GemmValues v = gemmValues(b, Entry, G, SymIndex, ts.syms, ts.buffers);
  Type *f32 = b.getFloatTy();
  unsigned vw = T.vecWidth;
  auto *vt = FixedVectorType::get(f32, vw);
  DotTile dt = dotTile(ME.variant());
  ExprEmitter ex(ME.math(), b, Entry, SymIndex, ts.syms, ts.buffers);
  Value *chunk = b.getInt64(DotNChunk);
  Value *nChunks = emitCeilDiv(b, v.n, chunk);
  Value *kFull = b.CreateUDiv(v.k, b.getInt64(vw));
  Value *tailAt = b.CreateMul(kFull, b.getInt64(vw));
  Value *tailMask = lanesBelow(b, vw, b.CreateTrunc(b.CreateSub(v.k, tailAt), b.getInt32Ty()));
  Value *zero = ConstantAggregateZero::get(vt);
  Value *rowTiles = emitCeilDiv(b, v.m, b.getInt64(dt.rows));
  Value *mLast = b.CreateSub(v.m, b.getInt64(1)), *nLast = b.CreateSub(v.n, b.getInt64(1));
  emitLoop(
      b, ts.begin, ts.end,
      [&](Value *t) {
        Value *bi = b.CreateUDiv(t, nChunks);
        Value *n0 = b.CreateMul(b.CreateURem(t, nChunks), chunk);
        Value *n1 = smin(b, v.n, b.CreateAdd(n0, chunk));
        Value *colTiles = emitCeilDiv(b, b.CreateSub(n1, n0), b.getInt64(dt.cols));
        // Column tiles outside, so that the tile's B rows stay in L1 across all of A.
        emitLoop(
            b, b.getInt64(0), colTiles,
            [&](Value *jt) {
              Value *j0 = b.CreateAdd(n0, b.CreateMul(jt, b.getInt64(dt.cols)));
              // Edge tiles recompute the last row / column: every address stays valid and the
              // extra results are not stored.
              SmallVector<Value *, 4> cols, bPtr;
              for (unsigned q = 0; q < dt.cols; ++q) {
                cols.push_back(smin(b, b.CreateAdd(j0, b.getInt64(q)), nLast));
                bPtr.push_back(ptrB(b, v, bi, b.getInt64(0), cols.back()));
              }
              // The next column tile's B rows come from memory while this one's run over A
              // from L2: each row tile prefetches its share of their lines into L2, so that the
              // next tile does not start with a burst of misses (GPT-2's vocabulary projection,
              // its B 154 MB: 44 -> 35 ms with the wider tile).
              Value *nextJ0 = b.CreateAdd(j0, b.getInt64(dt.cols));
              Type *aElem = aElementType(b, v), *bElem = bElementType(b, v);
              unsigned bPerLine = v.bBf16 ? 2 * FloatsPerLine : FloatsPerLine;
              Value *rowLines = emitCeilDiv(b, v.k, b.getInt64(bPerLine));
              Value *lines = b.CreateMul(rowLines, b.getInt64(dt.cols));
              // A single row tile (m at most a tile's rows) reads each B line once, in runs the
              // hardware prefetcher follows: there the loop over the next tile's lines cost more
              // than the tile's FMAs (the MLP at batch 1: 0.098 -> 0.047 ms on Zen 4).
              Value *share = b.CreateSelect(b.CreateICmpEQ(rowTiles, b.getInt64(1)), b.getInt64(0),
                                            emitCeilDiv(b, lines, rowTiles));
              emitLoop(
                  b, b.getInt64(0), rowTiles,
                  [&](Value *it) {
                    Value *i0 = b.CreateMul(it, b.getInt64(dt.rows));
                    Value *first = b.CreateMul(it, share);
                    emitLoop(
                        b, first, smin(b, b.CreateAdd(first, share), lines),
                        [&](Value *line) {
                          Value *col =
                              smin(b, b.CreateAdd(nextJ0, b.CreateUDiv(line, rowLines)), nLast);
                          Value *at =
                              b.CreateMul(b.CreateURem(line, rowLines), b.getInt64(bPerLine));
                          emitPrefetch(
                              b, b.CreateGEP(bElem, ptrB(b, v, bi, b.getInt64(0), col), at), 2);
                        },
                        "dpf");
                    // Tiles of one or two rows where that is all that is left: a batch-1 linear
                    // in the full tile multiplied its one row four times (the MLP at batch 1:
                    // 0.129 -> 0.098 ms on Zen 4).
                    auto rowTile = [&](unsigned tileRows) {
                      SmallVector<Value *, 4> rows, aPtr;
                      for (unsigned r = 0; r < tileRows; ++r) {
                        rows.push_back(smin(b, b.CreateAdd(i0, b.getInt64(r)), mLast));
                        aPtr.push_back(ptrA(b, v, bi, rows.back(), b.getInt64(0)));
                      }
                      unsigned nacc = tileRows * dt.cols;
                      auto update = [&](ArrayRef<Value *> accs, Value *off, Value *mask) {
                        SmallVector<Value *, 4> av, bv;
                        for (Value *p : aPtr)
                          av.push_back(
                              loadAVector(b, v, b.CreateInBoundsGEP(aElem, p, off), vw, mask));
                        for (Value *p : bPtr)
                          bv.push_back(
                              loadBVector(b, v, b.CreateInBoundsGEP(bElem, p, off), vw, mask));
                        SmallVector<Value *, 16> out;
                        for (unsigned r = 0; r < tileRows; ++r)
                          for (unsigned q = 0; q < dt.cols; ++q)
                            out.push_back(b.CreateIntrinsic(Intrinsic::fma, {vt},
                                                            {av[r], bv[q], accs[r * dt.cols + q]}));
                        return out;
                      };
                      // The k loop over whole vectors, accumulators in phis; then the masked tail.
                      Function *f = b.GetInsertBlock()->getParent();
                      BasicBlock *pre = b.GetInsertBlock();
                      BasicBlock *head = BasicBlock::Create(c, "dk.head", f);
                      BasicBlock *body = BasicBlock::Create(c, "dk.body", f);
                      BasicBlock *exit = BasicBlock::Create(c, "dk.exit", f);
                      b.CreateBr(head);
                      b.SetInsertPoint(head);
                      PHINode *p = b.CreatePHI(b.getInt64Ty(), 2, "dp");
                      p->addIncoming(b.getInt64(0), pre);
                      SmallVector<PHINode *, 16> accs;
                      SmallVector<Value *, 16> accVals;
                      for (unsigned i = 0; i < nacc; ++i) {
                        accs.push_back(b.CreatePHI(vt, 2, "dacc"));
                        accs.back()->addIncoming(zero, pre);
                        accVals.push_back(accs.back());
                      }
                      b.CreateCondBr(b.CreateICmpSLT(p, kFull), body, exit);
                      b.SetInsertPoint(body);
                      // A's rows stream from L2 in short runs the hardware prefetcher does not
                      // learn in time: each is fetched into L1 8 lines ahead.
                      Value *kOff = b.CreateMul(p, b.getInt64(vw));
                      Value *ahead = b.CreateAdd(kOff, b.getInt64(8 * FloatsPerLine));
                      for (Value *ap : aPtr)
                        emitPrefetch(b, b.CreateGEP(aElem, ap, ahead), 3);
                      SmallVector<Value *, 16> next = update(accVals, kOff, nullptr);
                      p->addIncoming(b.CreateAdd(p, b.getInt64(1), "dp.next", true, true),
                                     b.GetInsertBlock());
                      for (unsigned i = 0; i < nacc; ++i)
                        accs[i]->addIncoming(next[i], b.GetInsertBlock());
                      b.CreateBr(head);
                      b.SetInsertPoint(exit);
                      SmallVector<Value *, 16> sums = update(accVals, tailAt, tailMask);
                      for (unsigned r = 0; r < tileRows; ++r)
                        for (unsigned q = 0; q < dt.cols; ++q) {
                          Value *s = b.CreateFAddReduce(ConstantFP::getNegativeZero(f32),
                                                        sums[r * dt.cols + q]);
                          cast<Instruction>(s)->setHasAllowReassoc(true);
                          Value *row = b.CreateAdd(i0, b.getInt64(r));
                          Value *col = b.CreateAdd(j0, b.getInt64(q));
                          emitIf(
                              b, b.CreateAnd(b.CreateICmpSLT(row, v.m), b.CreateICmpSLT(col, n1)),
                              [&] { storeOut(b, ex, G, v, bi, row, col, s, true); }, [] {});
                        }
                    };
                    Value *left = b.CreateSub(v.m, i0);
                    emitIf(
                        b, b.CreateICmpEQ(left, b.getInt64(1)), [&] { rowTile(1); },
                        [&] {
                          emitIf(
                              b, b.CreateICmpEQ(left, b.getInt64(2)), [&] { rowTile(2); },
                              [&] { rowTile(dt.rows); });
                        });
                  },
                  "dit");
            },
            "djt");
      },
      "task");
  b.CreateRetVoid();
  return fn;
}

} // namespace gemm

void emitGemm(ModuleEmitter &me, const kir::EntryKernels &entry, const kir::GemmCall &g,
              const StringMap<unsigned> &symIndex, Builder &run, Value *exec, Value *closure,
              ArrayRef<Value *> syms, ArrayRef<Value *> buffers) {
  LLVMContext &c = me.ctx();
  using namespace gemm;
  TaskKey key = gemmKey(entry, g);
  auto [shared, fresh] = me.sharedTasks().try_emplace(key.str());
  if (fresh) {
    GemmEmitter ge(me, entry, g, symIndex, key.slots());
    // vdpbf16ps and AMX are outside x86-64-v4: their tasks run where the runtime found them
    // (aotc_exec.cpu_features).
    bool bf16 = me.variant() == Variant::X86_64_V4 && !g.a.panelRows &&
                (entry.buffers[g.a.buffer].dtype == DType::BF16 ||
                 entry.buffers[g.b.buffer].dtype == DType::BF16);
    shared->second = {ge.blockedTask(), ge.smallTask(),
                      g.b.conv || g.b.pairPanelCols || g.b.panelCols ? nullptr : ge.dotTask(),
                      bf16 ? ge.blockedTask(BlockedKind::Bf16Dot) : nullptr,
                      bf16 ? ge.blockedTask(BlockedKind::Amx) : nullptr};
  }
  Function *blocked = shared->second[0], *small = shared->second[1], *dot = shared->second[2];
  Function *blockedBf16Dot = shared->second[3], *blockedAmx = shared->second[4];
  GemmTiling t = gemmTiling(me.variant());

  Builder &b = run;
  GemmValues v = gemmValues(b, entry, g, symIndex, syms, buffers);
  StructType *gct = gemmClosureType(c, key.slots().size());
  Value *gclosure = entryAlloca(b, gct, "gemm.closure");
  b.CreateStore(closure, b.CreateStructGEP(gct, gclosure, 0));
  for (auto [slot, id] : enumerate(key.slots()))
    b.CreateStore(buffers[id], b.CreateStructGEP(gct, gclosure, GemmClosureSlots + slot));
  Value *empty = b.CreateOr(
      b.CreateICmpSLE(v.m, b.getInt64(0)),
      b.CreateOr(b.CreateICmpSLE(v.n, b.getInt64(0)), b.CreateICmpSLE(v.batch, b.getInt64(0))));
  Value *kZero = b.CreateICmpSLE(v.k, b.getInt64(0));
  // An empty k sum is 0 (then the epilogue): the small path's dot form handles it for any m.
  Value *useSmall = b.CreateOr(b.CreateICmpSLE(v.m, b.getInt64(SmallM)), kZero);
  Function *f = b.GetInsertBlock()->getParent();
  BasicBlock *doneBB = BasicBlock::Create(c, "gemm.done", f);
  BasicBlock *work = BasicBlock::Create(c, "gemm.work", f);
  b.CreateCondBr(empty, doneBB, work);
  b.SetInsertPoint(work);
  // The bf16 tasks run where the runtime found their instructions (aotc_exec.cpu_features) and
  // their packers read B: through a conv window, or along n or along k (packBPairs).
  Value *features = b.CreateLoad(
      b.getInt32Ty(), b.CreateStructGEP(me.execType(), exec, ModuleEmitter::ExecCpuFeatures));
  Value *packable =
      g.b.conv || g.b.pairPanelCols
          ? b.getTrue()
          : b.CreateOr(b.CreateICmpEQ(v.bCs, b.getInt64(1)), b.CreateICmpEQ(v.bRs, b.getInt64(1)));
  auto has = [&](uint32_t feature) {
    return b.CreateAnd(packable, b.CreateICmpNE(b.CreateAnd(features, feature), b.getInt32(0)));
  };
  Value *useAmx = blockedAmx ? has(AOTC_CPU_FEATURE_AMX_BF16) : b.getFalse();
  Value *useDot = b.getInt1(false);
  // AMX outruns the dot products in f32 by far more than packing B costs (GPT-2's vocabulary
  // projection at seq 128 took 42 ms of the dot products; the whole prefill went 85 -> 51 ms).
  if (dot)
    useDot = b.CreateAnd(
        b.CreateAnd(b.CreateICmpEQ(v.aCs, b.getInt64(1)), b.CreateICmpEQ(v.bRs, b.getInt64(1))),
        b.CreateAnd(b.CreateAnd(b.CreateICmpSLE(v.m, b.getInt64(DotMaxM)), b.CreateNot(kZero)),
                    b.CreateNot(useAmx)));
  BasicBlock *dotBB = BasicBlock::Create(c, "gemm.dot", f);
  BasicBlock *packBB = BasicBlock::Create(c, "gemm.pack", f);
  b.CreateCondBr(useDot, dotBB, packBB);
  b.SetInsertPoint(dotBB);
  if (dot) {
    Value *nChunks = emitCeilDiv(b, v.n, b.getInt64(DotNChunk));
    Value *per = b.CreateMul(b.CreateMul(v.m, b.getInt64(DotNChunk)), v.k);
    emitDispatch(me, b, exec, dot, gclosure, b.CreateMul(v.batch, nChunks), per);
  }
  b.CreateBr(doneBB);
  b.SetInsertPoint(packBB);
  Value *threads =
      b.CreateSExt(b.CreateLoad(b.getInt32Ty(), b.CreateStructGEP(me.execType(), exec,
                                                                  ModuleEmitter::ExecNumThreads)),
                   b.getInt64Ty());
  threads = b.CreateBinaryIntrinsic(Intrinsic::smax, threads, b.getInt64(1));
  emitIf(
      b, useSmall,
      [&] {
        // Chunks of SmallNChunk columns; where they are few, as many as a multiple of the thread
        // count, fewer and wider (whole groups of four vectors, the vectorized loop's step; at
        // most twice as wide): a 768-column projection in 3 chunks of 256 left a thread idle a
        // third of the time, and 4 of 192 read its rows in shorter runs.
        Value *chunks = emitCeilDiv(b, v.n, b.getInt64(SmallNChunk));
        Value *few =
            b.CreateICmpSLT(b.CreateMul(v.batch, chunks), b.CreateMul(threads, b.getInt64(4)));
        Value *even = b.CreateBinaryIntrinsic(Intrinsic::smax, threads,
                                              b.CreateMul(b.CreateUDiv(chunks, threads), threads));
        Value *step = b.getInt64(4 * t.vecWidth);
        Value *wide = b.CreateMul(emitCeilDiv(b, emitCeilDiv(b, v.n, even), step), step);
        Value *chunk = b.CreateSelect(few, wide, b.getInt64(SmallNChunk));
        b.CreateStore(chunk, b.CreateStructGEP(gct, gclosure, 4));
        Value *total = b.CreateMul(v.batch, emitCeilDiv(b, v.n, chunk));
        Value *per = b.CreateMul(b.CreateMul(v.m, chunk),
                                 b.CreateBinaryIntrinsic(Intrinsic::smax, v.k, b.getInt64(1)));
        emitDispatch(me, b, exec, small, gclosure, total, per);
      },
      [&] {
        // n-blocks of equal width (whole NR panels, at most NC), so that none idles a thread;
        // where there are few, a multiple of the thread count of them.
        Value *nBlocks = emitCeilDiv(b, v.n, b.getInt64(t.nc));
        Value *few = b.CreateAnd(
            b.CreateICmpSGT(nBlocks, b.getInt64(1)),
            b.CreateICmpSLT(b.CreateMul(v.batch, nBlocks), b.CreateMul(threads, b.getInt64(4))));
        Value *evenBlocks = b.CreateMul(emitCeilDiv(b, nBlocks, threads), threads);
        nBlocks = b.CreateSelect(few, evenBlocks, nBlocks);
        Value *panels = emitCeilDiv(b, v.n, b.getInt64(t.nr()));
        Value *nBlock = b.CreateMul(emitCeilDiv(b, panels, nBlocks), b.getInt64(t.nr()));
        nBlocks = emitCeilDiv(b, v.n, nBlock);
        // Where A is the same for every image (a convolution's weight) and n-blocks are narrow,
        // one task takes as many images as fill a B block, so each A micro-panel is packed once
        // for all of them.
        Value *group = b.CreateBinaryIntrinsic(
            Intrinsic::smax, b.getInt64(1),
            b.CreateBinaryIntrinsic(Intrinsic::smin, v.batch,
                                    b.CreateUDiv(b.getInt64(t.paddedNc()), nBlock)));
        group = b.CreateSelect(b.CreateICmpEQ(v.aBs, b.getInt64(0)), group, b.getInt64(1));
        Value *groups = emitCeilDiv(b, v.batch, group);
        // Split m only as far as needed to give every thread a task: each m-chunk packs B again.
        // Chunks of whole row panels of the kernel that runs: AMX's 32 rows (chunks of 12-row
        // panels gave m = 64 two AMX blocks and a 4-row one, and A packed where it is read in
        // place in whole blocks).
        Value *have = b.CreateMul(groups, nBlocks);
        // Where B is a weight that stays in cache, m is split across the threads first (each
        // thread's chunk of rows takes every n-block): a thread then reads the rows of A that it
        // wrote as the GEMM before's C, and no activations cross between cores, at the price of
        // packing B once per chunk from cache. With the VM's two vCPUs far apart (a 320 ns
        // round trip instead of 54), the MLP at batch 512 took 11.45 ms split along n and 9.5
        // split along m; close, 9.26 and 9.30. GPT-2's weights stream from memory, and reading
        // them twice cost more (175.8 -> 187 ms at b1).
        bool mFirst = me.weightsCacheResident() && !g.b.conv &&
                      entry.buffers[g.b.buffer].kind == kir::Buffer::Kind::Weight;
        Value *want = mFirst ? threads : emitCeilDiv(b, threads, have);
        Value *mr = blockedAmx ? b.CreateSelect(useAmx, b.getInt64(gemm::AmxRows), b.getInt64(t.mr))
                               : b.getInt64(t.mr);
        Value *rowPanels = emitCeilDiv(b, v.m, mr);
        Value *mChunks = b.CreateBinaryIntrinsic(Intrinsic::smin, want, rowPanels);
        Value *panelsPerChunk = emitCeilDiv(b, rowPanels, mChunks);
        Value *mChunk = b.CreateMul(panelsPerChunk, mr);
        mChunks = emitCeilDiv(b, v.m, mChunk);
        b.CreateStore(mChunk, b.CreateStructGEP(gct, gclosure, 1));
        b.CreateStore(mChunks, b.CreateStructGEP(gct, gclosure, 2));
        b.CreateStore(nBlocks, b.CreateStructGEP(gct, gclosure, 3));
        b.CreateStore(nBlock, b.CreateStructGEP(gct, gclosure, 4));
        b.CreateStore(group, b.CreateStructGEP(gct, gclosure, 5));
        // Folding the group's columns needs one n-block at least a panel wide, and B's columns
        // adjacent (a plain B) or image offsets that fit the conv tables' 32 bits.
        Value *fold = b.CreateAnd(b.CreateICmpSGT(group, b.getInt64(1)),
                                  b.CreateAnd(b.CreateICmpEQ(nBlocks, b.getInt64(1)),
                                              b.CreateICmpSGE(v.n, b.getInt64(t.nr()))));
        if (g.b.conv)
          fold =
              b.CreateAnd(fold, b.CreateICmpSLT(b.CreateMul(group, v.bBs),
                                                b.getInt64(std::numeric_limits<int32_t>::max())));
        else
          fold = b.CreateAnd(fold, b.CreateICmpEQ(v.bCs, b.getInt64(1)));
        b.CreateStore(b.CreateZExt(fold, b.getInt64Ty()), b.CreateStructGEP(gct, gclosure, 6));
        Value *total = b.CreateMul(have, mChunks);
        Value *per = b.CreateMul(b.CreateMul(b.CreateMul(mChunk, nBlock), v.k), group);
        if (!blockedBf16Dot) {
          emitDispatch(me, b, exec, blocked, gclosure, total, per);
          return;
        }
        emitIf(
            b, useAmx, [&] { emitDispatch(me, b, exec, blockedAmx, gclosure, total, per); },
            [&] {
              emitIf(
                  b, has(AOTC_CPU_FEATURE_BF16_DOT),
                  [&] { emitDispatch(me, b, exec, blockedBf16Dot, gclosure, total, per); },
                  [&] { emitDispatch(me, b, exec, blocked, gclosure, total, per); });
            });
      });
  b.CreateBr(doneBB);
  b.SetInsertPoint(doneBB);
}

} // namespace aotc::cpu
