// Internals of the GEMM library kernels shared by Gemm.cpp (tiling, micro-kernel, tasks,
// dispatch) and GemmPack.cpp (packing A and B, a conv view's column tables).
#ifndef AOTC_CODEGEN_CPU_GEMMEMITTER_H
#define AOTC_CODEGEN_CPU_GEMMEMITTER_H

#include "codegen/cpu/Emitter.h"

#include <optional>

namespace aotc::cpu::gemm {

// Internal to the two GEMM files, which both work in LLVM's names throughout.
using namespace llvm;

// A conv view's segments table: per vector of columns, up to MaxSegments runs of adjacent inputs
// (their first lanes, then their first columns' input offsets, then the count, then whether the
// inputs are every other element), SegmentStride i32 entries apart.
inline constexpr unsigned MaxSegments = 4, SegmentStride = 16;

/// i32 entries of a conv view's tables: three column tables and the segments table.
uint64_t convTableEntries(const GemmTiling &t);

// A conv-view B operand's window (kir::ConvWindow), as values.
struct WindowValues {
  Value *chs, *hs, *ws, *h, *w, *kh, *kw, *sh, *sw, *ph, *pw, *dh, *dw, *ow;
};

// The GEMM's sizes and operand addressing, as values inside one function.
struct GemmValues {
  Value *batch, *m, *n, *k;
  Value *aOff, *aBs, *aRs, *aCs, *bOff, *bBs, *bRs, *bCs;
  Value *a, *b, *out;
  std::optional<WindowValues> win;
  unsigned aPanelRows = 0; // A is stored as panels of this many rows (kir::MatrixOperand)
  bool aBf16 = false;      // A is a bf16 buffer (bf16-weights, a convolution's weight)
  bool bBf16 = false;      // B is a bf16 buffer (bf16-weights): read widened to f32
  unsigned bPairCols = 0;  // B is bf16 k-pair panels this wide (kir::MatrixOperand)
  unsigned bPanelCols = 0; // B is f32 panels this wide (kir::MatrixOperand::panelCols)
};

/// The GEMM's values at the builder's position.
GemmValues gemmValues(Builder &b, const kir::EntryKernels &entry, const kir::GemmCall &g,
                      const StringMap<unsigned> &symIndex, ArrayRef<Value *> syms,
                      ArrayRef<Value *> buffers);
/// A's and B's element types in memory: float, or i16 holding a bf16.
Type *aElementType(Builder &b, const GemmValues &v);
Type *bElementType(Builder &b, const GemmValues &v);
/// `lanes` consecutive A or B elements at `at` as an f32 vector (lanes off in `mask`, when there
/// is one, read 0).
Value *loadAVector(Builder &b, const GemmValues &v, Value *at, unsigned lanes,
                   Value *mask = nullptr);
Value *loadBVector(Builder &b, const GemmValues &v, Value *at, unsigned lanes,
                   Value *mask = nullptr);
/// A[bi, row, col] as an f32.
Value *loadA(Builder &b, const GemmValues &v, Value *bi, Value *row, Value *col);
/// Addresses of A[bi, row, col] and B[bi, row, col] (B not through a conv window; in k-pair
/// panels, the element's: word (row / 2, col) of its panel where row is even).
Value *ptrA(Builder &b, const GemmValues &v, Value *bi, Value *row, Value *col);
Value *ptrB(Builder &b, const GemmValues &v, Value *bi, Value *row, Value *col);
/// Word rows of each of B's k-pair panels (kir::pairPanelWordRows).
Value *pairWordRows(Builder &b, const GemmValues &v);
/// B[bi, row, col], through the window of a conv view (0 outside the input).
Value *loadB(Builder &b, const GemmValues &v, Value *bi, Value *row, Value *col);
/// The element offset of out[bi, i, j].
Value *outOffset(Builder &b, const GemmValues &v, Value *bi, Value *i, Value *j);
/// Stores out[bi, i, j] = epilogue(s), or s when there is no epilogue or `withEpilogue` is false.
void storeOut(Builder &b, ExprEmitter &ex, const kir::GemmCall &g, const GemmValues &v, Value *bi,
              Value *i, Value *j, Value *s, bool withEpilogue);

/// An epilogue the micro-kernel applies to its registers on the last k block, in this order:
/// relu?((acc + bias[row]) + residual[...]), each part optional. The residual's offset is affine
/// in the loop vars with the column's coefficient 1, so a tile's rows are runs of it.
struct TileEpilogue {
  const kir::Expr *bias = nullptr;     // an f32 load at the row
  const kir::Expr *residual = nullptr; // an f32 load
  bool relu = false;
};
/// The GEMM's epilogue as a TileEpilogue, if it is one.
std::optional<TileEpilogue> matchTileEpilogue(const kir::EntryKernels &entry,
                                              const kir::GemmCall &g);
/// The micro-kernel's epilogue flags (an i32 argument; AMX's kernel is made for each).
inline constexpr unsigned AddBias = 1, AddResidual = 2, Relu = 4;
unsigned tileEpilogueFlags(const std::optional<TileEpilogue> &te);

/// A TileEpilogue's values for one tile: row bias[0] is the tile's first row's; residual points
/// at the tile's first element (rows ldr apart), residual2 at the folded second block's.
struct TileEpilogueArgs {
  Value *bias, *residual, *ldr, *residual2, *flags;
};

struct TaskSetup {
  Function *fn;
  SmallVector<Value *, 8> syms, buffers;
  Value *begin, *end, *gclosure;
};

/// Columns past a B panel's whole vectors that the kernel of columns takes (GemmEmitter).
inline constexpr unsigned TailColumns = 4;
/// A panels the kernel of `cols` columns takes at once: ColumnSums sums or more in flight (two
/// FMA ports of 4 cycles' latency).
inline constexpr unsigned ColumnSums = 8;
constexpr unsigned columnPanels(unsigned cols) { return (ColumnSums + cols - 1) / cols; }
/// Lines a kernel call's prefetch table holds (its addresses on the task's stack).
inline constexpr unsigned PrefetchTable = 32;

/// The closure every GEMM task gets, ending with `slots` buffer pointers from field
/// GemmClosureSlots on (see Gemm.cpp).
StructType *gemmClosureType(LLVMContext &c, unsigned slots);
inline constexpr unsigned GemmClosureSlots = 7;
/// What a GEMM's tasks compute: GEMMs with equal keys share them.
TaskKey gemmKey(const kir::EntryKernels &entry, const kir::GemmCall &g);

/// The lines of a blocked GEMM's next k block of B, shared out among the block's kernel calls
/// (GemmEmitter::nextBlockPrefetch).
struct NextBlockPrefetch {
  const GemmValues *v;
  Value *bi, *k1, *n0;
  Value *alongN; // a unit is a row of B along n, else a column along k
  Value *lines;  // cache lines of each row or column to fetch (at least 1)
  Value *total;  // cache lines of them all, unit after unit
  Value *per;    // lines per kernel call
};

/// The blocked path's arithmetic: f32 FMAs, vdpbf16ps on bf16 k-pairs, or AMX tiles of them.
enum class BlockedKind { F32, Bf16Dot, Amx };

// AMX tiles: 16 rows of 64 bytes. A C tile is 16 x 16 f32, an A tile 16 rows x 32 bf16 along
// k, a B tile 16 k-pairs x 16 columns (a B panel's word rows, NR = 32 columns: two tiles side
// by side). The kernel's block is 2 x 2 C tiles.
inline constexpr unsigned AmxTileRows = 16, AmxRows = 32, AmxCols = 32;
/// The deepest k block (bf16 elements) of AMX's kernel, the A micro-panel buffer's: a B read in
/// place (k-pair panels) takes K up to it in one block where C is large; a packed B's blocks are
/// as deep as its buffer holds the block's panels, up to it.
inline constexpr unsigned AmxMaxDepth = 1536;
/// Words of an AMX A micro-panel at the deepest k block.
constexpr unsigned amxAPanelWords(const GemmTiling &t) {
  return AmxRows * std::max(t.kc, AmxMaxDepth / 2);
}

/// f32 vectors x and y rounded to bf16, one vector of x's lanes then y's (vcvtne2ps2bf16 where
/// they have 16 lanes: for functions with AVX512_BF16 only).
Value *roundedConcat(Builder &b, Value *x, Value *y);

/// Transposes the square block of `x` (x.size() vectors of x.size() lanes) in registers.
void transposeSquare(Builder &b, MutableArrayRef<Value *> x);

/// Emits the task functions of one GEMM call.
class GemmEmitter {
public:
  /// Tasks for `g` and every GEMM of its key, reading the buffers `slots` (gemmKey) through
  /// their closure.
  GemmEmitter(ModuleEmitter &me, const kir::EntryKernels &entry, const kir::GemmCall &g,
              const StringMap<unsigned> &symIndex, ArrayRef<uint32_t> slots)
      : ME(me), Entry(entry), G(g), SymIndex(symIndex), Slots(slots), T(gemmTiling(me.variant())) {}

  /// The blocked path. For a bf16 B or A (a weight), AVX512_BF16 or AMX at run time: the f32
  /// operand is rounded to bf16, B packed as bf16 k-pairs (packBPairs, packBConv), the tiles
  /// computed with vdpbf16ps or AMX tiles.
  Function *blockedTask(BlockedKind kind = BlockedKind::F32);
  Function *smallTask();
  /// The dot-product path, for a B along k; none for a B in k-pair panels.
  Function *dotTask();

private:
  /// The small path's sums for B in panels (bf16 k-pairs or f32): the chunk's panels one at a time,
  /// each read front to back (one stream), into the accumulator rows (accRow floats apart).
  void smallPanels(Builder &b, const GemmValues &v, Value *bi, Value *n0, Value *jn, Value *accBuf,
                   Value *accRow, ExprEmitter &ex);
  /// out[bi, i, col0 + j] = epilogue(accumulator row i's j), for every row and j < cols.
  void storeSums(Builder &b, ExprEmitter &ex, const GemmValues &v, Value *bi, Value *accBuf,
                 Value *accRow, Value *col0, Value *cols);
  Function *startTask(const Twine &suffix, Builder &b, TaskSetup &ts);
  /// With B in k-pair panels, widens them (packBFromPairs).
  void packB(Builder &b, const GemmValues &v, Value *bi, Value *k0, Value *kc, Value *n0, Value *n1,
             Value *bp);
  void packBFromPairs(Builder &b, const GemmValues &v, Value *bi, Value *k0, Value *kc, Value *n0,
                      Value *n1, Value *bp);
  NextBlockPrefetch nextBlockPrefetch(Builder &b, const GemmValues &v, Value *bi, Value *k0,
                                      Value *kc, Value *kcEven, Value *n0, Value *n1, Value *calls);
  /// Kernel call `call`'s share of the next block's lines: the first PrefetchTable of them go
  /// into `table` (the micro-kernel spreads them over its k loop), any past those are
  /// prefetched here. Returns how many are in the table.
  Value *prefetchShare(Builder &b, const NextBlockPrefetch &p, Value *call, Value *table);
  /// Kernel call `call` of `calls` over row tile i0's share of the next stored panel's block of
  /// A (where i0 starts a stored panel), into `table` after its first `inTable` lines (the rest
  /// prefetched here). Returns how many lines the table holds.
  Value *prefetchNextAPanel(Builder &b, const GemmValues &v, Value *bi, Value *i0, Value *m1,
                            Value *k0, Value *kc, Value *call, Value *calls, Value *table,
                            Value *inTable);
  void packBColumnsAlongK(Builder &b, const GemmValues &v, Value *bi, Value *k0, Value *kc,
                          Value *n0, Value *n1, Value *bp);
  void convColumns(Builder &b, const GemmValues &v, Value *n0, Value *n1, Value *fold,
                   Value *images, Value *cols);
  void packBFolded(Builder &b, const GemmValues &v, Value *bi0, Value *images, Value *k0, Value *kc,
                   Value *bp);
  /// With `pairRows`, packs bf16 k-pairs as packBPairs does (activations rounded), not f32.
  void packBConv(Builder &b, const GemmValues &v, Value *bi, Value *k0, Value *kc, Value *panels,
                 Value *bp, Value *cols, Value *pairRows = nullptr);
  /// fn(p0, valid, x) for each vw columns k0 + p0 .. of A's rows i0 .. i0 + MR - 1 (A's rows
  /// along k), `valid` of them in kc: x holds one vector per column, its lanes the rows (lanes
  /// past mrEff and columns past `valid` zero).
  void forAColumns(Builder &b, const GemmValues &v, Value *bi, Value *i0, Value *mrEff, Value *k0,
                   Value *kc, function_ref<void(Value *, Value *, ArrayRef<Value *>)> fn);
  void packA(Builder &b, const GemmValues &v, Value *bi, Value *i0, Value *mrEff, Value *k0,
             Value *kc, Value *ap);
  // The bf16 k-pair layouts of the bf16 blocked paths: 32-bit words, word (p, j) holding
  // the bf16s of k rows k0 + 2p and k0 + 2p + 1 (0 past kc), in place of packB's and packA's
  // f32 elements; so panels, micro-panels and tiles address words as they address floats, with
  // ceil(kc / 2) for kc. f32 operands (activations) are rounded to nearest even. A B panel holds
  // `rows` >= ceil(kc / 2) word rows, those past the pairs zero (AMX's tiles take 16 at a time;
  // AMX packs A with packARowsBf16 instead). packBPairs reads B along n or along k.
  void packBPairs(Builder &b, const GemmValues &v, Value *bi, Value *k0, Value *kc, Value *rows,
                  Value *n0, Value *n1, Value *bp);
  void packAPairs(Builder &b, const GemmValues &v, Value *bi, Value *i0, Value *mrEff, Value *k0,
                  Value *kc, Value *ap);
  void packAPairsStrided(Builder &b, const GemmValues &v, Value *bi, Value *i0, Value *mrEff,
                         Value *k0, Value *kc, Value *ap);
  void packAWordsBf16(Builder &b, const GemmValues &v, Value *bi, Value *i0, Value *mrEff,
                      Value *k0, Value *kc, Value *ap);
  /// A new no-inline kernel function `void name(params)` whose first two pointers are read-only
  /// inputs, the builder at its entry.
  Function *kernelFunction(const std::string &name, ArrayRef<Type *> params, Builder &b);
  /// B's rows along n stream from memory when B is a weight (a prefill's linears, a decode
  /// step's), and the hardware prefetchers ramp up on each row anew: the packers and the small
  /// path prefetch the part of the row PrefetchRows on (into L2) that they read of this one.
  /// rowAhead points at that row from n0 (the block's last past kc); prefetchRow prefetches
  /// `elems` elements of it from column j.
  static constexpr unsigned PrefetchRows = 8;
  Value *rowAhead(Builder &b, const GemmValues &v, Value *bi, Value *k0, Value *kc, Value *p,
                  Value *n0);
  void prefetchRow(Builder &b, const GemmValues &v, Value *row, Value *j, Value *elems);
  /// AMX's A micro-panel: rows i0 .. i0 + AmxRows - 1 of A (zero past mrEff), each 2 * `pairs`
  /// bf16 along k from k0 (zero past kc), rounded; row r at ap + r * 4 * pairs bytes.
  void packARowsBf16(Builder &b, const GemmValues &v, Value *bi, Value *i0, Value *mrEff, Value *k0,
                     Value *kc, Value *pairs, Value *ap);
  /// C (+)= the product of an AMX A micro-panel (its rows lda bytes apart: packed, or a bf16 A
  /// in place) and each of a B block's `panels` panels of bf16 k-pairs (panelWords apart),
  /// `steps` tiles of AmxTileRows pairs deep, for the `rows` x `cols` block of C at c (rows ldc
  /// apart): per panel, four 16 x 16 tiles of sums, starting from C (loadC) in a whole block;
  /// stored to C there without an epilogue, else to a scratch tile and from it row by row with
  /// C (loadC, an edge block), the TileEpilogue's parts in `flags` (a kernel for each) and
  /// masked stores. Where aheadBytes is not 0, each step also prefetches into L2 the B rows
  /// aheadBytes on (a B read in place: the next panel's).
  Function *amxKernelFunction(unsigned flags);
  /// A tileRows x (tileVecs vectors) register tile over B panels NR columns wide, their rows ldb
  /// elements apart (NR packed; the stored panels' width where pack-weights' are read in place).
  /// With `bf16Dot` the panels hold bf16 k-pairs and kc counts pairs. The f32 kernel
  /// prefetches into L2 the `pfCount` lines whose addresses `pf` holds, evenly along its k loop.
  void microKernel(Builder &b, unsigned tileRows, unsigned tileVecs, bool bf16Dot, Value *ap,
                   unsigned aStride, Value *bp, Value *ldb, Value *kc, Value *c, Value *ldc,
                   Value *rows, Value *cols, Value *c2, Value *cols2, Value *loadC,
                   const TileEpilogueArgs &epi, Value *pf, Value *pfCount);
  Function *microKernelFunction(unsigned tileRows, unsigned tileVecs, unsigned aStride,
                                bool bf16Dot);
  /// C[i, j] (+)= sum_p A[i, p] B[p, j] for j < cols (1 .. TailColumns) and i < rows of up to
  /// columnPanels(cols) A micro-panels aPanelStride elements apart (`panels` of them present)
  /// and a B panel: rows in a vector's lanes, one accumulator per panel and column, so that
  /// enough sums are in flight to hide the FMA's latency.
  Function *columnKernelFunction(unsigned aStride, bool bf16Dot, unsigned cols);
  /// acc + a * b on f32 vectors, or with `bf16Dot` acc + the pairwise dot products of a and b
  /// read as bf16 k-pairs (vdpbf16ps).
  Value *multiplyAdd(Builder &b, bool bf16Dot, Value *a, Value *bv, Value *acc);

  ModuleEmitter &ME;
  const kir::EntryKernels &Entry;
  const kir::GemmCall &G;
  const StringMap<unsigned> &SymIndex;
  ArrayRef<uint32_t> Slots;
  GemmTiling T;
};

} // namespace aotc::cpu::gemm

#endif
