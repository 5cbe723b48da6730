// The GEMM library kernel for a few rows (a decode step's projections: m = batch x 1 token, a
// GEMV at m = 1). The tiled kernels give such a product one block per 64 or 128 output columns
// and compute 64 or 128 rows of which one is real; here every block computes all rows of
// `columns` output columns, its threads splitting k, so that the weights stream through many
// SMs once, each element loaded by one thread and used for every row. Each thread sums its
// share of k in registers; the block adds the shares in a fixed order (no atomics: every run
// gives the same bits) and the fused epilogue runs as the sums are stored.
//
// A block has 8 output columns and splits k 32 ways, so that a product of few columns still
// spreads over many SMs (GPT-2's 768-column projections took 24 blocks of 32 columns, and at
// m = 8 four times as long as on the 96 blocks of 8 columns they have now). Which way a warp's
// lanes go is chosen from B's layout, for whole 32-byte sectors of the weights a load: along n (the
// lanes on 4 adjacent k of 8 adjacent columns, the warps on further k) when B's columns are
// adjacent, as a [k, n] weight; along k (one column a warp, the lanes on adjacent k) when its
// rows are, as nn.Linear's [n, k] weight read transposed.
#include "codegen/cuda/Gemm.h"
#include "codegen/cuda/GemmOperands.h"
#include "codegen/cuda/KernelBuilder.h"

#include "llvm/IR/IntrinsicsNVPTX.h"

namespace aotc::cuda {

using namespace llvm;
using codegen::Builder;

namespace {

/// How the block's threads share the work: `columns` output columns, k split `splits` ways.
struct SmallGemmLayout {
  bool lanesAlongK;
  unsigned columns = SmallGemmColumns, splits = SmallGemmThreads / SmallGemmColumns;
};

SmallGemmLayout layoutFor(const kir::GemmCall &g) {
  std::optional<int64_t> rowStride = g.b.rowStride.constant();
  return {!g.b.conv && rowStride && *rowStride == 1};
}

class SmallGemmKernel {
public:
  SmallGemmKernel(Builder &b, codegen::ExprEmitter &ex, const kir::GemmCall &g,
                  const SmallGemmTier &tier, const SmallGemmLayout &layout,
                  const KernelFunction &kf, GlobalVariable *partials, GlobalVariable *aRows,
                  unsigned chunkK)
      : B(b), T(tier), L(layout), Ops(b, ex, g, kf), Partials(partials), ARows(aRows),
        ChunkK(chunkK) {}

  void emit() {
    Value *tid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_tid_x);
    Value *block = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    N0 = Ops.beginTile(block, T.maxM, L.columns).second;
    Value *lane = B.CreateURem(tid, B.getInt64(32));
    Value *warp = B.CreateUDiv(tid, B.getInt64(32));
    if (L.lanesAlongK) {
      Column = warp;
      Split = lane;
    } else {
      unsigned lanesAlongK = 32 / L.columns;
      Column = B.CreateURem(lane, B.getInt64(L.columns));
      Split = B.CreateAdd(B.CreateMul(warp, B.getInt64(lanesAlongK)),
                          B.CreateUDiv(lane, B.getInt64(L.columns)));
    }
    accumulate(tid);
    combine(tid);
  }

private:
  // Thread (column c, split s) sums a[row, k] * b[k, n0 + c] over k = s, s + splits, ... for
  // every row; `unroll` k at a time, their weight loads first, so that each warp has that many in
  // flight. Each step's products are summed apart and then added (blocked summation, as the
  // tiled kernel). With ARows, A's rows come from shared memory, staged a chunk of k at a time.
  void accumulate(Value *tid) {
    Value *col = B.CreateAdd(N0, Column, "col");
    unsigned stride = L.splits * T.unroll;
    if (!ARows) {
      Value *steps = ceilDiv(B, Ops.k(), stride);
      SmallVector<Value *, 64> acc =
          kTileLoop(B, steps, T.maxM, [&](Value *it, ArrayRef<Value *> a) {
            Value *k0 = B.CreateAdd(B.CreateMul(it, B.getInt64(stride)), Split);
            return step(k0, col, a, [&](Value *k) {
              SmallVector<Value *, 8> rows;
              for (unsigned r = 0; r < T.maxM; ++r)
                rows.push_back(Ops.load(Ops.aData(), Ops.a(B.getInt64(r), k)));
              return rows;
            });
          });
      Acc.assign(acc.begin(), acc.end());
      return;
    }
    // Chunk c holds k in [c x chunkK, + chunkK) as [k][row]; the block copies it with
    // consecutive threads on consecutive k (coalesced), zeros past m and k.
    Value *chunks = ceilDiv(B, Ops.k(), ChunkK);
    SmallVector<Value *, 64> acc = kTileLoop(B, chunks, T.maxM, [&](Value *c, ArrayRef<Value *> a) {
      Value *c0 = B.CreateMul(c, B.getInt64(ChunkK), "c0");
      barrier(); // every thread has read the previous chunk
      // 8 elements a thread at a time: all of the chunk's loads in flight took 155 registers.
      forTileElementsLooped(B, tid, SmallGemmThreads, T.maxM, ChunkK, 8, "stage",
                            [&](Value *, Value *r, Value *kk) {
                              Value *v = Ops.load(Ops.aData(), Ops.a(r, B.CreateAdd(c0, kk)));
                              Value *slot = B.CreateAdd(B.CreateMul(kk, B.getInt64(T.maxM)), r);
                              B.CreateStore(v, sharedElement(B, ARows, slot));
                            });
      barrier();
      Value *left = B.CreateSub(Ops.k(), c0);
      Value *len = B.CreateBinaryIntrinsic(Intrinsic::umin, left, B.getInt64(ChunkK));
      Value *steps = ceilDiv(B, len, stride);
      return kTileLoop(B, steps, a, [&](Value *it, ArrayRef<Value *> a) {
        Value *kk0 = B.CreateAdd(B.CreateMul(it, B.getInt64(stride)), Split);
        // ChunkK is a multiple of the stride: kk stays inside the chunk.
        return step(B.CreateAdd(c0, kk0), col, a,
                    [&](Value *k) { return sharedRow(B.CreateSub(k, c0)); });
      });
    });
    Acc.assign(acc.begin(), acc.end());
  }

  // One step from k0: the weights of k0 + u x splits for each u, then the rows of A there
  // (aRows(k)) times them.
  SmallVector<Value *, 64> step(Value *k0, Value *col, ArrayRef<Value *> accs,
                                function_ref<SmallVector<Value *, 8>(Value *k)> aRows) {
    Type *f32 = B.getFloatTy();
    SmallVector<Value *, 8> ks, bs;
    for (unsigned u = 0; u < T.unroll; ++u) {
      ks.push_back(B.CreateAdd(k0, B.getInt64(uint64_t(u) * L.splits)));
      bs.push_back(Ops.load(Ops.bData(), Ops.b(ks.back(), col)));
    }
    SmallVector<Value *, 64> sums(accs.size(), ConstantFP::get(f32, 0.0));
    for (unsigned u = 0; u < T.unroll; ++u) {
      SmallVector<Value *, 8> as = aRows(ks[u]);
      for (unsigned r = 0; r < T.maxM; ++r)
        sums[r] = B.CreateIntrinsic(Intrinsic::fmuladd, {f32}, {as[r], bs[u], sums[r]});
    }
    for (auto [s, acc] : zip(sums, accs))
      s = B.CreateFAdd(acc, s);
    return sums;
  }

  // A's rows at chunk position kk from shared memory, 16 bytes a load.
  SmallVector<Value *, 8> sharedRow(Value *kk) {
    Type *quad = FixedVectorType::get(B.getFloatTy(), 4);
    Value *first = B.CreateMul(kk, B.getInt64(T.maxM));
    SmallVector<Value *, 8> rows;
    for (unsigned r = 0; r < T.maxM; r += 4) {
      Value *at = sharedElement(B, ARows, B.CreateAdd(first, B.getInt64(r)));
      Value *v = B.CreateAlignedLoad(quad, at, Align(16));
      for (unsigned i = 0; i < 4; ++i)
        rows.push_back(B.CreateExtractElement(v, i));
    }
    return rows;
  }

  void barrier() { B.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {}); }

  // The shares go to shared memory, [split][row][column]; then thread t < maxM x columns adds
  // those of row t / columns, column t % columns in split order and stores the result.
  void combine(Value *tid) {
    Type *f32 = B.getFloatTy();
    for (unsigned r = 0; r < T.maxM; ++r)
      B.CreateStore(Acc[r], sharedElement(B, Partials, slot(Split, r, Column)));
    B.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {});
    Function *f = B.GetInsertBlock()->getParent();
    LLVMContext &c = f->getContext();
    BasicBlock *sum = BasicBlock::Create(c, "combine", f);
    BasicBlock *done = BasicBlock::Create(c, "combine.done", f);
    unsigned outputs = T.maxM * L.columns;
    B.CreateCondBr(B.CreateICmpULT(tid, B.getInt64(outputs)), sum, done);
    B.SetInsertPoint(sum);
    Value *row = B.CreateUDiv(tid, B.getInt64(L.columns), "row");
    Value *column = B.CreateURem(tid, B.getInt64(L.columns));
    Value *total = ConstantFP::get(f32, 0.0);
    for (unsigned s = 0; s < L.splits; ++s) {
      Value *part = B.CreateLoad(f32, sharedElement(B, Partials, slot(B.getInt64(s), row, column)));
      total = B.CreateFAdd(total, part);
    }
    Ops.store(row, B.CreateAdd(N0, column, "col"), total);
    B.CreateBr(done);
    B.SetInsertPoint(done);
  }

  Value *slot(Value *split, unsigned row, Value *column) {
    return slot(split, B.getInt64(row), column);
  }
  Value *slot(Value *split, Value *row, Value *column) {
    Value *splitRows = B.CreateMul(split, B.getInt64(T.maxM));
    Value *r = B.CreateAdd(splitRows, row);
    return B.CreateAdd(B.CreateMul(r, B.getInt64(L.columns)), column);
  }

  Builder &B;
  const SmallGemmTier &T;
  SmallGemmLayout L;
  GemmOperands Ops;
  GlobalVariable *Partials;
  GlobalVariable *ARows; // null: A's rows are read from device memory
  unsigned ChunkK;
  Value *N0 = nullptr, *Column = nullptr, *Split = nullptr;
  SmallVector<Value *, 8> Acc;
};

} // namespace

Expected<CudaKernel> emitSmallGemmKernel(Module &m, codegen::MathLibrary &math,
                                         const kir::EntryKernels &entry, const kir::Step &step,
                                         const StringMap<unsigned> &symIndex,
                                         const SmallGemmTier &tier) {
  const kir::GemmCall &g = std::get<kir::GemmCall>(step);
  SmallGemmLayout layout = layoutFor(g);
  return emitTiledGemm(
      m, math, entry, step, symIndex, tier.maxM, layout.columns, SmallGemmThreads,
      (g.name + "_m" + Twine(tier.maxM)).str(),
      [&](Builder &b, codegen::ExprEmitter &ex, const KernelFunction &kf) {
        GlobalVariable *partials =
            sharedArray(m, b.getFloatTy(), uint64_t(SmallGemmThreads) * tier.maxM, "partials");
        GlobalVariable *aRows = nullptr;
        unsigned chunkK = 0;
        if (tier.sharedRows) {
          // k a chunk: SmallGemmChunkK, or all of a constant k (rounded up to a whole step).
          unsigned stride = layout.splits * tier.unroll;
          chunkK = SmallGemmChunkK;
          if (std::optional<int64_t> k = g.k.constant(); k && *k < int64_t(chunkK))
            chunkK = unsigned(std::max<int64_t>(1, (*k + stride - 1) / stride)) * stride;
          assert(chunkK % stride == 0 && tier.maxM % 4 == 0 && "whole steps, 16-byte rows");
          aRows = sharedArray(m, b.getFloatTy(), uint64_t(chunkK) * tier.maxM, "a_rows");
        }
        SmallGemmKernel(b, ex, g, tier, layout, kf, partials, aRows, chunkK).emit();
      });
}

} // namespace aotc::cuda
