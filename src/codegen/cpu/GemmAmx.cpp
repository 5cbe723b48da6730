// The blocked GEMM path on AMX tiles (a bf16 weight as A or B on CPUs with AMX-BF16): A packed as
// rows of bf16 along k (a bf16 A read in place where it can be), B as bf16 k-pairs (packBPairs,
// packBConv), a 32 x 32 block of C computed as 2 x 2 tiles by tdpbf16ps with f32 sums, the
// epilogue (one kernel per combination of its parts) applied in registers a panel behind. LLVM's
// AMX lowering configures the tiles (ldtilecfg) from the constant shapes and releases them on
// return.
#include "codegen/cpu/GemmEmitter.h"

#include "llvm/IR/IntrinsicsX86.h"

namespace aotc::cpu::gemm {

void GemmEmitter::packARowsBf16(Builder &b, const GemmValues &v, Value *bi, Value *i0, Value *mrEff,
                                Value *k0, Value *kc, Value *pairs, Value *ap) {
  // Row r's 2 * pairs bf16 at ap + r * 4 * pairs bytes: a multiple of 64 (whole tiles of k).
  Type *f32 = b.getFloatTy(), *i16 = b.getInt16Ty(), *bf16 = b.getBFloatTy();
  const unsigned half = AmxTileRows, chunk = 2 * AmxTileRows; // bf16 of one tile row
  Value *width = b.CreateMul(pairs, b.getInt64(2));
  emitLoop(
      b, b.getInt64(0), b.getInt64(AmxRows),
      [&](Value *r) {
        Value *exists = b.CreateICmpSLT(r, mrEff);
        // Rows past mrEff read nothing (their address clamped to a real row) and store zeros.
        Value *row = b.CreateAdd(i0, smin(b, r, b.CreateSub(mrEff, b.getInt64(1))));
        Value *dst = b.CreateInBoundsGEP(i16, ap, b.CreateMul(r, width));
        emitIf(
            b, b.CreateICmpEQ(v.aCs, b.getInt64(1)),
            [&] {
              emitLoop(
                  b, b.getInt64(0), b.CreateUDiv(width, b.getInt64(chunk)),
                  [&](Value *c) {
                    Value *kk = b.CreateMul(c, b.getInt64(chunk));
                    Value *in = b.CreateICmpSLT(kk, kc);
                    Value *at =
                        ptrA(b, v, bi, row, b.CreateAdd(k0, b.CreateSelect(in, kk, b.getInt64(0))));
                    auto part = [&](unsigned from) {
                      Value *m =
                          lanesBelow(b, half, b.CreateSub(kc, b.CreateAdd(kk, b.getInt64(from))));
                      Value *none = Constant::getNullValue(m->getType());
                      // A bf16 A widens exactly: the rounding gives it back.
                      return loadAVector(b, v, b.CreateConstGEP1_32(aElementType(b, v), at, from),
                                         half, b.CreateSelect(exists, m, none));
                    };
                    b.CreateAlignedStore(roundedConcat(b, part(0), part(half)),
                                         b.CreateInBoundsGEP(i16, dst, kk), Align(64));
                  },
                  "pak");
            },
            [&] {
              emitLoop(
                  b, b.getInt64(0), width,
                  [&](Value *k) {
                    Value *in = b.CreateAnd(exists, b.CreateICmpSLT(k, kc));
                    Value *x =
                        loadA(b, v, bi, row, b.CreateAdd(k0, b.CreateSelect(in, k, b.getInt64(0))));
                    x = b.CreateSelect(in, x, ConstantFP::get(f32, 0.0));
                    b.CreateStore(b.CreateFPTrunc(x, bf16), b.CreateInBoundsGEP(i16, dst, k));
                  },
                  "pak");
            });
      },
      "par");
}

Function *GemmEmitter::amxKernelFunction(unsigned flags) {
  std::string name = ME.prefix() + "ukernel_amx_" + std::to_string(AmxRows) + "x" +
                     std::to_string(AmxCols) + (flags ? "_e" + std::to_string(flags) : "");
  if (Function *existing = ME.module().getFunction(name))
    return existing;
  assert(T.nr() == AmxCols && "a B panel is two tiles wide");
  LLVMContext &ctx = ME.ctx();
  Builder b(ctx);
  Type *ptr = b.getPtrTy(), *i64 = b.getInt64Ty(), *i8 = b.getInt8Ty(), *f32 = b.getFloatTy();
  Function *f = kernelFunction(
      name, {ptr, ptr, i64, i64, i64, ptr, i64, i64, i64, i64, b.getInt1Ty(), ptr, ptr, i64, i64},
      b);
  addTargetFeature(f, "+amx-tile,+amx-bf16");
  Value *ap = f->getArg(0), *bBlock = f->getArg(1), *steps = f->getArg(2),
        *panelWords = f->getArg(3), *panels = f->getArg(4), *cRow = f->getArg(5),
        *ldc = f->getArg(6), *rows = f->getArg(7), *allCols = f->getArg(8), *lda = f->getArg(9),
        *loadC = f->getArg(10), *bias = f->getArg(11), *resRow = f->getArg(12),
        *ldr = f->getArg(13), *aheadBytes = f->getArg(14);
  const unsigned tileBytes = 64, ldb = 4 * AmxCols; // a B panel's word rows
  AllocaInst *sums = entryAlloca(b, ArrayType::get(f32, 2 * AmxRows * AmxCols), "sums");
  sums->setAlignment(Align(64));
  // One zero tile row: a tile loaded from it with stride 0 is zero.
  AllocaInst *zeroRow = entryAlloca(b, ArrayType::get(f32, AmxTileRows), "zero.row");
  zeroRow->setAlignment(Align(64));
  b.CreateAlignedStore(ConstantAggregateZero::get(FixedVectorType::get(f32, AmxTileRows)), zeroRow,
                       Align(64));
  Value *m = b.getInt16(AmxTileRows), *n = b.getInt16(tileBytes), *k = b.getInt16(tileBytes);
  Value *ldcBytes = b.CreateMul(ldc, b.getInt64(4));
  const bool addBias = flags & AddBias, addResidual = flags & AddResidual, relu = flags & Relu;
  // A block's C columns, pointers and edge facts, for panel jp.
  struct Block {
    Value *c, *res, *cols, *whole, *toC;
  };
  auto block = [&](Value *jp) {
    Value *col0 = b.CreateMul(jp, b.getInt64(AmxCols));
    Block blk;
    blk.c = b.CreateInBoundsGEP(f32, cRow, col0);
    blk.res = b.CreateGEP(f32, resRow, col0); // null without a residual
    blk.cols = smin(b, b.getInt64(AmxCols), b.CreateSub(allCols, col0));
    // A whole block of C is summed in the tiles themselves: loaded into them on later k
    // blocks, stored from them unless the epilogue runs. Any other block goes through a
    // scratch tile of sums.
    blk.whole = b.CreateAnd(b.CreateICmpEQ(rows, b.getInt64(AmxRows)),
                            b.CreateICmpEQ(blk.cols, b.getInt64(AmxCols)));
    blk.toC = flags ? b.getFalse() : blk.whole;
    return blk;
  };
  // Two scratch tiles of sums, by the panel's parity: the epilogue of panel jp runs once panel
  // jp + 1's products are issued, so that its loads of what tilestored wrote overlap them
  // rather than wait for the stores between two panels' products.
  auto sumsOf = [&](Value *jp) {
    return b.CreateInBoundsGEP(
        f32, sums, b.CreateMul(b.CreateAnd(jp, b.getInt64(1)), b.getInt64(AmxRows * AmxCols)));
  };
  // Row by row, in registers: the sums, plus C (an edge block's later k blocks), then the
  // epilogue's parts; a whole block's rows unmasked.
  const unsigned vw = AmxTileRows, vecs = AmxCols / vw;
  auto *vt = FixedVectorType::get(f32, vw);
  Value *zeroV = ConstantAggregateZero::get(vt);
  auto rowLoop = [&](const Block &blk, Value *blockSums, bool edge) {
    SmallVector<Value *, 2> colMask;
    for (unsigned j = 0; j < vecs; ++j)
      colMask.push_back(edge ? lanesBelow(b, vw, b.CreateSub(blk.cols, b.getInt64(j * vw)))
                             : nullptr);
    auto load = [&](Value *at, unsigned j) -> Value * {
      if (edge)
        return b.CreateMaskedLoad(vt, at, Align(4), colMask[j], zeroV);
      return b.CreateAlignedLoad(vt, at, Align(4));
    };
    emitLoop(
        b, b.getInt64(0), edge ? rows : b.getInt64(AmxRows),
        [&](Value *i) {
          Value *sumRow = b.CreateInBoundsGEP(f32, blockSums, b.CreateMul(i, b.getInt64(AmxCols)));
          Value *cRow = b.CreateInBoundsGEP(f32, blk.c, b.CreateMul(i, ldc));
          Value *rowBias =
              addBias ? b.CreateVectorSplat(vw, b.CreateLoad(f32, b.CreateGEP(f32, bias, i)))
                      : nullptr;
          for (unsigned j = 0; j < vecs; ++j) {
            Value *x = b.CreateAlignedLoad(vt, b.CreateConstInBoundsGEP1_32(f32, sumRow, j * vw),
                                           Align(64));
            Value *cAt = b.CreateConstGEP1_32(f32, cRow, j * vw);
            if (edge)
              x = b.CreateSelect(loadC, b.CreateFAdd(x, load(cAt, j)), x);
            if (addBias)
              x = b.CreateFAdd(x, rowBias);
            if (addResidual)
              x = b.CreateFAdd(
                  x, load(b.CreateConstGEP1_32(f32, b.CreateGEP(f32, blk.res, b.CreateMul(i, ldr)),
                                               j * vw),
                          j));
            if (relu)
              x = b.CreateBinaryIntrinsic(Intrinsic::maximum, x, zeroV);
            if (edge)
              b.CreateMaskedStore(x, cAt, Align(4), colMask[j]);
            else
              b.CreateAlignedStore(x, cAt, Align(4));
          }
        },
        "ua.row");
  };
  // Without an epilogue a whole block went from the tiles to C (toC): only edge blocks are
  // left to finish.
  auto finish = [&](Value *jp) {
    Block blk = block(jp);
    Value *blockSums = sumsOf(jp);
    emitIf(
        b, blk.whole,
        [&] {
          if (flags)
            rowLoop(blk, blockSums, false);
        },
        [&] { rowLoop(blk, blockSums, true); });
  };
  // Panel by panel: the one configuration serves them all.
  emitLoop(
      b, b.getInt64(0), panels,
      [&](Value *jp) {
        Block blk = block(jp);
        Value *fromC = b.CreateAnd(blk.whole, loadC);
        // Tile (i, j) of the block: rows 16i .., columns 16j ...
        auto cTile = [&](unsigned t) {
          return b.CreateInBoundsGEP(
              f32, blk.c,
              b.CreateAdd(b.CreateMul(b.getInt64((t / 2) * AmxTileRows), ldc),
                          b.getInt64((t % 2) * AmxTileRows)));
        };
        SmallVector<Value *, 4> start;
        for (unsigned t = 0; t < 4; ++t)
          start.push_back(b.CreateIntrinsic(Intrinsic::x86_tileloadd64_internal, {},
                                            {m, n, b.CreateSelect(fromC, cTile(t), zeroRow),
                                             b.CreateSelect(fromC, ldcBytes, b.getInt64(0))}));
        BasicBlock *pre = b.GetInsertBlock();
        BasicBlock *loop = BasicBlock::Create(ctx, "ua.k", f);
        BasicBlock *exit = BasicBlock::Create(ctx, "ua.exit", f);
        // steps >= 1 always: the loop is bottom-tested.
        b.CreateBr(loop);
        b.SetInsertPoint(loop);
        PHINode *s = b.CreatePHI(i64, 2, "s");
        s->addIncoming(b.getInt64(0), pre);
        SmallVector<PHINode *, 4> acc;
        for (unsigned t = 0; t < 4; ++t) {
          acc.push_back(b.CreatePHI(Type::getX86_AMXTy(ctx), 2, "acc"));
          acc[t]->addIncoming(start[t], pre);
        }
        auto load = [&](Value *at, Value *stride) {
          return b.CreateIntrinsic(Intrinsic::x86_tileloadd64_internal, {}, {m, n, at, stride});
        };
        Value *bp = b.CreateInBoundsGEP(b.getInt32Ty(), bBlock, b.CreateMul(jp, panelWords));
        Value *aAt = b.CreateGEP(i8, ap, b.CreateMul(s, b.getInt64(tileBytes)));
        Value *bAt = b.CreateGEP(i8, bp, b.CreateMul(s, b.getInt64(AmxTileRows * ldb)));
        // The B rows aheadBytes on (the next panel's) of this step, into L2: a B read in place
        // streams from memory.
        emitIf(
            b, b.CreateICmpNE(aheadBytes, b.getInt64(0)),
            [&] {
              Value *ahead = b.CreateGEP(i8, bAt, aheadBytes);
              for (unsigned l = 0; l < AmxTileRows * ldb / 64; ++l)
                emitPrefetch(b, b.CreateConstGEP1_32(i8, ahead, l * 64), 2);
            },
            [] {});
        Value *a[2] = {load(aAt, lda),
                       load(b.CreateGEP(i8, aAt, b.CreateMul(lda, b.getInt64(AmxTileRows))), lda)};
        Value *bt[2] = {load(bAt, b.getInt64(ldb)),
                        load(b.CreateConstGEP1_32(i8, bAt, tileBytes), b.getInt64(ldb))};
        SmallVector<Value *, 4> next;
        for (unsigned t = 0; t < 4; ++t) {
          next.push_back(b.CreateIntrinsic(Intrinsic::x86_tdpbf16ps_internal, {},
                                           {m, n, k, acc[t], a[t / 2], bt[t % 2]}));
          acc[t]->addIncoming(next[t], b.GetInsertBlock());
        }
        Value *sn = b.CreateAdd(s, b.getInt64(1), "s.next", true, true);
        s->addIncoming(sn, b.GetInsertBlock());
        b.CreateCondBr(b.CreateICmpSLT(sn, steps), loop, exit);
        b.SetInsertPoint(exit);
        emitIf(
            b, b.CreateICmpSGT(jp, b.getInt64(0)), [&] { finish(b.CreateSub(jp, b.getInt64(1))); },
            [] {});
        Value *blockSums = sumsOf(jp);
        for (unsigned t = 0; t < 4; ++t) {
          unsigned at = (t / 2) * AmxTileRows * AmxCols + (t % 2) * AmxTileRows;
          b.CreateIntrinsic(
              Intrinsic::x86_tilestored64_internal, {},
              {m, n,
               b.CreateSelect(blk.toC, cTile(t), b.CreateConstInBoundsGEP1_32(f32, blockSums, at)),
               b.CreateSelect(blk.toC, ldcBytes, b.getInt64(4 * AmxCols)), next[t]});
        }
      },
      "ua.panel");
  // The last panel's epilogue (panels >= 1: an n-block is never empty).
  finish(b.CreateSub(panels, b.getInt64(1)));
  b.CreateRetVoid();
  return f;
}

} // namespace aotc::cpu::gemm
