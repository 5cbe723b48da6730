// The kernel IR: what the graph of one entry becomes before code generation. An entry is a list
// of steps over numbered buffers; a step is a loop kernel (a nest of loops over symbolic extents
// whose body is a sequence of reduction and store stages, each computing a scalar expression per
// point) or a library call (GEMM, attention). One kernel IR feeds every backend: vector widths,
// thread mapping and tile sizes are the backend's business, not this file's.
#ifndef AOTC_KERNEL_KERNEL_H
#define AOTC_KERNEL_KERNEL_H

#include "aotc/ir/DType.h"
#include "aotc/ir/ShapeEnv.h"
#include "aotc/ir/SourceLoc.h"
#include "aotc/ir/SymExpr.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace aotc::kir {

using ExprId = uint32_t;
inline constexpr ExprId NoExpr = ~0u;

enum class ExprKind : uint8_t {
  Const,       // ival (integer and bool types) or fval (floating types)
  LoopVar,     // index: the loop number, outer loops first, then the stage's inner loops
  Dim,         // sym: a symbolic integer of the entry's root symbols (strides, extents)
  Load,        // buffer, operands[0] = element offset (i64) into the buffer
  Unary,       // unary, operands[0]
  Binary,      // binary, operands[0..1]
  Select,      // operands: condition (bool), value if true, value if false
  Cast,        // operands[0] converted to `type` (float to int truncates toward zero)
  ReduceValue, // index: the stage whose result (for the current outer point) this reads
  Acc,         // a GEMM epilogue's accumulated value at the current point
  CheckIndex,  // operands[0] (i64) clamped to [0, sym - 1]; when it was outside, the entry's
               // run reports index check `index` (1-based, EntryKernels::indexChecks)
};

enum class UnaryOp : uint8_t {
  Neg,
  Abs,
  Exp,
  Log,
  Log1p,
  Sqrt,
  Rsqrt,
  Reciprocal,
  Sin,
  Cos,
  Tanh,
  Erf,
  Sigmoid,
  Floor,
  Ceil,
  Round,  // half to even, as torch.round
  Not,    // logical not of a bool
  BitNot, // bitwise not of an integer (logical not of a bool)
};

enum class BinaryOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div,      // floating: true division; integer: truncating (C) division
  FloorDiv, // Python floor division (integers)
  Mod,      // Python modulo: the result takes the divisor's sign (integers and floats)
  Pow,
  Min,
  Max, // Min/Max of floats propagate NaN, as torch.minimum/maximum
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge, // result bool
  And,
  Or, // bools
  BitAnd,
  BitOr,
  BitXor, // integers and bools
  // Integers, shifted by the second operand; an amount outside [0, width of the type) gives 0
  // (Shl) or the sign fill (Shr: arithmetic for signed types, logical for unsigned), as ATen.
  Shl,
  Shr,
};

struct Expr {
  ExprKind kind;
  DType type;
  UnaryOp unary = UnaryOp::Neg;
  BinaryOp binary = BinaryOp::Add;
  uint32_t index = 0; // LoopVar, ReduceValue: the loop or stage; Load: the buffer; CheckIndex
                      // the check
  int64_t ival = 0;   // Const of integer/bool type
  double fval = 0;    // Const of floating type
  SymExpr sym;        // Dim; CheckIndex: the size indexed
  llvm::SmallVector<ExprId, 3> operands;
};

enum class ReduceOp : uint8_t { Sum, Prod, Max, Min, ArgMax, ArgMin };

/// One phase of a loop kernel's body, run for each point of the outer loops, in order. Inner
/// loops are numbered after the outer ones: the first inner loop of a stage is loop
/// `outer.size()`. A reduction stage's result (an index for ArgMax/ArgMin, of type i64) is read by
/// later stages through ReduceValue.
struct Stage {
  enum class Kind : uint8_t { Reduce, Store };
  Kind kind = Kind::Store;
  std::vector<SymExpr> inner; // extents of the inner loops; empty: one point
  // Reduce: combines `value` over the inner points, starting from the op's identity, in
  // `accType` (f32 values may be accumulated in f32 or f64; integer sums in i64). Max/Min
  // propagate NaN. ArgMax/ArgMin: the first linear inner index of the extreme value.
  ReduceOp reduce = ReduceOp::Sum;
  DType accType = DType::F32;
  // Store: buffers[buffer][offset] = value (converted to the buffer's dtype).
  uint32_t buffer = 0;
  ExprId offset = NoExpr;
  ExprId value = NoExpr;
};

struct LoopKernel {
  std::string name;           // "fused_relu_add_3": stable, for inspect and profiles
  std::vector<SymExpr> outer; // outer loop extents; may be empty (one point)
  unsigned parallelLoops = 0; // how many leading outer loops may run on several threads
  /// No point reads an element that another point writes, and no two points write the same
  /// element: the innermost loop's accesses may run in any order (several stores into one
  /// buffer need no overlap checks before they vectorize).
  bool independent = false;
  std::vector<Stage> stages;
  SourceLoc loc; // the model line the kernel's root op came from
};

/// The im2col view of a convolution's input read in place (a 1-d input has height 1, kernelH 1):
/// GEMM row k = (ci, kh, kw) with k = (ci * kernelH + kh) * kernelW + kw, column n = (oh, ow) with
/// n = oh * outWidth + ow, reads input element (b, ci, ih, iw) with ih = oh * strideH - padH +
/// kh * dilH (iw likewise), at offset + b * batchStride + ci * channelStride + ih * heightStride +
/// iw * widthStride, and 0 where (ih, iw) is outside height x width.
struct ConvWindow {
  SymExpr channelStride, heightStride, widthStride;
  SymExpr height, width, kernelH, kernelW;
  SymExpr strideH, strideW, padH, padW, dilH, dilW;
  SymExpr outWidth;
};

/// A strided matrix operand of a GEMM: element (b, r, c) is at
/// offset + b * batchStride + r * rowStride + c * colStride of `buffer`; with `conv` (a B operand
/// only), the element is read through that window instead and rowStride / colStride are unused.
struct MatrixOperand {
  uint32_t buffer = 0;
  SymExpr offset, batchStride, rowStride, colStride;
  std::optional<ConvWindow> conv = std::nullopt;
  /// When not 0: stored as panels of panelRows rows, each column's rows adjacent (a constant A
  /// operand packed at compile time in the layout the backend's register tile reads): element
  /// (row, col) at offset + panelOffset(row, col, k, panelRows) with k the GEMM's; rows past m are
  /// zero, the strides are unused.
  unsigned panelRows = 0;
  /// A B operand only, when not 0: bf16 k-pair panels pairPanelCols columns wide (a constant B
  /// weight packed at compile time in the layout the backend's bf16 kernels read in place):
  /// element (row, col) at offset + pairPanelOffset(row, col, k, pairPanelCols) with k the
  /// GEMM's, the padding zero; the strides are unused.
  unsigned pairPanelCols = 0;
  /// A B operand only, when not 0: f32 panels panelCols columns wide, each row's columns
  /// adjacent (a constant B weight packed at compile time in the layout the backend's register
  /// tile reads in place; nn.Linear's [n, k] weight as panels of its rows): element (row, col)
  /// at offset + panelOffset(col, row, k, panelCols) with k the GEMM's, the columns past n
  /// zero; the strides are unused.
  unsigned panelCols = 0;
  /// An A operand only, when not 0: the Winograd F(t x t, 3x3) transform (t = winogradTile, 2 or
  /// 4) of a filter [m, k, 3, 3] whose taps for (row, col) are 9 contiguous elements, row-major,
  /// at offset + row * rowStride + col * colStride. Batch b, 0..(t+2)^2 - 1, is component
  /// (b / (t+2), b % (t+2)) of G g G^T (winogradFilter); batchStride is unused. pack-weights
  /// stores it at compile time; the code generators never read such an operand.
  int winogradTile = 0;

  /// Every symbolic field, the window's included.
  llvm::SmallVector<const SymExpr *, 20> syms() const {
    llvm::SmallVector<const SymExpr *, 20> out = {&offset, &batchStride, &rowStride, &colStride};
    if (conv)
      out.append({&conv->channelStride, &conv->heightStride, &conv->widthStride, &conv->height,
                  &conv->width, &conv->kernelH, &conv->kernelW, &conv->strideH, &conv->strideW,
                  &conv->padH, &conv->padW, &conv->dilH, &conv->dilW, &conv->outWidth});
    return out;
  }
};

inline int64_t panelOffset(int64_t row, int64_t col, int64_t k, int64_t panelRows) {
  return row / panelRows * panelRows * k + col * panelRows + row % panelRows;
}

/// The k-pair panel layout of a K x N operand: panels of `cols` columns, each ceil(K / 2) word
/// rows padded to a multiple of cols / 2, word (p, j) holding rows 2p and 2p + 1 of the panel's
/// column j side by side. pairPanelOffset is (row, col)'s element, pairPanelElements the
/// layout's size (whole panels).
inline int64_t pairPanelWordRows(int64_t k, int64_t cols) {
  int64_t unit = cols / 2;
  return ((k + 1) / 2 + unit - 1) / unit * unit;
}
inline int64_t pairPanelOffset(int64_t row, int64_t col, int64_t k, int64_t cols) {
  return (col / cols * pairPanelWordRows(k, cols) + row / 2) * cols * 2 + col % cols * 2 + row % 2;
}
inline int64_t pairPanelElements(int64_t k, int64_t n, int64_t cols) {
  return (n + cols - 1) / cols * pairPanelWordRows(k, cols) * cols * 2;
}

/// Winograd F(t x t, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks"),
/// t = 2 or 4: an output tile is A^T [(G g G^T) .* (B^T d B)] A over the (t+2)^2 input tile d.
struct WinogradMatrices {
  int tile, points;      // t, and t + 2
  const double *inputT;  // B^T, points x points, row-major
  const double *filter;  // G, points x 3
  const double *outputT; // A^T, tile x points
};
const WinogradMatrices &winogradMatrices(int tile);
/// The points x points transform U = G g G^T of a 3x3 filter `g` (row-major), in double and
/// rounded once; `u` is row-major.
void winogradFilter(int tile, const float g[9], float *u);
/// The 3x3 filter whose transform is `u` (winogradFilter's inverse by least squares, in double):
/// exact up to the rounding of `u`.
void winogradFilterInverse(int tile, const float *u, float g[9]);

/// out[b, m, n] = epilogue(sum_k a[b, m, k] * b[b, k, n]) over a batch of GEMMs; `out` is a dense
/// [batch, m, n] row-major buffer. The epilogue is an expression over loop vars 0, 1, 2 = b, m, n
/// and Acc (the sum); without one the sum is stored as is.
/// The precision a GEMM may round its f32 operands to before multiplying, accumulating in f32
/// (--precision, as torch.backends.cuda.matmul.allow_tf32 and torch.autocast): fp32 rounds
/// nothing; tf32 keeps 10 mantissa bits (the tensor cores' TensorFloat-32), bf16 7 and fp16 10
/// with fp16's range. A permission, not a demand: a backend without the lower-precision
/// instructions may compute in f32.
enum class Precision : uint8_t { FP32, TF32, BF16, FP16 };
llvm::StringRef toString(Precision p);
/// "fp32", "tf32", "bf16", "fp16"; anything else is one line listing them.
llvm::Expected<Precision> parsePrecision(llvm::StringRef name);
/// The 16-bit type bf16 and fp16 round operands to; none for fp32 and tf32.
std::optional<DType> sixteenBitType(Precision p);
/// The precision whose products take a 16-bit type's values as they are: bf16 for bf16, fp16 for
/// f16; the export's `otherwise` for any other type.
Precision ownPrecision(DType t, Precision otherwise);

struct GemmCall {
  std::string name;
  DType dtype = DType::F32; // of a, b, out; accumulation in the same type
  Precision precision = Precision::FP32;
  SymExpr batch = 1, m, n, k;
  MatrixOperand a, b;
  uint32_t out = 0;
  ExprId epilogue = NoExpr;
  SourceLoc loc;
};

/// A strided operand of an attention call over query batch element bq = (outer, head), outer =
/// bq / heads and head = bq % heads: element (bq, row, col) is at offset + outer * batchStride +
/// h * headStride + row * rowStride + col * colStride of `buffer`, with h the query head (query,
/// mask) or its key/value head, head / group (key, value). A dim the operand broadcasts over
/// has stride 0.
struct AttentionOperand {
  uint32_t buffer = 0;
  SymExpr offset, batchStride, headStride, rowStride, colStride;
};

/// out[bq, l, :] = softmax_s(scale * q[bq, l, :] . k[bq, s, :] + mask) @ v[bq, :, :] for
/// scaled_dot_product_attention, without the scores in memory: `batch * heads` query batch
/// elements, each l x e queries against s x e keys and s x ev values, query head h reading
/// key/value head h / group (grouped-query attention; group 1 otherwise). The mask, when there
/// is one, is bool (false: the score is -inf) or f32 (added to the score); `causal` masks
/// s > l (PyTorch's top-left alignment). A row whose every score is -inf gives zeros, as the
/// reference interpreter and torch's math backend. `out` is a dense [batch, heads, l, ev]
/// buffer, or with headsInRows [batch, l, heads, ev]: each query row's heads side by side, so
/// that the merge of heads that reads it (y.transpose(1, 2).reshape(B, T, C)) is no copy. e and
/// ev are constants; l and s may be symbolic.
struct AttentionCall {
  std::string name;
  /// The graph's dtype of q, k, v and out (f32, bf16 or fp16); scores, softmax and sums in f32.
  /// Each operand's buffer says how it is stored (half-activations may narrow f32 ones).
  DType dtype = DType::F32;
  /// What the two products may round their operands to (q, k, then the probabilities and v),
  /// sums in f32 either way (GemmCall::precision): the export's for f32 data, the data's own
  /// type for bf16 and fp16.
  Precision precision = Precision::FP32;
  SymExpr batch = 1, heads = 1, group = 1;
  SymExpr l, s, e, ev;
  AttentionOperand q, k, v;
  std::optional<AttentionOperand> mask;
  bool causal = false;
  double scale = 1;
  uint32_t out = 0;
  bool headsInRows = false;
  /// Where a backend shares each (batch x head)'s keys among `splits` parts (a decode step over a
  /// long cache, on the GPU: CUDA's split-decode): their partial states, f32 [batch x heads,
  /// splits, 2 + ev] (the part's maximum score, its sum of exponentials, its unnormalized
  /// outputs), merged in part order. The result is the call's either way.
  std::optional<uint32_t> partials;
  SymExpr splits = 1;
  SourceLoc loc;
  /// Where out[bq, row, col] is in `out`, with outer = bq / heads and head = bq % heads.
  template <typename Int>
  static Int outOffset(bool headsInRows, Int outer, Int head, Int heads, Int l, Int row, Int ev,
                       Int col) {
    Int outRow = headsInRows ? (outer * l + row) * heads + head : (outer * heads + head) * l + row;
    return outRow * ev + col;
  }
};

struct CondStep;
using Step = std::variant<LoopKernel, GemmCall, AttentionCall, CondStep>;

/// aten.cond: runs `thenSteps` when the one-element bool buffer `predicate` holds, else
/// `elseSteps`. Both write the cond's results into the same buffers; the memory plan keeps every
/// buffer a branch touches live across the whole step.
struct CondStep {
  uint32_t predicate = 0;
  std::vector<Step> thenSteps, elseSteps;
  SourceLoc loc;
};

struct Buffer {
  enum class Kind : uint8_t {
    Input,  // the entry's user input `index`
    Output, // the entry's output `index` (user outputs, then mutated buffers)
    Weight, // program weight `index`, read-only
    State,  // program weight `index`, a mutable buffer: read and written through the handle
    Arena,  // a temporary at `arenaOffset` bytes into the call's arena
  };
  Kind kind = Kind::Arena;
  DType dtype = DType::F32;
  uint32_t index = 0;
  SymExpr numel;       // elements
  SymExpr arenaOffset; // Arena only: bytes, a multiple of 64
  std::string name;    // for printing: the graph value or weight it holds
  /// Output only: where the buffer starts in the output, in elements. Nonzero for a part of it
  /// (a concatenation's piece written in place: place-concat); the parts of one output are
  /// disjoint, so that buffers a step touches still never overlap.
  SymExpr viewOffset;
};

struct TensorSig {
  std::string name;
  DType dtype = DType::F32;
  llvm::SmallVector<SymExpr, 4> shape; // over the entry's root symbols (derived dims expanded)
};

struct EntryKernels {
  std::string name;
  std::vector<std::string> symbols; // root symbols, bound from the inputs in this order
  std::vector<TensorSig> inputs, outputs;
  std::vector<Buffer> buffers;
  std::vector<Guard> guards; // relations the runtime checks on every call
  // The root symbols' declared ranges and divisors, which the runtime checks on every call too:
  // a code generator may leave out what no size in them reaches.
  SymbolFactsMap facts;
  std::vector<Expr> exprs;   // the pool ExprIds index
  std::vector<Step> steps;
  SymExpr arenaBytes;
  // What each CheckIndex guards, for the runtime's message: "aten.embedding (model.cpp:12:5):
  // ...". Check k is indexChecks[k - 1].
  std::vector<std::string> indexChecks;

  const Expr &expr(ExprId id) const { return exprs[id]; }
};

/// Where an f32 weight's every element is also held by another weight, re-laid out as a GEMM
/// reads it (pack-weights records it): the weight as a [m, k * taps] row-major matrix, taps 9
/// for a Winograd filter (its (t+2)^2 transformed components in the holder, each `k * m`
/// elements or panels apart) else 1, stored in the holder as panels of panelRows rows
/// (panelOffset) or dense [m, k]. A bf16 holder (bf16-weights: no transform) holds the elements
/// rounded to bf16, dense or, with pairPanelCols, as the k-pair panels of a GEMM's B operand.
/// With transposed, the panels lay out the weight's transpose, [k, m]: (row, col) is at
/// panelOffset(col, row, m, panelRows) (Conv1D's [k, n] weight as a GEMM's B panels), or is
/// B's (col, row) (nn.Linear's [n, k] as k-pair panels).
struct HeldWeight {
  uint32_t holder = 0;
  int64_t m = 0, k = 0;
  unsigned panelRows = 0;
  int winogradTile = 0;
  unsigned pairPanelCols = 0;
  bool transposed = false;
  /// Where (row, col) is in one component of the holder.
  int64_t position(int64_t row, int64_t col) const {
    if (pairPanelCols)
      return transposed ? pairPanelOffset(col, row, k, pairPanelCols)
                        : pairPanelOffset(row, col, m, pairPanelCols);
    if (panelRows)
      return transposed ? panelOffset(col, row, m, panelRows) : panelOffset(row, col, k, panelRows);
    return row * k + col;
  }
  /// Elements of the weight per (row, col): a 3x3 filter's 9, else 1.
  int taps() const { return winogradTile ? 9 : 1; }
  /// Components in the holder: (t+2)^2 for a Winograd filter, else 1.
  int components() const { return winogradTile ? (winogradTile + 2) * (winogradTile + 2) : 1; }
  /// Elements of one component in the holder.
  int64_t componentStride() const {
    if (pairPanelCols)
      return transposed ? pairPanelElements(k, m, pairPanelCols)
                        : pairPanelElements(m, k, pairPanelCols);
    int64_t rows = transposed ? k : m, cols = transposed ? m : k;
    return panelRows ? (rows + panelRows - 1) / panelRows * panelRows * cols : m * k;
  }
};
/// `held`'s weight (numel m * k * taps floats) from its holder's elements.
void unpackHeldWeight(const HeldWeight &held, const float *holder, float *out);

/// A weight of the program: a parameter, buffer or constant, after weight-only folding.
struct Weight {
  std::string name;
  DType dtype = DType::F32;
  llvm::SmallVector<int64_t, 4> shape;
  bool mutableBuffer = false;
  uint64_t offset = 0; // bytes into the weight blob; see layoutWeights
  uint64_t nbytes = 0;
  /// Another weight holding every element, when one does.
  std::optional<HeldWeight> heldBy;
  /// False when the blob leaves it out (elideHeldWeights): no kernel reads it, and heldBy's
  /// weight holds it, or it is derived. offset and nbytes are then 0, or a derived weight's.
  bool stored = true;
  /// Computed by the runtime at load from the weights it holds, which are stored as themselves
  /// (Winograd transforms of 3x3 filters, which are (t+2)^2 / 9 times their size): the blob
  /// leaves it out, and offset is into the program's derived weights (derivedBytes).
  bool derived = false;

  uint64_t numel() const {
    uint64_t n = 1;
    for (int64_t d : shape)
      n *= static_cast<uint64_t>(d);
    return n;
  }
};

struct Program {
  std::string name;
  std::vector<Weight> weights;
  std::vector<EntryKernels> entries;
  // The weight blob: every weight 64-byte aligned in order, mutable buffers last, together in
  // [stateOffset, stateOffset + stateBytes). The derived weights, 64-byte aligned in order too,
  // are derivedBytes of memory apart from it that the runtime fills at load.
  uint64_t weightBytes = 0, stateOffset = 0, stateBytes = 0, derivedBytes = 0;
};

/// Whether a weight derived at load holds `w` (Weight::derived): the blob then stores `w` as
/// itself too.
inline bool heldByDerived(const Program &program, const Weight &w) {
  return w.heldBy && program.weights[w.heldBy->holder].derived;
}

/// A dim `scale * symbol + offset` with scale >= 1 over one root symbol: the runtime binds the
/// symbol from an input dim of this form.
struct LinearDim {
  std::string symbol;
  int64_t scale = 1, offset = 0;
};
std::optional<LinearDim> linearDim(const SymExpr &dim);

/// Whether `s` is a multiple of `k` for every size the entry's dims may take (their declared
/// divisors count: `dim("k", 8, 4096).multiple_of(8)`).
bool multipleOf(const EntryKernels &entry, const SymExpr &s, int64_t k);

/// Calls `fn` on every step of `steps` (const or not) in order, conds before the steps of their
/// branches. Inline: the code generators use it without linking the kernel library.
template <typename Steps, typename Fn> void forEachStep(Steps &steps, Fn &&fn) {
  for (auto &step : steps) {
    fn(step);
    if (auto *c = std::get_if<CondStep>(&step)) {
      forEachStep(c->thenSteps, fn);
      forEachStep(c->elseSteps, fn);
    }
  }
}

/// Calls `fn(entry, gemm)` (returning llvm::Error) on every GEMM of `program`, cond branches
/// included, in order; stops at the first error.
template <typename Fn> llvm::Error forEachGemm(Program &program, Fn &&fn) {
  std::function<llvm::Error(EntryKernels &, std::vector<Step> &)> walk =
      [&](EntryKernels &entry, std::vector<Step> &steps) -> llvm::Error {
    for (Step &s : steps) {
      if (auto *c = std::get_if<CondStep>(&s)) {
        if (llvm::Error err = walk(entry, c->thenSteps))
          return err;
        if (llvm::Error err = walk(entry, c->elseSteps))
          return err;
      } else if (auto *g = std::get_if<GemmCall>(&s)) {
        if (llvm::Error err = fn(entry, *g))
          return err;
      }
    }
    return llvm::Error::success();
  };
  for (EntryKernels &entry : program.entries)
    if (llvm::Error err = walk(entry, entry.steps))
      return err;
  return llvm::Error::success();
}

/// Leaves out of `blob` every weight that another one holds (Weight::heldBy) and that no kernel
/// of `readers` (the programs whose buffers index blob's weights) reads, unless that one is
/// derived from it: the artifact then stores one layout of it, and tools recover it with
/// unpackHeldWeight. Derived weights are never stored.
void elideHeldWeights(Program &blob, llvm::ArrayRef<const Program *> readers);

/// Assigns Weight::offset / nbytes and the program's blob and derived sizes (the layout above);
/// a weight left out (Weight::stored false) takes no bytes of the blob.
void layoutWeights(Program &program);

/// Deterministic text of the kernel IR, for golden tests and `aotc inspect --kernels`.
void print(const Program &program, llvm::raw_ostream &os);
std::string toString(UnaryOp op);
std::string toString(BinaryOp op);
std::string toString(ReduceOp op);

} // namespace aotc::kir

#endif
