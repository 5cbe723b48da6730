// The interpreter's driver: finds the entry, binds its dims, checks the state tensors, runs the
// nodes in order (cond by running the chosen region), dispatches each op to its kernel family
// and checks every result against its result type evaluated with the bound dims.
#include "Kernels.h"

#include "aotc/ir/Printer.h"
#include "aotc/ir/Resample.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"

namespace aotc {

namespace interp {

const HostTensor *KernelContext::tensor(llvm::StringRef name) const {
  std::optional<unsigned> i = N.schema().operandIndex(name, Operands.size());
  return i && *i < Operands.size() ? Operands[*i] : nullptr;
}

llvm::ArrayRef<const HostTensor *> KernelContext::tensorList() const {
  const OpSchema &s = N.schema();
  unsigned index = 0;
  for (const ArgSchema &a : s.args) {
    if (a.type == ArgType::TensorList)
      return Operands.slice(index, Operands.size() - s.numFixedOperands());
    if (a.type == ArgType::Tensor)
      ++index;
  }
  return {};
}

llvm::Expected<int64_t> KernelContext::evaluate(const SymExpr &e, llvm::StringRef attrName) const {
  if (auto v = e.evaluate(Symbols))
    return *v;
  return error("attribute '{}' = {} cannot be evaluated with the bound dims", attrName.str(),
               e.str());
}

llvm::Expected<int64_t> KernelContext::getInt(llvm::StringRef name) const {
  const Attribute *a = N.attr(name);
  if (!a || a->kind() != Attribute::Kind::Int)
    return error("attribute '{}' is missing", name.str());
  return evaluate(a->getInt(), name);
}

llvm::Expected<std::optional<int64_t>> KernelContext::getOptionalInt(llvm::StringRef name) const {
  if (!N.attr(name))
    return std::nullopt;
  auto v = getInt(name);
  if (!v)
    return v.takeError();
  return *v;
}

llvm::Expected<Dims> KernelContext::getInts(llvm::StringRef name) const {
  const Attribute *a = N.attr(name);
  Dims out;
  if (!a)
    return out;
  if (a->kind() == Attribute::Kind::Int) {
    auto v = evaluate(a->getInt(), name);
    if (!v)
      return v.takeError();
    out.push_back(*v);
    return out;
  }
  if (a->kind() != Attribute::Kind::IntList)
    return error("attribute '{}' is not a list of ints", name.str());
  for (const SymExpr &e : a->getIntList()) {
    auto v = evaluate(e, name);
    if (!v)
      return v.takeError();
    out.push_back(*v);
  }
  return out;
}

llvm::Expected<std::optional<Scalar>> KernelContext::getScalar(llvm::StringRef name) const {
  const Attribute *a = N.attr(name);
  if (!a)
    return std::nullopt;
  Scalar s;
  switch (a->kind()) {
  case Attribute::Kind::Float:
    s.kind = Scalar::Kind::Float;
    s.f = a->getFloat();
    return s;
  case Attribute::Kind::Bool:
    s.kind = Scalar::Kind::Bool;
    s.i = a->getBool();
    return s;
  case Attribute::Kind::Int: {
    auto v = evaluate(a->getInt(), name);
    if (!v)
      return v.takeError();
    s.i = *v;
    return s;
  }
  default:
    return error("attribute '{}' is not a number", name.str());
  }
}

std::optional<double> KernelContext::getFloat(llvm::StringRef name) const {
  const Attribute *a = N.attr(name);
  if (a && a->kind() == Attribute::Kind::Float)
    return a->getFloat();
  if (a && a->kind() == Attribute::Kind::Int)
    if (auto c = a->getInt().constant())
      return static_cast<double>(*c);
  return std::nullopt;
}

bool KernelContext::getBool(llvm::StringRef name) const {
  const Attribute *a = N.attr(name);
  return a && a->kind() == Attribute::Kind::Bool && a->getBool();
}

std::string KernelContext::getStr(llvm::StringRef name) const {
  const Attribute *a = N.attr(name);
  return a && a->kind() == Attribute::Kind::Str ? a->getStr() : std::string();
}

std::optional<DType> KernelContext::getDType(llvm::StringRef name) const {
  const Attribute *a = N.attr(name);
  if (!a || a->kind() != Attribute::Kind::DType)
    return std::nullopt;
  return a->getDType();
}

llvm::Expected<DType>
KernelContext::commonDType(llvm::ArrayRef<const HostTensor *> tensors,
                           llvm::ArrayRef<llvm::StringRef> scalarAttrs) const {
  llvm::SmallVector<ResultTypeOperand, 4> ops;
  for (const HostTensor *t : tensors)
    ops.push_back(
        {t->rank() ? ResultTypeOperand::Kind::Tensor : ResultTypeOperand::Kind::ZeroDimTensor,
         t->dtype()});
  for (llvm::StringRef name : scalarAttrs) {
    auto s = getScalar(name);
    if (!s)
      return s.takeError();
    if (*s)
      ops.push_back({ResultTypeOperand::Kind::Number, (*s)->numberDType()});
  }
  return aotc::resultType(ops);
}

} // namespace interp

namespace {

using namespace interp;

KernelResult dispatch(const KernelContext &ctx) {
  switch (ctx.node().schema().trait) {
  case OpTrait::Pointwise:
    return runPointwise(ctx);
  case OpTrait::Reduction:
    return runReduction(ctx);
  case OpTrait::Normalization:
    if (ctx.kind() == OpKind::Softmax || ctx.kind() == OpKind::LogSoftmax)
      return runReduction(ctx);
    return runNormPool(ctx);
  case OpTrait::Contraction:
    if (ctx.kind() == OpKind::Sdpa)
      return runNormPool(ctx);
    return runLinalg(ctx);
  case OpTrait::Pooling:
    return runNormPool(ctx);
  case OpTrait::Indexing:
    return runIndexing(ctx);
  case OpTrait::Layout:
    if (ctx.kind() == OpKind::Pad || upsampleOp(ctx.kind()))
      return runResample(ctx);
    return runShape(ctx);
  case OpTrait::View:
  case OpTrait::Creation:
  case OpTrait::Scalars:
    return runShape(ctx);
  case OpTrait::ControlFlow:
    break;
  }
  return error("no kernel for this op");
}

/// Runs the blocks of one entry with the dims of one call.
class Runner {
public:
  Runner(const Entry &e, const SymbolValues &symbols) : E(e), Symbols(symbols) {}

  llvm::Expected<std::vector<HostTensor>> runBlock(const Block &b, std::vector<HostTensor> args) {
    llvm::DenseMap<const Value *, HostTensor> env;
    // Each value is released after its last use, so a long graph does not hold every
    // intermediate result at once.
    llvm::DenseMap<const Value *, unsigned> uses;
    for (const auto &n : b.nodes())
      for (Value *v : n->operands())
        if (v)
          ++uses[v];
    for (Value *v : b.returns())
      ++uses[v];
    for (unsigned i = 0; i < b.numArguments(); ++i)
      env[b.argument(i)] = std::move(args[i]);

    for (const auto &n : b.nodes()) {
      llvm::SmallVector<const HostTensor *, 4> operands;
      for (Value *v : n->operands()) {
        if (!v) {
          operands.push_back(nullptr);
          continue;
        }
        auto it = env.find(v);
        if (it == env.end())
          return nodeError(*n, error("an operand is not defined before its use"));
        operands.push_back(&it->second);
      }
      auto results = runNode(*n, operands);
      if (!results)
        return results.takeError();
      if (llvm::Error err = checkResults(*n, *results))
        return nodeError(*n, std::move(err));
      for (Value *v : n->operands())
        if (v && --uses[v] == 0)
          env.erase(v);
      for (unsigned i = 0; i < n->numResults(); ++i)
        if (uses.lookup(n->result(i)))
          env[n->result(i)] = std::move((*results)[i]);
    }

    std::vector<HostTensor> out;
    for (Value *v : b.returns()) {
      auto it = env.find(v);
      if (it == env.end())
        return error("entry \"{}\": a returned value is not defined", E.name());
      // A value returned once moves out; one returned twice is copied for all but the last.
      if (--uses[v] == 0)
        out.push_back(std::move(it->second));
      else
        out.push_back(it->second);
    }
    return out;
  }

private:
  // Errors come back naming the node that failed: this one, or one inside a region of cond.
  KernelResult runNode(const Node &n, llvm::ArrayRef<const HostTensor *> operands) {
    if (n.kind() != OpKind::Cond) {
      auto results = dispatch(KernelContext(n, operands, Symbols));
      if (!results)
        return nodeError(n, results.takeError());
      return results;
    }
    // cond: the predicate picks a region, which runs on the remaining operands.
    const HostTensor *pred = operands[0];
    if (!pred || pred->numel() != 1)
      return nodeError(n, error("pred must have one element, got {}",
                                pred ? describe(pred->dtype(), pred->shape()) : "none"));
    if (n.numRegions() != 2)
      return nodeError(n, error("needs two regions, got {}", n.numRegions()));
    const Block &region = n.region(readTruth(*pred)[0] ? 0 : 1);
    std::vector<HostTensor> args;
    for (const HostTensor *t : operands.drop_front())
      args.push_back(*t);
    if (args.size() != region.numArguments())
      return nodeError(n, error("the region takes {} arguments but {} operands are passed",
                                region.numArguments(), args.size()));
    auto out = runBlock(region, std::move(args));
    if (!out)
      return out.takeError();
    return llvm::SmallVector<HostTensor, 1>(std::make_move_iterator(out->begin()),
                                            std::make_move_iterator(out->end()));
  }

  // The oracle checks itself: a kernel's output must have the dtype and the shape that the
  // result type, evaluated with this call's dims, says.
  llvm::Error checkResults(const Node &n, llvm::ArrayRef<HostTensor> results) const {
    if (results.size() != n.numResults())
      return error("the kernel produced {} results but the node has {}", results.size(),
                   n.numResults());
    for (unsigned i = 0; i < n.numResults(); ++i) {
      const Type &t = n.result(i)->type();
      Dims expected;
      for (const SymExpr &d : t.shape()) {
        auto v = d.evaluate(Symbols);
        if (!v)
          return error("result type {} cannot be evaluated with the bound dims", t.str());
        expected.push_back(*v);
      }
      const HostTensor &r = results[i];
      if (r.dtype() != t.dtype() || r.shape() != llvm::ArrayRef<int64_t>(expected))
        return error("internal error: the kernel produced {} but the result type {} is {} here",
                     describe(r.dtype(), r.shape()), t.str(), describe(t.dtype(), expected));
    }
    return llvm::Error::success();
  }

  // `entry "forward": %5 = aten.embedding (model.cpp:12:5): <message>`
  llvm::Error nodeError(const Node &n, llvm::Error err) {
    if (Ids.empty())
      Ids = numberValues(E);
    std::vector<std::string> results;
    for (unsigned i = 0; i < n.numResults(); ++i)
      results.push_back(fmt::format("%{}", Ids.lookup(n.result(i))));
    std::string loc = n.loc().isKnown() ? " (" + n.loc().str() + ")" : "";
    return error("entry \"{}\": {} = {}{}: {}", E.name(), llvm::join(results, ", "), n.name().str(),
                 loc, llvm::toString(std::move(err)));
  }

  const Entry &E;
  const SymbolValues &Symbols;
  llvm::DenseMap<const Value *, unsigned> Ids;
};

// A state tensor must exist and have the dtype and shape of the entry's argument.
llvm::Expected<HostTensor> stateTensor(const InputSpec &spec, const Type &type,
                                       const SymbolValues &symbols, StateLookup state) {
  const HostTensor *t = state(spec.name);
  if (!t)
    return error("{} \"{}\" is missing", toString(spec.kind).str(), spec.name);
  Dims expected;
  for (const SymExpr &d : type.shape())
    expected.push_back(d.evaluate(symbols).value_or(-1));
  if (t->dtype() != type.dtype() || t->shape() != llvm::ArrayRef<int64_t>(expected))
    return error("{} \"{}\" is {} but the graph declares {}", toString(spec.kind).str(), spec.name,
                 describe(t->dtype(), t->shape()), type.str());
  return *t;
}

} // namespace

llvm::Expected<const Entry *> findEntry(const Graph &g, llvm::StringRef name) {
  std::vector<llvm::StringRef> names;
  for (const auto &e : g.entries()) {
    if (e->name() == name)
      return e.get();
    names.push_back(e->name());
  }
  return error("the graph has no entry \"{}\" (entries: {})", name.str(), llvm::join(names, ", "));
}

llvm::Expected<std::vector<HostTensor>> interpret(const Graph &g, llvm::StringRef entryName,
                                                  llvm::ArrayRef<HostTensor> userInputs,
                                                  StateLookup state) {
  auto entry = findEntry(g, entryName);
  if (!entry)
    return entry.takeError();
  const Entry &e = **entry;
  auto symbols = bindInputs(g, e, userInputs);
  if (!symbols)
    return symbols.takeError();
  if (e.inputs().size() != e.body().numArguments())
    return error("entry \"{}\" describes {} inputs but its body has {} arguments", e.name(),
                 e.inputs().size(), e.body().numArguments());
  std::vector<HostTensor> args;
  size_t user = 0;
  for (unsigned i = 0; i < e.inputs().size(); ++i) {
    const InputSpec &spec = e.inputs()[i];
    if (spec.kind == InputKind::User) {
      args.push_back(userInputs[user++]);
      continue;
    }
    auto t = stateTensor(spec, e.body().argument(i)->type(), *symbols, state);
    if (!t)
      return t.takeError();
    args.push_back(std::move(*t));
  }
  return Runner(e, *symbols).runBlock(e.body(), std::move(args));
}

} // namespace aotc
