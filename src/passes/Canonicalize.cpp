// Canonicalization: a small rewrite driver that folds trivial ops into their operand (identity
// views and permutes, x*1, x+0, same-dtype copies, clamp without bounds) and composes views,
// sweeping until nothing changes.
#include "passes/Passes.h"

#include "llvm/Support/Error.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace aotc {
namespace {

/// What a rule did to a node: nothing, replaced its only result by an existing value, or changed
/// the node in place (its result keeps its type and its users).
struct Rewrite {
  enum class Kind { None, Replace, Update };
  Kind kind = Kind::None;
  Value *with = nullptr;

  static Rewrite none() { return {}; }
  static Rewrite replace(Value *v) { return {Kind::Replace, v}; }
  static Rewrite update() { return {Kind::Update, nullptr}; }
};

using Rule = Rewrite (*)(Node &);

std::optional<int64_t> constantInt(const Attribute *a) {
  if (!a || a->kind() != Attribute::Kind::Int)
    return std::nullopt;
  return a->getInt().constant();
}

/// A Scalar attribute equal to `v`: the int `v` or the float `v` (±0.0 both count as zero).
bool isScalar(const Attribute *a, int64_t v) {
  if (!a)
    return false;
  if (a->kind() == Attribute::Kind::Float)
    return a->getFloat() == static_cast<double>(v);
  return constantInt(a) == v;
}

/// `alpha * 0` is 0 for every finite alpha; an infinite or NaN alpha makes it NaN.
bool isFiniteScalar(const Attribute *a) {
  return a && (a->kind() != Attribute::Kind::Float || std::isfinite(a->getFloat()));
}

/// `dim` of a tensor of rank `rank` in 0..rank-1 (ATen wraps negative dims; a 0-d tensor accepts
/// 0 and -1), or nullopt for a symbolic or out-of-range dim.
std::optional<int64_t> normalizeDim(std::optional<int64_t> dim, size_t rank) {
  int64_t r = std::max<int64_t>(static_cast<int64_t>(rank), 1);
  if (!dim || *dim < -r || *dim >= r)
    return std::nullopt;
  return *dim < 0 ? *dim + r : *dim;
}

// The fold rules below only pick the value to keep; the driver applies a fold only when that
// value's type equals the node's result type exactly (dtype and shape). That single check is what
// keeps type promotion (`x * 1.0` on an i64 tensor is f32) and broadcasting (`x + zeros` of a
// larger shape) from being folded away.

/// view, reshape and expand to the operand's own shape, and contiguous (layout is not part of the
/// graph's types), are the operand.
Rewrite foldIdentityView(Node &node) { return Rewrite::replace(node.operand(0)); }

/// permute by the identity permutation.
Rewrite foldIdentityPermute(Node &node) {
  const Attribute *dims = node.attr("dims");
  if (!dims || dims->kind() != Attribute::Kind::IntList)
    return Rewrite::none();
  size_t rank = node.operand(0)->type().rank();
  const std::vector<SymExpr> &perm = dims->getIntList();
  if (perm.size() != rank)
    return Rewrite::none();
  for (size_t i = 0; i != perm.size(); ++i)
    if (normalizeDim(perm[i].constant(), rank) != static_cast<int64_t>(i))
      return Rewrite::none();
  return Rewrite::replace(node.operand(0));
}

/// transpose of a dim with itself.
Rewrite foldSelfTranspose(Node &node) {
  size_t rank = node.operand(0)->type().rank();
  std::optional<int64_t> d0 = normalizeDim(constantInt(node.attr("dim0")), rank);
  std::optional<int64_t> d1 = normalizeDim(constantInt(node.attr("dim1")), rank);
  if (!d0 || d0 != d1)
    return Rewrite::none();
  return Rewrite::replace(node.operand(0));
}

/// `x * 1` (int or float one).
Rewrite foldMulByOne(Node &node) {
  if (!isScalar(node.attr("other"), 1))
    return Rewrite::none();
  return Rewrite::replace(node.operand(0));
}

/// `x + 0` and `x - 0` (`x + alpha * 0` for any finite alpha). On floats `-0.0 + 0` is `+0.0`,
/// so `add` is exact only up to the sign of zero, the same licence torch.compile's no-op removal
/// takes; `x - 0` is exact.
Rewrite foldAddZero(Node &node) {
  if (!isScalar(node.attr("other"), 0) || !isFiniteScalar(node.attr("alpha")))
    return Rewrite::none();
  return Rewrite::replace(node.operand(0));
}

/// A tensor filled with zeros by a creation op.
bool isZerosTensor(const Value *v) {
  const Node *def = v ? v->definingNode() : nullptr;
  if (!def)
    return false;
  if (def->kind() == OpKind::Zeros)
    return true;
  return def->kind() == OpKind::Full && isScalar(def->attr("fill_value"), 0);
}

/// `x + zeros` and `zeros + x` with alpha 1 are x, when no promotion or broadcast happens (the
/// driver's type check).
Rewrite foldAddZerosTensor(Node &node) {
  if (!isScalar(node.attr("alpha"), 1))
    return Rewrite::none();
  Value *self = node.operand(0), *other = node.operand(1);
  if (isZerosTensor(other) && self->type() == node.result()->type())
    return Rewrite::replace(self);
  if (isZerosTensor(self))
    return Rewrite::replace(other);
  return Rewrite::none();
}

/// _to_copy to the dtype the operand already has.
Rewrite foldSameDTypeCopy(Node &node) { return Rewrite::replace(node.operand(0)); }

/// clamp with neither bound.
Rewrite foldUnboundedClamp(Node &node) {
  if (node.attr("min") || node.attr("max"))
    return Rewrite::none();
  return Rewrite::replace(node.operand(0));
}

/// `view(view(x, a), b)` is `view(x, b)`, and a reshape of a view or reshape is a reshape of its
/// source: the sizes of the outer op already describe the final shape, and the element order of
/// a contiguous view chain does not depend on the intermediate shapes. The inner op is left for
/// dce when nothing else uses it.
Rewrite composeViews(Node &node) {
  Node *inner = node.operand(0)->definingNode();
  if (!inner)
    return Rewrite::none();
  bool composes = inner->kind() == OpKind::View ||
                  (node.kind() == OpKind::Reshape && inner->kind() == OpKind::Reshape);
  if (!composes)
    return Rewrite::none();
  node.setOperand(0, inner->operand(0));
  return Rewrite::update();
}

/// The rules that may apply to `kind`, tried in order.
llvm::ArrayRef<Rule> rulesFor(OpKind kind) {
  static const Rule view[] = {foldIdentityView, composeViews};
  static const Rule identity[] = {foldIdentityView};
  static const Rule permute[] = {foldIdentityPermute};
  static const Rule transpose[] = {foldSelfTranspose};
  static const Rule mul[] = {foldMulByOne};
  static const Rule add[] = {foldAddZero};
  static const Rule addTensor[] = {foldAddZerosTensor};
  static const Rule toCopy[] = {foldSameDTypeCopy};
  static const Rule clamp[] = {foldUnboundedClamp};
  switch (kind) {
  case OpKind::View:
  case OpKind::Reshape:
    return view;
  case OpKind::Expand:
  case OpKind::Contiguous:
    return identity;
  case OpKind::Permute:
    return permute;
  case OpKind::Transpose:
    return transpose;
  case OpKind::MulScalar:
    return mul;
  case OpKind::AddScalar:
  case OpKind::SubScalar:
    return add;
  case OpKind::AddTensor:
    return addTensor;
  case OpKind::ToCopy:
    return toCopy;
  case OpKind::Clamp:
    return clamp;
  default:
    return {};
  }
}

/// Applies the rules of `node` until none applies or the node is gone. True when anything changed.
bool canonicalizeNode(Node &node) {
  llvm::ArrayRef<Rule> rules = rulesFor(node.kind());
  if (rules.empty() || node.numResults() != 1)
    return false;
  bool changed = false;
  for (bool progress = true; progress;) {
    progress = false;
    for (Rule rule : rules) {
      Rewrite r = rule(node);
      if (r.kind == Rewrite::Kind::None)
        continue;
      if (r.kind == Rewrite::Kind::Update) {
        changed = progress = true;
        break;
      }
      // The single guard against changing what the graph computes: see above.
      if (!r.with || !(r.with->type() == node.result()->type()))
        continue;
      Block &block = *node.parentBlock();
      block.replaceAllUsesWith(node.result(), r.with);
      // Only the folded node itself is erased; producers it leaves unused (the zeros of `x +
      // zeros`, the inner view of a composed pair) are dce's job, so each pass does one thing
      // and the golden tests show each step.
      block.erase(block.find(&node));
      return true;
    }
  }
  return changed;
}

/// Rules only look at a node and the producers of its operands, which come before it, so one
/// sweep in program order reaches a fixpoint; the driver still sweeps until nothing changes, and
/// treats a rule set that keeps changing the graph as a bug.
constexpr unsigned MaxSweeps = 16;

} // namespace

llvm::Error runCanonicalize(Graph &graph) {
  for (const auto &entry : graph.entries()) {
    bool changed = true;
    for (unsigned sweep = 0; changed; ++sweep) {
      if (sweep == MaxSweeps)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "entry @%s did not reach a fixpoint after %u sweeps",
                                       entry->name().c_str(), MaxSweeps);
      // Collected first: a fold erases the node it folds, which Block::walk must not see.
      std::vector<Node *> worklist;
      entry->body().walk([&](Node &node) { worklist.push_back(&node); });
      changed = false;
      for (Node *node : worklist)
        changed |= canonicalizeNode(*node);
    }
  }
  return llvm::Error::success();
}

} // namespace aotc
