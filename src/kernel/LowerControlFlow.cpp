// Lowering of aten.cond: the predicate into a one-element bool buffer, each region into the
// steps of one branch, both writing the cond's results into the same arena buffers.
#include "kernel/LowerImpl.h"

#include <fmt/format.h>

namespace aotc::kir::lower {

llvm::Error Lowerer::lowerCond(const Node &n) {
  if (n.numRegions() != 2 || n.operands().empty())
    return unsupported(n, "a cond without two regions");
  CondStep cond;
  cond.loc = n.loc();

  LValue *pred = get(n.operand(0));
  if (!pred || numelOf(pred->shape).constant() != std::optional<int64_t>(1))
    return unsupported(n, "a cond whose predicate does not have one element");
  cond.predicate = newBuffer(Buffer::Kind::Arena, DType::Bool, 0, 1, valueName(n.operand(0)));
  LValue *truth = pointwise(DType::Bool, {}, {pred}, "cond_pred",
                            [this, pred](Scope &s, llvm::ArrayRef<ExprId>) {
                              IndexList zeros(pred->shape.size(), cInt(0));
                              return cast(DType::Bool, read(pred, s, zeros));
                            });
  truth->loc = n.loc();
  if (llvm::Error err = realizeInto(truth, cond.predicate))
    return err;

  // Operands are realized before either branch: a value a branch realized lazily would be
  // missing whenever the other branch ran.
  std::vector<LValue *> operands;
  for (unsigned i = 1; i < n.operands().size(); ++i) {
    LValue *v = get(n.operand(i));
    if (!v)
      return unsupported(n, "a cond operand that is not a tensor");
    if (llvm::Error err = realize(v).takeError())
      return err;
    operands.push_back(v);
  }

  std::vector<uint32_t> results;
  for (unsigned r = 0; r < n.numResults(); ++r) {
    const Value *res = n.result(r);
    if (!res->type().isTensor())
      return unsupported(n, "a cond with a non-tensor result");
    Shape shape = shapeOf(res);
    DType dtype = res->type().dtype();
    uint32_t buf = newBuffer(Buffer::Kind::Arena, dtype, 0, numelOf(shape), valueName(res));
    results.push_back(buf);
    LValue *v = realizedValue(dtype, shape, Layout{buf, 0, denseStrides(shape)}, valueName(res));
    v->loc = n.loc();
    set(res, v);
  }

  for (unsigned b = 0; b < 2; ++b) {
    const Block &region = n.region(b);
    if (region.numArguments() != operands.size() || region.returns().size() != results.size())
      return unsupported(n, "a cond region whose arguments or results do not match the cond");
    for (unsigned i = 0; i < operands.size(); ++i)
      set(region.argument(i), operands[i]);
    std::vector<Step> outer = std::move(E->steps);
    E->steps.clear();
    llvm::DenseMap<const Value *, unsigned> uses;
    for (const Value *v : region.returns())
      ++uses[v];
    countUses(region, uses);
    llvm::Error err = lowerNodes(region, uses, [](const Value *, LValue *) -> llvm::Error {
      return llvm::Error::success();
    });
    for (unsigned r = 0; r < results.size() && !err; ++r) {
      LValue *v = get(region.returns()[r]);
      err = v ? realizeInto(v, results[r]) : unsupported(n, "a cond region result");
    }
    (b == 0 ? cond.thenSteps : cond.elseSteps) = std::move(E->steps);
    E->steps = std::move(outer);
    if (err)
      return err;
  }
  E->steps.push_back(std::move(cond));
  return llvm::Error::success();
}

} // namespace aotc::kir::lower
