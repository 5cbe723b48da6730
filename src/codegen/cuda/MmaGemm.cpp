// The GEMM library kernels on the tensor cores (mma.sync, sm_80 and later), for GEMMs whose
// precision allows tf32, bf16 or fp16 operands; each warp accumulates m16n8 tiles in f32 and
// the fused epilogue runs on each output element as it is stored. Two ways to feed them
// (MmaGemmTiles::elementBytes):
//   - f32 buffers: each block streams A and B tiles into shared memory with cp.async, `stages`
//     k-tiles in flight (zero-filled past the matrices' edges and in a convolution's padding, so
//     no thread branches around a copy); each warp loads its fragments by PTX's layouts (tf32's
//     A fragments by one ldmatrix.x4 of 8 x 4 f32 matrices, the rest element by element),
//     rounding them to the precision as it does (cvt.rna.tf32.f32, cvt.rn.{bf16,f16}x2.f32).
//   - 16-bit buffers (bf16, fp16): each thread loads its share of k-tile kt + 1 into registers
//     while the warps compute on k-tile kt, then rounds it in pairs and stores it into the other
//     buffer; ldmatrix.x4 loads the fragments (.trans for B kept k-major in shared memory). The
//     only kernel for operands stored in 16 bits (half-weights), which it widens as it loads
//     them and rounds back exactly, or, where a pair lies side by side in memory, loads as one
//     32-bit word (wordPairs).
//   - 16-bit buffers filled by cp.async (MmaGemmTiles::asyncCopies), where both operands are
//     stored in 16 bits in rows of 16-byte chunks (asyncChunks): each thread copies chunks of 8
//     elements along each operand's contiguous dim straight into the buffers' rows, `stages`
//     k-tiles in flight (in dynamic shared memory where they take more than the 48 KiB of static
//     shared memory; a chunk past the matrix's end copies its elements inside and zeros the
//     rest), and the fragments are loaded by ldmatrix as above. No registers stage the tiles, and
//     nothing is converted.
#include "codegen/cuda/Gemm.h"
#include "codegen/cuda/GemmOperands.h"
#include "codegen/cuda/KernelBuilder.h"
#include "codegen/cuda/Mma.h"

#include "fmt/format.h"

#include "llvm/IR/IntrinsicsNVPTX.h"

namespace aotc::cuda {

using namespace llvm;
using codegen::Builder;

namespace {

class MmaGemmKernel {
public:
  // The stages of A in `aTile`, of B in `bTile` from element `bShift` on (one array of dynamic
  // shared memory holds both: B's stages after A's).
  MmaGemmKernel(Module &m, Builder &b, codegen::ExprEmitter &ex, const kir::GemmCall &g,
                const MmaGemmTiles &t, const KernelFunction &kf, GlobalVariable *aTile,
                GlobalVariable *bTile, uint64_t bShift)
      : Mod(m), B(b), G(g), P(g.precision), T(t), Ops(b, ex, g, kf), ATile(aTile), BTile(bTile),
        BShift(bShift), BAlongK(t.elementBytes == 2 && rowsContiguous(g.b)),
        AF32Chunks(t.elementBytes == 4 && chunkedRows(ex.entry(), g.a, false, DType::F32)),
        BF32Chunks(t.elementBytes == 4 && chunkedRows(ex.entry(), g.b, false, DType::F32)) {}

  void emit() {
    Tid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_tid_x);
    Value *block = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    std::tie(M0, N0) = Ops.beginTile(block, T.blockM, T.blockN);
    Value *lane = B.CreateURem(Tid, B.getInt64(32), "lane");
    Value *warp = B.CreateUDiv(Tid, B.getInt64(32), "warp");
    // PTX's fragment layouts index a lane by its group of four (groupID) and its place in it.
    Group = B.CreateUDiv(lane, B.getInt64(4), "group");
    InGroup = B.CreateURem(lane, B.getInt64(4), "in.group");
    Value *warpRow = B.CreateUDiv(warp, B.getInt64(T.warpsN));
    Value *warpCol = B.CreateURem(warp, B.getInt64(T.warpsN));
    WarpRow = B.CreateMul(warpRow, B.getInt64(T.warpM()), "warp.row");
    WarpCol = B.CreateMul(warpCol, B.getInt64(T.warpN()), "warp.col");
    Value *kTiles = ceilDiv(B, Ops.k(), T.blockK);
    if (T.elementBytes == 2 && !T.asyncCopies) {
      storeStage(B.getInt64(0), loadStage(B.getInt64(0)));
      B.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {});
      accumulateHalf(kTiles);
    } else {
      for (unsigned s = 0; s + 1 < T.stages; ++s)
        issueStage(B.getInt64(s), B.getInt64(s), kTiles);
      accumulate(kTiles);
    }
    storeOutputs();
  }

private:
  static constexpr unsigned MmaM = mma::TileM, MmaN = mma::TileN;
  unsigned tilesM() const { return T.warpM() / MmaM; }
  unsigned tilesN() const { return T.warpN() / MmaN; }

  // cp.async of one f32 operand element into `slot`, zeros where it does not exist.
  void copyElement(Value *data, GemmOperands::Element e, Value *slot) {
    Value *src = B.CreateInBoundsGEP(B.getFloatTy(), data, e.offset);
    Value *global = B.CreateAddrSpaceCast(src, B.getPtrTy(1));
    Value *bytes = B.CreateSelect(e.ok, B.getInt32(4), B.getInt32(0));
    B.CreateIntrinsic(Intrinsic::nvvm_cp_async_ca_shared_global_4_s, {}, {slot, global, bytes});
  }

  // Starts the copies of k-tile `kt` into buffer `stage` (when kt < kTiles) and commits them as
  // one group; a group with no copies keeps the count of groups the same in every iteration.
  // The copies are copyTile's.
  void issueStage(Value *stage, Value *kt, Value *kTiles) {
    Function *f = B.GetInsertBlock()->getParent();
    BasicBlock *copy = BasicBlock::Create(f->getContext(), "copy", f);
    BasicBlock *done = BasicBlock::Create(f->getContext(), "copy.done", f);
    B.CreateCondBr(B.CreateICmpULT(kt, kTiles), copy, done);
    B.SetInsertPoint(copy);
    Value *k0 = B.CreateMul(kt, B.getInt64(T.blockK), "k0");
    Value *aBase = aStageBase(stage);
    Value *bBase = bStageBase(stage);
    copyTile(k0, aBase, bBase);
    B.CreateBr(done);
    B.SetInsertPoint(done);
    B.CreateIntrinsic(Intrinsic::nvvm_cp_async_commit_group, {}, {});
  }

  // The copies of the k-tile from k0 into the stage at aBase and bBase: A's tile as blockM rows
  // of blockK, B's as blockK rows of blockN or, for the 16-bit buffers' B along k (BAlongK),
  // blockN rows of blockK, the layouts the fragment loads read. Consecutive threads copy
  // consecutive elements or chunks of a row: coalesced. The cp.async 16-bit buffers copy 16-byte
  // chunks; the f32 buffers an element at a time, or chunks of 4 where an operand's rows allow
  // (AF32Chunks, BF32Chunks).
  void copyTile(Value *k0, Value *aBase, Value *bBase) {
    Type *elem = T.asyncCopies ? B.getInt16Ty() : B.getFloatTy();
    copyOperand(
        elem, T.asyncCopies || AF32Chunks, T.blockM, T.blockK, Ops.aData(), ATile,
        [&](Value *r, Value *c) { return Ops.a(B.CreateAdd(M0, r), B.CreateAdd(k0, c)); },
        [&](Value *r, Value *c) { return aSlot(aBase, r, c); },
        [&](Value *c) { return B.CreateSub(Ops.k(), B.CreateAdd(k0, c)); });
    if (BAlongK)
      copyOperand(
          elem, true, T.blockN, T.blockK, Ops.bData(), BTile,
          [&](Value *r, Value *c) { return Ops.b(B.CreateAdd(k0, c), B.CreateAdd(N0, r)); },
          [&](Value *r, Value *c) {
            Value *row = B.CreateMul(r, B.getInt64(T.blockK + T.padB));
            return B.CreateAdd(bBase, B.CreateAdd(row, c));
          },
          [&](Value *c) { return B.CreateSub(Ops.k(), B.CreateAdd(k0, c)); });
    else
      copyOperand(
          elem, T.asyncCopies || BF32Chunks, T.blockK, T.blockN, Ops.bData(), BTile,
          [&](Value *r, Value *c) { return Ops.b(B.CreateAdd(k0, r), B.CreateAdd(N0, c)); },
          [&](Value *r, Value *c) { return bSlot(bBase, r, c); },
          [&](Value *c) { return B.CreateSub(Ops.n(), B.CreateAdd(N0, c)); });
  }

  // One operand's share of a k-tile of `rows` x `cols` elements of type `elem` in its shared
  // tile: element (r, c) is `element(r, c)` in memory and `slot(r, c)` in the tile. With
  // `chunks`, 16 bytes a copy (the row's `left(c)` elements from c on, at most a chunk's, the
  // rest zeros): for f32 a quarter of the copies and of their address and bounds arithmetic;
  // else an f32 element a copy.
  void copyOperand(Type *elem, bool chunks, unsigned rows, unsigned cols, Value *data,
                   GlobalVariable *tile,
                   function_ref<GemmOperands::Element(Value *, Value *)> element,
                   function_ref<Value *(Value *, Value *)> slot,
                   function_ref<Value *(Value *)> left) {
    assert((chunks || elem->isFloatTy()) && "16-bit elements are copied in chunks");
    unsigned per = chunks ? 16 / (elem->getPrimitiveSizeInBits() / 8) : 1;
    forTileElements(B, Tid, T.threads(), rows, cols / per, [&](Value *, Value *r, Value *i) {
      Value *c = chunks ? B.CreateMul(i, B.getInt64(per)) : i;
      Value *dst = sharedElement(B, tile, slot(r, c));
      if (chunks)
        copyChunk(data, elem, element(r, c), left(c), dst);
      else
        copyElement(data, element(r, c), dst);
    });
  }

  // Where A's stage `stage` starts in ATile, B's in BTile.
  Value *aStageBase(Value *stage) { return B.CreateMul(stage, B.getInt64(T.aStageElements())); }
  Value *bStageBase(Value *stage) {
    return B.CreateAdd(B.CreateMul(stage, B.getInt64(T.bStageElements())), B.getInt64(BShift));
  }

  // A's tile element (row of the block tile, k of the k-tile), B's (k, column).
  Value *aSlot(Value *base, Value *row, Value *k) {
    Value *r = B.CreateMul(row, B.getInt64(T.blockK + T.padA));
    Value *rk = B.CreateAdd(r, k);
    return B.CreateAdd(base, rk);
  }
  Value *bSlot(Value *base, Value *k, Value *col) {
    Value *r = B.CreateMul(k, B.getInt64(T.blockN + T.padB));
    Value *rc = B.CreateAdd(r, col);
    return B.CreateAdd(base, rc);
  }

  Value *loadShared(GlobalVariable *tile, Value *slot) {
    return B.CreateLoad(B.getFloatTy(), sharedElement(B, tile, slot));
  }

  Value *fragment(Value *lo, Value *hi) { return mma::fragment(B, P, lo, hi); }
  Type *pairType() { return mma::pairType(B, P); }

  // A's fragment of mma tile `mi` at k-step `ks` (PTX ISA, "Matrix Fragments for mma.m16n8k8"
  // and "mma.m16n8k16"): register i holds row group + 8 (i & 1) and, for tf32, column
  // inGroup + 4 (i >> 1); for 16-bit types columns 2 inGroup + 8 (i >> 1) and the next.
  SmallVector<Value *, 4> aFragment(Value *aBase, unsigned mi, unsigned ks) {
    if (P == kir::Precision::TF32)
      return aFragmentTf32(aBase, mi, ks);
    SmallVector<Value *, 4> regs;
    Value *tileRow = B.CreateAdd(WarpRow, B.getInt64(mi * MmaM));
    Value *row0 = B.CreateAdd(tileRow, Group);
    for (unsigned i = 0; i < 4; ++i) {
      Value *row = B.CreateAdd(row0, B.getInt64((i & 1) * 8));
      if (P == kir::Precision::TF32) {
        Value *k = B.CreateAdd(InGroup, B.getInt64(ks * 8 + (i >> 1) * 4));
        regs.push_back(fragment(loadShared(ATile, aSlot(aBase, row, k)), nullptr));
        continue;
      }
      Value *pair = B.CreateMul(InGroup, B.getInt64(2));
      Value *k = B.CreateAdd(pair, B.getInt64(ks * 16 + (i >> 1) * 8));
      Value *slot = aSlot(aBase, row, k);
      Value *lo = loadShared(ATile, slot);
      Value *hi = loadShared(ATile, B.CreateAdd(slot, B.getInt64(1)));
      regs.push_back(fragment(lo, hi));
    }
    return regs;
  }

  // tf32: aMatrices' f32 elements, rounded.
  SmallVector<Value *, 4> aFragmentTf32(Value *aBase, unsigned mi, unsigned ks) {
    SmallVector<Value *, 4> regs = aMatrices(aBase, mi, ks);
    for (Value *&reg : regs)
      reg = fragment(reg, nullptr);
    return regs;
  }

  // B's fragment of mma tile `ni`: register i holds column group and, for tf32, row
  // inGroup + 4 i; for 16-bit types rows 2 inGroup + 8 i and the next.
  SmallVector<Value *, 2> bFragment(Value *bBase, unsigned ni, unsigned ks) {
    SmallVector<Value *, 2> regs;
    Value *tileCol = B.CreateAdd(WarpCol, B.getInt64(ni * MmaN));
    Value *col = B.CreateAdd(tileCol, Group);
    for (unsigned i = 0; i < 2; ++i) {
      if (P == kir::Precision::TF32) {
        Value *k = B.CreateAdd(InGroup, B.getInt64(ks * 8 + i * 4));
        regs.push_back(fragment(loadShared(BTile, bSlot(bBase, k, col)), nullptr));
        continue;
      }
      Value *pair = B.CreateMul(InGroup, B.getInt64(2));
      Value *k = B.CreateAdd(pair, B.getInt64(ks * 16 + i * 8));
      Value *lo = loadShared(BTile, bSlot(bBase, k, col));
      Value *k1 = B.CreateAdd(k, B.getInt64(1));
      Value *hi = loadShared(BTile, bSlot(bBase, k1, col));
      regs.push_back(fragment(lo, hi));
    }
    return regs;
  }

  // The 16-bit buffers. B's rows run along k in memory (a transposed weight, nn.Linear's
  // [n, k]) when its row stride is 1: then its shared tile is n-major too, so that consecutive
  // threads read consecutive k; else it is k-major, consecutive threads reading consecutive n.
  // Pairs of consecutive elements each thread moves from a k-tile of A, then of B, into the
  // shared buffers: A's tile as blockM rows of blockK / 2 pairs (along k), B's as blockK rows of
  // blockN / 2 pairs (along n) or, along k, blockN rows of blockK / 2 pairs.
  struct Pair {
    Value *slot;           // the pair's first element in its stage (an offset of 16-bit elements)
    Value *lo, *hi;        // f32 values
    Value *word = nullptr; // or both as they are in memory (wordPairs), as the mma takes them
  };
  struct StagedTile {
    SmallVector<Pair, 16> a, b;
  };
  using PairFn = function_ref<Value *(Value *, Value *)>;

  // Loads this thread's pairs of k-tile kt from memory (0 past the matrices and in a
  // convolution's padding; every address exists, so no branch).
  StagedTile loadStage(Value *kt) {
    StagedTile t;
    Value *k0 = B.CreateMul(kt, B.getInt64(T.blockK), "k0");
    // A's element (row, k) of the k-tile, and B's (k, n).
    auto a = [&](Value *r, Value *c) {
      return Ops.load(Ops.aData(), Ops.a(B.CreateAdd(M0, r), B.CreateAdd(k0, c)));
    };
    auto b = [&](Value *k, Value *n) {
      return Ops.load(Ops.bData(), Ops.b(B.CreateAdd(k0, k), B.CreateAdd(N0, n)));
    };
    // The words of pairs that lie side by side in memory as the mma takes them.
    auto aWord = [&](Value *r, Value *c) {
      return Ops.loadWord(Ops.aData(), Ops.a(B.CreateAdd(M0, r), B.CreateAdd(k0, c)));
    };
    auto bWord = [&](Value *k, Value *n) {
      return Ops.loadWord(Ops.bData(), Ops.b(B.CreateAdd(k0, k), B.CreateAdd(N0, n)));
    };
    auto bWordAlongK = [&](Value *n, Value *k) { return bWord(k, n); };
    stagePairs(T.blockM, T.blockK / 2, T.blockK + T.padA, a,
               wordPairs(G.a, Ops.aType(), false, G.k) ? PairFn(aWord) : PairFn(), t.a);
    if (BAlongK)
      stagePairs(
          T.blockN, T.blockK / 2, T.blockK + T.padB, [&](Value *n, Value *k) { return b(k, n); },
          wordPairs(G.b, Ops.bType(), true, G.k) ? PairFn(bWordAlongK) : PairFn(), t.b);
    else
      stagePairs(T.blockK, T.blockN / 2, T.blockN + T.padB, b,
                 wordPairs(G.b, Ops.bType(), false, G.n) ? PairFn(bWord) : PairFn(), t.b);
    return t;
  }

  // Whether an operand's pairs load as one 32-bit word each, as they are: it is stored in the
  // precision's 16-bit type (half-weights), its pairs run along its contiguous dim (rows where
  // `alongRows`: B read along k), every pair's first element sits at an even offset (offset,
  // batch stride and the other stride even; pairs start at even positions, tiles at multiples of
  // 16), and that dim's `length` is even, so that no pair straddles its end.
  bool wordPairs(const kir::MatrixOperand &op, DType type, bool alongRows, const SymExpr &length) {
    std::optional<DType> half = kir::sixteenBitType(P);
    auto even = [&](const SymExpr &s) { return kir::multipleOf(Ops.entry(), s, 2); };
    std::optional<int64_t> unit = (alongRows ? op.rowStride : op.colStride).constant();
    return type == half && !op.conv && unit && *unit == 1 &&
           even(alongRows ? op.colStride : op.rowStride) && even(op.offset) &&
           even(op.batchStride) && even(length);
  }

  // This thread's share of a shared tile of `rows` rows of `pairs` pairs, `stride` elements
  // apart: element (r, c) of the tile is `element(r, c)`, an f32 from memory, or with `word`
  // the pair at (r, c) (c even) is `word(r, c)`.
  void stagePairs(unsigned rows, unsigned pairs, unsigned stride, PairFn element, PairFn word,
                  SmallVectorImpl<Pair> &out) {
    forTileElements(B, Tid, T.threads(), rows, pairs, [&](Value *, Value *r, Value *p) {
      Value *c = B.CreateMul(p, B.getInt64(2));
      Value *slot = B.CreateAdd(B.CreateMul(r, B.getInt64(stride)), c);
      if (word) {
        out.push_back({slot, nullptr, nullptr, word(r, c)});
        return;
      }
      Value *lo = element(r, c);
      out.push_back({slot, lo, element(r, B.CreateAdd(c, B.getInt64(1)))});
    });
  }

  // Rounds the pairs to the precision and stores them into buffer `stage`, one 32-bit word each.
  void storeStage(Value *stage, const StagedTile &t) {
    auto store = [&](GlobalVariable *tile, Value *base, const Pair &pair) {
      Value *word =
          pair.word ? pair.word : B.CreateBitCast(fragment(pair.lo, pair.hi), B.getInt32Ty());
      B.CreateAlignedStore(word, sharedElement(B, tile, B.CreateAdd(base, pair.slot)), Align(4));
    };
    Value *aBase = aStageBase(stage);
    for (const Pair &pair : t.a)
      store(ATile, aBase, pair);
    Value *bBase = bStageBase(stage);
    for (const Pair &pair : t.b)
      store(BTile, bBase, pair);
  }

  // ldmatrix.x4 (.trans) at this lane's row address: four 8x8 matrices of 16-bit pairs, lanes
  // 8i..8i+7 giving the rows of matrix i; returns its four registers as the mma takes them.
  SmallVector<Value *, 4> ldmatrix(GlobalVariable *tile, Value *slot, bool trans) {
    return mma::loadMatrices(B, P, sharedElement(B, tile, slot), trans);
  }

  // This lane's row of the ldmatrix.x4 matrices: matrix i = lane / 8, row lane % 8 of it.
  std::pair<Value *, Value *> ldmatrixLane() {
    return mma::matrixLane(B, B.CreateURem(Tid, B.getInt64(32)));
  }

  // A's fragment of mma tile mi at k-step ks by one ldmatrix.x4 of matrices of 8 rows of 16
  // bytes (8 16-bit values, or 4 f32 for tf32, whose lane l gets row l / 4, element l % 4):
  // (rows +0, k +0), (+8, +0), (+0, +h), (+8, +h), h half the mma's k, are registers a0..a3 as
  // they lie. A's rows are whole 16-byte groups (blockK + padA a multiple of 8, of 4 for f32);
  // 20 words apart at TensorCoreGemmTiles, an f32 matrix's 8 rows fall in distinct banks.
  SmallVector<Value *, 4> aMatrices(Value *aBase, unsigned mi, unsigned ks) {
    unsigned tileK = mma::tileK(P);
    auto [r, i] = ldmatrixLane();
    Value *rowPart = B.CreateMul(B.CreateAnd(i, B.getInt64(1)), B.getInt64(8));
    Value *kPart = B.CreateMul(B.CreateLShr(i, B.getInt64(1)), B.getInt64(tileK / 2));
    Value *row = B.CreateAdd(B.CreateAdd(WarpRow, B.getInt64(mi * MmaM)), B.CreateAdd(r, rowPart));
    Value *k = B.CreateAdd(kPart, B.getInt64(ks * tileK));
    return ldmatrix(ATile, aSlot(aBase, row, k), false);
  }

  // B's fragments of mma tiles ni and ni + 1 at k-step ks: matrices (k +0, n +0), (+8, +0),
  // (+0, +8), (+8, +8) are b0, b1 of tile ni and b0, b1 of tile ni + 1.
  std::pair<SmallVector<Value *, 2>, SmallVector<Value *, 2>>
  bFragmentsHalf(Value *bBase, unsigned ni, unsigned ks) {
    auto [r, i] = ldmatrixLane();
    Value *kPart = B.CreateMul(B.CreateAnd(i, B.getInt64(1)), B.getInt64(8));
    Value *nPart = B.CreateMul(B.CreateLShr(i, B.getInt64(1)), B.getInt64(8));
    Value *n = B.CreateAdd(WarpCol, B.CreateAdd(nPart, B.getInt64(ni * MmaN)));
    Value *k = B.CreateAdd(kPart, B.getInt64(ks * 16));
    Value *slot;
    if (BAlongK) { // rows n, their k contiguous: row n + r at column k
      Value *row = B.CreateAdd(n, r);
      slot = B.CreateAdd(B.CreateMul(row, B.getInt64(T.blockK + T.padB)), k);
    } else { // rows k, their n contiguous: row k + r at column n, read transposed
      Value *row = B.CreateAdd(k, r);
      slot = B.CreateAdd(B.CreateMul(row, B.getInt64(T.blockN + T.padB)), n);
    }
    SmallVector<Value *, 4> regs = ldmatrix(BTile, B.CreateAdd(bBase, slot), !BAlongK);
    return {{regs[0], regs[1]}, {regs[2], regs[3]}};
  }

  void accumulateHalf(Value *kTiles) {
    auto step = [&](Value *kt, ArrayRef<Value *> accs) {
      // k-tile kt + 1 comes into registers while the warps compute on kt; it goes into the
      // other buffer, which every warp finished reading before the last iteration's barrier.
      Value *next = B.CreateAdd(kt, B.getInt64(1));
      StagedTile staged = loadStage(next);
      Value *stage = B.CreateAnd(kt, B.getInt64(1));
      Value *aBase = aStageBase(stage);
      Value *bBase = bStageBase(stage);
      SmallVector<Value *, 64> sums(accs.begin(), accs.end());
      multiplyHalfTile(aBase, bBase, sums);
      // Past the last k-tile the staged values are zeros, stored where nothing reads them.
      storeStage(B.CreateXor(stage, B.getInt64(1)), staged);
      B.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {});
      return sums;
    };
    SmallVector<Value *, 64> acc = kTileLoop(B, kTiles, tilesM() * tilesN() * 4, step);
    Acc.assign(acc.begin(), acc.end());
  }

  // cp.async of the 16-byte chunk of `elem` elements (8 of 16 bits or 4 of f32) from `e` (the
  // chunk's first element) into `slot`: `count` of them (at most a chunk's, 0 where `e` does not
  // exist), the rest zeros.
  void copyChunk(Value *data, Type *elem, GemmOperands::Element e, Value *count, Value *slot) {
    uint64_t bytesEach = elem->getPrimitiveSizeInBits() / 8;
    Value *src = B.CreateInBoundsGEP(elem, data, e.offset);
    Value *global = B.CreateAddrSpaceCast(src, B.getPtrTy(1));
    Value *elements = B.CreateBinaryIntrinsic(Intrinsic::umin, count, B.getInt64(16 / bytesEach));
    Value *bytes = B.CreateTrunc(B.CreateMul(elements, B.getInt64(bytesEach)), B.getInt32Ty());
    bytes = B.CreateSelect(e.ok, bytes, B.getInt32(0));
    B.CreateIntrinsic(Intrinsic::nvvm_cp_async_cg_shared_global_16_s, {}, {slot, global, bytes});
  }

  // sums += the k-tile in the 16-bit buffers at aBase and bBase, k16 step by step.
  void multiplyHalfTile(Value *aBase, Value *bBase, MutableArrayRef<Value *> sums) {
    for (unsigned ks = 0; ks < T.blockK / 16; ++ks) {
      SmallVector<SmallVector<Value *, 4>, 4> a;
      SmallVector<SmallVector<Value *, 2>, 4> b;
      for (unsigned mi = 0; mi < tilesM(); ++mi)
        a.push_back(aMatrices(aBase, mi, ks));
      for (unsigned ni = 0; ni < tilesN(); ni += 2) {
        auto [first, second] = bFragmentsHalf(bBase, ni, ks);
        b.push_back(first);
        b.push_back(second);
      }
      for (unsigned mi = 0; mi < tilesM(); ++mi)
        for (unsigned ni = 0; ni < tilesN(); ++ni)
          mma(a[mi], b[ni], sums.slice((mi * tilesN() + ni) * 4, 4));
    }
  }

  // acc[0..3] += A fragment x B fragment.
  void mma(ArrayRef<Value *> a, ArrayRef<Value *> b, MutableArrayRef<Value *> acc) {
    mma::multiplyAdd(Mod, B, P, a, b, acc);
  }

  // The k-tile loop of the buffers cp.async fills (f32, or 16-bit with asyncCopies).
  void accumulate(Value *kTiles) {
    auto step = [&](Value *kt, ArrayRef<Value *> accs) {
      // k-tile kt's group is complete once at most stages - 2 younger ones are pending; the
      // barrier makes every thread's copies visible, and tells that every thread is done with
      // the buffer the next copies overwrite (the one computed on in the previous iteration).
      B.CreateIntrinsic(Intrinsic::nvvm_cp_async_wait_group, {}, {B.getInt32(T.stages - 2)});
      B.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {});
      Value *ahead = B.CreateAdd(kt, B.getInt64(T.stages - 1));
      Value *aheadStage = B.CreateURem(ahead, B.getInt64(T.stages));
      issueStage(aheadStage, ahead, kTiles);
      Value *stage = B.CreateURem(kt, B.getInt64(T.stages));
      Value *aBase = aStageBase(stage);
      Value *bBase = bStageBase(stage);
      SmallVector<Value *, 64> sums(accs.begin(), accs.end());
      if (T.asyncCopies) {
        multiplyHalfTile(aBase, bBase, sums);
        return sums;
      }
      for (unsigned ks = 0; ks < T.blockK / mma::tileK(P); ++ks) {
        SmallVector<SmallVector<Value *, 4>, 4> a;
        SmallVector<SmallVector<Value *, 2>, 4> b;
        for (unsigned mi = 0; mi < tilesM(); ++mi)
          a.push_back(aFragment(aBase, mi, ks));
        for (unsigned ni = 0; ni < tilesN(); ++ni)
          b.push_back(bFragment(bBase, ni, ks));
        for (unsigned mi = 0; mi < tilesM(); ++mi)
          for (unsigned ni = 0; ni < tilesN(); ++ni)
            mma(a[mi], b[ni], MutableArrayRef(sums).slice((mi * tilesN() + ni) * 4, 4));
      }
      return sums;
    };
    SmallVector<Value *, 64> acc = kTileLoop(B, kTiles, tilesM() * tilesN() * 4, step);
    Acc.assign(acc.begin(), acc.end());
  }

  // Accumulator i of mma tile (mi, ni): row group + 8 (i >> 1), column 2 inGroup + (i & 1).
  void storeOutputs() {
    Value *pair = B.CreateMul(InGroup, B.getInt64(2));
    for (unsigned mi = 0; mi < tilesM(); ++mi)
      for (unsigned ni = 0; ni < tilesN(); ++ni)
        for (unsigned i = 0; i < 4; ++i) {
          Value *tileRow = B.CreateAdd(WarpRow, B.getInt64(mi * MmaM + (i >> 1) * 8));
          Value *inTile = B.CreateAdd(tileRow, Group);
          Value *row = B.CreateAdd(M0, inTile, "row");
          Value *tileCol = B.CreateAdd(WarpCol, B.getInt64(ni * MmaN + (i & 1)));
          Value *inTileCol = B.CreateAdd(tileCol, pair);
          Value *col = B.CreateAdd(N0, inTileCol, "col");
          Ops.store(row, col, Acc[(mi * tilesN() + ni) * 4 + i]);
        }
  }

  Module &Mod;
  Builder &B;
  const kir::GemmCall &G;
  kir::Precision P;
  const MmaGemmTiles &T;
  GemmOperands Ops;
  GlobalVariable *ATile, *BTile;
  const uint64_t BShift;
  const bool BAlongK; // 16-bit buffers: B's shared tile n-major (rowsContiguous)
  const bool AF32Chunks, BF32Chunks; // f32 buffers: copied 16 bytes at a time (chunkedRows)
  Value *Tid = nullptr, *M0 = nullptr, *N0 = nullptr, *Group = nullptr, *InGroup = nullptr;
  Value *WarpRow = nullptr, *WarpCol = nullptr;
  SmallVector<Value *, 64> Acc;
};

} // namespace

bool chunkedRows(const kir::EntryKernels &entry, const kir::MatrixOperand &op, bool alongRows,
                 DType type) {
  const kir::Buffer &buf = entry.buffers[op.buffer];
  int64_t chunk = 16 / int64_t(byteSize(type));
  // The runtime's and the arena's allocations start on 16-byte boundaries, and a 16-bit tensor
  // of the caller's must (the runtime checks); an f32 one need not.
  bool aligned = buf.kind == kir::Buffer::Kind::Arena || buf.kind == kir::Buffer::Kind::Weight ||
                 buf.kind == kir::Buffer::Kind::State || byteSize(type) == 2;
  std::optional<int64_t> unit = (alongRows ? op.rowStride : op.colStride).constant();
  return buf.dtype == type && aligned && !op.conv && !op.panelRows && !op.pairPanelCols &&
         !op.panelCols && !op.winogradTile && unit && *unit == 1 &&
         kir::multipleOf(entry, alongRows ? op.colStride : op.rowStride, chunk) &&
         kir::multipleOf(entry, op.offset, chunk) && kir::multipleOf(entry, op.batchStride, chunk);
}

bool asyncChunks(const kir::EntryKernels &entry, const kir::GemmCall &g) {
  std::optional<DType> half = kir::sixteenBitType(g.precision);
  // Along its rows (B read along k: row stride 1) or its columns.
  return half && chunkedRows(entry, g.a, false, *half) &&
         chunkedRows(entry, g.b, rowsContiguous(g.b), *half);
}

Expected<CudaKernel> emitMmaGemmKernel(Module &m, codegen::MathLibrary &math,
                                       const kir::EntryKernels &entry, const kir::Step &step,
                                       const StringMap<unsigned> &symIndex,
                                       const MmaGemmTiles &tiles, StringRef suffix) {
  const kir::GemmCall &g = std::get<kir::GemmCall>(step);
  if (g.precision == kir::Precision::FP32)
    return createStringError(fmt::format(
        "{}: GEMM '{}': fp32 precision does not run on the tensor cores", entry.name, g.name));
  if (tiles.elementBytes == 2 && g.precision == kir::Precision::TF32)
    return createStringError(
        fmt::format("{}: GEMM '{}': tf32 operands do not fit 16-bit buffers", entry.name, g.name));
  if (tiles.elementBytes == 4 && sixteenBitOperand(entry, g))
    return createStringError(fmt::format(
        "{}: GEMM '{}': 16-bit operands stream through 16-bit buffers", entry.name, g.name));
  if (tiles.asyncCopies && !asyncChunks(entry, g))
    return createStringError(fmt::format(
        "{}: GEMM '{}': cp.async copies 16-bit operands in 16-byte chunks", entry.name, g.name));
  assert(tiles.blockK % 16 == 0 && tiles.warpM() % 16 == 0 && tiles.warpN() % 8 == 0 &&
         (tiles.elementBytes == 4 ||
          (tiles.warpN() % 16 == 0 && (tiles.asyncCopies || tiles.stages == 2))) &&
         (!tiles.asyncCopies ||
          (tiles.elementBytes == 2 && (tiles.blockK + tiles.padA) % 8 == 0 &&
           (tiles.blockK + tiles.padB) % 8 == 0 && (tiles.blockN + tiles.padB) % 8 == 0 &&
           tiles.blockM * tiles.blockK / 8 % tiles.threads() == 0 &&
           tiles.blockN * tiles.blockK / 8 % tiles.threads() == 0)) &&
         (tiles.elementBytes == 2 || (tiles.blockK + tiles.padA) % 4 == 0) &&
         tiles.blockM * tiles.blockK % tiles.threads() == 0 &&
         tiles.blockK * tiles.blockN % tiles.threads() == 0 && "tiles the warps can load");
  const uint64_t aElements = uint64_t(tiles.stages) * tiles.aStageElements();
  const uint64_t bElements = uint64_t(tiles.stages) * tiles.bStageElements();
  Expected<CudaKernel> kernel = emitTiledGemm(
      m, math, entry, step, symIndex, tiles.blockM, tiles.blockN, tiles.threads(),
      (g.name + suffix).str(), [&](Builder &b, codegen::ExprEmitter &ex, const KernelFunction &kf) {
        Type *elem = tiles.elementBytes == 2 ? b.getInt16Ty() : b.getFloatTy();
        if (tiles.dynamicShared()) {
          GlobalVariable *tile = dynamicSharedArray(m, elem);
          MmaGemmKernel(m, b, ex, g, tiles, kf, tile, tile, aElements).emit();
          return;
        }
        GlobalVariable *aTile = sharedArray(m, elem, aElements, "a_tiles");
        GlobalVariable *bTile = sharedArray(m, elem, bElements, "b_tiles");
        MmaGemmKernel(m, b, ex, g, tiles, kf, aTile, bTile, 0).emit();
      });
  if (kernel && tiles.dynamicShared())
    kernel->launch.dynamicShared = tiles.sharedBytes();
  return kernel;
}

} // namespace aotc::cuda
