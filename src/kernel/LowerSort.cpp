// Lowering of sort and topk: a bitonic sorting network over the positions of each row. The row
// is padded to the next power of two P of its largest size (padding sorts last); each of the
// log2(P) * (log2(P) + 1) / 2 compare-exchange steps is one loop kernel over [rows, P] that
// reads the previous step's positions and writes the next, so the CPU runs a step's points in
// parallel and CUDA a thread per point. Keys are (value, position): the network is not stable
// by itself, the position breaks ties so the order is torch's stable one.
#include "kernel/LowerImpl.h"

#include <fmt/format.h>

namespace aotc::kir::lower {

namespace {
/// Rows longer than this are refused: the network's steps grow as log2(P)^2 kernels.
constexpr int64_t MaxSortRow = int64_t(1) << 16;
} // namespace

llvm::Error Lowerer::lowerSort(const Node &n) {
  bool topk = n.kind() == OpKind::Topk;
  bool descending = [&] {
    const Attribute *a = n.attr(topk ? "largest" : "descending");
    return a && a->kind() == Attribute::Kind::Bool && a->getBool();
  }();
  LValue *x = get(n.operand(0));
  if (auto l = realize(x); !l)
    return l.takeError();
  Shape outShape = shapeOf(n.result(0));
  size_t rank = x->shape.size();
  auto finish = [&](LValue *values, LValue *indices) {
    values->name = valueName(n.result(0));
    indices->name = valueName(n.result(1));
    set(n.result(0), values);
    set(n.result(1), indices);
    return llvm::Error::success();
  };
  // A 0-d tensor, or an empty row, sorts to itself.
  SymExpr size =
      rank ? x->shape[normDim(intAttr(n, "dim", -1).constant().value_or(-1), rank)] : SymExpr(1);
  if (rank == 0 || size == SymExpr(0) || numelOf(outShape) == SymExpr(0)) {
    LValue *zeros = pointwise(DType::I64, outShape, {}, "sort",
                              [this](Scope &, llvm::ArrayRef<ExprId>) { return cInt(0); });
    LValue *values = view(
        x, outShape, [](llvm::ArrayRef<ExprId> idx) { return IndexList(idx.begin(), idx.end()); },
        std::nullopt);
    return finish(values, zeros);
  }
  int64_t d = normDim(intAttr(n, "dim", -1).constant().value_or(-1), rank);
  if (shapeEnv().proveLE(SymExpr(1), size) != Truth::True)
    return unsupported(n, "a sort over a dim that may be empty");
  int64_t padded = 1;
  while (shapeEnv().proveLE(size, SymExpr(padded)) != Truth::True) {
    padded *= 2;
    if (padded > MaxSortRow)
      return unsupported(n, fmt::format("a sort over more than {} elements", MaxSortRow));
  }
  bool mayPad = !(size == SymExpr(padded));
  Shape rowsShape = x->shape;
  rowsShape[d] = padded;
  DType ct = x->dtype == DType::Bool ? DType::I64 : computeType(x->dtype);
  bool floating = isFloating(ct);

  // Whether the element at position b comes before the one at position a (b != a).
  auto before = [this, x, d, size, ct, floating, descending, mayPad](Scope &s, IndexList at,
                                                                     ExprId b, ExprId a) {
    auto value = [&](ExprId p) {
      at[d] = mayPad ? clampIndex(p, size) : p;
      return cast(ct, read(x, s, at));
    };
    ExprId vb = value(b), va = value(a);
    ExprId stricter = binary(descending ? BinaryOp::Gt : BinaryOp::Lt, vb, va);
    ExprId equal = binary(BinaryOp::Eq, vb, va);
    if (floating) {
      // NaN is the largest key: it comes first when descending, last when ascending.
      ExprId nanA = binary(BinaryOp::Ne, va, va), nanB = binary(BinaryOp::Ne, vb, vb);
      ExprId nanFirst = descending ? binary(BinaryOp::And, nanB, unary(UnaryOp::Not, nanA))
                                   : binary(BinaryOp::And, nanA, unary(UnaryOp::Not, nanB));
      stricter = binary(BinaryOp::Or, nanFirst, stricter);
      equal = binary(BinaryOp::Or, binary(BinaryOp::And, nanA, nanB), equal);
    }
    ExprId earlier = binary(BinaryOp::Lt, b, a);
    ExprId result = binary(BinaryOp::Or, stricter, binary(BinaryOp::And, equal, earlier));
    if (!mayPad)
      return result;
    // Padding positions (>= size) sort after every element, among themselves by position.
    ExprId padA = binary(BinaryOp::Ge, a, dim(size)), padB = binary(BinaryOp::Ge, b, dim(size));
    ExprId notPadB = unary(UnaryOp::Not, padB);
    return select(padA, binary(BinaryOp::Or, notPadB, earlier),
                  binary(BinaryOp::And, notPadB, result));
  };

  // Step (k, j) of the network: position i pairs with l = i xor j; the pair is ordered first to
  // last when bit k of i is 0, last to first otherwise.
  LValue *positions = nullptr;
  for (int64_t k = 2; k <= padded; k *= 2)
    for (int64_t j = k / 2; j >= 1; j /= 2) {
      LValue *prev = positions;
      LValue *next = pointwise(
          DType::I64, rowsShape, prev ? std::vector<LValue *>{x, prev} : std::vector<LValue *>{x},
          "sort", [this, prev, d, k, j, before](Scope &s, llvm::ArrayRef<ExprId> idx) {
            ExprId i = idx[d];
            ExprId bitJ = imod(ifloordiv(i, cInt(j)), cInt(2));
            ExprId bitK = imod(ifloordiv(i, cInt(k)), cInt(2));
            ExprId lower = binary(BinaryOp::Eq, bitJ, cInt(0));
            ExprId l = select(lower, iadd(i, cInt(j)), isub(i, cInt(j)));
            IndexList at(idx.begin(), idx.end());
            auto positionAt = [&](ExprId p) {
              if (!prev)
                return p;
              at[d] = p;
              return read(prev, s, at);
            };
            ExprId a = positionAt(i), b = positionAt(l);
            ExprId bFirst = before(s, IndexList(idx.begin(), idx.end()), b, a);
            ExprId wantFirst = binary(BinaryOp::Eq, bitK, cInt(0));
            // The lower position keeps the earlier element when the pair goes first to last.
            ExprId takeB =
                select(binary(BinaryOp::Eq, lower, wantFirst), bFirst, unary(UnaryOp::Not, bFirst));
            return select(takeB, b, a);
          });
      if (auto l = realize(next); !l)
        return l.takeError();
      positions = next;
    }
  if (!positions) // a row of one element
    positions = pointwise(DType::I64, rowsShape, {}, "sort",
                          [this](Scope &, llvm::ArrayRef<ExprId>) { return cInt(0); });

  // The first `size` (or k) positions, and the values they select.
  LValue *indices = view(
      positions, outShape,
      [](llvm::ArrayRef<ExprId> idx) { return IndexList(idx.begin(), idx.end()); },
      positions->layout);
  LValue *values = pointwise(x->dtype, outShape, {x, indices}, topk ? "topk" : "sort",
                             [this, x, indices, d](Scope &s, llvm::ArrayRef<ExprId> idx) {
                               IndexList at(idx.begin(), idx.end());
                               at[d] = read(indices, s, idx);
                               return read(x, s, at);
                             });
  return finish(values, indices);
}

} // namespace aotc::kir::lower
