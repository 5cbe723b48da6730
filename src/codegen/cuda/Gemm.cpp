// The GEMM library kernel on CUDA cores, correct first: each block stages a blockM x blockK tile
// of A and a blockK x blockN tile of B through shared memory (zeros past the matrices' edges and
// in a convolution's padding), its threads accumulate register tiles with FMAs, and the fused
// epilogue runs on each output element as it is stored. Operands are read through their
// strides (transposed and broadcast operands as they are) or a convolution's window (implicit
// GEMM: the im2col matrix is never built).
#include "codegen/cuda/Gemm.h"
#include "codegen/cuda/KernelBuilder.h"
#include "kernel/MemoryPlan.h"

#include "fmt/format.h"

#include "llvm/IR/IntrinsicsNVPTX.h"

namespace aotc::cuda {

using namespace llvm;
using codegen::Builder;

namespace {

/// A matrix operand's symbolic fields as i64 values, its batch element's base folded in.
struct OperandValues {
  Value *data = nullptr;
  Value *base = nullptr; // offset + batch * batchStride: element (batch, 0, 0)
  Value *rowStride = nullptr, *colStride = nullptr;
};

/// A convolution window's fields as i64 values (kir::ConvWindow).
struct WindowValues {
  Value *channelStride, *heightStride, *widthStride, *height, *width, *kernelH, *kernelW;
  Value *strideH, *strideW, *padH, *padW, *dilH, *dilW, *outWidth;
};

class GemmKernel {
public:
  GemmKernel(Builder &b, codegen::ExprEmitter &ex, const kir::GemmCall &g, const GemmTiles &t,
             const KernelFunction &kf, GlobalVariable *aTile, GlobalVariable *bTile)
      : B(b), Ex(ex), G(g), T(t), Kf(kf), ATile(aTile), BTile(bTile) {}

  void emit() {
    M = Ex.sym(G.m);
    N = Ex.sym(G.n);
    K = Ex.sym(G.k);
    Tid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_tid_x);
    Value *block = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    // The grid is one-dimensional (see emitGemmKernel): n tiles fastest, so that neighbouring
    // blocks share their A rows in L2, then m tiles, then the batch.
    Value *nTiles = ceilDiv(N, T.blockN);
    Value *mTiles = ceilDiv(M, T.blockM);
    Value *nTile = B.CreateURem(block, nTiles);
    Value *rest = B.CreateUDiv(block, nTiles);
    Value *mTile = B.CreateURem(rest, mTiles);
    Batch = B.CreateUDiv(rest, mTiles, "batch");
    M0 = B.CreateMul(mTile, B.getInt64(T.blockM), "m0");
    N0 = B.CreateMul(nTile, B.getInt64(T.blockN), "n0");
    Value *tn = B.getInt64(T.blockN / T.threadN);
    Tx = B.CreateURem(Tid, tn, "tx");
    Ty = B.CreateUDiv(Tid, tn, "ty");
    A = operand(G.a);
    Bop = operand(G.b);
    if (G.b.conv)
      Win = window(*G.b.conv);
    Value *kTiles = ceilDiv(K, T.blockK);
    accumulate(kTiles);
    storeOutputs();
  }

private:
  Value *ceilDiv(Value *x, unsigned d) {
    Value *up = B.CreateAdd(x, B.getInt64(d - 1));
    return B.CreateUDiv(up, B.getInt64(d));
  }

  OperandValues operand(const kir::MatrixOperand &op) {
    OperandValues v;
    v.data = Kf.buffers[op.buffer];
    Value *offset = Ex.sym(op.offset);
    Value *batchStride = Ex.sym(op.batchStride);
    Value *batchOffset = B.CreateMul(Batch, batchStride);
    v.base = B.CreateAdd(offset, batchOffset);
    if (!op.conv) {
      v.rowStride = Ex.sym(op.rowStride);
      v.colStride = Ex.sym(op.colStride);
    }
    return v;
  }

  WindowValues window(const kir::ConvWindow &w) {
    WindowValues v;
    std::pair<Value **, const SymExpr *> fields[] = {{&v.channelStride, &w.channelStride},
                                                     {&v.heightStride, &w.heightStride},
                                                     {&v.widthStride, &w.widthStride},
                                                     {&v.height, &w.height},
                                                     {&v.width, &w.width},
                                                     {&v.kernelH, &w.kernelH},
                                                     {&v.kernelW, &w.kernelW},
                                                     {&v.strideH, &w.strideH},
                                                     {&v.strideW, &w.strideW},
                                                     {&v.padH, &w.padH},
                                                     {&v.padW, &w.padW},
                                                     {&v.dilH, &w.dilH},
                                                     {&v.dilW, &w.dilW},
                                                     {&v.outWidth, &w.outWidth}};
    for (auto [value, sym] : fields)
      *value = Ex.sym(*sym);
    return v;
  }

  Value *inRange(Value *row, Value *rows, Value *col, Value *cols) {
    Value *r = B.CreateICmpSLT(row, rows);
    Value *c = B.CreateICmpSLT(col, cols);
    return B.CreateAnd(r, c);
  }

  // data[offset] where `ok`, else 0 (reading element (batch, 0, 0), which exists whenever a
  // block runs, so that no address past the operand is formed).
  Value *guardedLoad(const OperandValues &op, Value *offset, Value *ok) {
    Type *f32 = B.getFloatTy();
    Value *safe = B.CreateSelect(ok, offset, op.base);
    Value *ptr = B.CreateInBoundsGEP(f32, op.data, safe);
    Value *v = B.CreateLoad(f32, ptr);
    return B.CreateSelect(ok, v, ConstantFP::get(f32, 0.0));
  }

  Value *strided(const OperandValues &op, Value *row, Value *col) {
    Value *r = B.CreateMul(row, op.rowStride);
    Value *c = B.CreateMul(col, op.colStride);
    Value *rc = B.CreateAdd(r, c);
    return B.CreateAdd(op.base, rc);
  }

  // B[batch, row, col] through the convolution window: row = (ci, kh, kw), col = (oh, ow); 0
  // in the padding (kir::ConvWindow).
  Value *windowLoad(Value *row, Value *col, Value *ok) {
    const WindowValues &w = *Win;
    Value *taps = B.CreateMul(w.kernelH, w.kernelW);
    Value *ci = B.CreateUDiv(row, taps);
    Value *tap = B.CreateURem(row, taps);
    Value *fh = B.CreateUDiv(tap, w.kernelW);
    Value *fw = B.CreateURem(tap, w.kernelW);
    Value *oh = B.CreateUDiv(col, w.outWidth);
    Value *ow = B.CreateURem(col, w.outWidth);
    Value *ih = windowCoord(oh, w.strideH, w.padH, fh, w.dilH);
    Value *iw = windowCoord(ow, w.strideW, w.padW, fw, w.dilW);
    // Unsigned compares: a coordinate in the leading padding is negative.
    Value *insideH = B.CreateICmpULT(ih, w.height);
    Value *insideW = B.CreateICmpULT(iw, w.width);
    Value *inside = B.CreateAnd(insideH, insideW);
    Value *chan = B.CreateMul(ci, w.channelStride);
    Value *y = B.CreateMul(ih, w.heightStride);
    Value *x = B.CreateMul(iw, w.widthStride);
    Value *plane = B.CreateAdd(y, x);
    Value *at = B.CreateAdd(Bop.base, chan);
    Value *offset = B.CreateAdd(at, plane);
    Value *both = B.CreateAnd(ok, inside);
    return guardedLoad(Bop, offset, both);
  }

  Value *windowCoord(Value *out, Value *stride, Value *pad, Value *tap, Value *dil) {
    Value *start = B.CreateMul(out, stride);
    Value *shifted = B.CreateSub(start, pad);
    Value *reach = B.CreateMul(tap, dil);
    return B.CreateAdd(shifted, reach);
  }

  Value *sharedSlot(GlobalVariable *tile, Value *index) {
    Value *zero = B.getInt64(0);
    return B.CreateInBoundsGEP(tile->getValueType(), tile, {zero, index});
  }

  // The block's threads copy the k-step's A tile (stored k-major: the threads of a row of the
  // register tile read adjacent words) and B tile into shared memory, consecutive threads on
  // consecutive k (A) and n (B) for coalesced reads of row-major operands.
  void loadTiles(Value *k0) {
    unsigned threads = T.threads();
    for (unsigned e = 0; e < T.blockM * T.blockK / threads; ++e) {
      Value *idx = B.CreateAdd(Tid, B.getInt64(uint64_t(e) * threads));
      Value *r = B.CreateUDiv(idx, B.getInt64(T.blockK));
      Value *c = B.CreateURem(idx, B.getInt64(T.blockK));
      Value *row = B.CreateAdd(M0, r);
      Value *col = B.CreateAdd(k0, c);
      Value *ok = inRange(row, M, col, K);
      Value *v = guardedLoad(A, strided(A, row, col), ok);
      Value *cm = B.CreateMul(c, B.getInt64(T.blockM));
      Value *slot = B.CreateAdd(cm, r);
      B.CreateStore(v, sharedSlot(ATile, slot));
    }
    for (unsigned e = 0; e < T.blockK * T.blockN / threads; ++e) {
      Value *idx = B.CreateAdd(Tid, B.getInt64(uint64_t(e) * threads));
      Value *r = B.CreateUDiv(idx, B.getInt64(T.blockN));
      Value *c = B.CreateURem(idx, B.getInt64(T.blockN));
      Value *row = B.CreateAdd(k0, r);
      Value *col = B.CreateAdd(N0, c);
      Value *ok = inRange(row, K, col, N);
      Value *v = Win ? windowLoad(row, col, ok) : guardedLoad(Bop, strided(Bop, row, col), ok);
      B.CreateStore(v, sharedSlot(BTile, idx));
    }
  }

  // Register tile element (i, j) covers row ty + i * (blockM / threadM) and column
  // tx + j * (blockN / threadN) of the block's tile: a warp's lanes read adjacent B words and
  // store adjacent output columns.
  Value *tileRow(unsigned i) { return B.CreateAdd(Ty, B.getInt64(i * (T.blockM / T.threadM))); }
  Value *tileCol(unsigned j) { return B.CreateAdd(Tx, B.getInt64(j * (T.blockN / T.threadN))); }

  void accumulate(Value *kTiles) {
    Function *f = B.GetInsertBlock()->getParent();
    LLVMContext &c = f->getContext();
    Type *f32 = B.getFloatTy();
    BasicBlock *pre = B.GetInsertBlock();
    BasicBlock *head = BasicBlock::Create(c, "k.head", f);
    BasicBlock *body = BasicBlock::Create(c, "k.body", f);
    BasicBlock *exit = BasicBlock::Create(c, "k.exit", f);
    B.CreateBr(head);
    B.SetInsertPoint(head);
    PHINode *kt = B.CreatePHI(B.getInt64Ty(), 2, "kt");
    kt->addIncoming(B.getInt64(0), pre);
    SmallVector<PHINode *, 16> accs;
    for (unsigned i = 0; i < T.threadM * T.threadN; ++i) {
      accs.push_back(B.CreatePHI(f32, 2, "acc"));
      accs.back()->addIncoming(ConstantFP::get(f32, 0.0), pre);
    }
    B.CreateCondBr(B.CreateICmpULT(kt, kTiles), body, exit);
    B.SetInsertPoint(body);
    Value *k0 = B.CreateMul(kt, B.getInt64(T.blockK), "k0");
    loadTiles(k0);
    B.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {});
    // Each k-step sums into fresh partial sums added to the accumulators once: blocked
    // summation, whose rounding error grows with blockK + k / blockK rather than with k, so that
    // long dot products stay within 1e-5 of the exactly rounded ones.
    SmallVector<Value *, 16> sums(accs.size(), ConstantFP::get(f32, 0.0));
    SmallVector<Value *, 8> rows, cols;
    for (unsigned i = 0; i < T.threadM; ++i)
      rows.push_back(tileRow(i));
    for (unsigned j = 0; j < T.threadN; ++j)
      cols.push_back(tileCol(j));
    for (unsigned kk = 0; kk < T.blockK; ++kk) {
      SmallVector<Value *, 8> a, b;
      for (unsigned i = 0; i < T.threadM; ++i) {
        Value *slot = B.CreateAdd(rows[i], B.getInt64(uint64_t(kk) * T.blockM));
        a.push_back(B.CreateLoad(f32, sharedSlot(ATile, slot)));
      }
      for (unsigned j = 0; j < T.threadN; ++j) {
        Value *slot = B.CreateAdd(cols[j], B.getInt64(uint64_t(kk) * T.blockN));
        b.push_back(B.CreateLoad(f32, sharedSlot(BTile, slot)));
      }
      for (unsigned i = 0; i < T.threadM; ++i)
        for (unsigned j = 0; j < T.threadN; ++j) {
          Value *&s = sums[i * T.threadN + j];
          s = B.CreateIntrinsic(Intrinsic::fmuladd, {f32}, {a[i], b[j], s});
        }
    }
    for (auto [s, acc] : zip(sums, accs))
      s = B.CreateFAdd(acc, s);
    // The next k-step overwrites the tiles only after every thread has read them.
    B.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {});
    Value *next = B.CreateAdd(kt, B.getInt64(1), "kt.next");
    kt->addIncoming(next, B.GetInsertBlock());
    for (auto [phi, s] : zip(accs, sums))
      phi->addIncoming(s, B.GetInsertBlock());
    B.CreateBr(head);
    B.SetInsertPoint(exit);
    Acc.assign(accs.begin(), accs.end());
  }

  // out[batch, row, col] = epilogue(acc) for each element of the register tile inside m x n.
  void storeOutputs() {
    Function *f = B.GetInsertBlock()->getParent();
    LLVMContext &c = f->getContext();
    Type *f32 = B.getFloatTy();
    Value *batchRows = B.CreateMul(Batch, M);
    for (unsigned i = 0; i < T.threadM; ++i) {
      Value *row = B.CreateAdd(M0, tileRow(i), "row");
      Value *rowOk = B.CreateICmpSLT(row, M);
      Value *outRow = B.CreateAdd(batchRows, row);
      Value *rowBase = B.CreateMul(outRow, N);
      for (unsigned j = 0; j < T.threadN; ++j) {
        Value *col = B.CreateAdd(N0, tileCol(j), "col");
        Value *colOk = B.CreateICmpSLT(col, N);
        Value *ok = B.CreateAnd(rowOk, colOk);
        BasicBlock *store = BasicBlock::Create(c, "store", f);
        BasicBlock *next = BasicBlock::Create(c, "store.next", f);
        B.CreateCondBr(ok, store, next);
        B.SetInsertPoint(store);
        Value *v = epilogue(row, col, Acc[i * T.threadN + j]);
        Value *offset = B.CreateAdd(rowBase, col);
        Value *ptr = B.CreateInBoundsGEP(f32, Kf.buffers[G.out], offset);
        B.CreateStore(v, ptr);
        B.CreateBr(next);
        B.SetInsertPoint(next);
      }
    }
  }

  Value *epilogue(Value *row, Value *col, Value *acc) {
    if (G.epilogue == kir::NoExpr)
      return acc;
    // Values cached for another element do not dominate this one.
    Ex.clearCache();
    Ex.loopVars = {Batch, row, col};
    Ex.acc = acc;
    Value *v = Ex.emit(G.epilogue);
    v = codegen::convert(B, v, Ex.exprType(G.epilogue), DType::F32);
    Ex.clearCache();
    return v;
  }

  Builder &B;
  codegen::ExprEmitter &Ex;
  const kir::GemmCall &G;
  const GemmTiles &T;
  const KernelFunction &Kf;
  GlobalVariable *ATile, *BTile;
  Value *M = nullptr, *N = nullptr, *K = nullptr, *Tid = nullptr, *Tx = nullptr, *Ty = nullptr;
  Value *Batch = nullptr, *M0 = nullptr, *N0 = nullptr;
  OperandValues A, Bop;
  std::optional<WindowValues> Win;
  SmallVector<Value *, 16> Acc;
};

Error unsupported(const kir::EntryKernels &entry, const kir::GemmCall &g, const std::string &what) {
  return createStringError(fmt::format("{}: GEMM '{}': {} is not supported by the CUDA backend",
                                       entry.name, g.name, what));
}

} // namespace

Expected<CudaKernel> emitGemmKernel(Module &m, codegen::MathLibrary &math,
                                    const kir::EntryKernels &entry, const kir::Step &step,
                                    const StringMap<unsigned> &symIndex, const GemmTiles &tiles) {
  const kir::GemmCall &g = std::get<kir::GemmCall>(step);
  if (g.dtype != DType::F32)
    return unsupported(entry, g, (toString(g.dtype) + " data").str());
  if (g.a.panelRows || g.b.panelRows || g.a.winogradTile || g.b.winogradTile)
    return unsupported(entry, g, "a packed (panel or Winograd) operand");
  assert(tiles.blockM % tiles.threadM == 0 && tiles.blockN % tiles.threadN == 0 &&
         tiles.blockM * tiles.blockK % tiles.threads() == 0 &&
         tiles.blockK * tiles.blockN % tiles.threads() == 0 && "tiles the threads can load");
  CudaKernel out;
  std::vector<uint32_t> used = kir::buffersOfStep(entry, step);
  out.buffers.assign(used.begin(), used.end());
  out.step = &step;
  // Every tile in x: the grid's y and z extents stop at 65535, which m / blockM and the batch
  // (images x groups, batch x heads) can pass over a dynamic range; x goes to 2^31 - 1 blocks,
  // more tiles than any output in device memory has. The kernel splits its block index back.
  SymExpr nTiles = SymExpr::floorDiv(g.n + (tiles.blockN - 1), tiles.blockN);
  SymExpr mTiles = SymExpr::floorDiv(g.m + (tiles.blockM - 1), tiles.blockM);
  out.launch.grid = {nTiles * mTiles * g.batch};
  out.launch.block[0] = tiles.threads();
  LLVMContext &c = m.getContext();
  Builder b(c);
  KernelFunction kf = beginKernel(m, entry, g.name, out, b);
  out.name = kf.fn->getName().str();
  GlobalVariable *aTile =
      sharedArray(m, b.getFloatTy(), uint64_t(tiles.blockM) * tiles.blockK, out.name + "_a_tile");
  GlobalVariable *bTile =
      sharedArray(m, b.getFloatTy(), uint64_t(tiles.blockK) * tiles.blockN, out.name + "_b_tile");
  codegen::ExprEmitter ex(math, b, entry, symIndex, kf.syms, kf.buffers);
  ex.failedCheck = codegen::entryAlloca(b, b.getInt32Ty(), "failed.check");
  b.CreateStore(b.getInt32(0), ex.failedCheck);
  GemmKernel(b, ex, g, tiles, kf, aTile, bTile).emit();
  endKernel(b, kf, ex.failedCheck);
  return out;
}

} // namespace aotc::cuda
