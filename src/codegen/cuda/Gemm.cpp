// The GEMM library kernel on CUDA cores, correct first: each block stages a blockM x blockK tile
// of A and a blockK x blockN tile of B through shared memory (zeros past the matrices' edges and
// in a convolution's padding), its threads accumulate register tiles with FMAs, and the fused
// epilogue runs on each output element as it is stored. Operands are read through their
// strides (transposed and broadcast operands as they are) or a convolution's window (implicit
// GEMM: the im2col matrix is never built).
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
      : B(b), T(t), Ops(b, ex, g, kf), ATile(aTile), BTile(bTile) {}

  void emit() {
    Tid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_tid_x);
    Value *block = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    std::tie(M0, N0) = Ops.beginTile(block, T.blockM, T.blockN);
    Value *tn = B.getInt64(T.blockN / T.threadN);
    Tx = B.CreateURem(Tid, tn, "tx");
    Ty = B.CreateUDiv(Tid, tn, "ty");
    Value *kTiles = ceilDiv(B, Ops.k(), T.blockK);
    accumulate(kTiles);
    storeOutputs();
  }

private:
  // The block's threads copy the k-step's A tile (stored k-major: the threads of a row of the
  // register tile read adjacent words) and B tile into shared memory, consecutive threads on
  // consecutive k (A) and n (B) for coalesced reads of row-major operands.
  void loadTiles(Value *k0) {
    forTileElements(B, Tid, T.threads(), T.blockM, T.blockK, [&](Value *, Value *r, Value *c) {
      Value *row = B.CreateAdd(M0, r);
      Value *col = B.CreateAdd(k0, c);
      Value *v = Ops.load(Ops.aData(), Ops.a(row, col));
      Value *cm = B.CreateMul(c, B.getInt64(T.blockM));
      Value *slot = B.CreateAdd(cm, r);
      B.CreateStore(v, sharedElement(B, ATile, slot));
    });
    forTileElements(B, Tid, T.threads(), T.blockK, T.blockN, [&](Value *idx, Value *r, Value *c) {
      Value *row = B.CreateAdd(k0, r);
      Value *col = B.CreateAdd(N0, c);
      Value *v = Ops.load(Ops.bData(), Ops.b(row, col));
      B.CreateStore(v, sharedElement(B, BTile, idx));
    });
  }

  // Register tile element (i, j) covers row ty + i * (blockM / threadM) and column
  // tx + j * (blockN / threadN) of the block's tile: a warp's lanes read adjacent B words and
  // store adjacent output columns.
  Value *tileRow(unsigned i) { return B.CreateAdd(Ty, B.getInt64(i * (T.blockM / T.threadM))); }
  Value *tileCol(unsigned j) { return B.CreateAdd(Tx, B.getInt64(j * (T.blockN / T.threadN))); }

  void accumulate(Value *kTiles) {
    Type *f32 = B.getFloatTy();
    auto step = [&](Value *kt, ArrayRef<Value *> accs) {
      Value *k0 = B.CreateMul(kt, B.getInt64(T.blockK), "k0");
      loadTiles(k0);
      B.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {});
      // Each k-step sums into fresh partial sums added to the accumulators once: blocked
      // summation, whose rounding error grows with blockK + k / blockK rather than with k, so
      // that long dot products stay within 1e-5 of the exactly rounded ones.
      SmallVector<Value *, 64> sums(accs.size(), ConstantFP::get(f32, 0.0));
      SmallVector<Value *, 8> rows, cols;
      for (unsigned i = 0; i < T.threadM; ++i)
        rows.push_back(tileRow(i));
      for (unsigned j = 0; j < T.threadN; ++j)
        cols.push_back(tileCol(j));
      for (unsigned kk = 0; kk < T.blockK; ++kk) {
        SmallVector<Value *, 8> a, b;
        for (unsigned i = 0; i < T.threadM; ++i) {
          Value *slot = B.CreateAdd(rows[i], B.getInt64(uint64_t(kk) * T.blockM));
          a.push_back(B.CreateLoad(f32, sharedElement(B, ATile, slot)));
        }
        for (unsigned j = 0; j < T.threadN; ++j) {
          Value *slot = B.CreateAdd(cols[j], B.getInt64(uint64_t(kk) * T.blockN));
          b.push_back(B.CreateLoad(f32, sharedElement(B, BTile, slot)));
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
  Value *Tid = nullptr, *Tx = nullptr, *Ty = nullptr, *M0 = nullptr, *N0 = nullptr;
  SmallVector<Value *, 16> Acc;
};

} // namespace

Error checkGemm(const kir::EntryKernels &entry, const kir::GemmCall &g) {
  auto unsupported = [&](const std::string &what) {
    return createStringError(fmt::format("{}: GEMM '{}': {} is not supported by the CUDA backend",
                                         entry.name, g.name, what));
  };
  if (g.dtype != DType::F32)
    return unsupported((toString(g.dtype) + " data").str());
  if (g.a.panelRows || g.b.panelRows || g.a.winogradTile || g.b.winogradTile)
    return unsupported("a packed (panel or Winograd) operand");
  return Error::success();
}

SymExpr gemmTileCount(const kir::GemmCall &g, unsigned blockM, unsigned blockN) {
  SymExpr nTiles = SymExpr::floorDiv(g.n + (blockN - 1), blockN);
  SymExpr mTiles = SymExpr::floorDiv(g.m + (blockM - 1), blockM);
  return nTiles * mTiles * g.batch;
}

Expected<CudaKernel> emitTiledGemm(
    Module &m, codegen::MathLibrary &math, const kir::EntryKernels &entry, const kir::Step &step,
    const StringMap<unsigned> &symIndex, unsigned blockM, unsigned blockN, unsigned threads,
    StringRef name,
    function_ref<void(Builder &, codegen::ExprEmitter &, const KernelFunction &, StringRef)> body) {
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
  return emitTiledGemm(
      m, math, entry, step, symIndex, tiles.blockM, tiles.blockN, tiles.threads(),
      (g.name + suffix).str(),
      [&](Builder &b, codegen::ExprEmitter &ex, const KernelFunction &kf, StringRef kernel) {
        GlobalVariable *aTile = sharedArray(
            m, b.getFloatTy(), uint64_t(tiles.blockM) * tiles.blockK, kernel + "_a_tile");
        GlobalVariable *bTile = sharedArray(
            m, b.getFloatTy(), uint64_t(tiles.blockK) * tiles.blockN, kernel + "_b_tile");
        GemmKernel(b, ex, g, tiles, kf, aTile, bTile).emit();
      });
}

} // namespace aotc::cuda
