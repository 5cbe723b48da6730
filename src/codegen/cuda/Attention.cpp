// The attention library kernel on CUDA cores, correct first, in the manner of FlashAttention
// (Dao et al., 2022): a block keeps its query rows in shared memory and streams the keys and
// values through shared memory a tile at a time; each warp scores its rows against the tile (a
// lane a key, FMAs in f32), keeps a running maximum and sum per row (the online softmax: what
// it has accumulated is rescaled when the maximum grows), and adds the tile's probabilities
// times the values into registers; the output is written once. The scores never reach device
// memory. Causal blocks skip the key tiles wholly past their last row and mask the diagonal
// one per element. A decode step (one query row) takes a kernel of its own, whose warps split
// the keys; over a long cache (split-decode) its blocks split them too, and a second kernel
// merges their states.
//
// At --precision bf16 or fp16 (the export permits rounding the products' operands) the tiled
// kernel multiplies on the tensor cores instead (emitTensorCores): each of 4 warps takes 32 query
// rows, two m16n8k16 tiles of rows (16 rows, one tile, for calls of few blocks and for heads wider
// than 64), whose query fragments it keeps in registers; it scores a tile
// of 32 keys as 4 mma tiles (q and k rounded, f32 sums), runs the online softmax on the
// accumulators as they lie (a row's values spread over the 4 lanes of a group), and multiplies
// the probabilities, rounded, by the values: the accumulators of two score tiles are the A
// fragment of one k-step, so the probabilities never leave registers. Its keys and values reach
// shared memory as words of two 16-bit values, through a pipeline: while the warps multiply on
// one tile, the next tile's elements are on their way (cp.async, 16 bytes at a time where the
// rows allow) into each thread's own staging slots, which it rounds (f32) or places (bf16 and
// fp16 data, already of the mma's type) into the other of two buffers after the mmas; one
// barrier a tile.
//
// Deterministic: every sum runs in a fixed order and the warp's butterflies give each lane the
// same bits; nothing is atomic, so runs and thread counts give identical results.
#include "codegen/cuda/Attention.h"
#include "codegen/cuda/BlockReduce.h"
#include "codegen/cuda/GemmOperands.h"
#include "codegen/cuda/KernelBuilder.h"
#include "codegen/cuda/Mma.h"

#include "fmt/format.h"

#include "llvm/IR/IntrinsicsNVPTX.h"

#include <limits>

namespace aotc::cuda {

using namespace llvm;
using codegen::Builder;

namespace {

constexpr unsigned WarpSize = 32;
/// How many of a lane's key or value loads the decode kernel issues before their FMAs.
constexpr unsigned DecodeLoadsInFlight = 16;

/// The tensor-core kernel's shared tiles hold 32-bit words of two 16-bit values, rounded once as
/// they are staged: keys as rows of e's pairs (e rounded up to the mma's k, zeros past it), values
/// transposed, a row of key pairs per value column (ev rounded up to whole mma tiles), so that
/// each B fragment register is one word, and ldmatrix's 8 rows of a matrix are 16-byte groups.
/// Rows are 4 words longer than their pairs, so that those 8 rows (or a fragment's 8 x 4 lanes
/// of 32-bit loads) fall in distinct banks.
constexpr unsigned mmaKeyWords(unsigned e) { return alignTo(e, 16) / 2 + 4; }
constexpr unsigned mmaValueWords(unsigned keys) { return keys / 2 + 4; }
/// One buffer of each shared tile, in words; the tiles hold two, the current key tile's and the
/// next one's.
constexpr unsigned mmaKeyBufferWords(const AttentionTiles &t, unsigned e) {
  return t.blockN * mmaKeyWords(e);
}
constexpr unsigned mmaValueBufferWords(const AttentionTiles &t, unsigned ev) {
  return alignTo(ev, mma::TileN) * mmaValueWords(t.blockN);
}
/// A block stages a tile's keys and values as 16-byte chunks along a row (4 f32 or 8 16-bit
/// elements, `per`): keys' (a key, `per` of e's columns rounded up to the mma's k) and values' (a
/// pair of keys, `per` of ev's columns rounded up to whole mma tiles: two chunks). A thread takes
/// chunks idx = tid + round x threads, and keeps them in its own 16-byte slots of the staging
/// buffer, the next after each other.
constexpr unsigned mmaKeyChunks(const AttentionTiles &t, unsigned e, unsigned per) {
  return t.blockN * alignTo(e, 16) / per;
}
constexpr unsigned mmaValueChunks(const AttentionTiles &t, unsigned ev, unsigned per) {
  return t.blockN / 2 * alignTo(ev, mma::TileN) / per;
}
/// A thread's 16-byte slots: one a key chunk, two a value chunk (its pair of keys); keys of
/// kPer and values of vPer elements a chunk.
constexpr unsigned mmaStagedSlots(const AttentionTiles &t, unsigned e, unsigned ev, unsigned kPer,
                                  unsigned vPer) {
  return alignTo(mmaKeyChunks(t, e, kPer), t.threads) / t.threads +
         2 * (alignTo(mmaValueChunks(t, ev, vPer), t.threads) / t.threads);
}
constexpr unsigned mmaSharedBytes(const AttentionTiles &t, unsigned e, unsigned ev) {
  return 4 * 2 * (mmaKeyBufferWords(t, e) + mmaValueBufferWords(t, ev)) +
         16 * t.threads * mmaStagedSlots(t, e, ev, 4, 4);
}
static_assert(mmaSharedBytes(MmaAttentionTiles, MmaAttentionWideHeads, MmaAttentionWideHeads) <=
                      StaticSharedLimit &&
                  mmaSharedBytes(MmaAttentionWideTiles, AttentionMaxHeadDim, AttentionMaxHeadDim) <=
                      StaticSharedLimit,
              "static shared memory (f32 keys and values: the most staging)");

/// How many elements of buffer `b` make a 16-byte staging chunk: 4 f32, 8 bf16 or fp16.
unsigned chunkElements(const kir::EntryKernels &entry, uint32_t b) {
  return 16 / unsigned(byteSize(entry.buffers[b].dtype));
}

/// The tiled kernel's: the block's queries, a tile of keys, of values, of probabilities. The
/// decode kernel's: the query row (q), each warp's running maximum then sum (p), and each warp's
/// accumulators (v).
struct SharedTiles {
  GlobalVariable *q, *k, *v, *p;
  /// The tensor-core kernel's: the next tile's f32 keys and values, each thread's own.
  GlobalVariable *staged = nullptr;
};

class AttentionKernel {
public:
  AttentionKernel(Builder &b, codegen::ExprEmitter &ex, codegen::MathLibrary &math,
                  const kir::EntryKernels &entry, const kir::AttentionCall &a,
                  const AttentionTiles &t, AttentionPart part, const KernelFunction &kf,
                  SharedTiles shared)
      : B(b), Ex(ex), Math(math), Entry(entry), A(a), T(t), Part(part), Kf(kf), Sh(shared),
        E(unsigned(*a.e.constant())), Ev(unsigned(*a.ev.constant())), KStride(E | 1),
        Rows(t.warpRows()), Keys(t.blockN / WarpSize), Slots((Ev + WarpSize - 1) / WarpSize),
        KPer(chunkElements(entry, a.k.buffer)), VPer(chunkElements(entry, a.v.buffer)),
        F32(b.getFloatTy()), NegInf(ConstantFP::getInfinity(F32, true)) {}

  void emit() {
    if (Part == AttentionPart::MergeSplits) {
      emitMergeSplits();
      return;
    }
    if (isDecodeStep(A)) {
      emitDecode();
      return;
    }
    if (onTensorCores(A)) {
      emitTensorCores();
      return;
    }
    Value *tiles = beginTiles();
    loadQueries();
    // Per row of the warp: the running maximum, the running sum, then the accumulators of the
    // lane's value columns.
    SmallVector<Value *, 64> init(Rows, NegInf);
    init.append(Rows + Rows * Slots, ConstantFP::get(F32, 0.0));
    SmallVector<Value *, 64> state =
        kTileLoop(B, tiles, init, [&](Value *t, ArrayRef<Value *> s) { return tile(t, s); });
    storeOutputs(state);
  }

private:
  // The tiled kernels' start: the thread's lane and its warp's first row (T.warpRows() rows a
  // warp), the block's query batch element and first row M0 (query row tiles fastest, then the
  // batch element: batch x head), its operands; returns the number of key tiles, which a causal
  // block stops at the tile of its last row.
  Value *beginTiles() {
    Tid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_tid_x);
    Value *block = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    Lane = B.CreateURem(Tid, B.getInt64(WarpSize), "lane");
    Value *warp = B.CreateUDiv(Tid, B.getInt64(WarpSize), "warp");
    WarpRow0 = B.CreateMul(warp, B.getInt64(Rows), "warp.row0");
    L = Ex.sym(A.l);
    S = Ex.sym(A.s);
    Value *mTiles = ceilDiv(B, L, T.blockM);
    Value *mTile = B.CreateURem(block, mTiles);
    Bq = B.CreateUDiv(block, mTiles, "bq");
    M0 = B.CreateMul(mTile, B.getInt64(T.blockM), "m0");
    bindOperands();
    Value *kvEnd = S;
    if (A.causal)
      kvEnd = B.CreateBinaryIntrinsic(Intrinsic::umin, S, B.CreateAdd(M0, B.getInt64(T.blockM)));
    return ceilDiv(B, kvEnd, T.blockN);
  }

  // A decode step, one query row a (batch x head): the block's warps split the keys a tile of
  // WarpSize at a time (one a lane), warp w taking tiles w, w + warps, ..., each with its own
  // running maximum, sum and accumulators, keys and values read from device memory (each is
  // used once); the warps' states are merged in warp order at the end. The tiled kernel gave
  // such a row a block of 16 rows and its keys to one warp. Split (AttentionPart::SplitKeys), a
  // block takes one part of its (batch x head)'s keys (whole tiles of them, parts fastest) and
  // writes the merged state of its warps, unnormalized, to the partials for emitMergeSplits.
  void emitDecode() {
    Tid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_tid_x);
    Bq = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    Value *part = nullptr;
    if (Part == AttentionPart::SplitKeys) {
      Splits = Ex.sym(A.splits);
      part = B.CreateURem(Bq, Splits, "part");
      Bq = B.CreateUDiv(Bq, Splits, "bq");
    }
    Lane = B.CreateURem(Tid, B.getInt64(WarpSize), "lane");
    Value *warp = B.CreateUDiv(Tid, B.getInt64(WarpSize), "warp");
    L = Ex.sym(A.l);
    S = Ex.sym(A.s);
    bindOperands();
    Value *row = B.getInt64(0);
    copyTile(1, E, [&](Value *idx, Value *, Value *c) {
      B.CreateStore(load(Q, B.getTrue(), row, c), sharedElement(B, Sh.q, idx));
    });
    barrier();
    // The block's keys: kvBegin (split: its part's first, else 0) and `keys` more.
    Value *kvBegin = nullptr;
    Value *keys = S;
    if (A.causal)
      keys = B.CreateBinaryIntrinsic(Intrinsic::umin, S, B.getInt64(1));
    // A part's keys are whole tiles of 32 (but the last part's last one), so that no tile reaches
    // past its part.
    if (part) {
      Value *per = B.CreateMul(ceilDiv(B, ceilDiv(B, S, Splits), WarpSize), B.getInt64(WarpSize),
                               "keys.per.part");
      kvBegin = B.CreateMul(part, per, "part.begin");
      Value *end = B.CreateBinaryIntrinsic(Intrinsic::umin, S, B.CreateAdd(kvBegin, per));
      keys =
          B.CreateSub(B.CreateBinaryIntrinsic(Intrinsic::umax, kvBegin, end), kvBegin, "part.keys");
    }
    Value *tiles = ceilDiv(B, keys, WarpSize);
    unsigned warps = T.warps();
    Value *mine = B.CreateUDiv(B.CreateSub(B.CreateAdd(tiles, B.getInt64(warps - 1)), warp),
                               B.getInt64(warps), "tiles.mine");
    SmallVector<Value *, 8> cols = valueColumns();
    SmallVector<Value *, 8> init = {NegInf, ConstantFP::get(F32, 0.0)};
    init.append(Slots, ConstantFP::get(F32, 0.0));
    SmallVector<Value *, 64> state = kTileLoop(B, mine, init, [&](Value *i, ArrayRef<Value *> s) {
      Value *tile = B.CreateAdd(warp, B.CreateMul(i, B.getInt64(warps)));
      Value *key0 = B.CreateMul(tile, B.getInt64(WarpSize), "key0");
      if (kvBegin)
        key0 = B.CreateAdd(kvBegin, key0, "key0");
      Value *key = B.CreateAdd(key0, Lane, "key");
      Value *ok = B.CreateICmpULT(key, S);
      // Unrolled, DecodeLoadsInFlight loads ahead of their FMAs (in a loop, each load's latency
      // was paid in turn: 23 us a layer of GPT-2 on an H100).
      Value *dot = ConstantFP::get(F32, 0.0);
      for (unsigned e0 = 0; e0 < E; e0 += DecodeLoadsInFlight) {
        SmallVector<Value *, 16> k;
        for (unsigned e = e0; e < std::min(E, e0 + DecodeLoadsInFlight); ++e)
          k.push_back(load(K, ok, key, B.getInt64(e)));
        for (auto [i, ke] : enumerate(k))
          dot = fma(sharedLoad(Sh.q, B.getInt64(e0 + i)), ke, dot);
      }
      Value *x = score(dot, row, key);
      Value *tileMax = warpAll(x, [&](Value *a, Value *b) { return maximum(a, b); });
      Value *mNew = maximum(s[0], tileMax);
      Value *mUse = shiftOf(mNew);
      Value *alpha = exp(B.CreateFSub(s[0], mUse));
      Value *p = exp(B.CreateFSub(x, mUse));
      Value *sum = warpAll(p, [&](Value *a, Value *b) { return B.CreateFAdd(a, b); });
      // The tile's probabilities times its values, key by key (each lane's probability in turn
      // to every lane), for the lane's value columns.
      SmallVector<Value *, 8> pv(Slots, ConstantFP::get(F32, 0.0));
      unsigned keysAhead = std::max(1u, DecodeLoadsInFlight / Slots);
      for (unsigned j0 = 0; j0 < WarpSize; j0 += keysAhead) {
        SmallVector<Value *, 16> pj, v;
        for (unsigned j = j0; j < std::min(WarpSize, j0 + keysAhead); ++j) {
          pj.push_back(
              B.CreateIntrinsic(Intrinsic::nvvm_shfl_sync_idx_f32, {},
                                {B.getInt32(~0u), p, B.getInt32(j), B.getInt32(WarpSize - 1)}));
          Value *keyJ = B.CreateAdd(key0, B.getInt64(j));
          Value *okJ = B.CreateICmpULT(keyJ, S);
          for (unsigned c = 0; c < Slots; ++c)
            v.push_back(load(V, okJ, keyJ, cols[c]));
        }
        for (unsigned j = 0; j < pj.size(); ++j)
          for (unsigned c = 0; c < Slots; ++c)
            pv[c] = fma(pj[j], v[j * Slots + c], pv[c]);
      }
      SmallVector<Value *, 64> next = {mNew, fma(s[1], alpha, sum)};
      for (unsigned c = 0; c < Slots; ++c)
        next.push_back(fma(s[2 + c], alpha, pv[c]));
      return next;
    });
    // Each warp's state to shared memory: [maximum, sum] per warp, then accumulators [warp][ev].
    guarded(B.CreateICmpEQ(Lane, B.getInt64(0)), [&] {
      B.CreateStore(state[0], sharedElement(B, Sh.p, warp));
      B.CreateStore(state[1], sharedElement(B, Sh.p, B.CreateAdd(warp, B.getInt64(warps))));
    });
    for (unsigned c = 0; c < Slots; ++c) {
      Value *col = B.CreateAdd(Lane, B.getInt64(c * WarpSize));
      guarded(B.CreateICmpULT(col, B.getInt64(Ev)), [&] {
        Value *slot = B.CreateAdd(B.CreateMul(warp, B.getInt64(Ev)), col);
        B.CreateStore(state[2 + c], sharedElement(B, Sh.v, slot));
      });
    }
    barrier();
    // Thread t < ev merges column t over the warps.
    guarded(B.CreateICmpULT(Tid, B.getInt64(Ev)), [&] {
      Merged all = mergeStates(
          B.getInt64(warps), [&](Value *w) { return sharedLoad(Sh.p, w); },
          [&](Value *w) { return sharedLoad(Sh.p, B.CreateAdd(w, B.getInt64(warps))); },
          [&](Value *w) {
            return sharedLoad(Sh.v, B.CreateAdd(B.CreateMul(w, B.getInt64(Ev)), Tid));
          });
      if (!part) {
        storeMerged(all);
        return;
      }
      // The part's state: [maximum, sum, outputs] at (bq, part) of the partials.
      Value *base = partialState(part);
      storePartial(all.num, B.CreateAdd(base, B.CreateAdd(Tid, B.getInt64(2))));
      guarded(B.CreateICmpEQ(Tid, B.getInt64(0)), [&] {
        storePartial(all.most, base);
        storePartial(all.den, B.CreateAdd(base, B.getInt64(1)));
      });
    });
  }

  // The split decode's second kernel (AttentionPart::MergeSplits): a block a (batch x head), its
  // thread t < ev merges output column t over the parts' partial states, in part order.
  void emitMergeSplits() {
    Tid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_tid_x);
    Bq = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    L = Ex.sym(A.l);
    Splits = Ex.sym(A.splits);
    guarded(B.CreateICmpULT(Tid, B.getInt64(Ev)), [&] {
      auto at = [&](Value *part, Value *i) {
        return codegen::loadElement(B, Kf.buffers[*A.partials], B.CreateAdd(partialState(part), i),
                                    DType::F32);
      };
      Value *col = B.CreateAdd(Tid, B.getInt64(2));
      storeMerged(mergeStates(
          Splits, [&](Value *p) { return at(p, B.getInt64(0)); },
          [&](Value *p) { return at(p, B.getInt64(1)); }, [&](Value *p) { return at(p, col); }));
    });
  }

  // `count` states, each a maximum m_j, a sum l_j and an output column's accumulator acc_j that
  // exponentials relative to shiftOf(m_j) made: m = max_j m_j, num = sum_j acc_j e^(m_j - m) and
  // den = sum_j l_j e^(m_j - m), in order j (exponentials relative to shiftOf(m)).
  struct Merged {
    Value *most, *num, *den;
  };
  Merged mergeStates(Value *count, function_ref<Value *(Value *)> maxAt,
                     function_ref<Value *(Value *)> sumAt, function_ref<Value *(Value *)> accAt) {
    Value *zero = ConstantFP::get(F32, 0.0);
    Value *most =
        kTileLoop(B, count, ArrayRef<Value *>(NegInf), [&](Value *j, ArrayRef<Value *> m) {
          return SmallVector<Value *, 64>{maximum(m[0], maxAt(j))};
        })[0];
    Value *mUse = shiftOf(most);
    SmallVector<Value *, 64> sums =
        kTileLoop(B, count, {zero, zero}, [&](Value *j, ArrayRef<Value *> acc) {
          Value *f = exp(B.CreateFSub(maxAt(j), mUse));
          return SmallVector<Value *, 64>{fma(accAt(j), f, acc[0]), fma(sumAt(j), f, acc[1])};
        });
    return {most, sums[0], sums[1]};
  }

  // Output column Tid of the decode step's row: num / den, 0 for a row whose every score was
  // -inf.
  void storeMerged(const Merged &m) {
    Value *masked = B.CreateFCmpOEQ(m.most, NegInf);
    Value *o = B.CreateSelect(masked, ConstantFP::get(F32, 0.0), B.CreateFDiv(m.num, m.den));
    storeOut(o, B.getInt64(0), Tid);
  }

  // Where part `part` of (batch x head) Bq keeps its state in the partials: f32 [bq, part,
  // 2 + ev].
  Value *partialState(Value *part) {
    return B.CreateMul(B.CreateAdd(B.CreateMul(Bq, Splits), part), B.getInt64(Ev + 2));
  }
  void storePartial(Value *v, Value *offset) {
    codegen::storeElement(B, v, Kf.buffers[*A.partials], offset, DType::F32);
  }

  // The tiled kernel on the tensor cores (T: one of attentionVariants' tiles, whole mma tiles of
  // 16 rows a warp). A lane holds, in every mma tile, rows group and group + 8 of each of its
  // warp's row tiles: its state is, row tile by row tile, their running maxima and sums, then the
  // output accumulators of ev's mma tiles (4 each, as they lie).
  void emitTensorCores() {
    Module &m = *B.GetInsertBlock()->getModule();
    Value *tiles = beginTiles();
    Group = B.CreateUDiv(Lane, B.getInt64(4), "group");
    InGroup = B.CreateURem(Lane, B.getInt64(4), "in.group");
    // The warp's row tiles: the lane's two rows in each and their query fragments, k-step by
    // k-step over e (zeros past e and L).
    SmallVector<RowTile, 2> rowTiles(T.warpRows() / mma::TileM);
    for (auto [r, rt] : enumerate(rowTiles)) {
      rt.rows[0] = B.CreateAdd(M0, B.CreateAdd(WarpRow0, B.CreateAdd(Group, B.getInt64(16 * r))));
      rt.rows[1] = B.CreateAdd(rt.rows[0], B.getInt64(8));
      for (unsigned ks = 0; ks < alignTo(E, 16) / 16; ++ks) {
        SmallVector<Value *, 4> regs;
        for (unsigned i = 0; i < 4; ++i) {
          Value *row = rt.rows[i & 1];
          Value *e =
              B.CreateAdd(B.CreateMul(InGroup, B.getInt64(2)), B.getInt64(ks * 16 + (i >> 1) * 8));
          auto [lo, hi] = pairAlongRow(Q, B.CreateICmpULT(row, L), row, e, E);
          regs.push_back(mma::fragment(B, A.precision, lo, hi));
        }
        rt.q.push_back(regs);
      }
    }
    unsigned outTiles = alignTo(Ev, mma::TileN) / mma::TileN;
    SmallVector<Value *, 64> init;
    for (size_t r = 0; r < rowTiles.size(); ++r) {
      init.append({NegInf, NegInf});
      init.append(2 + 4 * outTiles, ConstantFP::get(F32, 0.0));
    }
    // The first tile's keys and values into buffer 0.
    Vec16 = vectorStaging();
    issueStaged(B.getInt64(0), S);
    storeStaged(B.getInt64(0));
    barrier();
    SmallVector<Value *, 64> state = kTileLoop(B, tiles, init, [&](Value *t, ArrayRef<Value *> s) {
      return tensorCoreTile(m, t, tiles, s, rowTiles);
    });
    Value *pair = B.CreateMul(InGroup, B.getInt64(2));
    for (auto [r, rt] : enumerate(rowTiles)) {
      ArrayRef<Value *> st = ArrayRef<Value *>(state).slice(r * (4 + 4 * outTiles));
      Value *rowOk[2], *masked[2];
      for (unsigned h = 0; h < 2; ++h) {
        rowOk[h] = B.CreateICmpULT(rt.rows[h], L);
        masked[h] = B.CreateFCmpOEQ(st[h], NegInf);
      }
      for (unsigned nj = 0; nj < outTiles; ++nj)
        for (unsigned i = 0; i < 4; ++i) {
          unsigned h = i >> 1;
          Value *col = B.CreateAdd(pair, B.getInt64(nj * mma::TileN + (i & 1)), "col");
          storeOutput(rowOk[h], masked[h], rt.rows[h], col, st[4 + nj * 4 + i], st[2 + h]);
        }
    }
  }

  // The chunks that the thread stages: key chunks, then value chunks (KPer and VPer elements).
  // `chunk` is called with whether it is a key chunk, its first 16-byte slot, its row (the key;
  // for values the pair of keys) and its first column; a round that not every thread has runs
  // under a guard. Unrolled,
  // or `looped`: a loop over the rounds of each, which keeps the per-chunk addresses from being
  // hoisted out of the tile loop into registers (the scalar copies: 4 addresses a chunk).
  void forStagedChunks(bool looped, function_ref<void(bool, Value *, Value *, Value *)> chunk) {
    unsigned firstSlot = 0;
    for (bool keys : {true, false}) {
      unsigned per = keys ? KPer : VPer;
      unsigned chunks = keys ? mmaKeyChunks(T, E, per) : mmaValueChunks(T, Ev, per);
      unsigned cols = (keys ? alignTo(E, 16) : alignTo(Ev, mma::TileN)) / per;
      unsigned rounds = (chunks + T.threads - 1) / T.threads, slotsPerChunk = keys ? 1 : 2;
      auto one = [&](Value *round) {
        Value *idx = B.CreateAdd(Tid, B.CreateMul(round, B.getInt64(T.threads)));
        Value *slot =
            B.CreateAdd(B.getInt64(firstSlot), B.CreateMul(round, B.getInt64(slotsPerChunk)));
        auto body = [&] {
          Value *row = B.CreateUDiv(idx, B.getInt64(cols));
          Value *col = B.CreateMul(B.CreateURem(idx, B.getInt64(cols)), B.getInt64(per));
          chunk(keys, slot, row, col);
        };
        if (chunks % T.threads == 0)
          body();
        else
          guarded(B.CreateICmpULT(idx, B.getInt64(chunks)), body);
      };
      if (looped) {
        BasicBlock *pre = B.GetInsertBlock();
        codegen::emitLoop(B, B.getInt64(0), B.getInt64(rounds), one,
                          keys ? "stage.keys" : "stage.values");
        // Kept a loop: LLVM would unroll a loop of so few rounds.
        BasicBlock *header = B.GetInsertBlock()->getSinglePredecessor();
        for (BasicBlock *latch : predecessors(header))
          if (latch != pre)
            latch->getTerminator()->setMetadata(LLVMContext::MD_loop,
                                                unrollDisabled(B.getContext()));
      } else
        for (unsigned round = 0; round < rounds; ++round)
          one(B.getInt64(round));
      firstSlot += rounds * slotsPerChunk;
    }
  }

  static MDNode *unrollDisabled(LLVMContext &c) {
    MDNode *disable = MDNode::get(c, MDString::get(c, "llvm.loop.unroll.disable"));
    MDNode *loop = MDNode::getDistinct(c, {nullptr, disable});
    loop->replaceOperandWith(0, loop);
    return loop;
  }

  // The thread's 16-byte slot `slot` of the staging buffer (as f32 element index).
  Value *stagedSlot(Value *slot) {
    return B.CreateMul(B.CreateAdd(Tid, B.CreateMul(slot, B.getInt64(T.threads))), B.getInt64(4));
  }

  // Whether the block's keys and values can be copied 16 bytes at a time: rows contiguous and
  // every chunk 16-byte aligned (a head size that is not a multiple of a chunk never is).
  Value *vectorStaging() {
    if (E % KPer || Ev % VPer)
      return B.getFalse();
    Value *ok = B.getTrue();
    for (const Operand *op : {&K, &V}) {
      Value *address = B.CreatePtrToInt(op->data, B.getInt64Ty());
      Value *bytes = B.getInt64(byteSize(op->dtype));
      Value *misaligned = B.CreateOr(B.CreateAnd(address, B.getInt64(15)),
                                     B.CreateMul(B.CreateOr(op->base, op->rowStride), bytes));
      ok = B.CreateAnd(ok, B.CreateICmpEQ(op->colStride, B.getInt64(1)));
      ok = B.CreateAnd(ok, B.CreateICmpEQ(B.CreateAnd(misaligned, B.getInt64(15)), B.getInt64(0)));
    }
    return ok;
  }

  // Starts the copies of the keys and values of the tile from n0 that the thread stages (zeros
  // at keys from kvEnd and past e and ev) into its slots, and commits its cp.async copies as one
  // group: 16 bytes a cp.async where Vec16 (a value chunk: its pair of keys' rows, one after the
  // other), else an element at a time, f32 ones by cp.async and 16-bit ones (too small for
  // cp.async) by a load and a shared store.
  void issueStaged(Value *n0, Value *kvEnd) {
    auto copies = [&](bool vector) {
      forStagedChunks(!vector, [&](bool keys, Value *slot, Value *row, Value *col) {
        const Operand &op = keys ? K : V;
        Type *elem = op.dtype == DType::F32 ? F32 : B.getInt16Ty();
        Value *cols = B.getInt64(keys ? E : Ev);
        for (unsigned k = 0; k < (keys ? 1u : 2u); ++k) {
          Value *key = B.CreateAdd(
              n0, keys ? row : B.CreateAdd(B.CreateMul(row, B.getInt64(2)), B.getInt64(k)));
          Value *keyOk = B.CreateICmpULT(key, kvEnd);
          Value *dst = stagedSlot(B.CreateAdd(slot, B.getInt64(k)));
          for (unsigned i = 0; i < (vector ? 1u : keys ? KPer : VPer); ++i) {
            Value *c = B.CreateAdd(col, B.getInt64(i));
            Value *ok = B.CreateAnd(keyOk, B.CreateICmpULT(c, cols));
            Value *src = B.CreateInBoundsGEP(elem, op.data, elementOffset(op, ok, key, c));
            if (!vector && elem != F32) {
              Value *v = B.CreateSelect(ok, B.CreateLoad(elem, src), B.getInt16(0));
              B.CreateStore(
                  v, B.CreateInBoundsGEP(elem, sharedElement(B, Sh.staged, dst), B.getInt64(i)));
              continue;
            }
            unsigned bytes = vector ? 16 : 4;
            Value *srcBytes = B.CreateSelect(ok, B.getInt32(bytes), B.getInt32(0));
            B.CreateIntrinsic(vector ? Intrinsic::nvvm_cp_async_cg_shared_global_16_s
                                     : Intrinsic::nvvm_cp_async_ca_shared_global_4_s,
                              {},
                              {sharedElement(B, Sh.staged, B.CreateAdd(dst, B.getInt64(i))),
                               B.CreateAddrSpaceCast(src, B.getPtrTy(1)), srcBytes});
          }
        }
      });
    };
    Function *f = B.GetInsertBlock()->getParent();
    BasicBlock *vector = BasicBlock::Create(f->getContext(), "stage.vector", f);
    BasicBlock *scalar = BasicBlock::Create(f->getContext(), "stage.scalar", f);
    BasicBlock *done = BasicBlock::Create(f->getContext(), "stage.done", f);
    B.CreateCondBr(Vec16, vector, scalar);
    B.SetInsertPoint(vector);
    copies(true);
    B.CreateBr(done);
    B.SetInsertPoint(scalar);
    copies(false);
    B.CreateBr(done);
    B.SetInsertPoint(done);
    B.CreateIntrinsic(Intrinsic::nvvm_cp_async_commit_group, {}, {});
  }

  // Waits for the thread's copies, then rounds its chunks into buffer `buffer` (0 or 1) of the
  // shared tiles: a key chunk is KPer / 2 consecutive words of its key's row, a value chunk one
  // word (its pair of keys) in each of its VPer columns' rows.
  void storeStaged(Value *buffer) {
    B.CreateIntrinsic(Intrinsic::nvvm_cp_async_wait_group, {}, {B.getInt32(0)});
    Value *keyOffset = B.CreateMul(buffer, B.getInt64(mmaKeyBufferWords(T, E)));
    Value *valueOffset = B.CreateMul(buffer, B.getInt64(mmaValueBufferWords(T, Ev)));
    Type *f32x4 = FixedVectorType::get(F32, 4);
    auto staged = [&](Value *slot, Type *type = nullptr) {
      return B.CreateAlignedLoad(type ? type : f32x4, sharedElement(B, Sh.staged, stagedSlot(slot)),
                                 Align(16));
    };
    auto word = [&](Value *lo, Value *hi) {
      return B.CreateBitCast(mma::fragment(B, A.precision, lo, hi), B.getInt32Ty());
    };
    auto element = [&](Value *chunk, unsigned i) { return B.CreateExtractElement(chunk, i); };
    forStagedChunks(false, [&](bool keys, Value *slot, Value *row, Value *col) {
      if (keys) {
        // KPer / 2 words of the key's row: 16-bit values as they are, f32 rounded in pairs.
        Value *words;
        if (KPer == 8) {
          words = staged(slot, FixedVectorType::get(B.getInt32Ty(), 4));
        } else {
          Value *chunk = staged(slot);
          words = PoisonValue::get(FixedVectorType::get(B.getInt32Ty(), 2));
          for (unsigned i = 0; i < 2; ++i)
            words = B.CreateInsertElement(
                words, word(element(chunk, 2 * i), element(chunk, 2 * i + 1)), i);
        }
        Value *at = B.CreateAdd(B.CreateAdd(B.CreateMul(row, B.getInt64(mmaKeyWords(E))),
                                            B.CreateUDiv(col, B.getInt64(2))),
                                keyOffset);
        B.CreateAlignedStore(words, sharedElement(B, Sh.k, at), Align(2 * KPer));
        return;
      }
      // The pair of keys' VPer columns: column i's word is (key 2 row, key 2 row + 1), 16-bit
      // values interleaved as they are, f32 rounded.
      SmallVector<Value *, 8> words;
      if (VPer == 8) {
        Type *i16x8 = FixedVectorType::get(B.getInt16Ty(), 8);
        Value *lo = staged(slot, i16x8), *hi = staged(B.CreateAdd(slot, B.getInt64(1)), i16x8);
        Value *pairs = B.CreateBitCast(
            B.CreateShuffleVector(lo, hi, {0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15}),
            FixedVectorType::get(B.getInt32Ty(), 8));
        for (unsigned i = 0; i < 8; ++i)
          words.push_back(element(pairs, i));
      } else {
        Value *lo = staged(slot), *hi = staged(B.CreateAdd(slot, B.getInt64(1)));
        for (unsigned i = 0; i < 4; ++i)
          words.push_back(word(element(lo, i), element(hi, i)));
      }
      for (auto [i, w] : enumerate(words)) {
        Value *c = B.CreateAdd(col, B.getInt64(i));
        Value *at = B.CreateAdd(
            B.CreateAdd(B.CreateMul(c, B.getInt64(mmaValueWords(T.blockN))), row), valueOffset);
        B.CreateAlignedStore(w, sharedElement(B, Sh.v, at), Align(4));
      }
    });
  }

  // One of the warp's m16 tiles of query rows: the lane's rows (group and group + 8 of the tile)
  // and its query fragments, a k-step each.
  struct RowTile {
    Value *rows[2];
    SmallVector<SmallVector<Value *, 4>, 8> q;
  };

  // One tile of keys from n0 = t x blockN on the tensor cores, of `tiles`: state is, for each of
  // the warp's row tiles, {max, max', sum, sum', accumulators} of the lane's rows. The tile's keys
  // and values are in buffer t % 2 of the shared tiles; the next tile's copies start before this
  // one's mmas and are rounded into the other buffer after them, so that they are in flight while
  // the tensor cores work, and one barrier a tile publishes them (every warp has then also
  // finished reading the buffer that the tile after next overwrites). Each B fragment is loaded
  // once for all the row tiles.
  SmallVector<Value *, 64> tensorCoreTile(Module &m, Value *t, Value *tiles,
                                          ArrayRef<Value *> state, ArrayRef<RowTile> rowTiles) {
    const unsigned keyWords = mmaKeyWords(E), valueWords = mmaValueWords(T.blockN);
    const unsigned scoreTiles = T.blockN / mma::TileN;
    const unsigned outTiles = alignTo(Ev, mma::TileN) / mma::TileN, stateSize = 4 + 4 * outTiles;
    Value *n0 = B.CreateMul(t, B.getInt64(T.blockN), "n0");
    Value *buffer = B.CreateAnd(t, B.getInt64(1), "buffer");
    Value *nextT = B.CreateAdd(t, B.getInt64(1));
    Value *nextEnd = B.CreateSelect(B.CreateICmpULT(nextT, tiles), S, B.getInt64(0));
    issueStaged(B.CreateMul(nextT, B.getInt64(T.blockN)), nextEnd);
    // Fragment register i of a lane: word inGroup + 4 i of the k-step's 8 in the row of its
    // group's key (scores) or value column (values).
    auto fragment = [&](GlobalVariable *tile, Value *laneRow, unsigned at) {
      SmallVector<Value *, 2> b;
      for (unsigned i = 0; i < 2; ++i) {
        Value *slot = sharedElement(B, tile, B.CreateAdd(laneRow, B.getInt64(at + i * 4)));
        Value *w = B.CreateAlignedLoad(B.getInt32Ty(), slot, Align(4));
        b.push_back(B.CreateBitCast(w, mma::pairType(B, A.precision)));
      }
      return b;
    };
    // Two mma tiles' B fragments at once, nt and nt + 1 (ldmatrix.x4): matrices (k +0, n +0),
    // (k +8, n +0), (k +0, n +8), (k +8, n +8) of 8 rows (keys, or value columns) of 8 16-bit
    // values, 4 words of a row, are b0, b1 of tile nt and b0, b1 of nt + 1; lanes 8i..8i+7 give
    // the rows of matrix i. `lane` is this lane's row (matrixRow).
    auto [matrixRowIn, matrix] = mma::matrixLane(B, Lane);
    auto matrixRow = [&](unsigned rowWords, Value *offset) {
      Value *row = B.CreateAdd(matrixRowIn, B.CreateMul(B.CreateLShr(matrix, 1), B.getInt64(8)));
      Value *word = B.CreateMul(B.CreateAnd(matrix, 1), B.getInt64(4));
      return B.CreateAdd(B.CreateAdd(B.CreateMul(row, B.getInt64(rowWords)), word), offset);
    };
    auto fragmentPair = [&](GlobalVariable *tile, Value *lane, unsigned at) {
      SmallVector<Value *, 4> regs = mma::loadMatrices(
          B, A.precision, sharedElement(B, tile, B.CreateAdd(lane, B.getInt64(at))), false);
      return std::pair{SmallVector<Value *, 2>{regs[0], regs[1]},
                       SmallVector<Value *, 2>{regs[2], regs[3]}};
    };
    Value *pair = B.CreateMul(InGroup, B.getInt64(2));
    // The scores: mma tile ni holds keys ni x 8 .. of the tile; B's fragment register i holds key
    // group and e 2 inGroup + 8 i and the next.
    SmallVector<SmallVector<Value *, 16>, 2> acc(
        rowTiles.size(), SmallVector<Value *, 16>(4 * scoreTiles, ConstantFP::get(F32, 0.0)));
    Value *keyRow = matrixRow(keyWords, B.CreateMul(buffer, B.getInt64(mmaKeyBufferWords(T, E))));
    static_assert(MmaAttentionTiles.blockN % 16 == 0 && MmaAttentionWideTiles.blockN % 16 == 0,
                  "score tiles in pairs");
    for (unsigned ks = 0; ks < rowTiles[0].q.size(); ++ks)
      for (unsigned ni = 0; ni < scoreTiles; ni += 2) {
        auto [b0, b1] = fragmentPair(Sh.k, keyRow, ni * mma::TileN * keyWords + ks * 8);
        for (auto [rt, a] : zip(rowTiles, acc)) {
          mma::multiplyAdd(m, B, A.precision, rt.q[ks], b0, MutableArrayRef(a).slice(ni * 4, 4));
          mma::multiplyAdd(m, B, A.precision, rt.q[ks], b1,
                           MutableArrayRef(a).slice(ni * 4 + 4, 4));
        }
      }
    // The online softmax per row: its values lie in the 4 lanes of the group.
    auto groupAll = [&](Value *v, function_ref<Value *(Value *, Value *)> combine) {
      for (unsigned laneMask : {1u, 2u})
        v = combine(v, warpShuffleXor(B, v, laneMask));
      return v;
    };
    SmallVector<SmallVector<Value *, 16>, 2> scores = tileScores(acc, rowTiles, n0, pair);
    SmallVector<Value *, 64> next(state.begin(), state.end());
    SmallVector<SmallVector<Value *, 16>, 2> p(rowTiles.size());
    for (auto [r, rt] : enumerate(rowTiles)) {
      ArrayRef<Value *> st = state.slice(r * stateSize, stateSize);
      MutableArrayRef<Value *> nx = MutableArrayRef<Value *>(next).slice(r * stateSize, stateSize);
      ArrayRef<Value *> x = scores[r];
      Value *alpha[2], *mUse[2];
      for (unsigned h = 0; h < 2; ++h) {
        Value *tileMax = nullptr;
        for (unsigned ni = 0; ni < scoreTiles; ++ni)
          for (unsigned i = 2 * h; i < 2 * h + 2; ++i)
            tileMax = tileMax ? maximum(tileMax, x[ni * 4 + i]) : x[ni * 4 + i];
        tileMax = groupAll(tileMax, [&](Value *a, Value *b) { return maximum(a, b); });
        Value *mNew = maximum(st[h], tileMax);
        mUse[h] = shiftOf(mNew);
        alpha[h] = exp(B.CreateFSub(st[h], mUse[h]));
        nx[h] = mNew;
      }
      Value *sum[2] = {nullptr, nullptr};
      for (unsigned ni = 0; ni < scoreTiles; ++ni)
        for (unsigned i = 0; i < 4; ++i) {
          unsigned h = i >> 1;
          p[r].push_back(exp(B.CreateFSub(x[ni * 4 + i], mUse[h])));
          sum[h] = sum[h] ? B.CreateFAdd(sum[h], p[r].back()) : p[r].back();
        }
      for (unsigned h = 0; h < 2; ++h) {
        Value *all = groupAll(sum[h], [&](Value *a, Value *b) { return B.CreateFAdd(a, b); });
        nx[2 + h] = fma(st[2 + h], alpha[h], all);
      }
      // The accumulators rescaled.
      for (unsigned nj = 0; nj < outTiles; ++nj)
        for (unsigned i = 0; i < 4; ++i)
          nx[4 + nj * 4 + i] = B.CreateFMul(st[4 + nj * 4 + i], alpha[i >> 1]);
    }
    // The probabilities times the values: score tiles 2 ks and 2 ks + 1 are the A fragment of
    // k-step ks (keys 16 ks ..), rows group and group + 8 in registers 0 and 1, keys + 8 in 2 and
    // 3; B's register i holds column group of the value tile and keys 2 inGroup + 8 i and the next.
    Value *laneValue = B.CreateAdd(B.CreateMul(Group, B.getInt64(valueWords)), InGroup);
    Value *valueOffset = B.CreateMul(buffer, B.getInt64(mmaValueBufferWords(T, Ev)));
    laneValue = B.CreateAdd(laneValue, valueOffset);
    Value *valueRow = matrixRow(valueWords, valueOffset);
    for (unsigned ks = 0; ks < scoreTiles / 2; ++ks) {
      SmallVector<SmallVector<Value *, 4>, 2> a(rowTiles.size());
      for (size_t r = 0; r < rowTiles.size(); ++r)
        for (unsigned i = 0; i < 4; ++i) {
          unsigned from = (2 * ks + (i >> 1)) * 4 + (i & 1) * 2;
          a[r].push_back(mma::fragment(B, A.precision, p[r][from], p[r][from + 1]));
        }
      auto accumulate = [&](unsigned nj, ArrayRef<Value *> b) {
        for (size_t r = 0; r < rowTiles.size(); ++r)
          mma::multiplyAdd(m, B, A.precision, a[r], b,
                           MutableArrayRef<Value *>(next).slice(r * stateSize + 4 + nj * 4, 4));
      };
      // Value tiles in pairs; an odd last one by two 32-bit loads.
      for (unsigned nj = 0; nj + 1 < outTiles; nj += 2) {
        auto [b0, b1] = fragmentPair(Sh.v, valueRow, nj * mma::TileN * valueWords + ks * 8);
        accumulate(nj, b0);
        accumulate(nj + 1, b1);
      }
      if (outTiles % 2)
        accumulate(outTiles - 1,
                   fragment(Sh.v, laneValue, (outTiles - 1) * mma::TileN * valueWords + ks * 8));
    }
    storeStaged(B.CreateXor(buffer, B.getInt64(1)));
    barrier();
    return next;
  }

  // The lane's value columns lane + 32 s, held at the last column past ev (their sums are not
  // stored).
  SmallVector<Value *, 8> valueColumns() {
    SmallVector<Value *, 8> cols;
    for (unsigned s = 0; s < Slots; ++s) {
      Value *d = B.CreateAdd(Lane, B.getInt64(s * WarpSize));
      if ((s + 1) * WarpSize > Ev)
        d = B.CreateBinaryIntrinsic(Intrinsic::umin, d, B.getInt64(Ev - 1));
      cols.push_back(d);
    }
    return cols;
  }

  // The operands of query batch element Bq: batch Bq / heads, head Bq % heads, its key/value
  // head (grouped-query: head / group).
  void bindOperands() {
    Value *heads = Ex.sym(A.heads);
    Value *outer = B.CreateUDiv(Bq, heads, "outer");
    Value *head = B.CreateURem(Bq, heads, "head");
    Value *kvHead = B.CreateUDiv(head, Ex.sym(A.group), "kv.head");
    Q = operand(A.q, outer, head);
    K = operand(A.k, outer, kvHead);
    V = operand(A.v, outer, kvHead);
    if (A.mask)
      Mask = operand(*A.mask, outer, head);
  }

  struct Operand {
    Value *data = nullptr, *base = nullptr, *rowStride = nullptr, *colStride = nullptr;
    DType dtype = DType::F32;
  };

  Operand operand(const kir::AttentionOperand &o, Value *outer, Value *head) {
    Operand v;
    v.data = Kf.buffers[o.buffer];
    v.dtype = Entry.buffers[o.buffer].dtype;
    Value *batchOffset = B.CreateMul(outer, Ex.sym(o.batchStride));
    Value *headOffset = B.CreateMul(head, Ex.sym(o.headStride));
    v.base = B.CreateAdd(Ex.sym(o.offset), B.CreateAdd(batchOffset, headOffset));
    v.rowStride = Ex.sym(o.rowStride);
    v.colStride = Ex.sym(o.colStride);
    return v;
  }

  // Element (row, col) of `op` where `ok`, else 0 (false for a bool mask), read at the
  // operand's element (0, 0) then, which exists whenever a block runs.
  Value *load(const Operand &op, Value *ok, Value *row, Value *col) {
    Value *v = codegen::loadElement(B, op.data, elementOffset(op, ok, row, col), op.dtype);
    return B.CreateSelect(ok, v, Constant::getNullValue(v->getType()));
  }

  // The offset of element (row, col) of `op` where `ok`, else of its element (0, 0).
  Value *elementOffset(const Operand &op, Value *ok, Value *row, Value *col) {
    Value *r = B.CreateMul(row, op.rowStride);
    Value *c = B.CreateMul(col, op.colStride);
    return B.CreateSelect(ok, B.CreateAdd(op.base, B.CreateAdd(r, c)), op.base);
  }

  // Elements col and col + 1 of `op`'s row `row` (0 past the row and past `cols` columns).
  std::pair<Value *, Value *> pairAlongRow(const Operand &op, Value *rowOk, Value *row, Value *col,
                                           unsigned cols) {
    Value *col1 = B.CreateAdd(col, B.getInt64(1));
    Value *lo = load(op, B.CreateAnd(rowOk, B.CreateICmpULT(col, B.getInt64(cols))), row, col);
    Value *hi = load(op, B.CreateAnd(rowOk, B.CreateICmpULT(col1, B.getInt64(cols))), row, col1);
    return {lo, hi};
  }

  void barrier() { B.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {}); }

  void guarded(Value *cond, function_ref<void()> body) {
    Function *f = B.GetInsertBlock()->getParent();
    LLVMContext &c = f->getContext();
    BasicBlock *then = BasicBlock::Create(c, "guarded", f);
    BasicBlock *next = BasicBlock::Create(c, "guarded.next", f);
    B.CreateCondBr(cond, then, next);
    B.SetInsertPoint(then);
    body();
    B.CreateBr(next);
    B.SetInsertPoint(next);
  }

  // The block's threads copy a rows x cols tile, consecutive threads on consecutive columns
  // (coalesced reads of row-major operands): element(idx, row, col) for each idx < rows x cols.
  void copyTile(unsigned rows, unsigned cols,
                function_ref<void(Value *, Value *, Value *)> element) {
    unsigned total = rows * cols;
    Value *rounds = B.getInt64((total + T.threads - 1) / T.threads);
    codegen::emitLoop(
        B, B.getInt64(0), rounds,
        [&](Value *round) {
          Value *idx = B.CreateAdd(Tid, B.CreateMul(round, B.getInt64(T.threads)), "idx");
          auto copy = [&] {
            Value *r = B.CreateUDiv(idx, B.getInt64(cols));
            Value *c = B.CreateURem(idx, B.getInt64(cols));
            element(idx, r, c);
          };
          if (total % T.threads == 0)
            copy();
          else
            guarded(B.CreateICmpULT(idx, B.getInt64(total)), copy);
        },
        "copy");
  }

  Value *sharedLoad(GlobalVariable *tile, Value *index) {
    return B.CreateLoad(F32, sharedElement(B, tile, index));
  }

  // The block's query rows, zeros past L.
  void loadQueries() {
    copyTile(T.blockM, E, [&](Value *idx, Value *r, Value *c) {
      Value *row = B.CreateAdd(M0, r);
      Value *v = load(Q, B.CreateICmpULT(row, L), row, c);
      B.CreateStore(v, sharedElement(B, Sh.q, idx));
    });
  }

  // Key j of the lane within the tile, 0 <= j < Keys.
  Value *keyOf(unsigned j) { return B.CreateAdd(Lane, B.getInt64(j * WarpSize)); }
  Value *localRow(unsigned i) { return B.CreateAdd(WarpRow0, B.getInt64(i)); }

  // One tile of keys from n0 = t x blockN: scores, the online softmax's update of each row's
  // maximum and sum, and the probabilities times the values added to the accumulators.
  SmallVector<Value *, 64> tile(Value *t, ArrayRef<Value *> state) {
    Value *n0 = B.CreateMul(t, B.getInt64(T.blockN), "n0");
    // Every warp has read the previous tile's keys, values and probabilities (and, before the
    // first tile, the queries are in place).
    barrier();
    copyTile(T.blockN, E, [&](Value *, Value *r, Value *c) {
      Value *key = B.CreateAdd(n0, r);
      Value *v = load(K, B.CreateICmpULT(key, S), key, c);
      Value *slot = B.CreateAdd(B.CreateMul(r, B.getInt64(KStride)), c);
      B.CreateStore(v, sharedElement(B, Sh.k, slot));
    });
    copyTile(T.blockN, Ev, [&](Value *idx, Value *r, Value *c) {
      Value *key = B.CreateAdd(n0, r);
      Value *v = load(V, B.CreateICmpULT(key, S), key, c);
      B.CreateStore(v, sharedElement(B, Sh.v, idx));
    });
    barrier();
    SmallVector<Value *, 64> dots = dotProducts();
    SmallVector<Value *, 64> next(state.begin(), state.end());
    SmallVector<Value *, 8> alpha;
    for (unsigned i = 0; i < Rows; ++i) {
      Value *row = B.CreateAdd(M0, localRow(i), "row");
      SmallVector<Value *, 4> x;
      Value *tileMax = nullptr;
      for (unsigned j = 0; j < Keys; ++j) {
        x.push_back(score(dots[i * Keys + j], row, B.CreateAdd(n0, keyOf(j), "key")));
        tileMax = tileMax ? maximum(tileMax, x[j]) : x[j];
      }
      tileMax = warpAll(tileMax, [&](Value *a, Value *b) { return maximum(a, b); });
      Value *mNew = maximum(state[i], tileMax);
      Value *mUse = shiftOf(mNew);
      alpha.push_back(exp(B.CreateFSub(state[i], mUse)));
      Value *sum = nullptr;
      for (unsigned j = 0; j < Keys; ++j) {
        Value *p = exp(B.CreateFSub(x[j], mUse));
        Value *slot = B.CreateAdd(B.CreateMul(localRow(i), B.getInt64(T.blockN)), keyOf(j));
        B.CreateStore(p, sharedElement(B, Sh.p, slot));
        sum = sum ? B.CreateFAdd(sum, p) : p;
      }
      sum = warpAll(sum, [&](Value *a, Value *b) { return B.CreateFAdd(a, b); });
      next[i] = mNew;
      next[Rows + i] = fma(state[Rows + i], alpha[i], sum);
    }
    // The probabilities of a warp's rows are read back by its lanes.
    barrier();
    SmallVector<Value *, 64> pv = weightedValues();
    for (unsigned i = 0; i < Rows; ++i)
      for (unsigned s = 0; s < Slots; ++s) {
        unsigned at = 2 * Rows + i * Slots + s;
        next[at] = fma(state[at], alpha[i], pv[i * Slots + s]);
      }
    return next;
  }

  // The warp's rows against the lane's keys: Rows x Keys dot products over e, in e order.
  SmallVector<Value *, 64> dotProducts() {
    SmallVector<Value *, 64> zeros(Rows * Keys, ConstantFP::get(F32, 0.0));
    return kTileLoop(B, B.getInt64(E), zeros, [&](Value *e, ArrayRef<Value *> acc) {
      SmallVector<Value *, 8> q, k;
      for (unsigned i = 0; i < Rows; ++i) {
        Value *slot = B.CreateAdd(B.CreateMul(localRow(i), B.getInt64(E)), e);
        q.push_back(sharedLoad(Sh.q, slot));
      }
      for (unsigned j = 0; j < Keys; ++j) {
        Value *slot = B.CreateAdd(B.CreateMul(keyOf(j), B.getInt64(KStride)), e);
        k.push_back(sharedLoad(Sh.k, slot));
      }
      SmallVector<Value *, 64> out;
      for (unsigned i = 0; i < Rows; ++i)
        for (unsigned j = 0; j < Keys; ++j)
          out.push_back(fma(q[i], k[j], acc[i * Keys + j]));
      return out;
    });
  }

  // The tensor-core tile's scores (acc's layout: mma tile ni, register i holds row i / 2 of the
  // row tile and key n0 + pair + 8 ni + i % 2). A tile whose keys are all below s and, causal,
  // at most the warp's first row, with no mask, is only scaled: the warp branches around the
  // masking (the same for all its lanes), which most tiles of a long sequence skip. Not for
  // heads past MmaAttentionWideHeads: there the two paths' values took ptxas from 168 registers
  // to 216 on sm_90, two blocks an SM instead of three.
  SmallVector<SmallVector<Value *, 16>, 2> tileScores(ArrayRef<SmallVector<Value *, 16>> acc,
                                                      ArrayRef<RowTile> rowTiles, Value *n0,
                                                      Value *pair) {
    auto compute = [&](bool masked) {
      SmallVector<SmallVector<Value *, 16>, 2> x(rowTiles.size());
      for (auto [r, rt] : enumerate(rowTiles))
        for (auto [j, dot] : enumerate(acc[r])) {
          unsigned ni = j / 4, i = j % 4;
          if (!masked) {
            x[r].push_back(B.CreateFMul(dot, ConstantFP::get(F32, A.scale)));
            continue;
          }
          Value *key = B.CreateAdd(n0, B.CreateAdd(pair, B.getInt64(ni * mma::TileN + (i & 1))));
          x[r].push_back(score(dot, rt.rows[i >> 1], key));
        }
      return x;
    };
    if (Mask || std::max(E, Ev) > MmaAttentionWideHeads)
      return compute(true);
    Value *last = B.CreateAdd(n0, B.getInt64(T.blockN - 1));
    Value *whole = B.CreateICmpULT(last, S);
    if (A.causal)
      whole = B.CreateAnd(whole, B.CreateICmpULE(last, B.CreateAdd(M0, WarpRow0)));
    Function *f = B.GetInsertBlock()->getParent();
    BasicBlock *plain = BasicBlock::Create(B.getContext(), "scores.whole", f);
    BasicBlock *masked = BasicBlock::Create(B.getContext(), "scores.masked", f);
    BasicBlock *join = BasicBlock::Create(B.getContext(), "scores", f);
    B.CreateCondBr(whole, plain, masked);
    B.SetInsertPoint(plain);
    auto fast = compute(false);
    B.CreateBr(join);
    B.SetInsertPoint(masked);
    auto slow = compute(true);
    BasicBlock *maskedEnd = B.GetInsertBlock();
    B.CreateBr(join);
    B.SetInsertPoint(join);
    SmallVector<SmallVector<Value *, 16>, 2> x(rowTiles.size());
    for (size_t r = 0; r < rowTiles.size(); ++r)
      for (auto [a, b] : zip(fast[r], slow[r])) {
        PHINode *phi = B.CreatePHI(F32, 2, "score");
        phi->addIncoming(a, plain);
        phi->addIncoming(b, maskedEnd);
        x[r].push_back(phi);
      }
    return x;
  }

  // scale x dot, masked (causal, past s, the mask) to -inf or with the additive mask added.
  Value *score(Value *dot, Value *row, Value *key) {
    Value *x = B.CreateFMul(dot, ConstantFP::get(F32, A.scale));
    Value *ok = B.CreateICmpULT(key, S);
    if (A.causal)
      ok = B.CreateAnd(ok, B.CreateICmpULE(key, row));
    if (Mask) {
      Value *m = load(*Mask, B.CreateAnd(ok, B.CreateICmpULT(row, L)), row, key);
      if (m->getType()->isIntegerTy(1))
        ok = B.CreateAnd(ok, m);
      else
        x = B.CreateFAdd(x, m);
    }
    return B.CreateSelect(ok, x, NegInf);
  }

  // Rows x Slots sums over the tile's keys of probability x value, in key order, for the
  // lane's value columns lane + 32 s (read at the last column past ev, and not stored).
  SmallVector<Value *, 64> weightedValues() {
    SmallVector<Value *, 8> cols = valueColumns();
    SmallVector<Value *, 64> zeros(Rows * Slots, ConstantFP::get(F32, 0.0));
    return kTileLoop(B, B.getInt64(T.blockN), zeros, [&](Value *j, ArrayRef<Value *> acc) {
      SmallVector<Value *, 8> p, v;
      for (unsigned i = 0; i < Rows; ++i) {
        Value *slot = B.CreateAdd(B.CreateMul(localRow(i), B.getInt64(T.blockN)), j);
        p.push_back(sharedLoad(Sh.p, slot));
      }
      Value *rowOfValues = B.CreateMul(j, B.getInt64(Ev));
      for (unsigned s = 0; s < Slots; ++s)
        v.push_back(sharedLoad(Sh.v, B.CreateAdd(rowOfValues, cols[s])));
      SmallVector<Value *, 64> out;
      for (unsigned i = 0; i < Rows; ++i)
        for (unsigned s = 0; s < Slots; ++s)
          out.push_back(fma(p[i], v[s], acc[i * Slots + s]));
      return out;
    });
  }

  // out[bq, row, col] = accumulator / sum, or 0 for a row whose every score was -inf.
  void storeOutputs(ArrayRef<Value *> state) {
    for (unsigned i = 0; i < Rows; ++i) {
      Value *row = B.CreateAdd(M0, localRow(i), "row");
      Value *masked = B.CreateFCmpOEQ(state[i], NegInf);
      Value *rowOk = B.CreateICmpULT(row, L);
      for (unsigned s = 0; s < Slots; ++s) {
        Value *col = B.CreateAdd(Lane, B.getInt64(s * WarpSize), "col");
        storeOutput(rowOk, masked, row, col, state[2 * Rows + i * Slots + s], state[Rows + i]);
      }
    }
  }

  // out[Bq, row, col] = o (kir::AttentionCall::outOffset), rounded where the output is stored
  // in 16 bits (half-activations).
  void storeOut(Value *o, Value *row, Value *col) {
    struct Ints {
      Builder &B;
      Value *V;
      Ints operator*(Ints x) const { return {B, B.CreateMul(V, x.V)}; }
      Ints operator+(Ints x) const { return {B, B.CreateAdd(V, x.V)}; }
    };
    Value *heads = Ex.sym(A.heads);
    Value *outer = B.CreateUDiv(Bq, heads), *head = B.CreateURem(Bq, heads);
    Value *offset =
        kir::AttentionCall::outOffset<Ints>(A.headsInRows, {B, outer}, {B, head}, {B, heads},
                                            {B, L}, {B, row}, {B, B.getInt64(Ev)}, {B, col})
            .V;
    codegen::storeElement(B, o, Kf.buffers[A.out], offset, Entry.buffers[A.out].dtype);
  }

  // out[bq, row, col] = acc / sum where the row is below L and col below ev, 0 where `masked`
  // (the row's running maximum is -inf: every score was).
  void storeOutput(Value *rowOk, Value *masked, Value *row, Value *col, Value *acc, Value *sum) {
    Value *ok = B.CreateAnd(rowOk, B.CreateICmpULT(col, B.getInt64(Ev)));
    guarded(ok, [&] {
      Value *o = B.CreateFDiv(acc, sum);
      o = B.CreateSelect(masked, ConstantFP::get(F32, 0.0), o);
      storeOut(o, row, col);
    });
  }

  // `v` combined over the warp's lanes by a butterfly: every lane gets the same bits.
  Value *warpAll(Value *v, function_ref<Value *(Value *, Value *)> combine) {
    for (unsigned laneMask = WarpSize / 2; laneMask >= 1; laneMask /= 2)
      v = combine(v, warpShuffleXor(B, v, laneMask));
    return v;
  }

  Value *maximum(Value *a, Value *b) { return B.CreateBinaryIntrinsic(Intrinsic::maximum, a, b); }
  Value *fma(Value *a, Value *b, Value *c) {
    return B.CreateIntrinsic(Intrinsic::fmuladd, {F32}, {a, b, c});
  }
  Value *exp(Value *x) { return Math.emit(B, codegen::MathFn::Exp, {x}); }
  // What the softmax subtracts from the scores of a row whose running maximum is `m`: m, or 0
  // for a row masked so far (maximum -inf), whose probabilities and the factor of its old sums
  // are then 0 rather than NaN.
  Value *shiftOf(Value *m) {
    return B.CreateSelect(B.CreateFCmpOEQ(m, NegInf), ConstantFP::get(F32, 0.0), m);
  }

  Builder &B;
  codegen::ExprEmitter &Ex;
  codegen::MathLibrary &Math;
  const kir::EntryKernels &Entry;
  const kir::AttentionCall &A;
  const AttentionTiles &T;
  const AttentionPart Part;
  const KernelFunction &Kf;
  SharedTiles Sh;
  const unsigned E, Ev, KStride, Rows, Keys, Slots;
  const unsigned KPer, VPer; // the tensor-core kernel's staging: elements a chunk of keys, values
  Type *F32;
  Constant *NegInf;
  Value *Tid = nullptr, *Lane = nullptr, *WarpRow0 = nullptr, *L = nullptr, *S = nullptr;
  Value *Bq = nullptr, *M0 = nullptr, *Group = nullptr, *InGroup = nullptr;
  Value *Splits = nullptr; // the split decode's parts a (batch x head)
  Value *Vec16 = nullptr; // the tensor-core kernel's: whether it stages 16 bytes at a time
  Operand Q, K, V;
  std::optional<Operand> Mask;
};

Error checkAttention(const kir::EntryKernels &entry, const kir::AttentionCall &a) {
  auto unsupported = [&](const std::string &what) {
    return createStringError(fmt::format(
        "{}: attention '{}': {} is not supported by the CUDA backend", entry.name, a.name, what));
  };
  // The tensor-core kernel stages 16-bit keys and values as they are: of the mma's type.
  std::optional<DType> sixteen =
      onTensorCores(a) ? kir::sixteenBitType(a.precision) : std::optional<DType>();
  for (const kir::AttentionOperand *o : {&a.q, &a.k, &a.v}) {
    DType t = entry.buffers[o->buffer].dtype;
    if (t != DType::F32 && !isHalfFloat(t))
      return unsupported((toString(t) + " data").str());
    if (t != DType::F32 && sixteen && t != *sixteen)
      return unsupported(fmt::format("{} data at {} precision", toString(t).str(),
                                     kir::toString(a.precision).str()));
  }
  if (a.mask) {
    DType t = entry.buffers[a.mask->buffer].dtype;
    if (t != DType::F32 && t != DType::Bool && !isHalfFloat(t))
      return unsupported(("a " + toString(t) + " mask").str());
  }
  for (const SymExpr *d : {&a.e, &a.ev}) {
    std::optional<int64_t> n = d->constant();
    if (!n || *n < 1 || *n > AttentionMaxHeadDim)
      return unsupported(
          fmt::format("a head size of {} (at most {})", d->str(), AttentionMaxHeadDim));
  }
  return Error::success();
}

} // namespace

bool isDecodeStep(const kir::AttentionCall &a) { return a.l.constant() == 1; }

bool onTensorCores(const kir::AttentionCall &a) {
  return !isDecodeStep(a) &&
         (a.precision == kir::Precision::BF16 || a.precision == kir::Precision::FP16);
}

SmallVector<AttentionVariant, 3> attentionVariants(const kir::AttentionCall &a,
                                                   const AttentionTiles &cudaCoreTiles) {
  if (isDecodeStep(a) && a.partials) {
    const SymExpr &splits = a.splits;
    return {{cudaCoreTiles, "", {SymExpr(2) - splits}, AttentionPart::Whole},
            {cudaCoreTiles, "_split", {splits - SymExpr(1)}, AttentionPart::SplitKeys},
            {cudaCoreTiles, "_merge", {splits - SymExpr(1)}, AttentionPart::MergeSplits}};
  }
  if (!onTensorCores(a))
    return {{cudaCoreTiles, "", {}}};
  std::optional<int64_t> e = a.e.constant(), ev = a.ev.constant();
  if (e && ev && std::max(*e, *ev) > MmaAttentionWideHeads)
    return {{MmaAttentionWideTiles, "", {}}};
  const AttentionTiles &t = MmaAttentionTiles;
  SymExpr blocks = a.batch * a.heads * SymExpr::floorDiv(a.l + (t.blockM - 1), t.blockM);
  return {{t, "", {blocks - SymExpr(GemmFewBlocks - 1)}},
          {MmaAttentionFewTiles, "_few", {SymExpr(GemmFewBlocks) - blocks}}};
}

Expected<CudaKernel> emitAttentionKernel(Module &m, codegen::MathLibrary &math,
                                         const kir::EntryKernels &entry, const kir::Step &step,
                                         const StringMap<unsigned> &symIndex,
                                         const AttentionVariant &v) {
  const kir::AttentionCall &a = std::get<kir::AttentionCall>(step);
  if (Error err = checkAttention(entry, a))
    return err;
  const AttentionTiles &t = v.tiles;
  uint64_t e = *a.e.constant(), ev = *a.ev.constant();
  SymExpr blocks = a.batch * a.heads * SymExpr::floorDiv(a.l + (t.blockM - 1), t.blockM);
  unsigned threads = t.threads;
  if (v.part == AttentionPart::SplitKeys)
    blocks = a.batch * a.heads * a.splits;
  else if (v.part == AttentionPart::MergeSplits)
    threads = unsigned(alignTo(ev, WarpSize));
  return emitLibraryKernel(
      m, math, entry, step, symIndex, blocks, threads, a.name + v.suffix,
      [&](Builder &b, codegen::ExprEmitter &ex, const KernelFunction &kf) {
        Type *f32 = b.getFloatTy(), *i32 = b.getInt32Ty();
        SharedTiles shared{}; // the merge kernel's: none
        if (isDecodeStep(a)) {
          assert(t.threads >= ev && "a thread a value column when the warps merge");
          unsigned warps = t.warps();
          if (v.part != AttentionPart::MergeSplits)
            shared = {sharedArray(m, f32, e, "query"), nullptr,
                      sharedArray(m, f32, warps * ev, "warp_acc"),
                      sharedArray(m, f32, 2 * warps, "warp_max_sum")};
        } else if (onTensorCores(a)) {
          shared = {nullptr, sharedArray(m, i32, 2 * mmaKeyBufferWords(t, e), "k_tile"),
                    sharedArray(m, i32, 2 * mmaValueBufferWords(t, ev), "v_tile"), nullptr,
                    sharedArray(m, f32,
                                4 * t.threads *
                                    mmaStagedSlots(t, e, ev, chunkElements(entry, a.k.buffer),
                                                   chunkElements(entry, a.v.buffer)),
                                "staged")};
        } else {
          shared = {sharedArray(m, f32, t.blockM * e, "q_tile"),
                    sharedArray(m, f32, t.blockN * (e | 1), "k_tile"),
                    sharedArray(m, f32, t.blockN * ev, "v_tile"),
                    sharedArray(m, f32, uint64_t(t.blockM) * t.blockN, "p_tile")};
        }
        AttentionKernel(b, ex, math, entry, a, t, v.part, kf, shared).emit();
      });
}

} // namespace aotc::cuda
