// Operand addressing and the epilogue of the CUDA GEMM kernels.
#include "codegen/cuda/GemmOperands.h"

namespace aotc::cuda {

using namespace llvm;

bool rowsContiguous(const kir::MatrixOperand &op) {
  std::optional<int64_t> stride = op.rowStride.constant();
  return !op.conv && stride && *stride == 1;
}

bool sixteenBitOperand(const kir::EntryKernels &entry, const kir::GemmCall &g) {
  return entry.buffers[g.a.buffer].dtype != DType::F32 ||
         entry.buffers[g.b.buffer].dtype != DType::F32;
}

Value *ceilDiv(codegen::Builder &b, Value *x, Value *d) {
  return b.CreateUDiv(b.CreateAdd(x, b.CreateSub(d, b.getInt64(1))), d);
}

Value *ceilDiv(codegen::Builder &b, Value *x, unsigned d) { return ceilDiv(b, x, b.getInt64(d)); }

Value *sharedElement(codegen::Builder &b, GlobalVariable *tile, Value *index) {
  Value *zero = b.getInt64(0);
  return b.CreateInBoundsGEP(tile->getValueType(), tile, {zero, index});
}

// Element idx of a tile of `cols` columns, at row idx / cols and column idx % cols.
static void tileElement(codegen::Builder &b, Value *idx, unsigned cols,
                        function_ref<void(Value *, Value *, Value *)> element) {
  Value *r = b.CreateUDiv(idx, b.getInt64(cols));
  Value *c = b.CreateURem(idx, b.getInt64(cols));
  element(idx, r, c);
}

void forTileElements(codegen::Builder &b, Value *tid, unsigned threads, unsigned rows,
                     unsigned cols, function_ref<void(Value *, Value *, Value *)> element) {
  for (unsigned e = 0; e < rows * cols / threads; ++e)
    tileElement(b, b.CreateAdd(tid, b.getInt64(uint64_t(e) * threads)), cols, element);
}

void forTileElementsLooped(codegen::Builder &b, Value *tid, unsigned threads, unsigned rows,
                           unsigned cols, unsigned perIteration, const Twine &name,
                           function_ref<void(Value *, Value *, Value *)> element) {
  unsigned rounds = rows * cols / threads;
  assert(rounds % perIteration == 0 && "whole iterations");
  codegen::emitLoop(
      b, b.getInt64(0), b.getInt64(rounds / perIteration),
      [&](Value *it) {
        for (unsigned e = 0; e < perIteration; ++e) {
          Value *round = b.CreateAdd(b.CreateMul(it, b.getInt64(perIteration)), b.getInt64(e));
          tileElement(b, b.CreateAdd(tid, b.CreateMul(round, b.getInt64(threads))), cols, element);
        }
      },
      name);
}

SmallVector<Value *, 64>
kTileLoop(codegen::Builder &b, Value *kTiles, unsigned accumulators,
          function_ref<SmallVector<Value *, 64>(Value *, ArrayRef<Value *>)> step) {
  SmallVector<Value *, 64> zeros(accumulators, ConstantFP::get(b.getFloatTy(), 0.0));
  return kTileLoop(b, kTiles, zeros, step);
}

SmallVector<Value *, 64>
kTileLoop(codegen::Builder &b, Value *kTiles, ArrayRef<Value *> init,
          function_ref<SmallVector<Value *, 64>(Value *, ArrayRef<Value *>)> step) {
  Function *f = b.GetInsertBlock()->getParent();
  LLVMContext &c = f->getContext();
  BasicBlock *pre = b.GetInsertBlock();
  BasicBlock *head = BasicBlock::Create(c, "k.head", f);
  BasicBlock *body = BasicBlock::Create(c, "k.body", f);
  BasicBlock *exit = BasicBlock::Create(c, "k.exit", f);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  PHINode *kt = b.CreatePHI(b.getInt64Ty(), 2, "kt");
  kt->addIncoming(b.getInt64(0), pre);
  SmallVector<Value *, 64> accs;
  for (Value *start : init) {
    PHINode *acc = b.CreatePHI(start->getType(), 2, "acc");
    acc->addIncoming(start, pre);
    accs.push_back(acc);
  }
  b.CreateCondBr(b.CreateICmpULT(kt, kTiles), body, exit);
  b.SetInsertPoint(body);
  SmallVector<Value *, 64> next = step(kt, accs);
  assert(next.size() == accs.size() && "one value per accumulator");
  Value *ktNext = b.CreateAdd(kt, b.getInt64(1), "kt.next");
  kt->addIncoming(ktNext, b.GetInsertBlock());
  for (auto [phi, v] : zip(accs, next))
    cast<PHINode>(phi)->addIncoming(v, b.GetInsertBlock());
  b.CreateBr(head);
  b.SetInsertPoint(exit);
  return accs;
}

std::pair<Value *, Value *> GemmOperands::beginTile(Value *block, unsigned blockM,
                                                    unsigned blockN) {
  M = Ex.sym(G.m);
  N = Ex.sym(G.n);
  K = Ex.sym(G.k);
  Value *nTiles = ceilDiv(B, N, blockN);
  Value *mTiles = ceilDiv(B, M, blockM);
  Value *nTile = B.CreateURem(block, nTiles);
  Value *rest = B.CreateUDiv(block, nTiles);
  Value *mTile = B.CreateURem(rest, mTiles);
  Batch = B.CreateUDiv(rest, mTiles, "batch");
  Value *m0 = B.CreateMul(mTile, B.getInt64(blockM), "m0");
  Value *n0 = B.CreateMul(nTile, B.getInt64(blockN), "n0");
  A = operand(G.a);
  Bop = operand(G.b);
  if (G.b.conv)
    Win = window(*G.b.conv);
  return {m0, n0};
}

GemmOperands::OperandValues GemmOperands::operand(const kir::MatrixOperand &op) {
  OperandValues v;
  v.data = Kf.buffers[op.buffer];
  v.type = Ex.entry().buffers[op.buffer].dtype;
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

GemmOperands::WindowValues GemmOperands::window(const kir::ConvWindow &w) {
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

GemmOperands::Element GemmOperands::a(Value *row, Value *col) { return strided(A, row, M, col, K); }

GemmOperands::Element GemmOperands::b(Value *row, Value *col) {
  return Win ? windowElement(row, col) : strided(Bop, row, K, col, N);
}

GemmOperands::Element GemmOperands::strided(const OperandValues &op, Value *row, Value *rows,
                                            Value *col, Value *cols) {
  Value *rowOk = B.CreateICmpSLT(row, rows);
  Value *colOk = B.CreateICmpSLT(col, cols);
  Value *ok = B.CreateAnd(rowOk, colOk);
  Value *r = B.CreateMul(row, op.rowStride);
  Value *c = B.CreateMul(col, op.colStride);
  Value *rc = B.CreateAdd(r, c);
  Value *offset = B.CreateAdd(op.base, rc);
  return {B.CreateSelect(ok, offset, op.base), ok, op.type};
}

// B[batch, row, col] through the convolution window: row = (ci, kh, kw), col = (oh, ow); absent
// in the padding (kir::ConvWindow).
GemmOperands::Element GemmOperands::windowElement(Value *row, Value *col) {
  const WindowValues &w = *Win;
  Value *rowOk = B.CreateICmpSLT(row, K);
  Value *colOk = B.CreateICmpSLT(col, N);
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
  Value *inMatrix = B.CreateAnd(rowOk, colOk);
  Value *ok = B.CreateAnd(inMatrix, inside);
  return {B.CreateSelect(ok, offset, Bop.base), ok, Bop.type};
}

Value *GemmOperands::windowCoord(Value *out, Value *stride, Value *pad, Value *tap, Value *dil) {
  Value *start = B.CreateMul(out, stride);
  Value *shifted = B.CreateSub(start, pad);
  Value *reach = B.CreateMul(tap, dil);
  return B.CreateAdd(shifted, reach);
}

Value *GemmOperands::load(Value *data, Element e) {
  Value *v = codegen::loadElement(B, data, e.offset, e.type);
  return B.CreateSelect(e.ok, v, ConstantFP::get(B.getFloatTy(), 0.0));
}

Value *GemmOperands::loadWord(Value *data, Element e) {
  Value *at = B.CreateInBoundsGEP(B.getInt16Ty(), data, e.offset);
  Value *word = B.CreateAlignedLoad(B.getInt32Ty(), at, Align(4));
  return B.CreateSelect(e.ok, word, B.getInt32(0));
}

void GemmOperands::store(Value *row, Value *col, Value *acc) {
  Function *f = B.GetInsertBlock()->getParent();
  LLVMContext &c = f->getContext();
  Value *rowOk = B.CreateICmpSLT(row, M);
  Value *colOk = B.CreateICmpSLT(col, N);
  Value *ok = B.CreateAnd(rowOk, colOk);
  BasicBlock *store = BasicBlock::Create(c, "store", f);
  BasicBlock *next = BasicBlock::Create(c, "store.next", f);
  B.CreateCondBr(ok, store, next);
  B.SetInsertPoint(store);
  Value *v = epilogue(row, col, acc);
  Value *batchRows = B.CreateMul(Batch, M);
  Value *outRow = B.CreateAdd(batchRows, row);
  Value *rowBase = B.CreateMul(outRow, N);
  Value *offset = B.CreateAdd(rowBase, col);
  // Rounded where the output is stored in 16 bits (half-activations).
  codegen::storeElement(B, v, Kf.buffers[G.out], offset, Ex.entry().buffers[G.out].dtype);
  B.CreateBr(next);
  B.SetInsertPoint(next);
}

Value *GemmOperands::epilogue(Value *row, Value *col, Value *acc) {
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

} // namespace aotc::cuda
