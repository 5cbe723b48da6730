// Internals of the lowering to the kernel IR: lowered values (a strided view of a realized buffer,
// or an inlinable point function from loop indices to an expression), the scope of the kernel
// under construction, and the Lowerer that builds expressions, kernels and buffers.
#ifndef AOTC_KERNEL_LOWERIMPL_H
#define AOTC_KERNEL_LOWERIMPL_H

#include "aotc/ir/Graph.h"
#include "kernel/Kernel.h"
#include "kernel/Lower.h"
#include "kernel/Target.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <deque>
#include <functional>
#include <map>
#include <optional>

namespace aotc::kir::lower {

using IndexList = llvm::SmallVector<ExprId, 4>;

/// Element (i0, i1, ...) of a realized value is at offset + sum(i_k * strides[k]) of `buffer`.
struct Layout {
  uint32_t buffer = 0;
  SymExpr offset;
  llvm::SmallVector<SymExpr, 4> strides;
};

class Lowerer;
class Scope;
struct LValue;
/// Computes the element at the given indices (i64 expressions) inside a kernel; the result has
/// the value's compute type (computeType(dtype)).
using PointFn = std::function<ExprId(Scope &, llvm::ArrayRef<ExprId>)>;

/// How a value takes part in fusion decisions.
enum class LKind : uint8_t {
  Realized,  // has a layout
  Pointwise, // a point function of its deps at the same indices (maybe broadcast)
  View,      // a point function remapping indices of one dep
  Staged,    // a reduction-like value: a Reduce stage per point of its kept indices
  Gemm,      // an f32 GEMM waiting for its epilogue
};

/// How to emit a GEMM: operands are strided views of realized buffers.
struct GemmSpec {
  SymExpr batch = 1, m, n, k;
  MatrixOperand a, b;
  /// The value's shape is [batchDims..., M, N] and `m` covers batchDims too when `foldBatch`
  /// (batch == 1): the GEMM's dense output is the value's dense row-major layout either way.
  bool foldBatch = false;
  llvm::SmallVector<SymExpr, 4> batchDims;
  /// When not empty, the value's trailing dims in place of N, with n = numel(nDims) their
  /// row-major flattening (a convolution's output spatial dims).
  llvm::SmallVector<SymExpr, 3> nDims;
  /// A Winograd F(t x t, 3x3) convolution (LowerWinograd.cpp): the GEMM is the batch of
  /// (t+2)^2 transformed products, n = images x tiles, and the epilogue runs in the output
  /// transform.
  struct Winograd {
    int tile = 2;
    SymExpr images, tilesH, tilesW;
    bool wholeHeight = true, wholeWidth = true; // proved; else the last tiles overhang the map
  };
  std::optional<Winograd> winograd;
};

struct LValue {
  unsigned id = 0;
  DType dtype = DType::F32;
  Shape shape;
  LKind kind = LKind::Pointwise;
  std::optional<Layout> layout;
  PointFn point;
  std::vector<LValue *> deps;
  unsigned uses = 0; // graph consumers and outputs reading it
  unsigned cost = 1; // pointwise ops inlined by reading it once
  int rowKept = -1;  // a reduction over the trailing dims of a rank-`rowRank` input
  unsigned rowRank = 0;
  std::string opName; // for kernel names: "relu"
  std::string name;   // "%7"
  unsigned number = 0;
  SourceLoc loc;
  std::optional<GemmSpec> gemm;
  bool realizing = false;
};

/// The loop kernel (or GEMM epilogue) under construction.
class Scope {
public:
  Scope(unsigned numOuter, llvm::ArrayRef<SymExpr> outer, bool allowStages)
      : numOuter(numOuter), outer(outer.begin(), outer.end()), allowStages(allowStages) {}
  unsigned numOuter;
  std::vector<SymExpr> outer;
  bool allowStages;
  std::vector<Stage> stages;
  std::map<std::pair<unsigned, std::vector<ExprId>>, ExprId> memo;
  const LValue *accFor = nullptr; // GEMM epilogue: the GEMM whose sum is Acc at accIdx
  IndexList accIdx;
  ExprId accValue = NoExpr; // what stands for the sum instead of Acc (Winograd's output transform)
  const LValue *forceStage = nullptr; // the staged value this kernel realizes
  std::vector<std::string> opNames;
  SourceLoc loc;
};

/// A reduction-like value: per point of the output, combine `body` over the `inner` extents.
struct StagedSpec {
  std::vector<SymExpr> inner;
  ReduceOp op = ReduceOp::Sum;
  DType accType = DType::F32;
  /// Which output positions select the reduction (the others are keepdim 1s).
  std::vector<bool> kept;
  /// The value combined at one inner point, of type accType.
  std::function<ExprId(Scope &, llvm::ArrayRef<ExprId> out, llvm::ArrayRef<ExprId> inner)> body;
  /// The output element from the reduced value; null: the reduced value cast to the output type.
  std::function<ExprId(Scope &, llvm::ArrayRef<ExprId> out, ExprId reduced)> finish;
};

using Epilogue = std::function<ExprId(Scope &, llvm::ArrayRef<ExprId>, ExprId)>;

DType computeType(DType t);
/// softmax / log_softmax of `x` along `dim`, computed in `out`'s compute type; `safe` gives 0
/// where every element of the row is -inf (attention over a row the mask hides entirely).
LValue *softmaxOf(Lowerer &L, LValue *x, int64_t dim, DType out, bool log, bool safe = false);
/// Dense row-major strides of `shape`.
llvm::SmallVector<SymExpr, 4> denseStrides(llvm::ArrayRef<SymExpr> shape);
SymExpr numelOf(llvm::ArrayRef<SymExpr> shape);
/// The one stride that walks `dims` flattened in row-major order, given each dim's stride
/// (size-1 dims ignored); none when they do not merge.
std::optional<SymExpr> mergedStride(llvm::ArrayRef<SymExpr> strides, llvm::ArrayRef<SymExpr> dims);

/// An f32 GEMM value of `shape` waiting for its epilogue: `epilogue` (maybe null) maps the sum
/// at an output index to the value; consumers fuse more pointwise ops on top (emitGemm).
LValue *gemmValue(Lowerer &L, Shape shape, GemmSpec spec, std::vector<LValue *> deps,
                  std::string opName, Epilogue epilogue);
/// A 2-d f32 convolution with a constant 3x3 filter, stride 1, padding 1 as Winograd
/// F(4x4, 3x3) or F(2x2, 3x3) (LowerWinograd.cpp); null when the shape does not qualify.
llvm::Expected<LValue *> convAsWinograd(Lowerer &L, LValue *x, LValue *w, LValue *bias,
                                        const Shape &shape, llvm::ArrayRef<SymExpr> stride,
                                        llvm::ArrayRef<SymExpr> pad, llvm::ArrayRef<SymExpr> dil);

/// aten.scaled_dot_product_attention `n` (operands lowered, causal and scale decided) as one
/// AttentionCall when the target asks for it (TargetInfo::fusedAttentionMaxHeadDim) and the op
/// fits it; null otherwise (LowerAttention.cpp).
llvm::Expected<LValue *> attentionCall(Lowerer &L, const Node &n, LValue *q, LValue *k, LValue *v,
                                       LValue *mask, bool causal, double scale);

class Lowerer {
public:
  Lowerer(const Graph &graph, const TargetInfo &target, const LowerOptions &options,
          Program &program)
      : G(graph), Target(target), Options(options), Prog(program) {}
  // A deferred error still held here lost to an earlier one that stopped the walk.
  ~Lowerer() { llvm::consumeError(std::move(Deferred)); }

  llvm::Error lowerEntry(const Entry &entry);

  // Expressions, hash-consed in the current entry's pool.
  ExprId make(Expr e);
  const Expr &expr(ExprId id) const { return E->exprs[id]; }
  DType typeOf(ExprId id) const { return E->exprs[id].type; }
  uint64_t varsOf(ExprId id) const { return VarMask[id]; }
  ExprId cInt(int64_t v, DType t = DType::I64);
  ExprId cFloat(double v, DType t);
  ExprId cBool(bool v) { return cInt(v, DType::Bool); }
  /// A constant of type `t` with the value `v` (integral types truncate).
  ExprId cNum(double v, DType t);
  ExprId loopVar(unsigned i);
  ExprId dim(const SymExpr &s);
  ExprId load(uint32_t buffer, ExprId offset);
  ExprId unary(UnaryOp op, ExprId a);
  ExprId binary(BinaryOp op, ExprId a, ExprId b);
  ExprId select(ExprId c, ExprId a, ExprId b);
  ExprId cast(DType t, ExprId a);
  ExprId reduceValue(unsigned stage, DType t);
  ExprId acc(DType t);
  // i64 index arithmetic with constant folding.
  ExprId iadd(ExprId a, ExprId b);
  ExprId isub(ExprId a, ExprId b);
  ExprId imul(ExprId a, ExprId b);
  ExprId ifloordiv(ExprId a, ExprId b);
  ExprId imod(ExprId a, ExprId b);
  ExprId imin(ExprId a, ExprId b);
  ExprId imax(ExprId a, ExprId b);
  /// x * s when sum + mod is (x // c) * (c * s) + (x % c) * s (the first term anywhere in sum's Add
  /// chain), with that term removed from the chain; NoExpr otherwise.
  ExprId foldDivModPair(ExprId sum, ExprId mod);
  ExprId clampIndex(ExprId i, const SymExpr &size);
  /// `i` clamped to [0, size - 1]; the run reports check `check` when it was outside.
  ExprId checkIndex(ExprId i, const SymExpr &size, uint32_t check);
  /// Registers an index check of node `n` reading dim `dim` of its operand `operand`; returns
  /// its number for checkIndex.
  uint32_t newIndexCheck(const Node &n, llvm::StringRef operand, int64_t dim, const SymExpr &size);
  /// Offset of element `idx` in `layout`.
  ExprId offsetOf(const Layout &layout, llvm::ArrayRef<ExprId> idx);
  /// The indices of the row-major linear position `linear` over `dims`.
  IndexList unflatten(ExprId linear, llvm::ArrayRef<SymExpr> dims);
  ExprId flatten(llvm::ArrayRef<ExprId> idx, llvm::ArrayRef<SymExpr> dims);
  /// The indices into a row-major `from` of element `idx` of its reshape to `to`, dims merged or
  /// split group by group (no index mixes dims of unrelated groups).
  IndexList reshapeIndices(llvm::ArrayRef<ExprId> idx, llvm::ArrayRef<SymExpr> to,
                           llvm::ArrayRef<SymExpr> from);

  // Values.
  LValue *newValue(DType dtype, Shape shape, LKind kind, std::string opName);
  LValue *realizedValue(DType dtype, Shape shape, Layout layout, std::string name);
  /// A pointwise value computed from `deps` (read at broadcast indices by `fn` itself).
  LValue *pointwise(DType dtype, Shape shape, std::vector<LValue *> deps, std::string opName,
                    PointFn fn);
  /// A view: element idx of the result is element map(idx) of `src`; with `layout` (when `src`
  /// is realized and the view is strided) it stays realized.
  LValue *view(LValue *src, Shape shape, std::function<IndexList(llvm::ArrayRef<ExprId>)> map,
               std::optional<Layout> layout);
  LValue *staged(DType dtype, Shape shape, std::vector<LValue *> deps, std::string opName,
                 StagedSpec spec);
  /// Element `idx` of `v` in its compute type, inside `scope`.
  ExprId read(LValue *v, Scope &scope, llvm::ArrayRef<ExprId> idx);
  /// Reads `v` broadcast to a result of rank `rank` (numpy rules: trailing alignment, size-1
  /// dims read at 0), converted to `t`.
  ExprId readBroadcast(LValue *v, Scope &scope, llvm::ArrayRef<ExprId> idx, DType t);

  /// Makes `v` realized (a dense Arena buffer) unless it already is; returns its layout.
  llvm::Expected<Layout> realize(LValue *v);
  /// Writes `v` densely (row-major) into `buffer`: one loop kernel, or one GEMM with `v` as
  /// its epilogue.
  llvm::Error realizeInto(LValue *v, uint32_t buffer);
  /// A matrix operand of `v` (realized first when needed) viewed as [batch..., rows, cols]
  /// with `batchDims` flattened to one batch stride; copies into a dense buffer when the batch
  /// dims of its layout do not merge.
  llvm::Expected<MatrixOperand> matrixOperand(LValue *v, llvm::ArrayRef<SymExpr> batchDims);
  uint32_t newBuffer(Buffer::Kind kind, DType dtype, uint32_t index, SymExpr numel,
                     std::string name);
  /// The layout of `v` if it is realized and contiguous in row-major order.
  bool isContiguous(const Layout &l, llvm::ArrayRef<SymExpr> shape) const;

  // Op families (one file each).
  llvm::Error lowerPointwise(const Node &n);
  llvm::Error lowerCreation(const Node &n);
  llvm::Error lowerReduction(const Node &n);
  llvm::Error lowerShape(const Node &n);
  llvm::Error lowerIndexing(const Node &n);
  llvm::Error lowerSort(const Node &n);    // LowerSort.cpp
  llvm::Error lowerScatter(const Node &n); // LowerScatter.cpp
  llvm::Error lowerLinalg(const Node &n);
  llvm::Error lowerConvPool(const Node &n);
  llvm::Error lowerCond(const Node &n);
  llvm::Error lowerResample(const Node &n);

  /// Adds to `uses` how many nodes of `block` (not of nested regions) read each value.
  void countUses(const Block &block, llvm::DenseMap<const Value *, unsigned> &uses) const;
  /// Lowers the nodes of `block` in order; a result read by `uses` nodes is realized where
  /// fusion must stop. `output(value, lowered)` runs first on every used result (realizing
  /// those that are the block's outputs).
  llvm::Error lowerNodes(const Block &block, const llvm::DenseMap<const Value *, unsigned> &uses,
                         llvm::function_ref<llvm::Error(const Value *, LValue *)> output);

  // Shared op builders over lowered values.
  LValue *reduce(LValue *in, ReduceOp op, llvm::ArrayRef<int64_t> dims, bool keepdim, DType outType,
                 bool mean, std::string opName);
  /// a @ b (broadcast batch dims), `epilogue` applied to each sum: a GEMM of f32 operands, one
  /// of bf16 or fp16 ones (halfGemm), or a loop kernel for other dtypes.
  llvm::Expected<LValue *> gemm(LValue *a, LValue *b, std::string opName,
                                Epilogue epilogue = nullptr,
                                std::vector<LValue *> epilogueDeps = {});
  /// The GEMM value of a @ b over the operands' buffers (f32, or 16-bit for halfGemm).
  llvm::Expected<LValue *> tiledGemm(LValue *a, LValue *b, std::string opName, Epilogue epilogue,
                                     std::vector<LValue *> epilogueDeps);
  /// a @ b of two bf16 or two fp16 values: an f32 GEMM over them (TargetInfo::gemmHalfOperands),
  /// or over f32 copies of them (of A only for a bf16 B with TargetInfo::gemmBf16B), its result
  /// rounded to their dtype.
  llvm::Expected<LValue *> halfGemm(LValue *a, LValue *b, std::string opName, Epilogue epilogue,
                                    std::vector<LValue *> epilogueDeps);

  /// Point functions return expressions, not errors: one that fails keeps its error here and
  /// returns `placeholder`; the walk over the nodes returns the error before any kernel that
  /// holds the placeholder is used.
  ExprId deferError(llvm::Error err, ExprId placeholder);
  /// The errors deferred since the last call, or success.
  llvm::Error takeDeferredError() { return std::move(Deferred); }

  LValue *get(const Value *v) const { return Values.lookup(v); }
  void set(const Value *v, LValue *lv) { Values[v] = lv; }
  SymExpr expand(const SymExpr &s) const { return G.shapeEnv().expand(s); }
  const ShapeEnv &shapeEnv() const { return G.shapeEnv(); }
  Shape shapeOf(const Value *v) const;
  /// Static and symbolic attribute helpers.
  SymExpr intAttr(const Node &n, llvm::StringRef name, SymExpr dflt = 0) const;
  std::vector<SymExpr> intListAttr(const Node &n, llvm::StringRef name) const;
  int64_t normDim(int64_t d, size_t rank) const {
    return d < 0 ? d + static_cast<int64_t>(rank) : d;
  }
  /// The permutation of a permute or transpose node over `rank` dims: result dim k is source
  /// dim perm[k].
  std::vector<int64_t> permutation(const Node &n, size_t rank) const;
  const LowerOptions &options() const { return Options; }
  const TargetInfo &target() const { return Target; }
  /// An error "<loc>: <op> is not supported by the <target> backend yet".
  llvm::Error unsupported(const Node &node, llvm::StringRef what = {}) const;
  EntryKernels &entry() { return *E; }
  const Node *currentNode() const { return Current; }
  std::string valueName(const Value *v) const;
  /// `name`, or `name_N` when an earlier kernel of the entry took it.
  std::string uniqueKernelName(std::string name);

private:
  llvm::Error lowerNode(const Node &n);
  LValue *triangle(const Node &n, LValue *src);
  /// A view or reshape `n` of the unrealized GEMM value `src` (its only reader) that keeps the
  /// last dim and only splits or merges the rows (Conv1D's addmm(...).view([B, T, n])): a GEMM
  /// value of the new shape, so that an epilogue can still take what reads it. Null otherwise.
  LValue *reshapedGemm(const Node &n, LValue *src);
  std::function<IndexList(llvm::ArrayRef<ExprId>)> rollMap(const Node &n, const Shape &from);
  llvm::Error emitGemm(LValue *root, LValue *g, uint32_t buffer);
  llvm::Error emitWinograd(LValue *root, LValue *g, uint32_t buffer);
  llvm::Error emitWinogradOutput(LValue *root, LValue *g, uint32_t buffer, uint32_t mbuf,
                                 const SymExpr &first, const SymExpr &step, const SymExpr &count,
                                 bool clampColumns);
  /// The GEMM whose epilogue can compute `root`: `root` itself, or one that `root`'s pointwise
  /// values of its shape read, nothing else reading it or any value between (fusedRegion).
  LValue *findGemm(LValue *root);
  unsigned rowSplit(LValue *v);
  std::string kernelName(const Scope &s, const LValue *root);

  const Graph &G;
  const TargetInfo &Target;
  const LowerOptions &Options;
  Program &Prog;
  EntryKernels *E = nullptr;
  std::map<std::string, ExprId> Pool;
  std::vector<uint64_t> VarMask;
  std::deque<LValue> Storage;
  llvm::DenseMap<const Value *, LValue *> Values;
  llvm::DenseMap<const Value *, unsigned> Numbers;
  const Node *Current = nullptr;
  std::map<std::string, unsigned, std::less<>> KernelNames;
  llvm::Error Deferred = llvm::Error::success();
};

} // namespace aotc::kir::lower

#endif
