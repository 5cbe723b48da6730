// Checks, while tracing, that indices the model makes from dims stay inside the table they read:
// positions `arange(start, end)` looked up in an embedding or by index_select, and a slice of a
// parameter or buffer up to a dim. A range of dims for which they would not is refused at export
// (the fix names the range that holds), instead of failing at run time.
#include "Tracer.h"

#include <fmt/format.h>

namespace aotc {

namespace {
/// The node behind `t`, through the ops that keep its values (views, expand, contiguous).
const Node *sourceNode(const Tensor &t) {
  const Value *v = t.defined() ? t.impl()->value : nullptr;
  while (v && v->definingNode()) {
    const Node *n = v->definingNode();
    switch (n->kind()) {
    case OpKind::View:
    case OpKind::Reshape:
    case OpKind::Unsqueeze:
    case OpKind::Squeeze:
    case OpKind::Expand:
    case OpKind::Flatten:
    case OpKind::Contiguous:
      v = n->operand(0);
      continue;
    default:
      return n;
    }
  }
  return nullptr;
}

std::string tableName(const Tensor &table) {
  const detail::TensorImpl &impl = *table.impl();
  if (impl.isState)
    return fmt::format("{} \"{}\" ({})", toString(impl.stateKind).str(), impl.stateName,
                       impl.type.str());
  return impl.type.str();
}
} // namespace

void Tracer::checkReach(OpKind kind, const std::vector<Tensor> &operands,
                        const std::vector<NamedAttribute> &attrs, const Loc &loc) {
  if (operands.size() < 1 || !operands[0].defined())
    return;
  const Tensor &table = operands[0];
  const Type &type = table.impl()->type;
  auto intAttr = [&](llvm::StringRef name) -> std::optional<SymExpr> {
    for (const NamedAttribute &a : attrs)
      if (a.first == name && a.second.kind() == Attribute::Kind::Int)
        return a.second.getInt();
    return std::nullopt;
  };
  int64_t dim = 0;
  if (kind != OpKind::Embedding) {
    auto d = intAttr("dim");
    auto c = d ? d->constant() : std::nullopt;
    if (!c)
      return;
    dim = *c < 0 ? *c + static_cast<int64_t>(type.rank()) : *c;
  }
  if (dim < 0 || dim >= static_cast<int64_t>(type.rank()))
    return; // the meta function reports it
  const SymExpr &size = type.shape()[dim];

  if (kind == OpKind::Slice) {
    // Slicing past the end clamps in PyTorch, so a table sliced to a dim's length (a buffer of
    // position ids, a learned position embedding) silently comes out shorter than the dim.
    auto end = intAttr("end");
    if (!table.impl()->isState || !end || end->isConstant())
      return;
    requireWithin(
        *end, size, loc,
        fmt::format("{} is sliced to {} along dim {}", tableName(table), end->str(), dim));
    return;
  }
  if (operands.size() < 2)
    return;
  const Node *positions = sourceNode(operands[1]);
  if (!positions || positions->kind() != OpKind::Arange)
    return;
  const Attribute *start = positions->attr("start"), *end = positions->attr("end"),
                  *step = positions->attr("step");
  if (!start || !end || !step || start->kind() != Attribute::Kind::Int ||
      end->kind() != Attribute::Kind::Int || step->kind() != Attribute::Kind::Int ||
      step->getInt() != SymExpr(1) || end->getInt().isConstant())
    return;
  requireWithin(end->getInt(), size, loc,
                fmt::format("the positions arange({}, {}) index {} along dim {}",
                            start->getInt().str(), end->getInt().str(), tableName(table), dim));
}

void Tracer::requireWithin(const SymExpr &end, const SymExpr &size, const Loc &loc,
                           const std::string &why) {
  if (decide(GuardKind::LE, end, size, loc, why))
    return;
  std::set<std::string, std::less<>> symbols;
  env().expand(end - size).collectSymbols(symbols);
  fail(toSourceLoc(loc), fmt::format("{}: this needs {} <= {}, which no value of the dynamic dims "
                                     "({}) satisfies",
                                     why, end.str(), size.str(), rangesOf(symbols)));
}

} // namespace aotc
