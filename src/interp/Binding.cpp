// Binding the symbolic dims of an entry from the shapes of its user inputs, with the checks that
// come with it: dtypes, ranks and static dims, consistency across inputs, derived dims, ranges,
// divisors and guards.
#include "Kernels.h"

#include "llvm/ADT/StringExtras.h"

#include <set>

namespace aotc {

using interp::error;

namespace {

/// One dim of one user input and its concrete size.
struct DimSite {
  std::string input;
  unsigned dim = 0;
  SymExpr expr;     // as the entry's type writes it
  SymExpr expanded; // with derived dims replaced by their definitions
  int64_t value = 0;

  /// `input "x" dim 0 (batch) = 600`
  std::string str() const {
    return fmt::format("input \"{}\" dim {} ({}) = {}", input, dim, expr.str(), value);
  }
  std::string where() const { return fmt::format("input \"{}\" dim {}", input, dim); }
};

std::set<std::string, std::less<>> symbolsOf(const SymExpr &e) {
  std::set<std::string, std::less<>> out;
  e.collectSymbols(out);
  return out;
}

std::string plural(size_t n, llvm::StringRef word) {
  return fmt::format("{} {}{}", n, word.str(), n == 1 ? "" : "s");
}

class Binder {
public:
  Binder(const Graph &g, const Entry &e) : Env(g.shapeEnv()), E(e) {}

  llvm::Expected<SymbolValues> run(llvm::ArrayRef<InputShape> inputs) {
    if (llvm::Error err = collectSites(inputs))
      return err;
    if (llvm::Error err = bindPlainSymbols())
      return err;
    if (llvm::Error err = solveExpressions())
      return err;
    if (llvm::Error err = checkRanges())
      return err;
    evaluateDerived();
    if (llvm::Error err = checkSites())
      return err;
    if (llvm::Error err = checkGuards())
      return err;
    return Values;
  }

private:
  // Counts, dtypes, ranks and static dims; every other dim becomes a site to bind or check.
  llvm::Error collectSites(llvm::ArrayRef<InputShape> inputs) {
    std::vector<std::pair<const InputSpec *, const Type *>> user;
    for (unsigned i = 0; i < E.inputs().size() && i < E.body().numArguments(); ++i)
      if (E.inputs()[i].kind == InputKind::User)
        user.push_back({&E.inputs()[i], &E.body().argument(i)->type()});
    if (user.size() != inputs.size()) {
      std::vector<llvm::StringRef> names;
      for (auto &[spec, type] : user)
        names.push_back(spec->name);
      return error("entry \"{}\" takes {} ({}) but {} {} given", E.name(),
                   plural(user.size(), "input"), llvm::join(names, ", "), inputs.size(),
                   inputs.size() == 1 ? "was" : "were");
    }
    for (size_t i = 0; i < user.size(); ++i) {
      const auto &[spec, type] = user[i];
      const InputShape &t = inputs[i];
      bool same = type->isTensor() && t.dtype == type->dtype() && t.shape.size() == type->rank();
      for (size_t d = 0; same && d < t.shape.size(); ++d)
        if (auto c = type->shape()[d].constant())
          same = *c == t.shape[d];
      if (!same)
        return error("input \"{}\" is {} but the entry takes {}", spec->name,
                     describe(t.dtype, t.shape), type->str());
      for (unsigned d = 0; d < t.shape.size(); ++d) {
        const SymExpr &e = type->shape()[d];
        if (!e.isConstant())
          Sites.push_back({spec->name, d, e, Env.expand(e), t.shape[d]});
      }
    }
    return llvm::Error::success();
  }

  void bind(const std::string &name, int64_t value, const DimSite &site) {
    Values[name] = value;
    Bound.push_back({name, &site});
  }

  const DimSite *originOf(llvm::StringRef name) const {
    for (const auto &[n, site] : Bound)
      if (n == name)
        return site;
    return nullptr;
  }

  // A dim that is a root symbol binds it; later dims with the same symbol must agree.
  llvm::Error bindPlainSymbols() {
    for (const DimSite &s : Sites) {
      auto name = s.expr.symbolName();
      if (!name || !Env.findSymbol(*name))
        continue;
      auto it = Values.find(*name);
      if (it == Values.end()) {
        bind(name->str(), s.value, s);
        continue;
      }
      if (it->second != s.value)
        return error("{} but {} = {} from {}", s.str(), name->str(), it->second,
                     originOf(*name)->where());
    }
    return llvm::Error::success();
  }

  // Dims that are expressions of one unbound root symbol (a derived dim such as `2*half`) bind
  // it when the expression is affine in it and the size has a solution; repeated until nothing
  // changes, as one solution can enable another.
  llvm::Error solveExpressions() {
    for (bool changed = true; changed;) {
      changed = false;
      for (const DimSite &s : Sites) {
        std::vector<std::string> unbound = unboundSymbols(s.expanded);
        if (unbound.size() != 1)
          continue;
        if (auto v = solveFor(s.expanded, unbound[0], s.value)) {
          bind(unbound[0], *v, s);
          changed = true;
        }
      }
    }
    for (const DimSite &s : Sites) {
      std::vector<std::string> unbound = unboundSymbols(s.expanded);
      if (unbound.size() == 1 && isAffineIn(s.expanded, unbound[0]))
        return error("{} is not {} for any integer {}", s.str(), s.expanded.str(), unbound[0]);
      if (unbound.size() == 1)
        return error("{} does not determine {}; no input has it as a dim of its own", s.str(),
                     unbound[0]);
      if (!unbound.empty())
        return error("{} does not determine {}; no input has them as dims of their own", s.str(),
                     llvm::join(unbound, " and "));
    }
    return llvm::Error::success();
  }

  // `e` is `slope * name + rest` with a nonzero slope, as far as three points tell.
  bool isAffineIn(const SymExpr &e, const std::string &name) const {
    SymbolValues trial = Values;
    std::optional<int64_t> at[3];
    for (int64_t x = 0; x < 3; ++x) {
      trial[name] = x;
      at[x] = e.evaluate(trial);
      if (!at[x] || std::abs(*at[x]) > (int64_t(1) << 62))
        return false;
    }
    return *at[1] != *at[0] && *at[2] - *at[1] == *at[1] - *at[0];
  }

  std::vector<std::string> unboundSymbols(const SymExpr &e) const {
    std::vector<std::string> out;
    for (const std::string &name : symbolsOf(e))
      if (!Values.count(name))
        out.push_back(name);
    return out;
  }

  std::optional<int64_t> solveFor(const SymExpr &e, const std::string &name, int64_t target) const {
    SymbolValues trial = Values;
    auto at = [&](int64_t x) {
      trial[name] = x;
      return e.evaluate(trial);
    };
    auto e0 = at(0), e1 = at(1);
    if (!e0 || !e1 || *e1 == *e0)
      return std::nullopt;
    int64_t slope, rest;
    if (__builtin_sub_overflow(*e1, *e0, &slope) || __builtin_sub_overflow(target, *e0, &rest) ||
        (slope == -1 && rest == INT64_MIN) || rest % slope != 0)
      return std::nullopt;
    // The check by substitution also rejects expressions that only looked affine at 0 and 1.
    int64_t x = rest / slope;
    auto ex = at(x);
    if (!ex || *ex != target)
      return std::nullopt;
    return x;
  }

  llvm::Error checkRanges() const {
    for (const auto &[name, site] : Bound) {
      const SymbolDecl *decl = Env.findSymbol(name);
      int64_t v = Values.at(name);
      // A dim that is the symbol itself names it once; a solved one says what it gave.
      bool direct = site->expr.symbolName() == llvm::StringRef(name);
      std::string what =
          direct ? site->str() : fmt::format("{} gives {} = {}, which", site->str(), name, v);
      if (v < decl->lo || v > decl->hi)
        return error("{} is outside {}..{}", what, decl->lo, decl->hi);
      if (v % decl->divisor != 0)
        return error("{} is not a multiple of {}", what, decl->divisor);
    }
    return llvm::Error::success();
  }

  void evaluateDerived() {
    for (const DerivedDim &d : Env.derived())
      if (auto v = d.expr.evaluate(Values))
        Values[d.name] = *v;
  }

  // Every dim, derived ones included, must equal its expression's value.
  llvm::Error checkSites() const {
    for (const DimSite &s : Sites) {
      auto v = s.expr.evaluate(Values);
      if (v && *v == s.value)
        continue;
      std::string value = v ? std::to_string(*v) : "undefined";
      std::string definition = s.expr.str();
      if (auto name = s.expr.symbolName())
        if (const DerivedDim *d = Env.findDerived(*name))
          definition += " = " + d->expr.str();
      std::vector<std::string> origins;
      for (const std::string &root : symbolsOf(s.expanded))
        origins.push_back(
            fmt::format("{} = {} from {}", root, Values.at(root), originOf(root)->where()));
      return error("{} but {} = {} with {}", s.str(), definition, value, llvm::join(origins, ", "));
    }
    return llvm::Error::success();
  }

  // Guards over dims this entry does not bind belong to other entries and are skipped.
  llvm::Error checkGuards() const {
    for (const Guard &g : Env.guards()) {
      std::set<std::string, std::less<>> names = symbolsOf(g.lhs);
      g.rhs.collectSymbols(names);
      if (llvm::any_of(names, [&](const std::string &n) { return !Values.count(n); }))
        continue;
      auto l = g.lhs.evaluate(Values), r = g.rhs.evaluate(Values);
      bool holds = false;
      if (l && r) {
        switch (g.kind) {
        case GuardKind::EQ:
          holds = *l == *r;
          break;
        case GuardKind::NE:
          holds = *l != *r;
          break;
        case GuardKind::LE:
          holds = *l <= *r;
          break;
        case GuardKind::LT:
          holds = *l < *r;
          break;
        }
      }
      if (holds)
        continue;
      std::vector<std::string> values;
      for (const std::string &n : names)
        values.push_back(fmt::format("{} = {}", n, Values.at(n)));
      std::string loc = g.loc.isKnown() ? " (" + g.loc.str() + ")" : "";
      return error("guard {}{} does not hold for {}", g.str(), loc, llvm::join(values, ", "));
    }
    return llvm::Error::success();
  }

  const ShapeEnv &Env;
  const Entry &E;
  std::vector<DimSite> Sites; // complete before Bound takes pointers into it
  SymbolValues Values;
  std::vector<std::pair<std::string, const DimSite *>> Bound; // root dims, in binding order
};

} // namespace

llvm::Expected<SymbolValues> bindInputShapes(const Graph &g, const Entry &entry,
                                             llvm::ArrayRef<InputShape> userInputs) {
  return Binder(g, entry).run(userInputs);
}

llvm::Expected<SymbolValues> bindInputs(const Graph &g, const Entry &entry,
                                        llvm::ArrayRef<HostTensor> userInputs) {
  std::vector<InputShape> shapes;
  for (const HostTensor &t : userInputs)
    shapes.push_back({t.dtype(), t.shape()});
  return bindInputShapes(g, entry, shapes);
}

} // namespace aotc
