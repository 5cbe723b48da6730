// Range analysis and proofs over canonical symbolic expressions: interval arithmetic that widens
// instead of overflowing, divisibility facts folded in by substitution, and the provers.
#include "aotc/ir/SymExpr.h"

#include "SymExprInternal.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <numeric>

namespace aotc {
namespace {

using Kind = SymAtom::Kind;

// Bounds are exact integers within [-2^63, 2^63], or an infinity. A lower bound beyond 2^63 is
// lowered to 2^63 and one below -2^63 becomes -infinity (mirrored for upper bounds): widening
// keeps every step sound, and no product of two finite bounds overflows 128 bits.
using Wide = __int128;
constexpr Wide kCap = Wide(1) << 63;
constexpr Wide kInf = Wide(1) << 100;

// How many nested rewrites (min / max distribution, k*floordiv(x, k) == x - mod(x, k)) one query
// may try; each level multiplies the work.
constexpr int kBudget = 2;
// Distribution is tried on at most this many terms of one sum.
constexpr int kMaxRewrittenTerms = 4;

Wide normLo(Wide v) { return v < -kCap ? -kInf : std::min(v, kCap); }
Wide normHi(Wide v) { return v > kCap ? kInf : std::max(v, -kCap); }

struct Interval {
  Wide lo = -kInf;
  Wide hi = kInf;
};

Interval point(int64_t v) { return {v, v}; }

Interval neg(Interval a) { return {-a.hi, -a.lo}; }

Interval unite(Interval a, Interval b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }

Interval add(Interval a, Interval b) {
  return {a.lo == -kInf || b.lo == -kInf ? -kInf : normLo(a.lo + b.lo),
          a.hi == kInf || b.hi == kInf ? kInf : normHi(a.hi + b.hi)};
}

Wide mulBound(Wide x, Wide y) {
  if (x == 0 || y == 0)
    return 0;
  if (x == kInf || x == -kInf || y == kInf || y == -kInf)
    return (x < 0) != (y < 0) ? -kInf : kInf;
  return x * y;
}

Interval mul(Interval a, Interval b) {
  Wide p[] = {mulBound(a.lo, b.lo), mulBound(a.lo, b.hi), mulBound(a.hi, b.lo),
              mulBound(a.hi, b.hi)};
  return {normLo(*std::min_element(std::begin(p), std::end(p))),
          normHi(*std::max_element(std::begin(p), std::end(p)))};
}

/// x^n, or the infinity of its sign once it leaves [-2^63, 2^63].
Wide powBound(Wide x, unsigned n) {
  Wide r = 1;
  for (unsigned i = 0; i != n; ++i) {
    r = mulBound(r, x);
    if (r > kCap)
      r = kInf;
    else if (r < -kCap)
      r = -kInf;
  }
  return r;
}

Interval power(Interval a, unsigned n) {
  Wide l = powBound(a.lo, n), h = powBound(a.hi, n);
  if (n % 2 == 1 || a.lo >= 0)
    return {normLo(l), normHi(h)};
  if (a.hi <= 0)
    return {normLo(h), normHi(l)};
  return {0, normHi(std::max(l, h))};
}

/// floor(x / y) for y >= 1; y may be +infinity.
Wide floorDivBound(Wide x, Wide y) {
  if (x == kInf || x == -kInf)
    return x;
  if (y == kInf)
    return x < 0 ? -1 : 0;
  Wide q = x / y;
  if (x % y != 0 && x < 0)
    --q;
  return q;
}

/// floordiv over a dividend range and a positive divisor range: the extremes sit at corners.
Interval divPositive(Interval a, Interval b) {
  return {normLo(floorDivBound(a.lo, a.lo >= 0 ? b.hi : b.lo)),
          normHi(floorDivBound(a.hi, a.hi >= 0 ? b.lo : b.hi))};
}

Interval modPositive(Interval a, Interval b) {
  if (b.lo == b.hi && a.lo != -kInf && a.hi != kInf) {
    // Within one block [q*k, q*k + k - 1] mod is a plain shift.
    Wide q = floorDivBound(a.lo, b.lo);
    if (q == floorDivBound(a.hi, b.lo))
      return {a.lo - q * b.lo, a.hi - q * b.lo};
  }
  Interval r{0, b.hi == kInf ? kInf : b.hi - 1};
  if (a.lo >= 0)
    r.hi = std::min(r.hi, a.hi);
  return r;
}

// A divisor range is split into its negative and positive parts (floordiv(a, b) ==
// floordiv(-a, -b), mod(a, b) == -mod(-a, -b)); zero itself yields no value.
template <typename Positive>
Interval bySignOfDivisor(Interval a, Interval b, bool negateResult, Positive positive) {
  std::optional<Interval> r;
  auto merge = [&](Interval x) { r = r ? unite(*r, x) : x; };
  if (b.hi >= 1)
    merge(positive(a, {std::max<Wide>(b.lo, 1), b.hi}));
  if (b.lo <= -1) {
    Interval x = positive(neg(a), {std::max<Wide>(-b.hi, 1), -b.lo});
    merge(negateResult ? neg(x) : x);
  }
  return r ? *r : Interval{};
}

ValueRange toValueRange(Interval r) {
  ValueRange v;
  v.lo = r.lo <= INT64_MIN ? INT64_MIN : r.lo > INT64_MAX ? INT64_MAX : static_cast<int64_t>(r.lo);
  v.hi = r.hi >= INT64_MAX ? INT64_MAX : r.hi < INT64_MIN ? INT64_MIN : static_cast<int64_t>(r.hi);
  return v;
}

class RangeAnalysis {
public:
  /// `rewriteDivisions` allows rewrites that build new mod atoms; the canonicalizer turns it off
  /// so that it never re-enters itself.
  RangeAnalysis(const SymbolFactsMap &facts, bool rewriteDivisions)
      : Facts(facts), RewriteDivisions(rewriteDivisions) {}

  Interval expr(const SymExpr &e, int budget) {
    const SymNode &n = e.node();
    Interval r = point(n.constant());
    for (const SymTerm &t : n.terms())
      r = add(r, term(t, budget));
    if (budget == 0)
      return r;
    // Intervals forget that two terms share a symbol; rewriting one term so that it cancels
    // against the rest recovers that: max(a, b) - a == max(0, b - a).
    int rewritten = 0;
    for (size_t i = 0, e2 = n.terms().size(); i != e2 && rewritten != kMaxRewrittenTerms; ++i) {
      const SymTerm &t = n.terms()[i];
      if (t.factors.size() != 1)
        continue;
      std::optional<Interval> alt = rewriteTerm(e, i, t.coeff, t.factors.front(), budget - 1);
      if (!alt)
        continue;
      ++rewritten;
      Interval both{std::max(r.lo, alt->lo), std::min(r.hi, alt->hi)};
      if (both.lo <= both.hi) // otherwise no assignment exists and either answer is sound
        r = both;
    }
    return r;
  }

private:
  std::optional<Interval> rewriteTerm(const SymExpr &e, size_t index, int64_t coeff,
                                      const SymAtom &atom, int budget) {
    if (atom.kind == Kind::Min || atom.kind == Kind::Max) {
      // rest + c*min(x, y) == min(rest + c*x, rest + c*y) for c > 0 (max for c < 0).
      SymExpr rest = detail::dropTerm(e, index);
      bool takeMin = (atom.kind == Kind::Min) == (coeff > 0);
      std::optional<Interval> r;
      for (const SymExpr &arg : atom.args) {
        Interval x = expr(rest + SymExpr(coeff) * arg, budget);
        r = !r        ? x
            : takeMin ? Interval{std::min(r->lo, x.lo), std::min(r->hi, x.hi)}
                      : Interval{std::max(r->lo, x.lo), std::max(r->hi, x.hi)};
      }
      return r;
    }
    if (atom.kind == Kind::FloorDiv && RewriteDivisions) {
      // c*floordiv(x, k) == (c/k)*(x - mod(x, k)) when k divides c.
      std::optional<int64_t> k = atom.args[1].constant();
      if (!k || *k <= 0 || coeff % *k != 0)
        return std::nullopt;
      SymExpr m = coeff / *k;
      const SymExpr &x = atom.args[0];
      return expr(detail::dropTerm(e, index) + m * x - m * SymExpr::mod(x, *k), budget);
    }
    return std::nullopt;
  }

  Interval term(const SymTerm &t, int budget) {
    Interval r = point(t.coeff);
    llvm::ArrayRef<SymAtom> f = t.factors;
    for (size_t i = 0; i != f.size();) {
      // Equal factors are adjacent; x*x is never negative, which a plain product would miss.
      size_t j = i + 1;
      while (j != f.size() && detail::compareAtoms(f[i], f[j]) == 0)
        ++j;
      r = mul(r, power(atom(f[i], budget), j - i));
      i = j;
    }
    return r;
  }

  Interval atom(const SymAtom &a, int budget) {
    if (a.kind == Kind::Symbol)
      return symbol(a.name);
    // Rewrites stay at the top of the query; nested levels only get one, which keeps deeply
    // nested expressions polynomial.
    budget = std::min(budget, 1);
    llvm::SmallVector<Interval, 4> args;
    for (const SymExpr &arg : a.args)
      args.push_back(expr(arg, budget));
    switch (a.kind) {
    case Kind::FloorDiv:
      return bySignOfDivisor(args[0], args[1], /*negateResult=*/false, divPositive);
    case Kind::Mod:
      return bySignOfDivisor(args[0], args[1], /*negateResult=*/true, modPositive);
    case Kind::Min:
    case Kind::Max: {
      Interval r = args.front();
      bool isMin = a.kind == Kind::Min;
      for (const Interval &x : llvm::drop_begin(args))
        r = isMin ? Interval{std::min(r.lo, x.lo), std::min(r.hi, x.hi)}
                  : Interval{std::max(r.lo, x.lo), std::max(r.hi, x.hi)};
      return r;
    }
    case Kind::Add:
      return add(args[0], args[1]);
    case Kind::Mul:
      return mul(args[0], args[1]);
    case Kind::Symbol:
      break;
    }
    llvm_unreachable("unknown atom kind");
  }

  Interval symbol(llvm::StringRef name) {
    auto it = Facts.find(name);
    if (it == Facts.end())
      return {};
    const SymbolFacts &f = it->second;
    Wide lo = f.lo == INT64_MIN ? -kInf : Wide(f.lo);
    Wide hi = f.hi == INT64_MAX ? kInf : Wide(f.hi);
    if (f.divisor > 1) { // round inward to multiples of the divisor
      if (lo != -kInf)
        lo = -floorDivBound(-lo, f.divisor) * f.divisor;
      if (hi != kInf)
        hi = floorDivBound(hi, f.divisor) * f.divisor;
    }
    return {normLo(lo), normHi(hi)};
  }

  const SymbolFactsMap &Facts;
  bool RewriteDivisions;
};

/// Facts with divisors folded in: a symbol `s` that is a multiple of d becomes d*s, with s now
/// ranging over [ceil(lo/d), floor(hi/d)], so that mod(s, d) simplifies to 0 in canonical form.
struct PreparedFacts {
  SymbolFactsMap facts;
  std::map<std::string, SymExpr, std::less<>> bindings;
  bool empty = false; // no assignment satisfies the facts

  explicit PreparedFacts(const SymbolFactsMap &input) {
    for (const auto &[name, f] : input) {
      SymbolFacts g = f;
      if (f.divisor > 1) {
        g.divisor = 1;
        if (f.lo != INT64_MIN)
          g.lo = static_cast<int64_t>(-floorDivBound(-Wide(f.lo), f.divisor));
        if (f.hi != INT64_MAX)
          g.hi = static_cast<int64_t>(floorDivBound(f.hi, f.divisor));
        bindings[name] = SymExpr(f.divisor) * SymExpr::symbol(name);
      }
      empty |= g.lo > g.hi;
      facts[name] = g;
    }
  }

  SymExpr apply(const SymExpr &e) const { return bindings.empty() ? e : e.substitute(bindings); }

  Interval range(const SymExpr &e) const {
    return RangeAnalysis(facts, /*rewriteDivisions=*/true).expr(e, kBudget);
  }
};

/// Whether `d >= minimum` holds for all, none, or only some assignments.
Truth atLeast(const SymExpr &d, int64_t minimum, const SymbolFactsMap &facts) {
  PreparedFacts p(facts);
  if (p.empty)
    return Truth::Unknown;
  Interval r = p.range(p.apply(d));
  if (r.lo >= minimum)
    return Truth::True;
  if (r.hi < minimum)
    return Truth::False;
  return Truth::Unknown;
}

uint64_t magnitude(int64_t v) { return v < 0 ? 0 - static_cast<uint64_t>(v) : v; }

} // namespace

ValueRange detail::intrinsicRange(const SymExpr &e) {
  static const SymbolFactsMap none;
  return toValueRange(RangeAnalysis(none, /*rewriteDivisions=*/false).expr(e, 1));
}

ValueRange rangeOf(const SymExpr &e, const SymbolFactsMap &facts) {
  PreparedFacts p(facts);
  if (p.empty) // no assignment at all; any answer is sound, keep it simple
    return toValueRange(RangeAnalysis(facts, true).expr(e, kBudget));
  return toValueRange(p.range(p.apply(e)));
}

llvm::StringRef toString(Truth t) {
  switch (t) {
  case Truth::True:
    return "true";
  case Truth::False:
    return "false";
  case Truth::Unknown:
    return "unknown";
  }
  llvm_unreachable("unknown Truth");
}

Truth proveLE(const SymExpr &a, const SymExpr &b, const SymbolFactsMap &facts) {
  return atLeast(b - a, 0, facts);
}

Truth proveLT(const SymExpr &a, const SymExpr &b, const SymbolFactsMap &facts) {
  return atLeast(b - a, 1, facts);
}

Truth proveEQ(const SymExpr &a, const SymExpr &b, const SymbolFactsMap &facts) {
  PreparedFacts p(facts);
  if (p.empty)
    return Truth::Unknown;
  SymExpr d = p.apply(b - a);
  if (d.constant() == 0)
    return Truth::True;
  Interval r = p.range(d);
  if (r.lo == 0 && r.hi == 0)
    return Truth::True;
  if (r.lo > 0 || r.hi < 0)
    return Truth::False;
  // g*(...) + c is never 0 when g does not divide c.
  uint64_t g = 0;
  for (const SymTerm &t : d.node().terms())
    g = std::gcd(g, magnitude(t.coeff));
  if (g > 1 && magnitude(d.node().constant()) % g != 0)
    return Truth::False;
  return Truth::Unknown;
}

Truth proveDivisible(const SymExpr &a, int64_t k, const SymbolFactsMap &facts) {
  if (k == 0)
    return proveEQ(a, 0, facts);
  if (k == 1 || k == -1)
    return Truth::True;
  PreparedFacts p(facts);
  if (p.empty)
    return Truth::Unknown;
  SymExpr e = p.apply(a);
  if (k != INT64_MIN) {
    // The canonical mod drops every multiple of k: mod(4*b + 16, 4) == 0.
    SymExpr r = SymExpr::mod(e, k < 0 ? -k : k);
    if (std::optional<int64_t> c = r.constant())
      return *c == 0 ? Truth::True : Truth::False;
    Interval rr = p.range(r);
    if (rr.lo == 0 && rr.hi == 0)
      return Truth::True;
    if (rr.lo > 0 || rr.hi < 0)
      return Truth::False;
  }
  Interval v = p.range(e);
  if (v.lo == v.hi && v.lo != -kInf && v.lo != kInf && -kCap < v.lo && v.lo < kCap)
    return v.lo % Wide(magnitude(k)) == 0 ? Truth::True : Truth::False;
  return Truth::Unknown;
}

} // namespace aotc
