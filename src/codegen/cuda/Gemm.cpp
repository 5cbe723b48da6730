// The GEMM library kernel on CUDA cores: each block computes a blockM x blockN output tile,
// streaming blockM x blockK tiles of A and blockK x blockN tiles of B through two stages of shared
// memory (zeros past the matrices' edges and in a convolution's padding); the loads of k-tile
// kt + 1 are in flight while its threads accumulate register tiles of k-tile kt with FMAs, and
// the fused epilogue runs on each output element as it is stored. Operands are read through their
// strides (transposed and broadcast operands as they are, coalesced along their contiguous dim)
// or a convolution's window (implicit GEMM: the im2col matrix is never built).
#include "codegen/cuda/Gemm.h"
#include "codegen/cuda/GemmOperands.h"
#include "codegen/cuda/KernelBuilder.h"

#include "fmt/format.h"

#include "llvm/IR/IntrinsicsNVPTX.h"

namespace aotc::cuda {

using namespace llvm;
using codegen::Builder;

namespace {

class GemmKernel {
public:
  GemmKernel(Builder &b, codegen::ExprEmitter &ex, const kir::GemmCall &g, const GemmTiles &t,
             const KernelFunction &kf, GlobalVariable *aTile, GlobalVariable *bTile)
      : B(b), T(t), Ops(b, ex, g, kf), ATile(aTile), BTile(bTile), AAlongM(rowsContiguous(g.a)),
        BAlongK(rowsContiguous(g.b)) {}

  void emit() {
    Tid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_tid_x);
    Value *block = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    std::tie(M0, N0) = Ops.beginTile(block, T.blockM, T.blockN);
    Value *tn = B.getInt64(T.blockN / T.threadN);
    Tx = B.CreateURem(Tid, tn, "tx");
    Ty = B.CreateUDiv(Tid, tn, "ty");
    Value *kTiles = ceilDiv(B, Ops.k(), T.blockK);
    storeTiles(B.getInt64(0), loadTiles(B.getInt64(0)));
    B.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {});
    accumulate(kTiles);
    storeOutputs();
  }

private:
  // An operand element on its way to shared memory: its slot in a stage and its value.
  struct Staged {
    Value *slot, *value;
  };
  struct StagedTiles {
    SmallVector<Staged, 8> a, b;
  };

  // Loads this thread's elements of k-tile kt of A and B into registers (zeros past the
  // matrices' edges and past k, so the tile after the last is all zeros). Consecutive threads
  // take consecutive elements along each operand's contiguous dim (k for a row-major A, n for
  // a row-major B or a convolution's window): coalesced reads whatever the layout.
  StagedTiles loadTiles(Value *kt) {
    Value *k0 = B.CreateMul(kt, B.getInt64(T.blockK), "k0");
    StagedTiles out;
    forOperandTile(T.blockM, AAlongM, [&](Value *r, Value *k) {
      Value *v = Ops.load(Ops.aData(), Ops.a(B.CreateAdd(M0, r), B.CreateAdd(k0, k)));
      out.a.push_back({kSlot(k, r, T.blockM), v});
    });
    forOperandTile(T.blockN, !BAlongK, [&](Value *c, Value *k) {
      Value *v = Ops.load(Ops.bData(), Ops.b(B.CreateAdd(k0, k), B.CreateAdd(N0, c)));
      out.b.push_back({kSlot(k, c, T.blockN), v});
    });
    return out;
  }

  // This thread's elements (i, k) of an operand's `width` x blockK tile, consecutive threads
  // along i where `alongWidth`, else along k.
  void forOperandTile(unsigned width, bool alongWidth, function_ref<void(Value *, Value *)> f) {
    if (alongWidth)
      forTileElements(B, Tid, T.threads(), T.blockK, width,
                      [&](Value *, Value *k, Value *i) { f(i, k); });
    else
      forTileElements(B, Tid, T.threads(), width, T.blockK,
                      [&](Value *, Value *i, Value *k) { f(i, k); });
  }

  // Both tiles are stored k-major, a row of `width` (blockM, blockN) elements padded by
  // GemmTiles::Pad: the threads of a warp storing 8 consecutive k of 4 rows (or columns) hit
  // 32 banks, and each thread reads its fragments as whole 16-byte vectors.
  Value *kSlot(Value *k, Value *i, unsigned width) {
    Value *row = B.CreateMul(k, B.getInt64(width + GemmTiles::Pad));
    return B.CreateAdd(row, i);
  }

  void storeTiles(Value *stage, const StagedTiles &staged) {
    Value *aBase = B.CreateMul(stage, B.getInt64(T.aStageElements()));
    Value *bBase = B.CreateMul(stage, B.getInt64(T.bStageElements()));
    auto store = [&](GlobalVariable *tile, Value *base, ArrayRef<Staged> elements) {
      for (const Staged &s : elements)
        B.CreateStore(s.value, sharedElement(B, tile, B.CreateAdd(base, s.slot)));
    };
    store(ATile, aBase, staged.a);
    store(BTile, bBase, staged.b);
  }

  // The register tile is made of groups of Vector consecutive rows (columns), the groups
  // blockM / groups apart: element (i, j) covers row g * (blockM / groups) + ty * vector + e of
  // the block's tile for i = g * vector + e. A warp's lanes read adjacent vectors of B and store
  // adjacent output columns.
  static constexpr unsigned Vector = 4;
  static unsigned vectorOf(unsigned perThread) { return std::min(perThread, Vector); }
  Value *tileIndex(Value *t, unsigned i, unsigned perThread, unsigned width) {
    unsigned v = vectorOf(perThread), groups = perThread / v;
    uint64_t offset = uint64_t(i / v) * (width / groups) + i % v;
    return B.CreateAdd(B.CreateMul(t, B.getInt64(v)), B.getInt64(offset));
  }
  Value *tileRow(unsigned i) { return tileIndex(Ty, i, T.threadM, T.blockM); }
  Value *tileCol(unsigned j) { return tileIndex(Tx, j, T.threadN, T.blockN); }

  // This thread's perThread values of row kk of a stage's tile, a vector load per group.
  SmallVector<Value *, 8> fragment(GlobalVariable *tile, Value *base, unsigned kk, Value *t,
                                   unsigned perThread, unsigned width) {
    unsigned v = vectorOf(perThread);
    auto *ty = FixedVectorType::get(B.getFloatTy(), v);
    Value *row = B.CreateAdd(base, B.getInt64(uint64_t(kk) * (width + GemmTiles::Pad)));
    SmallVector<Value *, 8> out;
    for (unsigned i = 0; i < perThread; i += v) {
      Value *at = sharedElement(B, tile, B.CreateAdd(row, tileIndex(t, i, perThread, width)));
      Value *vec = B.CreateAlignedLoad(ty, at, Align(v * 4));
      for (unsigned e = 0; e < v; ++e)
        out.push_back(B.CreateExtractElement(vec, e));
    }
    return out;
  }

  // Each k-tile: the loads of the next one are issued first, the FMAs on this one run while
  // they are in flight, then they are stored into the other stage and one barrier both
  // publishes them and frees this stage for the tile after.
  void accumulate(Value *kTiles) {
    Type *f32 = B.getFloatTy();
    auto step = [&](Value *kt, ArrayRef<Value *> accs) {
      Value *next = B.CreateAdd(kt, B.getInt64(1));
      StagedTiles staged = loadTiles(next);
      Value *stage = B.CreateAnd(kt, B.getInt64(1), "stage");
      Value *aBase = B.CreateMul(stage, B.getInt64(T.aStageElements()));
      Value *bBase = B.CreateMul(stage, B.getInt64(T.bStageElements()));
      // Each k-tile sums into fresh partial sums added to the accumulators once: blocked
      // summation, whose rounding error grows with blockK + k / blockK rather than with k, so
      // that long dot products stay within 1e-5 of the exactly rounded ones.
      SmallVector<Value *, 64> sums(accs.size(), ConstantFP::get(f32, 0.0));
      for (unsigned kk = 0; kk < T.blockK; ++kk) {
        SmallVector<Value *, 8> a = fragment(ATile, aBase, kk, Ty, T.threadM, T.blockM);
        SmallVector<Value *, 8> b = fragment(BTile, bBase, kk, Tx, T.threadN, T.blockN);
        for (unsigned i = 0; i < T.threadM; ++i)
          for (unsigned j = 0; j < T.threadN; ++j) {
            Value *&s = sums[i * T.threadN + j];
            s = B.CreateIntrinsic(Intrinsic::fmuladd, {f32}, {a[i], b[j], s});
          }
      }
      for (auto [s, acc] : zip(sums, accs))
        s = B.CreateFAdd(acc, s);
      storeTiles(B.CreateXor(stage, B.getInt64(1)), staged);
      B.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {});
      return sums;
    };
    SmallVector<Value *, 64> acc = kTileLoop(B, kTiles, T.threadM * T.threadN, step);
    Acc.assign(acc.begin(), acc.end());
  }

  // out[batch, row, col] = epilogue(acc) for each element of the register tile inside m x n.
  void storeOutputs() {
    for (unsigned i = 0; i < T.threadM; ++i) {
      Value *row = B.CreateAdd(M0, tileRow(i), "row");
      for (unsigned j = 0; j < T.threadN; ++j) {
        Value *col = B.CreateAdd(N0, tileCol(j), "col");
        Ops.store(row, col, Acc[i * T.threadN + j]);
      }
    }
  }

  Builder &B;
  const GemmTiles &T;
  GemmOperands Ops;
  GlobalVariable *ATile, *BTile;
  const bool AAlongM, BAlongK;
  Value *Tid = nullptr, *Tx = nullptr, *Ty = nullptr, *M0 = nullptr, *N0 = nullptr;
  SmallVector<Value *, 64> Acc;
};

} // namespace

Error checkGemm(const kir::EntryKernels &entry, const kir::GemmCall &g) {
  auto unsupported = [&](const std::string &what) {
    return createStringError(fmt::format("{}: GEMM '{}': {} is not supported by the CUDA backend",
                                         entry.name, g.name, what));
  };
  if (g.dtype != DType::F32)
    return unsupported((toString(g.dtype) + " data").str());
  if (g.a.panelRows || g.b.panelRows || g.b.pairPanelCols || g.b.panelCols || g.a.winogradTile ||
      g.b.winogradTile)
    return unsupported("a packed (panel or Winograd) operand");
  return Error::success();
}

SymExpr gemmTileCount(const kir::GemmCall &g, unsigned blockM, unsigned blockN) {
  SymExpr nTiles = SymExpr::floorDiv(g.n + (blockN - 1), blockN);
  SymExpr mTiles = SymExpr::floorDiv(g.m + (blockM - 1), blockM);
  return nTiles * mTiles * g.batch;
}

Expected<CudaKernel>
emitTiledGemm(Module &m, codegen::MathLibrary &math, const kir::EntryKernels &entry,
              const kir::Step &step, const StringMap<unsigned> &symIndex, unsigned blockM,
              unsigned blockN, unsigned threads, StringRef name,
              function_ref<void(Builder &, codegen::ExprEmitter &, const KernelFunction &)> body) {
  const kir::GemmCall &g = std::get<kir::GemmCall>(step);
  if (Error err = checkGemm(entry, g))
    return err;
  return emitLibraryKernel(m, math, entry, step, symIndex, gemmTileCount(g, blockM, blockN),
                           threads, name, body);
}

Expected<CudaKernel> emitGemmKernel(Module &m, codegen::MathLibrary &math,
                                    const kir::EntryKernels &entry, const kir::Step &step,
                                    const StringMap<unsigned> &symIndex, const GemmTiles &tiles,
                                    StringRef suffix) {
  assert(tiles.blockM % tiles.threadM == 0 && tiles.blockN % tiles.threadN == 0 &&
         tiles.blockM * tiles.blockK % tiles.threads() == 0 &&
         tiles.blockK * tiles.blockN % tiles.threads() == 0 && "tiles the threads can load");
  const kir::GemmCall &g = std::get<kir::GemmCall>(step);
  return emitTiledGemm(m, math, entry, step, symIndex, tiles.blockM, tiles.blockN, tiles.threads(),
                       (g.name + suffix).str(),
                       [&](Builder &b, codegen::ExprEmitter &ex, const KernelFunction &kf) {
                         GlobalVariable *aTile =
                             sharedArray(m, b.getFloatTy(), 2 * tiles.aStageElements(), "a_tile");
                         GlobalVariable *bTile =
                             sharedArray(m, b.getFloatTy(), 2 * tiles.bStageElements(), "b_tile");
                         GemmKernel(b, ex, g, tiles, kf, aTile, bTile).emit();
                       });
}

} // namespace aotc::cuda
