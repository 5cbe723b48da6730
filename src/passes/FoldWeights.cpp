// Weight folding: a per-channel scale and shift after a convolution (inference BatchNorm) folded
// into its weight and bias, then every computation on weights only evaluated once, by the
// reference interpreter, into a new constant weight.
#include "passes/FoldWeights.h"

#include "passes/Passes.h"

#include "aotc/interp/Interpreter.h"
#include "aotc/ir/Builder.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace aotc {
namespace {

llvm::Error error(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::optional<std::vector<int64_t>> staticShape(const Type &t) {
  if (!t.isTensor())
    return std::nullopt;
  std::vector<int64_t> dims;
  for (const SymExpr &d : t.shape()) {
    std::optional<int64_t> c = d.constant();
    if (!c)
      return std::nullopt;
    dims.push_back(*c);
  }
  return dims;
}

/// Ops whose one static tensor result the interpreter computes from their operands alone.
/// Factories have no operands to depend on and are cheaper to recompute than to store.
bool isFoldableOp(const Node &node) {
  switch (node.schema().trait) {
  case OpTrait::Creation:
  case OpTrait::Scalars:
  case OpTrait::ControlFlow:
    return false;
  default:
    break;
  }
  if (node.numRegions() != 0 || node.numResults() != 1 || !staticShape(node.result()->type()))
    return false;
  return llvm::any_of(node.operands(), [](const Value *v) { return v != nullptr; });
}

/// The state tensors folding may read: never written back by an entry (a mutated buffer changes
/// between calls), and with data of the declared type in the program.
llvm::StringSet<> foldableState(const ExportedProgram &program) {
  const Graph &g = *program.graph;
  llvm::StringSet<> mutated;
  for (const auto &entry : g.entries())
    for (const OutputSpec &out : entry->outputs())
      if (out.kind == OutputKind::BufferMutation)
        mutated.insert(out.name);
  llvm::StringSet<> foldable;
  for (const StateTensor &st : g.state()) {
    const Weight *w = program.findWeight(st.name);
    std::optional<std::vector<int64_t>> shape = staticShape(st.type);
    if (mutated.contains(st.name) || !w || !shape || w->dtype() != st.type.dtype() ||
        w->shape() != llvm::ArrayRef<int64_t>(*shape))
      continue;
    foldable.insert(st.name);
  }
  return foldable;
}

using ValueSet = llvm::DenseSet<const Value *>;

/// The values of an entry's body that depend on foldable state only (top level: cond regions
/// only see their own arguments).
ValueSet weightOnlyValues(const Entry &entry, const llvm::StringSet<> &foldable) {
  ValueSet set;
  for (unsigned i = 0, e = entry.inputs().size(); i != e; ++i) {
    const InputSpec &in = entry.inputs()[i];
    if (in.kind != InputKind::User && foldable.contains(in.name))
      set.insert(entry.body().argument(i));
  }
  for (const auto &node : entry.body().nodes())
    if (isFoldableOp(*node) &&
        llvm::all_of(node->operands(), [&](const Value *v) { return !v || set.contains(v); }))
      set.insert(node->result());
  return set;
}

bool isWeightOnlyNode(const Node &node, const ValueSet &weightOnly) {
  return node.numResults() == 1 && weightOnly.contains(node.result());
}

/// The state tensor a weight-only value derives from, following first operands: `W * s` is
/// named after W.
const std::string &originName(const Value *v, const Entry &entry) {
  while (const Node *n = v->definingNode())
    v = *llvm::find_if(n->operands(), [](const Value *op) { return op != nullptr; });
  return entry.inputs()[v->index()].name;
}

/// Builds nodes before a given node, all with one source location; the first error sticks and
/// later calls give null, so a rewrite checks once at its end.
class Emitter {
public:
  Emitter(const ShapeEnv &env, Node &before, SourceLoc loc)
      : B(env, *before.parentBlock()), Loc(std::move(loc)) {
    B.setInsertionPoint(*before.parentBlock(), before.parentBlock()->find(&before));
  }

  Node *node(OpKind kind, llvm::ArrayRef<Value *> operands,
             llvm::ArrayRef<NamedAttribute> attrs = {}) {
    if (Err)
      return nullptr;
    auto n = B.create(kind, operands, attrs, Loc);
    if (!n) {
      Err = n.takeError();
      return nullptr;
    }
    return *n;
  }
  Value *op(OpKind kind, llvm::ArrayRef<Value *> operands,
            llvm::ArrayRef<NamedAttribute> attrs = {}) {
    if (llvm::is_contained(operands, nullptr))
      return nullptr;
    Node *n = node(kind, operands, attrs);
    return n ? n->result() : nullptr;
  }
  Value *reshape(Value *x, llvm::ArrayRef<int64_t> shape) {
    return op(OpKind::Reshape, {x},
              {{"shape", Attribute::intList(std::vector<SymExpr>(shape.begin(), shape.end()))}});
  }

  llvm::Error takeError() { return Err ? std::move(Err) : llvm::Error::success(); }

private:
  Builder B;
  SourceLoc Loc;
  llvm::Error Err = llvm::Error::success();
};

/// Users of each value of a block (top level), and the values it returns.
struct Uses {
  llvm::DenseMap<const Value *, llvm::SmallVector<Node *, 2>> users;
  ValueSet returned;

  explicit Uses(Block &block) {
    for (const auto &node : block.nodes())
      for (const Value *v : node->operands())
        if (v)
          users[v].push_back(node.get());
    for (const Value *v : block.returns())
      returned.insert(v);
  }
};

/// True when `v` broadcasts against `out` (a convolution output with `channels` channels) as
/// one value per output channel: every dim 1 except, possibly, the channel dim.
bool isPerChannel(const Value *v, const Type &out, int64_t channels) {
  std::optional<std::vector<int64_t>> shape = staticShape(v->type());
  if (!shape || shape->size() > out.rank() || v->type().dtype() != out.dtype())
    return false;
  size_t offset = out.rank() - shape->size();
  for (size_t i = 0; i < shape->size(); ++i)
    if ((*shape)[i] != 1 && (offset + i != 1 || (*shape)[i] != channels))
      return false;
  return true;
}

/// An isPerChannel() factor as a [channels] vector.
Value *channelVector(Emitter &e, Value *v, int64_t channels) {
  bool varies = llvm::any_of(v->type().shape(), [](const SymExpr &d) { return d != SymExpr(1); });
  if (varies)
    return e.reshape(v, {channels});
  Value *one = e.reshape(v, {1});
  return e.op(OpKind::Expand, {one},
              {{"size", Attribute::intList(std::vector<SymExpr>{SymExpr(channels)})}});
}

bool hasUnitAlpha(const Node &node) {
  const Attribute *alpha = node.attr("alpha");
  if (!alpha)
    return true;
  if (alpha->kind() == Attribute::Kind::Int)
    return alpha->getInt().constant() == std::optional<int64_t>(1);
  return alpha->kind() == Attribute::Kind::Float && alpha->getFloat() == 1.0;
}

/// One affine step applied to the convolution output `y`.
struct Step {
  enum Kind { Add, Sub, Mul } kind;
  Value *factor;
  Node *node;
};

/// `node` as a step on `y`: y + t, t + y, y - t (alpha 1), y * s or s * y.
std::optional<Step> matchStep(Node &node, const Value *y) {
  Value *lhs = node.operand(0);
  Value *rhs = node.numResults() == 1 && node.operands().size() == 2 ? node.operand(1) : nullptr;
  if (!rhs || (lhs == y) == (rhs == y))
    return std::nullopt;
  Value *other = lhs == y ? rhs : lhs;
  switch (node.kind()) {
  case OpKind::AddTensor:
    if (hasUnitAlpha(node))
      return Step{Step::Add, other, &node};
    return std::nullopt;
  case OpKind::SubTensor:
    if (lhs == y && hasUnitAlpha(node))
      return Step{Step::Sub, other, &node};
    return std::nullopt;
  case OpKind::MulTensor:
    return Step{Step::Mul, other, &node};
  default:
    return std::nullopt;
  }
}

/// Names suggested for the folded values that do not derive from a weight of their own (the bias
/// of a convolution that had none).
using NameHints = llvm::DenseMap<const Value *, std::string>;

/// Rewrites `conv(x, W, b)` followed by single-use steps `* s`, `+ t`, `- t` with per-channel
/// weight-only factors into one convolution with weight W * s and bias b * s + t, computed by new
/// weight-only nodes that the folding below evaluates. Returns whether it rewrote.
llvm::Expected<bool> foldIntoConvolution(const ShapeEnv &env, Node &conv, const Entry &entry,
                                         const ValueSet &weightOnly, const Uses &uses,
                                         NameHints &hints) {
  const Attribute *transposed = conv.attr("transposed");
  if (transposed && transposed->getBool())
    return false;
  Value *w = conv.operand("weight"), *b = conv.operand("bias");
  if (!weightOnly.contains(w) || (b && !weightOnly.contains(b)))
    return false;
  std::vector<int64_t> wShape = *staticShape(w->type());
  int64_t channels = wShape[0];
  const Type &outType = conv.result()->type();

  std::vector<Step> steps;
  const Value *y = conv.result();
  while (!uses.returned.contains(y)) {
    auto it = uses.users.find(y);
    if (it == uses.users.end() || it->second.size() != 1)
      break;
    Node &user = *it->second.front();
    std::optional<Step> step = matchStep(user, y);
    if (!step || !(user.result()->type() == outType) || !weightOnly.contains(step->factor) ||
        !isPerChannel(step->factor, outType, channels))
      break;
    steps.push_back(*step);
    y = user.result();
  }
  if (steps.empty())
    return false;

  // Every factor is defined before the step using it, so before the last step.
  Node &last = *steps.back().node;
  Emitter e(env, last, conv.loc());
  Value *scale = nullptr, *shift = nullptr;
  for (const Step &step : steps) {
    Value *f = channelVector(e, step.factor, channels);
    switch (step.kind) {
    case Step::Add:
      shift = shift ? e.op(OpKind::AddTensor, {shift, f}) : f;
      break;
    case Step::Sub:
      shift = shift ? e.op(OpKind::SubTensor, {shift, f}) : e.op(OpKind::Neg, {f});
      break;
    case Step::Mul:
      scale = scale ? e.op(OpKind::MulTensor, {scale, f}) : f;
      if (shift)
        shift = e.op(OpKind::MulTensor, {shift, f});
      break;
    }
  }
  Value *weight = w, *bias = b;
  if (scale) {
    std::vector<int64_t> perRow(wShape.size(), 1);
    perRow[0] = channels;
    weight = e.op(OpKind::MulTensor, {w, e.reshape(scale, perRow)});
    if (b)
      bias = e.op(OpKind::MulTensor, {b, scale});
  }
  if (shift)
    bias = bias ? e.op(OpKind::AddTensor, {bias, shift}) : shift;
  Node *folded =
      e.node(OpKind::Convolution, {conv.operand("input"), weight, bias}, conv.explicitAttrs());
  if (llvm::Error err = e.takeError())
    return err;
  if (!(folded->result()->type() == last.result()->type()))
    return error(fmt::format("folding into {} ({}) gave {} instead of {}", conv.name().str(),
                             conv.loc().str(), folded->result()->type().str(),
                             last.result()->type().str()));
  if (!b && bias) {
    llvm::StringRef stem = originName(w, entry);
    stem.consume_back(".weight");
    hints[bias] = (stem + ".bias").str();
  }
  last.parentBlock()->replaceAllUsesWith(last.result(), folded->result());
  return true;
}

/// A text naming what a weight-only value computes, equal for equal computations in any entry.
const std::string &structuralKey(const Value *v, const Entry &entry,
                                 std::map<const Value *, std::string> &memo) {
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  std::string key;
  if (const Node *n = v->definingNode()) {
    key = n->name().str() + "{";
    for (const auto &[name, attr] : n->explicitAttrs())
      key += name + "=" + attr.str() + ",";
    key += "}(";
    for (const Value *op : n->operands())
      key += (op ? structuralKey(op, entry, memo) : std::string("none")) + ",";
    key += "):" + v->type().str();
  } else {
    key = "\"" + entry.inputs()[v->index()].name + "\"";
  }
  return memo[v] = std::move(key);
}

using ValueMap = llvm::DenseMap<const Value *, Value *>;

void cloneNodes(const Block &from, Block &to, ValueMap &map);

/// Appends a copy of `node` to `to`, operands mapped through `map`, which its results join.
void cloneNode(const Node &node, Block &to, ValueMap &map) {
  llvm::SmallVector<Value *, 4> operands;
  for (const Value *v : node.operands())
    operands.push_back(v ? map.lookup(v) : nullptr);
  llvm::SmallVector<Type, 1> types;
  for (unsigned i = 0, e = node.numResults(); i != e; ++i)
    types.push_back(node.result(i)->type());
  Node *copy = to.append(node.kind(), operands, types, node.loc());
  // The attributes come from a node that holds them already.
  for (auto &[name, attr] : node.explicitAttrs())
    llvm::cantFail(copy->setAttr(name, std::move(attr)));
  for (unsigned r = 0, e = node.numRegions(); r != e; ++r) {
    const Block &region = node.region(r);
    Block &regionCopy = copy->addRegion();
    for (unsigned a = 0, n = region.numArguments(); a != n; ++a)
      map[region.argument(a)] = regionCopy.addArgument(region.argument(a)->type());
    cloneNodes(region, regionCopy, map);
    std::vector<Value *> returns;
    for (const Value *v : region.returns())
      returns.push_back(map.lookup(v));
    regionCopy.setReturns(returns);
  }
  for (unsigned i = 0, e = node.numResults(); i != e; ++i)
    map[node.result(i)] = copy->result(i);
}

void cloneNodes(const Block &from, Block &to, ValueMap &map) {
  for (const auto &node : from.nodes())
    cloneNode(*node, to, map);
}

/// Evaluates `values` (weight-only values of `entry`) with the reference interpreter, on a
/// one-entry graph holding just the nodes they need.
llvm::Expected<std::vector<HostTensor>>
evaluate(const Entry &entry, llvm::ArrayRef<const Value *> values, const ExportedProgram &program) {
  ValueSet needed;
  std::vector<const Value *> stack(values.begin(), values.end());
  while (!stack.empty()) {
    const Value *v = stack.back();
    stack.pop_back();
    if (!needed.insert(v).second)
      continue;
    if (const Node *n = v->definingNode())
      for (const Value *op : n->operands())
        if (op)
          stack.push_back(op);
  }

  Graph g("fold");
  Entry &fold = g.addEntry("fold");
  ValueMap map;
  llvm::StringMap<HostTensor> state;
  for (unsigned i = 0, e = entry.inputs().size(); i != e; ++i) {
    const Value *arg = entry.body().argument(i);
    if (!needed.contains(arg))
      continue;
    const InputSpec &in = entry.inputs()[i];
    if (llvm::Error err = g.addState({in.kind, in.name, arg->type()}))
      return err;
    map[arg] = fold.addInput(in, arg->type());
    const Weight *w = program.findWeight(in.name);
    auto view = HostTensor::view(w->dtype(), w->shape(), w->bytes(), nullptr);
    if (!view)
      return view.takeError();
    state[in.name] = std::move(*view);
  }
  for (const auto &node : entry.body().nodes())
    if (needed.contains(node->result()))
      cloneNode(*node, fold.body(), map);
  for (size_t i = 0; i < values.size(); ++i)
    fold.addOutput({OutputKind::User, fmt::format("v{}", i)}, map.lookup(values[i]));
  return interpret(g, "fold", {}, [&](llvm::StringRef name) -> const HostTensor * {
    auto it = state.find(name);
    return it == state.end() ? nullptr : &it->second;
  });
}

/// The names of the state tensors some entry reads (a node operand or a returned value).
llvm::StringSet<> usedState(const Graph &g) {
  llvm::StringSet<> used;
  for (const auto &entry : g.entries()) {
    ValueSet operands(entry->body().returns().begin(), entry->body().returns().end());
    for (const auto &node : entry->body().nodes())
      for (const Value *v : node->operands())
        operands.insert(v);
    for (unsigned i = 0, e = entry->inputs().size(); i != e; ++i)
      if (entry->inputs()[i].kind != InputKind::User &&
          operands.contains(entry->body().argument(i)))
        used.insert(entry->inputs()[i].name);
  }
  return used;
}

/// A copy of `g` without the state tensors `removed` and without the entry inputs bound to them
/// (graphs offer no way to drop a block argument in place).
std::unique_ptr<Graph> withoutState(const Graph &g, const llvm::StringSet<> &removed) {
  auto out = std::make_unique<Graph>(g.name());
  out->setOpset(g.opsetMajor(), g.opsetMinor());
  out->shapeEnv() = g.shapeEnv();
  for (const StateTensor &st : g.state())
    if (!removed.contains(st.name))
      llvm::cantFail(out->addState(st));
  for (const auto &entry : g.entries()) {
    Entry &copy = out->addEntry(entry->name());
    ValueMap map;
    for (unsigned i = 0, e = entry->inputs().size(); i != e; ++i) {
      const InputSpec &in = entry->inputs()[i];
      const Value *arg = entry->body().argument(i);
      if (in.kind == InputKind::User || !removed.contains(in.name))
        map[arg] = copy.addInput(in, arg->type());
    }
    cloneNodes(entry->body(), copy.body(), map);
    for (unsigned o = 0, e = entry->outputs().size(); o != e; ++o)
      copy.addOutput(entry->outputs()[o], map.lookup(entry->body().returns()[o]));
  }
  return out;
}

/// Folds the scale/shift steps after every convolution of `entry`.
llvm::Error foldConvolutions(Graph &g, Entry &entry, const llvm::StringSet<> &foldable,
                             NameHints &hints) {
  ValueSet weightOnly = weightOnlyValues(entry, foldable);
  Uses uses(entry.body());
  std::vector<Node *> convs;
  for (const auto &node : entry.body().nodes())
    if (node->kind() == OpKind::Convolution)
      convs.push_back(node.get());
  bool changed = false;
  for (Node *conv : convs) {
    auto folded = foldIntoConvolution(g.shapeEnv(), *conv, entry, weightOnly, uses, hints);
    if (!folded)
      return error(fmt::format("entry @{}: {}", entry.name(), llvm::toString(folded.takeError())));
    changed |= *folded;
  }
  // The steps folded away still read the weights; they must go before anything is evaluated.
  if (changed)
    eliminateDeadCode(entry.body());
  return llvm::Error::success();
}

/// Everything one folding run shares across entries.
struct FoldState {
  ExportedProgram &program;
  llvm::StringSet<> foldable;
  llvm::StringSet<> takenNames;
  /// Structural key -> the constant holding that computation, so that entries share constants.
  std::map<std::string, std::string> constants;
};

std::string uniqueName(FoldState &s, const std::string &origin) {
  std::string name = origin + ".folded";
  for (unsigned n = 1; s.takenNames.contains(name); ++n)
    name = fmt::format("{}.folded.{}", origin, n);
  s.takenNames.insert(name);
  return name;
}

/// Makes `bases` read the constants folding gave them, each one a new input of `entry`.
void replaceByConstants(FoldState &s, Entry &entry, llvm::ArrayRef<Value *> bases,
                        std::map<const Value *, std::string> &memo) {
  llvm::StringMap<Value *> inputs;
  for (Value *base : bases) {
    const std::string &name = s.constants[structuralKey(base, entry, memo)];
    Value *&input = inputs[name];
    if (!input)
      input = entry.addInput({InputKind::Constant, name}, base->type());
    entry.body().replaceAllUsesWith(base, input);
  }
  eliminateDeadCode(entry.body());
}

/// Replaces every computing weight-only value of `entry` that something else reads by a constant.
llvm::Error foldEntry(FoldState &s, Entry &entry, NameHints &hints) {
  Graph &g = *s.program.graph;
  ValueSet weightOnly = weightOnlyValues(entry, s.foldable);

  // The weight-only values read from outside the weight-only subgraph, less the views on top of
  // them: a view of a weight costs nothing, and a view of a computed one stays a view of its
  // constant.
  llvm::SetVector<Value *> bases;
  auto consider = [&](Value *v) {
    if (!v || !weightOnly.contains(v))
      return;
    Value *root = v;
    while (const Node *n = v->definingNode()) {
      if (n->schema().trait != OpTrait::View)
        break;
      v = n->operand(0);
    }
    if (!v->definingNode())
      return;
    // A copy: inserting may grow the map under a reference into it.
    if (auto hint = hints.find(root); hint != hints.end())
      hints.try_emplace(v, std::string(hint->second));
    bases.insert(v);
  };
  for (const auto &node : entry.body().nodes())
    if (!isWeightOnlyNode(*node, weightOnly))
      for (Value *v : node->operands())
        consider(v);
  for (Value *v : entry.body().returns())
    consider(v);
  if (bases.empty())
    return llvm::Error::success();

  std::map<const Value *, std::string> memo;
  std::vector<const Value *> toEvaluate;
  std::set<std::string> keys;
  for (Value *base : bases) {
    const std::string &key = structuralKey(base, entry, memo);
    if (!s.constants.count(key) && keys.insert(key).second)
      toEvaluate.push_back(base);
  }
  auto results =
      toEvaluate.empty() ? std::vector<HostTensor>{} : evaluate(entry, toEvaluate, s.program);
  if (!results)
    return error(fmt::format("entry @{}: evaluating weight-only nodes: {}", entry.name(),
                             llvm::toString(results.takeError())));
  for (size_t i = 0; i < toEvaluate.size(); ++i) {
    const Value *base = toEvaluate[i];
    auto hint = hints.find(base);
    std::string name = uniqueName(s, hint != hints.end() ? hint->second : originName(base, entry));
    s.constants[structuralKey(base, entry, memo)] = name;
    if (llvm::Error err = g.addState({InputKind::Constant, name, base->type()}))
      return err;
    // A result viewing a weight would outlive the weight once that is removed: own it.
    (*results)[i].mutableData();
    auto data = std::make_shared<HostTensor>(std::move((*results)[i]));
    s.program.weights.emplace_back(name, data->dtype(), std::vector<int64_t>(data->shape()),
                                   data->bytes(), data);
  }
  replaceByConstants(s, entry, bases.getArrayRef(), memo);
  return llvm::Error::success();
}

} // namespace

llvm::Error foldWeights(ExportedProgram &program) {
  Graph &g = *program.graph;
  FoldState s{program, foldableState(program), {}, {}};
  for (const StateTensor &st : g.state())
    s.takenNames.insert(st.name);
  llvm::StringSet<> usedBefore = usedState(g);

  for (const auto &entry : g.entries()) {
    // Hints name values of this entry only, which folding erases.
    NameHints hints;
    if (llvm::Error err = foldConvolutions(g, *entry, s.foldable, hints))
      return err;
    if (llvm::Error err = foldEntry(s, *entry, hints))
      return err;
  }

  llvm::StringSet<> usedAfter = usedState(g);
  llvm::StringSet<> removed;
  for (const StateTensor &st : g.state())
    if (usedBefore.contains(st.name) && !usedAfter.contains(st.name))
      removed.insert(st.name);
  if (removed.empty())
    return llvm::Error::success();
  program.graph = withoutState(g, removed);
  llvm::erase_if(program.weights, [&](const Weight &w) { return removed.contains(w.name()); });
  return llvm::Error::success();
}

} // namespace aotc
