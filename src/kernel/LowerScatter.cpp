// Lowering of scatter and scatter_add as a gather from the output's side: output element p reduces
// over the index positions j along `dim` whose index equals p's coordinate there (the other
// coordinates being p's). No two points write one element, so the kernel needs no atomics and
// its points run in parallel on every target; the work is |self| * index.size(dim), meant for the
// small updates models make (a cache slot, a few rows). scatter keeps the last matching j, as the
// interpreter's sequential writes do; scatter_add sums the matches.
#include "kernel/LowerImpl.h"

namespace aotc::kir::lower {

llvm::Error Lowerer::lowerScatter(const Node &n) {
  bool add = n.kind() == OpKind::ScatterAdd;
  LValue *self = get(n.operand(0)), *index = get(n.operand(1)), *src = get(n.operand(2));
  for (LValue *v : {index, src})
    if (auto l = realize(v); !l)
      return l.takeError();
  Shape shape = shapeOf(n.result());
  size_t rank = shape.size();
  DType out = self->dtype, ct = computeType(out);
  int64_t d = normDim(intAttr(n, "dim").constant().value_or(0), rank);
  SymExpr size = rank ? shape[d] : SymExpr(1);
  uint32_t check = newIndexCheck(n, "self", d, size);
  // The dims where index may be shorter than self: points past it receive nothing.
  std::vector<size_t> shorter;
  for (size_t k = 0; k < rank; ++k)
    if (k != static_cast<size_t>(d) && shapeEnv().proveEQ(index->shape[k], shape[k]) != Truth::True)
      shorter.push_back(k);
  Shape indexShape = index->shape;

  StagedSpec spec;
  spec.inner = {rank ? indexShape[d] : SymExpr(1)};
  spec.kept.assign(rank, true);
  spec.op = add ? ReduceOp::Sum : ReduceOp::Max;
  spec.accType = add ? (isFloating(ct) ? ct : DType::I64) : DType::I64;
  DType acc = spec.accType;
  spec.body = [this, index, src, d, rank, size, check, shorter, indexShape, add,
               acc](Scope &s, llvm::ArrayRef<ExprId> p, llvm::ArrayRef<ExprId> inner) {
    IndexList at(p.begin(), p.end());
    if (rank)
      at[d] = inner[0];
    ExprId inside = cBool(true);
    for (size_t k : shorter) {
      inside = binary(BinaryOp::And, inside, binary(BinaryOp::Lt, p[k], dim(indexShape[k])));
      at[k] = clampIndex(p[k], indexShape[k]);
    }
    ExprId target = checkIndex(cast(DType::I64, read(index, s, at)), size, check);
    ExprId match =
        rank ? binary(BinaryOp::And, inside, binary(BinaryOp::Eq, target, p[d])) : inside;
    if (add)
      return select(match, cast(acc, read(src, s, at)), cNum(0, acc));
    return select(match, inner[0], cInt(-1));
  };
  spec.finish = [this, self, src, d, rank, add, ct](Scope &s, llvm::ArrayRef<ExprId> p,
                                                    ExprId reduced) {
    ExprId old = cast(ct, read(self, s, p));
    if (add)
      return binary(BinaryOp::Add, old, cast(ct, reduced));
    IndexList at(p.begin(), p.end());
    if (rank)
      at[d] = imax(reduced, cInt(0));
    return select(binary(BinaryOp::Ge, reduced, cInt(0)), cast(ct, read(src, s, at)), old);
  };
  LValue *r =
      staged(out, shape, {self, index, src}, add ? "scatter_add" : "scatter", std::move(spec));
  set(n.result(), r);
  return llvm::Error::success();
}

} // namespace aotc::kir::lower
