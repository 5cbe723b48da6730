// Checks a graph: declared symbols, SSA order, closed regions, operands against schemas, result
// types against meta functions, and the entry signatures against the state tensors.
#include "aotc/ir/Verifier.h"

#include "aotc/ir/Builder.h"
#include "aotc/ir/Printer.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <fmt/format.h>

#include <deque>

namespace aotc {

namespace {

class Verifier {
public:
  explicit Verifier(const Graph &g) : G(g) {}

  llvm::Error run() {
    const ShapeEnv &env = G.shapeEnv();
    for (const Guard &guard : env.guards()) {
      checkSymbols(guard.lhs, "guard " + guard.str());
      checkSymbols(guard.rhs, "guard " + guard.str());
    }
    for (const StateTensor &t : G.state())
      checkType(t.type, fmt::format("{} \"{}\"", toString(t.kind).str(), t.name));
    llvm::StringSet<> entryNames;
    for (const auto &e : G.entries()) {
      if (!entryNames.insert(e->name()).second)
        report(fmt::format("entry @{} is defined twice", e->name()));
      verifyEntry(*e);
    }
    if (Problems.empty())
      return llvm::Error::success();
    std::string all;
    for (const std::string &p : Problems)
      all += (all.empty() ? "" : "\n") + p;
    return llvm::createStringError(llvm::inconvertibleErrorCode(), all);
  }

private:
  void report(std::string msg) { Problems.push_back(std::move(msg)); }

  void checkSymbols(const SymExpr &e, const std::string &where) {
    if (auto err = G.shapeEnv().checkDeclared(e))
      report(fmt::format("{}: {}", where, llvm::toString(std::move(err))));
  }

  void checkType(const Type &t, const std::string &where) {
    for (const SymExpr &d : t.shape())
      checkSymbols(d, where);
  }

  // Types are equal when their shapes are, with derived dims expanded (`seq_plus_1` is `seq + 1`).
  bool sameType(const Type &a, const Type &b) const {
    if (a.kind() != b.kind() || a.dtype() != b.dtype() || a.rank() != b.rank())
      return false;
    for (size_t i = 0; i < a.rank(); ++i)
      if (!(G.shapeEnv().expand(a.shape()[i]) == G.shapeEnv().expand(b.shape()[i])))
        return false;
    return true;
  }

  std::string name(const Value *v) {
    auto it = Ids.find(v);
    return it == Ids.end() ? "<value from elsewhere>" : fmt::format("%{}", it->second);
  }

  void verifyEntry(const Entry &e) {
    // Values are named as the printer names them, so messages point at the printed text.
    Ids = numberValues(e);
    std::string where = "entry @" + e.name();
    const Block &body = e.body();
    if (e.inputs().size() != body.numArguments())
      report(fmt::format("{}: {} inputs are described but the body has {} arguments", where,
                         e.inputs().size(), body.numArguments()));
    if (e.outputs().size() != body.returns().size())
      report(fmt::format("{}: {} outputs are described but the body returns {} values", where,
                         e.outputs().size(), body.returns().size()));
    llvm::StringSet<> inputNames, outputNames, mutated;
    for (unsigned i = 0; i < std::min<size_t>(e.inputs().size(), body.numArguments()); ++i) {
      const InputSpec &spec = e.inputs()[i];
      const Type &t = body.argument(i)->type();
      checkType(t, fmt::format("{}: input \"{}\"", where, spec.name));
      if (spec.kind == InputKind::User) {
        if (!inputNames.insert(spec.name).second)
          report(fmt::format("{}: input \"{}\" is declared twice", where, spec.name));
        continue;
      }
      const StateTensor *s = G.findState(spec.name);
      if (!s || s->kind != spec.kind)
        report(fmt::format("{}: {} \"{}\" is not declared in the graph", where,
                           toString(spec.kind).str(), spec.name));
      else if (!sameType(s->type, t))
        report(fmt::format("{}: {} \"{}\" is {} in the graph but {} here", where,
                           toString(spec.kind).str(), spec.name, s->type.str(), t.str()));
    }
    Defined.clear();
    verifyBlock(body, where);
    for (size_t i = 0; i < std::min(e.outputs().size(), body.returns().size()); ++i) {
      const OutputSpec &spec = e.outputs()[i];
      Value *v = body.returns()[i];
      if (spec.kind == OutputKind::User) {
        if (!outputNames.insert(spec.name).second)
          report(fmt::format("{}: output \"{}\" is declared twice", where, spec.name));
        continue;
      }
      const StateTensor *s = G.findState(spec.name);
      if (!s || s->kind != InputKind::Buffer)
        report(fmt::format("{}: output {} mutates \"{}\", which is not a buffer", where, i,
                           spec.name));
      else if (v && !sameType(v->type(), s->type))
        report(fmt::format("{}: buffer \"{}\" is {} but the mutation writes {}", where, spec.name,
                           s->type.str(), v->type().str()));
      if (!mutated.insert(spec.name).second)
        report(fmt::format("{}: buffer \"{}\" is mutated twice", where, spec.name));
    }
  }

  void verifyBlock(const Block &b, const std::string &where) {
    llvm::DenseSet<const Value *> &defined = Defined.emplace_back();
    for (unsigned i = 0; i < b.numArguments(); ++i)
      defined.insert(b.argument(i));
    for (const auto &n : b.nodes())
      verifyNode(*n, defined, where);
    for (Value *v : b.returns())
      if (!v || !defined.count(v))
        report(fmt::format("{}: returns {}, which is not defined in its block", where,
                           v ? name(v) : "a missing value"));
    Defined.pop_back();
  }

  void verifyNode(const Node &n, llvm::DenseSet<const Value *> &defined, const std::string &where) {
    // Meta-function errors start with the op's name, so `what` names only the value.
    std::string what =
        fmt::format("{}: {}", where, n.numResults() ? name(n.result(0)) : "<no result>");
    std::string whatOp = fmt::format("{}: {}", what, n.name().str());
    bool operandsOk = true;
    const OpSchema &s = n.schema();
    unsigned fixed = s.numFixedOperands();
    if (n.operands().size() < fixed || (!s.hasTensorList() && n.operands().size() != fixed)) {
      report(fmt::format("{}: takes {} operands, got {}", whatOp, fixed, n.operands().size()));
      operandsOk = false;
    }
    for (Value *v : n.operands()) {
      if (!v)
        continue;
      if (!defined.count(v)) {
        bool outer = false;
        for (const auto &scope : Defined)
          outer |= scope.count(v) > 0;
        report(fmt::format("{}: operand {} {}", whatOp, name(v),
                           outer ? "comes from outside the region; regions are closed"
                                 : "is used before it is defined"));
        operandsOk = false;
      }
    }
    for (unsigned i = 0; i < n.numResults(); ++i)
      checkType(n.result(i)->type(), what);
    for (const NamedAttribute &a : n.explicitAttrs()) {
      if (a.second.kind() == Attribute::Kind::Int)
        checkSymbols(a.second.getInt(), what);
      if (a.second.kind() == Attribute::Kind::IntList)
        for (const SymExpr &e : a.second.getIntList())
          checkSymbols(e, what);
    }
    unsigned regions = n.kind() == OpKind::Cond ? 2 : 0;
    if (n.numRegions() != regions)
      report(fmt::format("{}: has {} regions, expected {}", whatOp, n.numRegions(), regions));
    for (unsigned r = 0; r < n.numRegions(); ++r)
      verifyBlock(n.region(r), whatOp + fmt::format(" region {}", r));
    if (operandsOk && n.numRegions() == regions) {
      auto types = inferResultTypes(n, G.shapeEnv());
      if (!types) {
        report(fmt::format("{}: {}", what, llvm::toString(types.takeError())));
      } else if (types->size() != n.numResults()) {
        report(fmt::format("{}: has {} results but the op produces {}", whatOp, n.numResults(),
                           types->size()));
      } else {
        for (unsigned i = 0; i < n.numResults(); ++i)
          if (!sameType(n.result(i)->type(), (*types)[i]))
            report(fmt::format("{}: result {} is {} but the op produces {}", whatOp, i,
                               n.result(i)->type().str(), (*types)[i].str()));
      }
    }
    for (unsigned i = 0; i < n.numResults(); ++i)
      defined.insert(n.result(i));
  }

  const Graph &G;
  llvm::DenseMap<const Value *, unsigned> Ids;
  std::deque<llvm::DenseSet<const Value *>> Defined; // a deque: references survive growth
  std::vector<std::string> Problems;
};

} // namespace

llvm::Error verifyGraph(const Graph &g) { return Verifier(g).run(); }

} // namespace aotc
