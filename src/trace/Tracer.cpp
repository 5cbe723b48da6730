// The tracing context: binding DSL tensors to IR values, emitting nodes, answering symbolic
// comparisons through the shape environment and reporting problems with their source lines.
#include "Tracer.h"

#include <fmt/format.h>

#include <numeric>
#include <set>

namespace aotc {

static thread_local Tracer *CurrentTracer = nullptr;

// ModuleHolder's call operator (aotc/nn/Module.h) calls a forward whose location parameter
// follows defaulted ones (nn::MultiheadAttention's: `attn(q, k, v)`) without it, so that the
// location is the holder's own line, no place of the user's; the line that called the holder,
// which the holder entered as the innermost call, stands in for it.
static bool isHolderLine(const Loc &loc) {
  return llvm::StringRef(loc.file_name()).ends_with("aotc/nn/Module.h");
}

SourceLoc toSourceLoc(const Loc &loc) {
  if (CurrentTracer && isHolderLine(loc))
    if (std::optional<SourceLoc> caller = CurrentTracer->innermostCall())
      return *caller;
  SourceLoc s;
  s.file = loc.file_name();
  s.line = loc.line();
  s.column = loc.column();
  return s;
}

std::string TraceProblem::str() const {
  std::string chain;
  for (const SourceLoc &c : calls)
    if (&c != &calls.back() || c.file != loc.file || c.line != loc.line) // not `f.cpp:6 -> f.cpp:6`
      chain += fmt::format("{}:{} -> ", c.file, c.line);
  return chain + (loc.isKnown() ? fmt::format("{}:{}: {}", loc.file, loc.line, message) : message);
}

void Tracer::enterCall(SourceLoc loc) { Calls.push_back(std::move(loc)); }

std::optional<SourceLoc> Tracer::innermostCall() const {
  if (Calls.empty())
    return std::nullopt;
  return Calls.back();
}

void Tracer::leaveCall(bool unwinding) {
  if (unwinding && Unwound.empty())
    Unwound = Calls;
  if (!Calls.empty())
    Calls.pop_back();
}

std::vector<SourceLoc> Tracer::currentCalls() {
  std::vector<SourceLoc> calls = Calls.empty() ? std::move(Unwound) : Calls;
  Unwound.clear();
  return calls;
}

Tracer::Tracer(Graph &graph, bool report) : G(graph), Report(report), Previous(CurrentTracer) {
  CurrentTracer = this;
}

Tracer::~Tracer() { CurrentTracer = Previous; }

Tracer *Tracer::current() { return CurrentTracer; }

void Tracer::beginEntry(Entry &entry) {
  E = &entry;
  Scopes.clear();
  Scopes.push_back({&entry.body(), NextGeneration++, nullptr, {}});
  Written.clear();
  Calls.clear();
  Unwound.clear();
}

void Tracer::fail(SourceLoc loc, std::string message) {
  Problems.push_back({std::move(loc), std::move(message), currentCalls()});
  if (!Report)
    throw TraceAbort();
}

Tensor Tracer::wrap(Value *v, const SourceLoc &loc) {
  auto impl = std::make_shared<detail::TensorImpl>();
  impl->type = v->type();
  impl->loc = loc;
  impl->value = v;
  impl->generation = Scopes.back().generation;
  return Tensor(impl);
}

Tensor Tracer::addConstant(std::shared_ptr<const HostTensor> data, const Loc &loc) {
  auto impl = std::make_shared<detail::TensorImpl>();
  Shape shape(data->shape().begin(), data->shape().end());
  impl->type = Type::tensor(data->dtype(), shape);
  impl->loc = toSourceLoc(loc);
  impl->isState = true;
  impl->stateKind = InputKind::Constant;
  impl->stateName = fmt::format("_tensor_constant{}", Constants.size());
  impl->init = {InitSpec::Kind::Data, 0, 0, std::move(data)};
  if (llvm::Error e = G.addState({InputKind::Constant, impl->stateName, impl->type})) {
    fail(toSourceLoc(loc), llvm::toString(std::move(e)));
    throw TraceAbort();
  }
  Constants.emplace_back(impl);
  return Constants.back();
}

Value *Tracer::valueOf(const Tensor &t, const Loc &loc) {
  detail::TensorImpl &impl = *t.impl();
  const Scope &entryScope = Scopes.front();
  if (impl.isState && impl.generation != entryScope.generation) {
    // First use of a parameter or buffer in this entry: it becomes an entry input.
    impl.value = E->addInput({impl.stateKind, impl.stateName}, impl.type);
    impl.generation = entryScope.generation;
    impl.stateInput = impl.value;
  }
  if (impl.generation == Scopes.back().generation)
    return impl.value;
  if (impl.generation == 0) {
    fail(toSourceLoc(loc),
         fmt::format("the tensor created at {} outside of tracing is neither a parameter nor a "
                     "buffer; register it with register_parameter or register_buffer",
                     impl.loc.str()));
    throw TraceAbort();
  }
  // A value of an enclosing block used inside a cond branch becomes an argument of the branch.
  Scope &inner = Scopes.back();
  if (Scopes.size() < 2 || Scopes[Scopes.size() - 2].generation != impl.generation) {
    fail(toSourceLoc(loc), "a tensor from another entry, or from outside an enclosing cond's "
                           "parent, cannot be used here; pass it as an operand of aotc::cond");
    throw TraceAbort();
  }
  for (size_t i = 0; i < inner.lifted->size(); ++i)
    if ((*inner.lifted)[i] == impl.value && i < inner.liftedArgs.size())
      return inner.liftedArgs[i];
  auto it = std::find(inner.lifted->begin(), inner.lifted->end(), impl.value);
  if (it == inner.lifted->end()) {
    inner.lifted->push_back(impl.value);
    it = inner.lifted->end() - 1;
  }
  // Region arguments follow the order of `lifted`, so add any missing ones up to this value.
  size_t index = it - inner.lifted->begin();
  while (inner.liftedArgs.size() <= index)
    inner.liftedArgs.push_back(
        inner.block->addArgument((*inner.lifted)[inner.liftedArgs.size()]->type()));
  return inner.liftedArgs[index];
}

std::vector<Tensor>
Tracer::traceRegion(Block &region, const std::vector<Tensor> &args, std::vector<Value *> &lifted,
                    const std::function<std::vector<Tensor>(const std::vector<Tensor> &)> &fn) {
  Scope scope{&region, NextGeneration++, &lifted, {}};
  std::vector<Tensor> inside;
  for (const Tensor &a : args) {
    Value *arg = region.addArgument(a.impl()->type);
    auto impl = std::make_shared<detail::TensorImpl>();
    impl->type = arg->type();
    impl->loc = a.impl()->loc;
    impl->value = arg;
    impl->generation = scope.generation;
    inside.push_back(Tensor(impl));
  }
  for (Value *v : lifted)
    scope.liftedArgs.push_back(region.addArgument(v->type()));
  Scopes.push_back(std::move(scope));
  struct Pop {
    std::vector<Scope> &s;
    ~Pop() { s.pop_back(); }
  } pop{Scopes};
  std::vector<Tensor> out = fn(inside);
  std::vector<Value *> returns;
  for (const Tensor &t : out) {
    if (!t.defined()) {
      fail({}, "a cond branch returned an undefined tensor");
      throw TraceAbort();
    }
    returns.push_back(valueOf(t, Loc::current()));
  }
  region.setReturns(returns);
  return out;
}

void Tracer::noteBufferWrite(const std::shared_ptr<detail::TensorImpl> &buffer) {
  if (std::find(Written.begin(), Written.end(), buffer) == Written.end())
    Written.push_back(buffer);
}

//===----------------------------------------------------------------------===//
// Emitting ops
//===----------------------------------------------------------------------===//

void Tracer::prepareBroadcast(const std::vector<const Type *> &types, const Loc &loc) {
  size_t rank = 0;
  for (const Type *t : types)
    rank = std::max(rank, t->rank());
  for (size_t i = 0; i < rank; ++i) {
    std::optional<SymExpr> first;
    for (const Type *t : types) {
      if (t->rank() + i < rank)
        continue;
      const SymExpr &d = t->shape()[t->rank() - rank + i];
      if (d == SymExpr(1))
        continue;
      if (!first) {
        first = d;
        continue;
      }
      requireSameSize(*first, d, loc);
    }
  }
}

void Tracer::prepareConcat(OpKind kind, const std::vector<const Type *> &types, int64_t dim,
                           const Loc &loc) {
  size_t rank = types.front()->rank();
  for (const Type *t : types)
    if (t->rank() != rank)
      return; // the meta function reports it
  if (kind == OpKind::Cat && dim < 0)
    dim += static_cast<int64_t>(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (kind == OpKind::Cat && static_cast<int64_t>(i) == dim)
      continue;
    for (const Type *t : types)
      requireSameSize(types.front()->shape()[i], t->shape()[i], loc);
  }
}

void Tracer::requireSameSize(const SymExpr &a, const SymExpr &b, const Loc &loc) {
  if (a == b || env().proveEQ(a, b) == Truth::True)
    return;
  bool aDynamic = !a.isConstant(), bDynamic = !b.isConstant();
  // Two dynamic dims that meet must be equal: recorded, never specialized.
  if (aDynamic && bDynamic)
    decide(GuardKind::EQ, a, b, loc);
  else if (aDynamic || bDynamic)
    decide(GuardKind::EQ, aDynamic ? a : b, aDynamic ? b : a, loc);
}

std::vector<Tensor> Tracer::emit(OpKind kind, const std::vector<Tensor> &operands,
                                 std::vector<NamedAttribute> attrs, const Loc &loc) {
  std::vector<Value *> values;
  std::vector<const Type *> types;
  for (const Tensor &t : operands) {
    values.push_back(t.defined() ? valueOf(t, loc) : nullptr);
    if (t.defined())
      types.push_back(&t.impl()->type);
  }
  const OpSchema &schema = schemaOf(kind);
  if (schema.trait == OpTrait::Pointwise && types.size() > 1)
    prepareBroadcast(types, loc);
  if (kind == OpKind::Embedding || kind == OpKind::IndexSelect || kind == OpKind::Slice)
    checkReach(kind, operands, attrs, loc);
  if ((kind == OpKind::Cat || kind == OpKind::Stack) && types.size() > 1)
    for (const NamedAttribute &a : attrs)
      if (auto dim = a.first == "dim" ? a.second.getInt().constant() : std::nullopt)
        prepareConcat(kind, types, *dim, loc);
  Builder b(env(), *Scopes.back().block);
  auto node = b.create(kind, values, attrs, toSourceLoc(loc));
  if (!node) {
    Problems.push_back({toSourceLoc(loc), llvm::toString(node.takeError()), currentCalls()});
    throw TraceAbort();
  }
  std::vector<Tensor> out;
  for (Value *r : (*node)->results())
    out.push_back(wrap(r, toSourceLoc(loc)));
  return out;
}

Node *Tracer::beginNode(OpKind kind, const std::vector<Value *> &operands, const Loc &loc) {
  return Scopes.back().block->append(kind, operands, {}, toSourceLoc(loc));
}

std::vector<Tensor> Tracer::finishNode(Node *node, const std::vector<Value *> &extraOperands,
                                       const Loc &loc) {
  std::vector<Value *> operands(node->operands().begin(), node->operands().end());
  operands.insert(operands.end(), extraOperands.begin(), extraOperands.end());
  node->setOperands(operands);
  auto types = inferResultTypes(*node, env());
  if (!types) {
    std::string message = llvm::toString(types.takeError());
    discardNode(node);
    Problems.push_back({toSourceLoc(loc), message, currentCalls()});
    throw TraceAbort();
  }
  std::vector<Tensor> out;
  for (Type &t : *types)
    out.push_back(wrap(node->addResult(std::move(t)), toSourceLoc(loc)));
  return out;
}

void Tracer::discardNode(Node *node) {
  Block &b = *node->parentBlock();
  b.erase(b.find(node));
}

//===----------------------------------------------------------------------===//
// Symbolic comparisons
//===----------------------------------------------------------------------===//

namespace {
// `batch > 4` reads better than the stored `4 < batch`.
std::string requirement(const Guard &g) {
  if (g.lhs.isConstant() && !g.rhs.isConstant() &&
      (g.kind == GuardKind::LT || g.kind == GuardKind::LE))
    return fmt::format("{} {} {}", g.rhs.str(), g.kind == GuardKind::LT ? ">" : ">=", g.lhs.str());
  return g.str();
}

bool holds(GuardKind kind, int64_t a, int64_t b) {
  switch (kind) {
  case GuardKind::EQ:
    return a == b;
  case GuardKind::NE:
    return a != b;
  case GuardKind::LE:
    return a <= b;
  case GuardKind::LT:
    return a < b;
  }
  return false;
}
} // namespace

std::string Tracer::rangesOf(const std::set<std::string, std::less<>> &symbols) {
  std::string ranges;
  for (const std::string &name : symbols) {
    const SymbolDecl *s = env().findSymbol(name);
    ranges += fmt::format("{}{} in {}..{}", ranges.empty() ? "" : ", ", name, s ? s->lo : 0,
                          s ? s->hi : 0);
  }
  return ranges;
}

const SymbolDecl *Tracer::equatedRoot(const SymExpr &a, const SymExpr &b) {
  for (const auto &[dim, other] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    auto name = dim->symbolName();
    const SymbolDecl *root = name ? env().findSymbol(*name) : nullptr;
    if (!root)
      continue;
    std::set<std::string, std::less<>> used;
    env().expand(*other).collectSymbols(used);
    if (!used.empty() && !used.count(root->name))
      return root;
  }
  return nullptr;
}

bool Tracer::decide(GuardKind kind, const SymExpr &a, const SymExpr &b, const Loc &loc,
                    const std::string &why) {
  auto equalByGuard = [&] {
    for (const Guard &g : env().guards())
      if (g.kind == GuardKind::EQ && ((g.lhs == a && g.rhs == b) || (g.lhs == b && g.rhs == a)))
        return true;
    return false;
  };
  Truth t = Truth::Unknown;
  switch (kind) {
  case GuardKind::EQ:
    t = equalByGuard() ? Truth::True : env().proveEQ(a, b);
    break;
  case GuardKind::NE:
    t = equalByGuard() ? Truth::False : env().proveEQ(a, b);
    t = t == Truth::True ? Truth::False : t == Truth::False ? Truth::True : t;
    break;
  case GuardKind::LE:
    t = env().proveLE(a, b);
    break;
  case GuardKind::LT:
    t = env().proveLT(a, b);
    break;
  }
  if (t != Truth::Unknown)
    return t == Truth::True;

  Guard guard{a, kind, b, toSourceLoc(loc)};
  std::set<std::string, std::less<>> symbols;
  env().expand(a - b).collectSymbols(symbols);
  // Two dynamic dims that must be equal (broadcasting, matching sizes): a recorded equality.
  if (kind == GuardKind::EQ && a.symbolName() && b.symbolName()) {
    env().addGuard(guard);
    return true;
  }
  std::string message;
  const SymbolDecl *s = symbols.size() == 1 ? env().findSymbol(*symbols.begin()) : nullptr;
  if (s) {
    // The longest run of values the dim may take (within its range, multiples of its divisor)
    // for which the guard holds: the range to suggest.
    SymExpr ea = env().expand(a), eb = env().expand(b);
    auto ok = [&](int64_t v) {
      std::map<std::string, int64_t, std::less<>> values{{s->name, v}};
      auto x = ea.evaluate(values), y = eb.evaluate(values);
      return x && y && holds(kind, *x, *y);
    };
    int64_t step = s->divisor;
    int64_t first = (s->lo + step - 1) / step * step;
    int64_t last = std::min<int64_t>(s->hi, first + step * (int64_t(1) << 20));
    bool found = false, inRun = false;
    int64_t bestLo = 0, bestHi = 0, runLo = 0;
    for (int64_t v = first; v <= last; v += step) {
      if (!ok(v)) {
        inRun = false;
        continue;
      }
      if (!inRun)
        runLo = v, inRun = true;
      if (!found || v - runLo > bestHi - bestLo)
        bestLo = runLo, bestHi = v, found = true;
    }
    // Whether it holds exactly for the multiples of some k > 1 (a view into pairs of a dim
    // that must stay whole): then the fix is a divisor, not a range.
    int64_t k = 0;
    if (found && last - first <= step * 4096) {
      for (int64_t v = first; v <= last; v += step)
        if (ok(v))
          k = std::gcd(k, v);
      for (int64_t v = first; k > 1 && v <= last; v += step)
        if (ok(v) != (v % k == 0))
          k = 0;
    }
    std::string range = fmt::format("{}..{}", s->lo, s->hi);
    message = fmt::format("{} is dynamic in {} but this code requires {}", s->name, range,
                          requirement(guard));
    if (!found)
      message += fmt::format(", which no value of {} in {} satisfies", s->name, range);
    else if (k > 1 && k > bestHi - bestLo)
      message += fmt::format(", which holds for the multiples of {}; declare aotc::dim(\"{}\", "
                             "{}, {}).multiple_of({})",
                             k, s->name, (s->lo + k - 1) / k * k, s->hi / k * k, k);
    else
      message += fmt::format("; export with --dyn {}={}..{}", s->name, bestLo, bestHi);
  } else if (const SymbolDecl *root = kind == GuardKind::EQ ? equatedRoot(a, b) : nullptr) {
    // One side is a dim of its own that the other side's dims determine: a derived dim.
    auto aName = a.symbolName();
    const SymExpr &other = aName && *aName == root->name ? b : a;
    message = fmt::format("this code requires {}, which the ranges of the dynamic dims ({}) do not "
                          "guarantee; if {} always equals {}, declare it as "
                          "aotc::derived_dim(\"{}\", \"{}\") instead of a dim of its own",
                          requirement(guard), rangesOf(symbols), root->name, other.str(),
                          root->name, other.str());
  } else {
    message = fmt::format("this code requires {}, which the ranges of the dynamic dims ({}) do "
                          "not guarantee; narrow them with --dyn or declare the relation with "
                          "aotc::derived_dim",
                          requirement(guard), rangesOf(symbols));
  }
  fail(toSourceLoc(loc), why.empty() ? message : why + ": " + message);
  // Report mode carries on as if the guard held, to find the problems after it.
  env().addGuard(guard);
  return true;
}

int64_t Tracer::concrete(const SymExpr &e, const Loc &loc) {
  if (auto c = e.constant())
    return *c;
  std::set<std::string, std::less<>> symbols;
  env().expand(e).collectSymbols(symbols);
  std::string dims;
  for (const std::string &s : symbols) {
    const SymbolDecl *d = env().findSymbol(s);
    dims += fmt::format("{}{} (dynamic in {}..{})", dims.empty() ? "" : ", ", s, d ? d->lo : 0,
                        d ? d->hi : 0);
  }
  fail(toSourceLoc(loc),
       fmt::format("this code needs {} as a plain integer, but it depends on {}; keep it as an "
                   "aotc::SymInt, or make the dim static",
                   e.str(), dims));
  // Any value chosen here would make the shapes after it wrong, so even report mode stops
  // tracing this entry (the other entries are still traced).
  throw TraceAbort();
}

void Tracer::dataDependentBranch(const detail::TensorImpl &t) {
  fail(t.loc, fmt::format("a branch on a tensor's value ({}) cannot be traced: the value is not "
                          "known at export time; use aotc::cond(pred, then_fn, else_fn, "
                          "operands) to trace both branches",
                          t.type.str()));
}

} // namespace aotc
