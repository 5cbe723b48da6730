// Canonical construction of symbolic integer expressions: polynomial arithmetic, the floordiv /
// mod / min / max rewrite rules, ordering, substitution and evaluation.
#include "aotc/ir/SymExpr.h"

#include "SymExprInternal.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace aotc {

// The only code that builds nodes, so that every node is in canonical form.
struct SymNodeAccess {
  static SymExpr make(int64_t constant, llvm::SmallVector<SymTerm, 1> terms) {
    auto node = std::make_shared<SymNode>();
    node->Constant = constant;
    node->Terms = std::move(terms);
    for (const SymTerm &t : node->Terms)
      node->Weight = std::min(node->Weight + termWeight(t), kWeightCap);
    return SymNode::wrap(std::move(node));
  }

  static uint64_t weight(const SymNode &n) { return n.Weight; }

  static uint64_t termWeight(const SymTerm &t) {
    uint64_t w = 1;
    for (const SymAtom &atom : t.factors) {
      w = std::min(w + 1, kWeightCap);
      for (const SymExpr &arg : atom.args)
        w = std::min(w + arg.node().Weight, kWeightCap);
    }
    return w;
  }

  static constexpr uint64_t kWeightCap = uint64_t(1) << 40;
};

namespace {

using Kind = SymAtom::Kind;
using Monomial = llvm::ArrayRef<SymAtom>;
using Terms = llvm::SmallVector<SymTerm, 1>;

// Products beyond these sizes stay unexpanded (a Mul atom): expanding (a + b)^30 must not take
// exponential time and memory on hostile input.
constexpr size_t kMaxProductTerms = 4096;
constexpr size_t kMaxMonomialFactors = 64;
// Expansion copies shared subexpressions into many terms; past this printed size a product stays
// unexpanded, or chains of products would print exponentially long.
constexpr uint64_t kMaxProductWeight = 1 << 14;

struct Poly {
  int64_t constant = 0;
  Terms terms;
};

SymExpr fromPoly(Poly p) { return SymNodeAccess::make(p.constant, std::move(p.terms)); }

bool isZero(const SymExpr &e) { return e.node().terms().empty() && e.node().constant() == 0; }

using detail::soleAtom;

// Python semantics: the quotient rounds toward negative infinity, the remainder takes the
// divisor's sign. nullopt for a zero divisor and for the one overflowing case, INT64_MIN / -1.
std::optional<int64_t> floorDivInt(int64_t a, int64_t b) {
  if (b == 0 || (a == INT64_MIN && b == -1))
    return std::nullopt;
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0)))
    --q;
  return q;
}

std::optional<int64_t> modInt(int64_t a, int64_t b) {
  if (b == 0)
    return std::nullopt;
  if (b == -1) // a % -1 is UB for INT64_MIN in C++, and always 0
    return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

int cmpInt(int64_t a, int64_t b) { return a < b ? -1 : a > b ? 1 : 0; }

int compareExprs(const SymExpr &a, const SymExpr &b);

} // namespace

int detail::compareAtoms(const SymAtom &a, const SymAtom &b) {
  if (a.kind != b.kind)
    return a.kind < b.kind ? -1 : 1;
  if (a.kind == Kind::Symbol)
    return llvm::StringRef(a.name).compare(b.name);
  for (size_t i = 0, e = std::min(a.args.size(), b.args.size()); i != e; ++i)
    if (int c = compareExprs(a.args[i], b.args[i]))
      return c;
  return cmpInt(a.args.size(), b.args.size());
}

namespace {

using detail::compareAtoms;

// Higher degree first, so that `a*b + a + 1` prints in the conventional order.
int compareMonomials(Monomial a, Monomial b) {
  if (a.size() != b.size())
    return a.size() > b.size() ? -1 : 1;
  for (size_t i = 0, e = a.size(); i != e; ++i)
    if (int c = compareAtoms(a[i], b[i]))
      return c;
  return 0;
}

int compareExprs(const SymExpr &a, const SymExpr &b) {
  const SymNode &x = a.node(), &y = b.node();
  if (&x == &y)
    return 0;
  llvm::ArrayRef<SymTerm> xt = x.terms(), yt = y.terms();
  for (size_t i = 0, e = std::min(xt.size(), yt.size()); i != e; ++i) {
    if (int c = compareMonomials(xt[i].factors, yt[i].factors))
      return c;
    if (int c = cmpInt(xt[i].coeff, yt[i].coeff))
      return c;
  }
  // More terms first, so that constants sort last: `min(a, 16)`.
  if (xt.size() != yt.size())
    return xt.size() > yt.size() ? -1 : 1;
  return cmpInt(x.constant(), y.constant());
}

bool atomLess(const SymAtom &a, const SymAtom &b) { return compareAtoms(a, b) < 0; }

SymTerm makeTerm(int64_t coeff, SymAtom atom) {
  SymTerm t;
  t.coeff = coeff;
  t.factors.push_back(std::move(atom));
  return t;
}

SymExpr makeAtom(Kind kind, llvm::ArrayRef<SymExpr> args) {
  SymAtom atom;
  atom.kind = kind;
  atom.args.assign(args.begin(), args.end());
  return detail::atomExpr(atom);
}

/// A sum or product whose canonical form cannot be built kept as one opaque atom. Its operands
/// are sorted, so that printing it and parsing the text back rebuilds the same atom.
SymExpr opaque(Kind kind, const SymExpr &a, const SymExpr &b) {
  return compareExprs(b, a) < 0 ? makeAtom(kind, {b, a}) : makeAtom(kind, {a, b});
}

/// a + b, or a - b when `negate`; nullopt when a coefficient overflows.
std::optional<Poly> addPolys(const SymNode &a, const SymNode &b, bool negate) {
  Poly r;
  if (negate ? __builtin_sub_overflow(a.constant(), b.constant(), &r.constant)
             : __builtin_add_overflow(a.constant(), b.constant(), &r.constant))
    return std::nullopt;
  llvm::ArrayRef<SymTerm> at = a.terms(), bt = b.terms();
  size_t i = 0, j = 0;
  while (i != at.size() || j != bt.size()) {
    int c = i == at.size()   ? 1
            : j == bt.size() ? -1
                             : compareMonomials(at[i].factors, bt[j].factors);
    if (c < 0) {
      r.terms.push_back(at[i++]);
      continue;
    }
    int64_t lhs = c == 0 ? at[i].coeff : 0, coeff;
    if (negate ? __builtin_sub_overflow(lhs, bt[j].coeff, &coeff)
               : __builtin_add_overflow(lhs, bt[j].coeff, &coeff))
      return std::nullopt;
    if (coeff != 0) {
      r.terms.push_back(bt[j]);
      r.terms.back().coeff = coeff;
    }
    ++j;
    if (c == 0)
      ++i;
  }
  return r;
}

/// a * b expanded; nullopt when a coefficient overflows or the result would be too large. The
/// answer does not depend on the operand order (coefficients are summed exactly).
std::optional<Poly> mulPolys(const SymNode &a, const SymNode &b) {
  if ((a.terms().size() + 1) * (b.terms().size() + 1) - 1 > kMaxProductTerms)
    return std::nullopt;
  // Every term of one side meets every term of the other (and the other's constant).
  uint64_t wa = SymNodeAccess::weight(a), wb = SymNodeAccess::weight(b);
  if ((b.terms().size() + 1) * wa + (a.terms().size() + 1) * wb > kMaxProductWeight)
    return std::nullopt;
  Poly r;
  if (__builtin_mul_overflow(a.constant(), b.constant(), &r.constant))
    return std::nullopt;
  Terms products;
  auto addProduct = [&](int64_t x, int64_t y, Monomial m1, Monomial m2) {
    int64_t coeff;
    if (x == 0 || y == 0)
      return true;
    if (__builtin_mul_overflow(x, y, &coeff) || m1.size() + m2.size() > kMaxMonomialFactors)
      return false;
    SymTerm t;
    t.coeff = coeff;
    t.factors.resize(m1.size() + m2.size());
    std::merge(m1.begin(), m1.end(), m2.begin(), m2.end(), t.factors.begin(), atomLess);
    products.push_back(std::move(t));
    return true;
  };
  for (const SymTerm &x : a.terms()) {
    for (const SymTerm &y : b.terms())
      if (!addProduct(x.coeff, y.coeff, x.factors, y.factors))
        return std::nullopt;
    if (!addProduct(x.coeff, b.constant(), x.factors, {}))
      return std::nullopt;
  }
  for (const SymTerm &y : b.terms())
    if (!addProduct(a.constant(), y.coeff, {}, y.factors))
      return std::nullopt;
  // Equal monomials are summed exactly below, so their relative order does not matter.
  llvm::sort(products, [](const SymTerm &x, const SymTerm &y) {
    return compareMonomials(x.factors, y.factors) < 0;
  });
  for (size_t i = 0; i != products.size();) {
    size_t j = i;
    __int128 sum = 0; // at most kMaxProductTerms int64 addends: cannot overflow
    for (; j != products.size() && compareMonomials(products[i].factors, products[j].factors) == 0;
         ++j)
      sum += products[j].coeff;
    if (sum < INT64_MIN || sum > INT64_MAX)
      return std::nullopt;
    if (sum != 0) {
      r.terms.push_back(std::move(products[i]));
      r.terms.back().coeff = static_cast<int64_t>(sum);
    }
    i = j;
  }
  return r;
}

/// Splits `p` into `k*q + r` where every coefficient of r, and its constant, lies in [0, k).
std::pair<Poly, Poly> splitByDivisor(const SymNode &p, int64_t k) {
  Poly q, r;
  q.constant = *floorDivInt(p.constant(), k);
  r.constant = *modInt(p.constant(), k);
  for (const SymTerm &t : p.terms()) {
    if (int64_t c = *floorDivInt(t.coeff, k)) {
      q.terms.push_back(t);
      q.terms.back().coeff = c;
    }
    if (int64_t c = *modInt(t.coeff, k)) {
      r.terms.push_back(t);
      r.terms.back().coeff = c;
    }
  }
  return {std::move(q), std::move(r)};
}

/// Divides every coefficient of `r` (all in [0, k)) and k by their common factor; returns it.
int64_t divideCommonFactor(Poly &r, int64_t &k) {
  int64_t g = std::gcd(k, r.constant);
  for (const SymTerm &t : r.terms)
    g = std::gcd(g, t.coeff);
  if (g > 1) {
    k /= g;
    r.constant /= g;
    for (SymTerm &t : r.terms)
      t.coeff /= g;
  }
  return g;
}

/// When `range` fits in one block [q*k, q*k + k - 1], returns q.
std::optional<int64_t> sameBlock(const ValueRange &range, int64_t k) {
  if (range.lo == INT64_MIN || range.hi == INT64_MAX)
    return std::nullopt;
  int64_t q = *floorDivInt(range.lo, k);
  return q == *floorDivInt(range.hi, k) ? std::optional<int64_t>(q) : std::nullopt;
}

/// floordiv(r, k) for k > 1 and r already split by k.
SymExpr floorDivReduced(Poly r, int64_t k) {
  if (r.terms.empty())
    return *floorDivInt(r.constant, k);
  // floordiv(g*x, g*k) == floordiv(x, k)
  divideCommonFactor(r, k);
  SymExpr x = fromPoly(std::move(r));
  if (k == 1)
    return x;
  // floordiv(floordiv(y, m), k) == floordiv(y, m*k) for positive m and k
  if (const SymAtom *inner = soleAtom(x); inner && inner->kind == Kind::FloorDiv) {
    std::optional<int64_t> m = inner->args[1].constant();
    int64_t mk;
    if (m && *m > 0 && !__builtin_mul_overflow(*m, k, &mk))
      return SymExpr::floorDiv(inner->args[0], mk);
  }
  if (std::optional<int64_t> q = sameBlock(detail::intrinsicRange(x), k))
    return *q;
  return makeAtom(Kind::FloorDiv, {x, k});
}

/// mod(r, k) for k > 1 and r already split by k.
SymExpr modReduced(Poly r, int64_t k) {
  if (r.terms.empty())
    return r.constant;
  // mod(g*x, g*k) == g*mod(x, k)
  int64_t g = divideCommonFactor(r, k);
  if (g > 1)
    return SymExpr(g) * modReduced(std::move(r), k);
  if (k == 1)
    return 0;
  SymExpr x = fromPoly(std::move(r));
  // mod(mod(y, m), k) == mod(y, k) when k divides m
  if (const SymAtom *inner = soleAtom(x); inner && inner->kind == Kind::Mod) {
    std::optional<int64_t> m = inner->args[1].constant();
    if (m && *m > 0 && *m % k == 0)
      return SymExpr::mod(inner->args[0], k);
  }
  int64_t base;
  if (std::optional<int64_t> q = sameBlock(detail::intrinsicRange(x), k))
    if (!__builtin_mul_overflow(*q, k, &base))
      return x - SymExpr(base);
  return makeAtom(Kind::Mod, {x, k});
}

/// True when `a` can never be the result of min (isMin) or max over a set containing `b`.
bool dominated(const SymExpr &a, const SymExpr &b, bool isMin) {
  ValueRange r = detail::intrinsicRange(a - b);
  return isMin ? r.lo >= 0 : r.hi <= 0;
}

bool containsTerm(llvm::ArrayRef<SymTerm> terms, const SymTerm &t) {
  return llvm::any_of(terms, [&](const SymTerm &u) {
    return u.coeff == t.coeff && compareMonomials(u.factors, t.factors) == 0;
  });
}

SymExpr minMax(Kind kind, llvm::ArrayRef<SymExpr> input) {
  assert(!input.empty() && "min / max of nothing");
  bool isMin = kind == Kind::Min;
  llvm::SmallVector<SymExpr, 4> args;
  std::optional<int64_t> folded;
  for (const SymExpr &e : input) {
    if (const SymAtom *atom = soleAtom(e); atom && atom->kind == kind) {
      // min(min(a, b), c) == min(a, b, c); the nested arguments are already canonical.
      for (const SymExpr &arg : atom->args) {
        if (std::optional<int64_t> c = arg.constant())
          folded = !folded ? *c : isMin ? std::min(*folded, *c) : std::max(*folded, *c);
        else
          args.push_back(arg);
      }
    } else if (std::optional<int64_t> c = e.constant()) {
      folded = !folded ? *c : isMin ? std::min(*folded, *c) : std::max(*folded, *c);
    } else {
      args.push_back(e);
    }
  }
  if (folded)
    args.push_back(*folded);
  llvm::sort(args, [](const SymExpr &a, const SymExpr &b) { return a < b; });
  args.erase(std::unique(args.begin(), args.end()), args.end());

  // Drop the operands that can never win: min(x, x + 1) == x, min(mod(x, 8), 9) == mod(x, 8).
  llvm::SmallVector<SymExpr, 4> kept;
  for (const SymExpr &e : args) {
    if (llvm::any_of(kept, [&](const SymExpr &k) { return dominated(e, k, isMin); }))
      continue;
    llvm::erase_if(kept, [&](const SymExpr &k) { return dominated(k, e, isMin); });
    kept.push_back(e);
  }
  if (kept.size() == 1)
    return kept.front();

  // Pull out what all operands share: min(x + a + 3, x + b + 1) == x + 1 + min(a + 2, b).
  Poly common;
  common.constant = INT64_MAX;
  for (const SymExpr &e : kept)
    common.constant = std::min(common.constant, e.node().constant());
  for (const SymTerm &t : kept[0].node().terms())
    if (llvm::all_of(kept, [&](const SymExpr &e) { return containsTerm(e.node().terms(), t); }))
      common.terms.push_back(t);
  llvm::SmallVector<SymExpr, 4> rest;
  for (const SymExpr &e : kept) {
    Poly p;
    if (__builtin_sub_overflow(e.node().constant(), common.constant, &p.constant))
      return makeAtom(kind, kept);
    for (const SymTerm &t : e.node().terms())
      if (!containsTerm(common.terms, t))
        p.terms.push_back(t);
    SymExpr r = fromPoly(std::move(p));
    // Keep the form re-parseable: a bare nested min would be flattened when read back.
    if (const SymAtom *atom = soleAtom(r); atom && atom->kind == kind)
      return makeAtom(kind, kept);
    rest.push_back(std::move(r));
  }
  if (common.constant == 0 && common.terms.empty())
    return makeAtom(kind, kept);
  llvm::sort(rest, [](const SymExpr &a, const SymExpr &b) { return a < b; });
  return fromPoly(std::move(common)) + makeAtom(kind, rest);
}

SymExpr substituteAtom(const SymAtom &atom,
                       const std::map<std::string, SymExpr, std::less<>> &bindings) {
  if (atom.kind == Kind::Symbol) {
    auto it = bindings.find(atom.name);
    return it == bindings.end() ? detail::atomExpr(atom) : it->second;
  }
  llvm::SmallVector<SymExpr, 4> args;
  for (const SymExpr &arg : atom.args)
    args.push_back(arg.substitute(bindings));
  switch (atom.kind) {
  case Kind::FloorDiv:
    return SymExpr::floorDiv(args[0], args[1]);
  case Kind::Mod:
    return SymExpr::mod(args[0], args[1]);
  case Kind::Min:
    return SymExpr::minOf(args);
  case Kind::Max:
    return SymExpr::maxOf(args);
  case Kind::Add:
    return args[0] + args[1];
  case Kind::Mul:
    return args[0] * args[1];
  case Kind::Symbol:
    break;
  }
  llvm_unreachable("unknown atom kind");
}

std::optional<int64_t> evaluateAtom(const SymAtom &atom,
                                    const std::map<std::string, int64_t, std::less<>> &values) {
  if (atom.kind == Kind::Symbol) {
    auto it = values.find(atom.name);
    return it == values.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  llvm::SmallVector<int64_t, 4> args;
  for (const SymExpr &arg : atom.args) {
    std::optional<int64_t> v = arg.evaluate(values);
    if (!v)
      return std::nullopt;
    args.push_back(*v);
  }
  int64_t r;
  switch (atom.kind) {
  case Kind::FloorDiv:
    return floorDivInt(args[0], args[1]);
  case Kind::Mod:
    return modInt(args[0], args[1]);
  case Kind::Min:
    return *llvm::min_element(args);
  case Kind::Max:
    return *llvm::max_element(args);
  case Kind::Add:
    return __builtin_add_overflow(args[0], args[1], &r) ? std::nullopt : std::optional(r);
  case Kind::Mul:
    return __builtin_mul_overflow(args[0], args[1], &r) ? std::nullopt : std::optional(r);
  case Kind::Symbol:
    break;
  }
  llvm_unreachable("unknown atom kind");
}

} // namespace

const SymAtom *detail::soleAtom(const SymExpr &e) {
  const SymNode &n = e.node();
  if (n.constant() != 0 || n.terms().size() != 1)
    return nullptr;
  const SymTerm &t = n.terms().front();
  return t.coeff == 1 && t.factors.size() == 1 ? &t.factors.front() : nullptr;
}

SymExpr detail::atomExpr(const SymAtom &atom) {
  Terms terms;
  terms.push_back(makeTerm(1, atom));
  return SymNodeAccess::make(0, std::move(terms));
}

SymExpr detail::dropTerm(const SymExpr &e, size_t index) {
  Terms terms(e.node().terms().begin(), e.node().terms().end());
  terms.erase(terms.begin() + index);
  return SymNodeAccess::make(e.node().constant(), std::move(terms));
}

SymExpr detail::sumOf(llvm::ArrayRef<SymExpr> operands, llvm::ArrayRef<bool> subtract) {
  assert(!operands.empty() && operands.size() == subtract.size() && !subtract.front());
  // Without overflow, the left-to-right sum is the exact sum: merge all terms at once, replaying
  // each monomial's additions in operand order to detect an overflow exactly where the operators
  // would meet it.
  struct Entry {
    const SymTerm *term;
    size_t operand;
  };
  llvm::SmallVector<Entry, 16> entries;
  int64_t constant = 0;
  bool overflow = false;
  for (size_t i = 0; i != operands.size(); ++i) {
    const SymNode &n = operands[i].node();
    overflow |= subtract[i] ? __builtin_sub_overflow(constant, n.constant(), &constant)
                            : __builtin_add_overflow(constant, n.constant(), &constant);
    for (const SymTerm &t : n.terms())
      entries.push_back({&t, i});
  }
  // Each operand holds a monomial at most once, so (monomial, operand) orders entries totally.
  llvm::sort(entries, [](const Entry &x, const Entry &y) {
    int c = compareMonomials(x.term->factors, y.term->factors);
    return c != 0 ? c < 0 : x.operand < y.operand;
  });
  Terms terms;
  for (size_t i = 0; i != entries.size() && !overflow;) {
    size_t j = i;
    int64_t coeff = 0;
    for (; j != entries.size() &&
           compareMonomials(entries[i].term->factors, entries[j].term->factors) == 0;
         ++j)
      overflow |= subtract[entries[j].operand]
                      ? __builtin_sub_overflow(coeff, entries[j].term->coeff, &coeff)
                      : __builtin_add_overflow(coeff, entries[j].term->coeff, &coeff);
    if (coeff != 0) {
      terms.push_back(*entries[i].term);
      terms.back().coeff = coeff;
    }
    i = j;
  }
  if (!overflow)
    return SymNodeAccess::make(constant, std::move(terms));
  // Some step overflows and keeps an opaque sum: take the operators' path.
  SymExpr sum = operands.front();
  for (size_t i = 1; i != operands.size(); ++i)
    sum = subtract[i] ? sum - operands[i] : sum + operands[i];
  return sum;
}

SymExpr::SymExpr() : SymExpr(0) {}

SymExpr::SymExpr(int64_t value) {
  static const SymExpr zero = SymNodeAccess::make(0, {});
  Node = value == 0 ? zero.Node : SymNodeAccess::make(value, {}).Node;
}

SymExpr::SymExpr(std::shared_ptr<const SymNode> node) : Node(std::move(node)) {}

SymExpr SymExpr::symbol(llvm::StringRef name) {
  SymAtom atom;
  atom.name = name.str();
  return detail::atomExpr(atom);
}

namespace {
// floordiv(c*m*q, c*m) == q when every term of the dividend is a multiple of the divisor's single
// term c*m (as in `batch*seq*64 // (batch*seq)`); the division is exact, so its sign does not
// matter. Like `0*floordiv(x, 0)`, the result is defined where the divisor is zero.
std::optional<SymExpr> divideByMonomial(const SymExpr &a, const SymExpr &b) {
  const SymNode &div = b.node();
  if (div.constant() != 0 || div.terms().size() != 1 || a.node().constant() != 0)
    return std::nullopt;
  const SymTerm &d = div.terms().front();
  SymExpr q = 0;
  for (const SymTerm &t : a.node().terms()) {
    // INT64_MIN / -1 overflows (and INT64_MIN % -1 is undefined in C++).
    if (d.coeff == 0 || (d.coeff == -1 && t.coeff == INT64_MIN) || t.coeff % d.coeff != 0)
      return std::nullopt;
    llvm::SmallVector<SymAtom, 2> rest(t.factors.begin(), t.factors.end());
    for (const SymAtom &f : d.factors) {
      auto it = std::find_if(rest.begin(), rest.end(),
                             [&](const SymAtom &r) { return detail::compareAtoms(r, f) == 0; });
      if (it == rest.end())
        return std::nullopt;
      rest.erase(it);
    }
    SymExpr term = t.coeff / d.coeff;
    for (const SymAtom &f : rest)
      term = term * detail::atomExpr(f);
    q = q + term;
  }
  return q;
}
} // namespace

SymExpr SymExpr::floorDiv(const SymExpr &a, const SymExpr &b) {
  std::optional<int64_t> k = b.constant();
  if (!k) {
    if (std::optional<SymExpr> q = divideByMonomial(a, b))
      return *q;
    return makeAtom(Kind::FloorDiv, {a, b});
  }
  if (std::optional<int64_t> x = a.constant())
    if (std::optional<int64_t> q = floorDivInt(*x, *k))
      return *q;
  // Division by zero stays visible; evaluate() reports it.
  if (*k == 0 || *k == INT64_MIN)
    return makeAtom(Kind::FloorDiv, {a, b});
  if (*k < 0) // floordiv(a, k) == floordiv(-a, -k)
    return floorDiv(-a, -*k);
  if (*k == 1)
    return a;
  // floordiv(k*q + r, k) == q + floordiv(r, k)
  auto [q, r] = splitByDivisor(a.node(), *k);
  return fromPoly(std::move(q)) + floorDivReduced(std::move(r), *k);
}

SymExpr SymExpr::mod(const SymExpr &a, const SymExpr &b) {
  std::optional<int64_t> k = b.constant();
  if (!k)
    return makeAtom(Kind::Mod, {a, b});
  if (std::optional<int64_t> x = a.constant())
    if (std::optional<int64_t> r = modInt(*x, *k))
      return *r;
  if (*k == 0 || *k == INT64_MIN)
    return makeAtom(Kind::Mod, {a, b});
  if (*k == 1 || *k == -1)
    return 0;
  if (*k < 0) // mod(a, k) == -mod(-a, -k)
    return -mod(-a, -*k);
  // mod(k*q + r, k) == mod(r, k)
  return modReduced(splitByDivisor(a.node(), *k).second, *k);
}

SymExpr SymExpr::min(const SymExpr &a, const SymExpr &b) { return minMax(Kind::Min, {a, b}); }
SymExpr SymExpr::max(const SymExpr &a, const SymExpr &b) { return minMax(Kind::Max, {a, b}); }
SymExpr SymExpr::minOf(llvm::ArrayRef<SymExpr> args) { return minMax(Kind::Min, args); }
SymExpr SymExpr::maxOf(llvm::ArrayRef<SymExpr> args) { return minMax(Kind::Max, args); }

SymExpr operator+(const SymExpr &a, const SymExpr &b) {
  if (isZero(a))
    return b;
  if (isZero(b))
    return a;
  if (std::optional<Poly> p = addPolys(a.node(), b.node(), /*negate=*/false))
    return fromPoly(std::move(*p));
  return opaque(SymAtom::Kind::Add, a, b);
}

SymExpr operator-(const SymExpr &a, const SymExpr &b) {
  if (isZero(b))
    return a;
  if (std::optional<Poly> p = addPolys(a.node(), b.node(), /*negate=*/true))
    return fromPoly(std::move(*p));
  // Only a sum is kept opaque, never a difference, so the printed form reads back the same.
  return a + (-b);
}

SymExpr operator-(const SymExpr &a) { return a * SymExpr(-1); }

SymExpr operator*(const SymExpr &a, const SymExpr &b) {
  if (isZero(a) || isZero(b))
    return 0;
  if (a.constant() == 1)
    return b;
  if (b.constant() == 1)
    return a;
  if (std::optional<Poly> p = mulPolys(a.node(), b.node()))
    return fromPoly(std::move(*p));
  return opaque(SymAtom::Kind::Mul, a, b);
}

bool SymExpr::isConstant() const { return Node->terms().empty(); }

std::optional<int64_t> SymExpr::constant() const {
  return isConstant() ? std::optional<int64_t>(Node->constant()) : std::nullopt;
}

std::optional<llvm::StringRef> SymExpr::symbolName() const {
  if (const SymAtom *atom = soleAtom(*this); atom && atom->kind == SymAtom::Kind::Symbol)
    return llvm::StringRef(atom->name);
  return std::nullopt;
}

bool operator==(const SymExpr &a, const SymExpr &b) { return compareExprs(a, b) == 0; }
bool operator<(const SymExpr &a, const SymExpr &b) { return compareExprs(a, b) < 0; }

SymExpr SymExpr::substitute(const std::map<std::string, SymExpr, std::less<>> &bindings) const {
  std::set<std::string, std::less<>> used;
  collectSymbols(used);
  if (llvm::none_of(used, [&](const std::string &s) { return bindings.count(s) != 0; }))
    return *this; // also keeps opaque atoms exactly as they are
  llvm::SmallVector<SymExpr, 8> parts;
  for (const SymTerm &t : Node->terms()) {
    SymExpr product = t.coeff;
    for (const SymAtom &atom : t.factors)
      product = product * substituteAtom(atom, bindings);
    parts.push_back(std::move(product));
  }
  parts.push_back(Node->constant());
  llvm::SmallVector<bool, 8> subtract(parts.size(), false);
  return detail::sumOf(parts, subtract);
}

std::optional<int64_t>
SymExpr::evaluate(const std::map<std::string, int64_t, std::less<>> &values) const {
  int64_t sum = Node->constant();
  for (const SymTerm &t : Node->terms()) {
    int64_t product = t.coeff;
    for (const SymAtom &atom : t.factors) {
      std::optional<int64_t> v = evaluateAtom(atom, values);
      if (!v || __builtin_mul_overflow(product, *v, &product))
        return std::nullopt;
    }
    if (__builtin_add_overflow(sum, product, &sum))
      return std::nullopt;
  }
  return sum;
}

void SymExpr::collectSymbols(std::set<std::string, std::less<>> &out) const {
  for (const SymTerm &t : Node->terms())
    for (const SymAtom &atom : t.factors) {
      if (atom.kind == SymAtom::Kind::Symbol)
        out.insert(atom.name);
      for (const SymExpr &arg : atom.args)
        arg.collectSymbols(out);
    }
}

} // namespace aotc
