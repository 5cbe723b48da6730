// scaled_dot_product_attention as one library call (kir::AttentionCall) for targets that ask for
// it: the query, key, value and mask are read in place through their strides (batch dims merged
// to one stride beside the heads'), and the output is written once, dense: [.., heads, l, ev], or
// [.., l, heads, ev] where the merge of heads reads it (mergesHeads), which then is no copy.
#include "kernel/LowerImpl.h"

#include <fmt/format.h>

namespace aotc::kir::lower {

namespace {

/// `v` as an operand over `full` = [outer..., heads, rows, cols], broadcast from the left (a
/// missing or size-1 dim read at stride 0); copied densely to `full` when its outer dims do not
/// merge into one stride.
llvm::Expected<AttentionOperand> attentionOperand(Lowerer &L, LValue *v,
                                                  llvm::ArrayRef<SymExpr> full) {
  auto layout = L.realize(v);
  if (!layout)
    return layout.takeError();
  size_t rank = full.size(), own = v->shape.size();
  llvm::SmallVector<SymExpr, 6> strides(rank, SymExpr(0));
  for (size_t d = 0; d < own; ++d)
    strides[rank - own + d] = v->shape[d] == SymExpr(1) ? SymExpr(0) : layout->strides[d];
  size_t outer = rank >= 3 ? rank - 3 : 0;
  std::optional<SymExpr> batchStride =
      mergedStride(llvm::ArrayRef(strides).take_front(outer), full.take_front(outer));
  if (!batchStride) {
    LValue *copy = L.pointwise(v->dtype, Shape(full.begin(), full.end()), {v}, "copy",
                               [&L, v](Scope &s, llvm::ArrayRef<ExprId> idx) {
                                 return L.readBroadcast(v, s, idx, computeType(v->dtype));
                               });
    copy->name = v->name;
    copy->number = v->number;
    return attentionOperand(L, copy, full);
  }
  return AttentionOperand{layout->buffer,    layout->offset,
                          *batchStride,      rank >= 3 ? strides[rank - 3] : SymExpr(0),
                          strides[rank - 2], strides[rank - 1]};
}

/// Whether the one reader of `n`'s result (rank `rank`) is a transpose of its heads and rows
/// (dims rank - 3 and rank - 2): the merge of heads of HF's and nanoGPT's attention,
/// y.transpose(1, 2).reshape(B, T, C), which then reads [.., l, heads, ev] densely.
bool mergesHeads(const Lowerer &L, const Node &n, size_t rank) {
  const Value *r = n.result();
  const Block *block = n.parentBlock();
  if (rank < 3 || !block || llvm::is_contained(block->returns(), r))
    return false;
  const Node *reader = nullptr;
  unsigned readers = 0;
  block->walk([&](const Node &x) {
    if (llvm::is_contained(x.operands(), r)) {
      ++readers;
      reader = &x;
    }
    for (unsigned i = 0; i < x.numRegions(); ++i)
      readers += llvm::is_contained(x.region(i).returns(), r);
  });
  if (readers != 1 || !reader ||
      (reader->kind() != OpKind::Transpose && reader->kind() != OpKind::Permute))
    return false;
  std::vector<int64_t> perm = L.permutation(*reader, rank);
  for (size_t k = 0; k < rank; ++k) {
    size_t want = k == rank - 3 ? rank - 2 : k == rank - 2 ? rank - 3 : k;
    if (perm[k] != int64_t(want))
      return false;
  }
  return true;
}

} // namespace

llvm::Expected<LValue *> attentionCall(Lowerer &L, const Node &n, LValue *q, LValue *k, LValue *v,
                                       LValue *mask, bool causal, double scale) {
  int64_t maxHead = L.target().fusedAttentionMaxHeadDim;
  std::optional<int64_t> e = q->shape.back().constant(), ev = v->shape.back().constant();
  auto headFits = [maxHead](std::optional<int64_t> d) { return d && *d >= 1 && *d <= maxHead; };
  // q, k and v of one floating dtype: f32, or bf16/fp16 (a model converted with Module::to),
  // whose products run on the tensor cores of that type whatever --precision, as for a GEMM.
  DType dtype = q->dtype;
  bool typed =
      (dtype == DType::F32 || isHalfFloat(dtype)) && k->dtype == dtype && v->dtype == dtype;
  if (!typed || !headFits(e) || !headFits(ev) ||
      (mask && mask->dtype != DType::Bool && mask->dtype != DType::F32 && mask->dtype != dtype))
    return nullptr;
  size_t rank = q->shape.size();
  llvm::ArrayRef<SymExpr> qShape = q->shape;
  AttentionCall call;
  call.batch = numelOf(qShape.take_front(rank >= 3 ? rank - 3 : 0));
  call.heads = rank >= 3 ? q->shape[rank - 3] : SymExpr(1);
  if (const Attribute *gqa = n.attr("enable_gqa"); gqa && gqa->getBool() && rank >= 3)
    call.group = SymExpr::floorDiv(call.heads, k->shape[rank - 3]);
  call.l = q->shape[rank - 2];
  call.s = k->shape[rank - 2];
  call.e = *e;
  call.ev = *ev;
  call.causal = causal;
  call.scale = scale;
  call.dtype = dtype;
  call.precision = ownPrecision(dtype, L.options().precision);
  call.loc = n.loc();
  // Key and value have the query's batch dims (their heads divided by the group); the mask
  // broadcasts to the scores' [..., heads, l, s].
  for (auto [op, x] : {std::pair{&call.q, q}, {&call.k, k}, {&call.v, v}}) {
    auto o = attentionOperand(L, x, x->shape);
    if (!o)
      return o.takeError();
    *op = *o;
  }
  if (mask) {
    Shape scores(qShape.begin(), qShape.end() - 1);
    scores.push_back(call.s);
    auto o = attentionOperand(L, mask, scores);
    if (!o)
      return o.takeError();
    call.mask = *o;
  }
  Shape shape(qShape.begin(), qShape.end() - 1);
  shape.push_back(call.ev);
  std::string name = L.valueName(n.result());
  uint32_t out = L.newBuffer(Buffer::Kind::Arena, dtype, 0, numelOf(shape), name);
  llvm::SmallVector<SymExpr, 4> strides = denseStrides(shape);
  call.headsInRows = mergesHeads(L, n, rank);
  if (call.headsInRows) {
    // [.., heads, l, ev] read from [.., l, heads, ev].
    Shape stored = shape;
    std::swap(stored[rank - 3], stored[rank - 2]);
    strides = denseStrides(stored);
    std::swap(strides[rank - 3], strides[rank - 2]);
  }
  LValue *r = L.realizedValue(dtype, shape, Layout{out, 0, strides}, name);
  call.out = out;
  call.name = L.uniqueKernelName(fmt::format("attention_{}", r->number));
  L.entry().steps.push_back(std::move(call));
  return r;
}

} // namespace aotc::kir::lower
