// Tests for symbolic expressions: the simplifier checked by brute force against an independent
// reference evaluator, canonical equality, printing / parsing, ranges and the provers' soundness.
#include "aotc/ir/SymExpr.h"

#include "llvm/Support/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace aotc;

namespace aotc {
// Readable gtest failure messages.
static void PrintTo(const SymExpr &e, std::ostream *os) { *os << e.str(); }
static void PrintTo(const ValueRange &r, std::ostream *os) { *os << r.lo << ".." << r.hi; }
static void PrintTo(Truth t, std::ostream *os) { *os << toString(t).str(); }
} // namespace aotc

namespace {

using Env = std::map<std::string, int64_t, std::less<>>;

SymExpr sym(llvm::StringRef name) { return SymExpr::symbol(name); }

SymExpr parse(llvm::StringRef text) {
  llvm::Expected<SymExpr> e = parseSymExpr(text);
  if (!e) {
    ADD_FAILURE() << "cannot parse \"" << text.str() << "\": " << llvm::toString(e.takeError());
    return SymExpr();
  }
  return *e;
}

std::string parseError(llvm::StringRef text) {
  llvm::Expected<SymExpr> e = parseSymExpr(text);
  if (e)
    return "parsed as " + e->str();
  return llvm::toString(e.takeError());
}

//===----------------------------------------------------------------------===//
// An unsimplified expression tree with its own evaluator, built alongside the SymExpr.
//===----------------------------------------------------------------------===//

struct Ref {
  enum Op { Const, Sym, Add, Sub, Mul, Neg, FloorDiv, Mod, Min, Max } op = Const;
  int64_t value = 0;
  std::string name;
  std::vector<std::shared_ptr<const Ref>> kids;
};
using RefPtr = std::shared_ptr<const Ref>;

// Python semantics computed a different way than the implementation: through the exact real
// quotient, which is fine for the small magnitudes the tests use.
std::optional<int64_t> refFloorDiv(int64_t a, int64_t b) {
  if (b == 0)
    return std::nullopt;
  return static_cast<int64_t>(std::floor(static_cast<long double>(a) / b));
}

std::optional<int64_t> refMod(int64_t a, int64_t b) {
  std::optional<int64_t> q = refFloorDiv(a, b);
  if (!q)
    return std::nullopt;
  return static_cast<int64_t>(static_cast<__int128>(a) - static_cast<__int128>(b) * *q);
}

// Checked int64 arithmetic: nullopt on overflow or division by zero.
std::optional<int64_t> evalRef(const Ref &r, const Env &env) {
  if (r.op == Ref::Const)
    return r.value;
  if (r.op == Ref::Sym) {
    auto it = env.find(r.name);
    return it == env.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  int64_t v[2] = {0, 0};
  for (size_t i = 0; i != r.kids.size(); ++i) {
    std::optional<int64_t> x = evalRef(*r.kids[i], env);
    if (!x)
      return std::nullopt;
    v[i] = *x;
  }
  int64_t out;
  switch (r.op) {
  case Ref::Add:
    return __builtin_add_overflow(v[0], v[1], &out) ? std::nullopt : std::optional(out);
  case Ref::Sub:
    return __builtin_sub_overflow(v[0], v[1], &out) ? std::nullopt : std::optional(out);
  case Ref::Mul:
    return __builtin_mul_overflow(v[0], v[1], &out) ? std::nullopt : std::optional(out);
  case Ref::Neg:
    return __builtin_sub_overflow(int64_t(0), v[0], &out) ? std::nullopt : std::optional(out);
  case Ref::FloorDiv:
  case Ref::Mod:
    // Beyond 2^52 the floating-point reference is not exact; such cases are not checked.
    if (v[0] > (1LL << 52) || v[0] < -(1LL << 52))
      return std::nullopt;
    return r.op == Ref::FloorDiv ? refFloorDiv(v[0], v[1]) : refMod(v[0], v[1]);
  case Ref::Min:
    return std::min(v[0], v[1]);
  case Ref::Max:
    return std::max(v[0], v[1]);
  default:
    return std::nullopt;
  }
}

std::string refStr(const Ref &r) {
  static const char *names[] = {"", "", "+", "-", "*", "neg", "floordiv", "mod", "min", "max"};
  if (r.op == Ref::Const)
    return std::to_string(r.value);
  if (r.op == Ref::Sym)
    return r.name;
  std::string s = std::string("(") + names[r.op];
  for (const RefPtr &k : r.kids) {
    s += ' ';
    s += refStr(*k);
  }
  return s + ")";
}

struct Sample {
  RefPtr ref;
  SymExpr expr;
};

class Generator {
public:
  Generator(uint32_t seed, std::vector<std::string> symbols, std::vector<int64_t> constants)
      : Rng(seed), Symbols(std::move(symbols)), Constants(std::move(constants)) {}

  Sample make(int depth) {
    int choice = depth == 0 ? pick(3) : pick(14);
    auto leaf = std::make_shared<Ref>();
    if (choice == 0) { // a constant
      leaf->value = Constants[pick(Constants.size())];
      return {leaf, leaf->value};
    }
    if (choice <= 2) { // a symbol
      leaf->op = Ref::Sym;
      leaf->name = Symbols[pick(Symbols.size())];
      return {leaf, SymExpr::symbol(leaf->name)};
    }
    Sample a = make(depth - 1);
    auto node = std::make_shared<Ref>();
    node->kids.push_back(a.ref);
    if (choice == 3) {
      node->op = Ref::Neg;
      return {node, -a.expr};
    }
    // Divisors are mostly constants, which is where the rewrite rules apply.
    bool divides = choice >= 9 && choice <= 11;
    Sample b = divides && pick(4) != 0 ? make(0) : make(depth - 1);
    if (divides && b.ref->op != Ref::Const && pick(2) == 0)
      b = constant(Constants[pick(Constants.size())]);
    node->kids.push_back(b.ref);
    switch (choice) {
    case 4:
    case 5:
      node->op = Ref::Add;
      return {node, a.expr + b.expr};
    case 6:
      node->op = Ref::Sub;
      return {node, a.expr - b.expr};
    case 7:
    case 8:
      node->op = Ref::Mul;
      return {node, a.expr * b.expr};
    case 9:
    case 10:
      node->op = Ref::FloorDiv;
      return {node, SymExpr::floorDiv(a.expr, b.expr)};
    case 11:
      node->op = Ref::Mod;
      return {node, SymExpr::mod(a.expr, b.expr)};
    case 12:
      node->op = Ref::Min;
      return {node, SymExpr::min(a.expr, b.expr)};
    default:
      node->op = Ref::Max;
      return {node, SymExpr::max(a.expr, b.expr)};
    }
  }

  Sample constant(int64_t v) {
    auto leaf = std::make_shared<Ref>();
    leaf->value = v;
    return {leaf, v};
  }

  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(Rng); }
  int64_t between(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(Rng);
  }

private:
  std::mt19937 Rng;
  std::vector<std::string> Symbols;
  std::vector<int64_t> Constants;
};

std::vector<int64_t> smallConstants() { return {-5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5}; }

/// Every assignment of `symbols` to values in [lo, hi].
std::vector<Env> assignments(const std::vector<std::string> &symbols, int64_t lo, int64_t hi) {
  std::vector<Env> out{Env{}};
  for (const std::string &s : symbols) {
    std::vector<Env> next;
    for (const Env &e : out)
      for (int64_t v = lo; v <= hi; ++v) {
        Env f = e;
        f[s] = v;
        next.push_back(std::move(f));
      }
    out = std::move(next);
  }
  return out;
}

std::string envStr(const Env &env) {
  std::string s;
  for (const auto &[k, v] : env)
    s += k + "=" + std::to_string(v) + " ";
  return s;
}

/// The canonical form never disagrees with the reference where the reference is defined.
/// (It may be defined where the reference divides by zero: 0*floordiv(x, 0) folds to 0.)
void checkAgainstReference(const Sample &s, const std::vector<Env> &envs) {
  for (const Env &env : envs) {
    std::optional<int64_t> want = evalRef(*s.ref, env);
    if (!want)
      continue;
    std::optional<int64_t> got = s.expr.evaluate(env);
    if (got != want) {
      ADD_FAILURE() << refStr(*s.ref) << " simplified to " << s.expr.str() << " at " << envStr(env)
                    << ": got " << (got ? std::to_string(*got) : "nothing") << ", want " << *want;
      return;
    }
  }
}

void checkRoundTrip(const SymExpr &e, const std::string &context) {
  std::string text = e.str();
  llvm::Expected<SymExpr> back = parseSymExpr(text);
  if (!back) {
    ADD_FAILURE() << context << ": " << text
                  << " does not parse: " << llvm::toString(back.takeError());
    return;
  }
  EXPECT_EQ(back->str(), text) << context;
  EXPECT_TRUE(*back == e) << context << ": " << text << " reads back as " << back->str();
}

//===----------------------------------------------------------------------===//
// Brute force
//===----------------------------------------------------------------------===//

TEST(SymExprBruteForce, SimplifierKeepsTheValue) {
  std::vector<std::string> symbols{"a", "b", "c"};
  std::vector<Env> mixed = assignments(symbols, -4, 6);
  std::vector<Env> positive = assignments(symbols, 1, 7);
  Generator gen(12345, symbols, smallConstants());
  for (int i = 0; i != 3000; ++i) {
    Sample s = gen.make(1 + i % 4);
    checkAgainstReference(s, mixed);
    checkAgainstReference(s, positive);
    checkRoundTrip(s.expr, refStr(*s.ref));
    if (HasFailure())
      return;
  }
}

TEST(SymExprBruteForce, TwoSymbolsWideRange) {
  std::vector<std::string> symbols{"x", "y"};
  std::vector<Env> envs = assignments(symbols, -13, 13);
  Generator gen(777, symbols, {-7, -4, -3, -2, -1, 0, 1, 2, 3, 4, 6, 8, 16});
  for (int i = 0; i != 2000; ++i) {
    Sample s = gen.make(1 + i % 4);
    checkAgainstReference(s, envs);
    checkRoundTrip(s.expr, refStr(*s.ref));
    if (HasFailure())
      return;
  }
}

TEST(SymExprBruteForce, SubstitutionKeepsTheValue) {
  std::vector<std::string> symbols{"a", "b"};
  Generator gen(99, symbols, smallConstants());
  for (int i = 0; i != 500; ++i) {
    Sample s = gen.make(3);
    Sample forA = gen.make(2);
    SymExpr replaced = s.expr.substitute({{"a", forA.expr}});
    for (const Env &env : assignments({"b", "c"}, -3, 4)) {
      std::optional<int64_t> a = evalRef(*forA.ref, env);
      if (!a)
        continue;
      Env inner = env;
      inner["a"] = *a;
      std::optional<int64_t> want = evalRef(*s.ref, inner);
      if (want && replaced.evaluate(env) != want) {
        ADD_FAILURE() << refStr(*s.ref) << " with a = " << refStr(*forA.ref) << " gives "
                      << replaced.str() << ", wrong at " << envStr(env);
        return;
      }
    }
  }
}

TEST(SymExprBruteForce, CanonicalFormIsOrderIndependent) {
  Generator gen(4242, {"a", "b", "c"}, smallConstants());
  for (int i = 0; i != 1500; ++i) {
    SymExpr x = gen.make(2).expr, y = gen.make(2).expr, z = gen.make(1).expr;
    EXPECT_EQ(x + y, y + x) << x.str() << " | " << y.str();
    EXPECT_EQ(x * y, y * x) << x.str() << " | " << y.str();
    EXPECT_EQ((x + y) + z, x + (y + z)) << x.str() << " | " << y.str() << " | " << z.str();
    EXPECT_EQ(x * (y + z), x * y + x * z) << x.str() << " | " << y.str() << " | " << z.str();
    EXPECT_EQ(x - x, SymExpr(0)) << x.str();
    EXPECT_EQ(SymExpr::min(x, y), SymExpr::min(y, x)) << x.str() << " | " << y.str();
    EXPECT_EQ(SymExpr::max(x, y), SymExpr::max(y, x)) << x.str() << " | " << y.str();
    EXPECT_EQ(SymExpr::min(x, x), x) << x.str();
    // A strict total order.
    bool lt = x < y, gt = y < x, eq = x == y;
    EXPECT_EQ(int(lt) + int(gt) + int(eq), 1) << x.str() << " | " << y.str();
    if (HasFailure())
      return;
  }
}

// Huge constants: the canonicalizer must not overflow (the test runs under UBSan), must never
// produce a wrong value, and must print forms that read back.
TEST(SymExprBruteForce, ExtremeConstantsNeverGiveWrongValues) {
  std::vector<std::string> symbols{"a", "b"};
  std::vector<Env> envs = assignments(symbols, -3, 3);
  envs.push_back({{"a", INT64_MAX}, {"b", INT64_MIN}});
  envs.push_back({{"a", INT64_MIN}, {"b", -1}});
  envs.push_back({{"a", 1LL << 32}, {"b", 1LL << 31}});
  Generator gen(2024, symbols,
                {INT64_MIN, INT64_MIN + 1, -(1LL << 62), -(1LL << 32), -3, -1, 0, 1, 2, 1LL << 31,
                 1LL << 62, INT64_MAX - 1, INT64_MAX});
  for (int i = 0; i != 3000; ++i) {
    Sample s = gen.make(1 + i % 4);
    for (const Env &env : envs) {
      std::optional<int64_t> want = evalRef(*s.ref, env);
      std::optional<int64_t> got = s.expr.evaluate(env);
      if (want && got && *want != *got)
        ADD_FAILURE() << refStr(*s.ref) << " -> " << s.expr.str() << " at " << envStr(env);
    }
    checkRoundTrip(s.expr, refStr(*s.ref));
    ValueRange r = rangeOf(s.expr, {{"a", {-3, 3, 1}}, {"b", {-3, 3, 1}}});
    for (const Env &env : assignments(symbols, -3, 3))
      if (std::optional<int64_t> v = s.expr.evaluate(env); v && !r.contains(*v))
        ADD_FAILURE() << s.expr.str() << " = " << *v << " at " << envStr(env)
                      << " is outside its range " << r.lo << ".." << r.hi;
    if (HasFailure())
      return;
  }
}

//===----------------------------------------------------------------------===//
// Canonical equality and simplification rules
//===----------------------------------------------------------------------===//

TEST(SymExpr, CanonicalEquality) {
  SymExpr a = sym("a"), b = sym("b"), c = sym("c");
  EXPECT_EQ(a + b, b + a);
  EXPECT_EQ(2 * (a + 1), 2 * a + 2);
  EXPECT_EQ((a + b) * (a - b), a * a - b * b);
  EXPECT_EQ(SymExpr::floorDiv(4 * a + 2, 2), 2 * a + 1);
  EXPECT_EQ(a * (b * c), (a * b) * c);
  EXPECT_EQ(a - a, SymExpr(0));
  EXPECT_EQ(-(-a), a);
  EXPECT_EQ(3 * a - a - 2 * a, SymExpr(0));
  EXPECT_NE(a, b);
  EXPECT_NE(a + 1, a);
  EXPECT_NE(a * a, 2 * a);
}

TEST(SymExpr, FloorDivRules) {
  SymExpr a = sym("a"), b = sym("b"), x = sym("x");
  EXPECT_EQ(SymExpr::floorDiv(a * 4 + b, 4), a + SymExpr::floorDiv(b, 4));
  EXPECT_EQ(SymExpr::floorDiv(SymExpr::floorDiv(x, 2), 3), SymExpr::floorDiv(x, 6));
  EXPECT_EQ(SymExpr::floorDiv(x, 1), x);
  EXPECT_EQ(SymExpr::floorDiv(x, -1), -x);
  EXPECT_EQ(SymExpr::floorDiv(6 * x + 4, 4), SymExpr::floorDiv(3 * x + 2, 2));
  EXPECT_EQ(SymExpr::floorDiv(SymExpr::mod(x, 4), 4), SymExpr(0));
  EXPECT_EQ(SymExpr::floorDiv(7, 2), SymExpr(3));
  EXPECT_EQ(SymExpr::floorDiv(-7, 2), SymExpr(-4));
  EXPECT_EQ(SymExpr::floorDiv(7, -2), SymExpr(-4));
  EXPECT_EQ(SymExpr::floorDiv(-7, -2), SymExpr(3));
  EXPECT_EQ(SymExpr::floorDiv(x - 1, 4) + 1, SymExpr::floorDiv(x + 3, 4));
  // Division by zero stays as written; evaluation reports it.
  SymExpr byZero = SymExpr::floorDiv(x, 0);
  EXPECT_EQ(byZero.str(), "floordiv(x, 0)");
  EXPECT_EQ(byZero.evaluate({{"x", 3}}), std::nullopt);
  EXPECT_EQ(SymExpr::floorDiv(1, 0).str(), "floordiv(1, 0)");
  EXPECT_EQ(SymExpr::floorDiv(x, a).evaluate({{"x", 7}, {"a", 0}}), std::nullopt);
}

TEST(SymExpr, ExactDivisionByAMonomial) {
  // `view(b*s, -1)` of a [b, s, 4, 16] tensor divides b*s*64 by b*s.
  SymExpr a = sym("a"), b = sym("b"), x = sym("x");
  EXPECT_EQ(SymExpr::floorDiv(64 * a * b, a * b), SymExpr(64));
  EXPECT_EQ(SymExpr::floorDiv(6 * a * a * x + 4 * a * b, 2 * a), 3 * a * x + 2 * b);
  EXPECT_EQ(SymExpr::floorDiv(-6 * a * x, -3 * a), 2 * x);
  // Not exact: a term is not a multiple, or the dividend has a constant, or the divisor is a sum.
  EXPECT_EQ(SymExpr::floorDiv(6 * a * x + 4 * b, 2 * a).str(), "floordiv(6*a*x + 4*b, 2*a)");
  EXPECT_EQ(SymExpr::floorDiv(4 * a + 1, a).str(), "floordiv(4*a + 1, a)");
  EXPECT_EQ(SymExpr::floorDiv(3 * a * x, 2 * a).str(), "floordiv(3*a*x, 2*a)");
  EXPECT_EQ(SymExpr::floorDiv(a * b + a, b + 1).str(), "floordiv(a*b + a, b + 1)");
  // Wherever the divisor is nonzero the value is the plain quotient.
  SymExpr q = SymExpr::floorDiv(6 * a * a * x - 4 * a * b, 2 * a);
  for (int64_t av = -3; av <= 3; ++av)
    for (int64_t bv = -3; bv <= 3; ++bv)
      for (int64_t xv = -3; xv <= 3; ++xv) {
        if (av == 0)
          continue;
        int64_t num = 6 * av * av * xv - 4 * av * bv, den = 2 * av;
        int64_t expected = num / den - ((num % den != 0) && ((num < 0) != (den < 0)));
        EXPECT_EQ(q.evaluate({{"a", av}, {"b", bv}, {"x", xv}}), expected);
      }
}

TEST(SymExpr, ModRules) {
  SymExpr a = sym("a"), b = sym("b"), x = sym("x");
  EXPECT_EQ(SymExpr::mod(a * 8 + b, 8), SymExpr::mod(b, 8));
  EXPECT_EQ(SymExpr::mod(x, 1), SymExpr(0));
  EXPECT_EQ(SymExpr::mod(x, -1), SymExpr(0));
  EXPECT_EQ(SymExpr::mod(8 * x, 8), SymExpr(0));
  EXPECT_EQ(SymExpr::mod(SymExpr::mod(x, 8), 4), SymExpr::mod(x, 4));
  EXPECT_EQ(SymExpr::mod(SymExpr::mod(x, 4), 8), SymExpr::mod(x, 4));
  EXPECT_EQ(SymExpr::mod(2 * x, 4), 2 * SymExpr::mod(x, 2));
  EXPECT_EQ(SymExpr::mod(7, 3), SymExpr(1));
  EXPECT_EQ(SymExpr::mod(-7, 3), SymExpr(2));
  EXPECT_EQ(SymExpr::mod(7, -3), SymExpr(-2));
  EXPECT_EQ(SymExpr::mod(-7, -3), SymExpr(-1));
  EXPECT_EQ(SymExpr::mod(x, 0).evaluate({{"x", 1}}), std::nullopt);
  EXPECT_EQ(SymExpr::mod(x, 8).evaluate({{"x", -3}}), 5);
  EXPECT_EQ(SymExpr::mod(x, -8).evaluate({{"x", 3}}), -5);
}

TEST(SymExpr, MinMaxRules) {
  SymExpr a = sym("a"), b = sym("b"), x = sym("x");
  EXPECT_EQ(SymExpr::min(x, x), x);
  EXPECT_EQ(SymExpr::max(x, x), x);
  EXPECT_EQ(SymExpr::min(3, -2), SymExpr(-2));
  EXPECT_EQ(SymExpr::max(3, -2), SymExpr(3));
  EXPECT_EQ(SymExpr::min(x + 1, x + 3), x + 1);
  EXPECT_EQ(SymExpr::max(x + 1, x + 3), x + 3);
  EXPECT_EQ(SymExpr::min(SymExpr::min(a, b), a), SymExpr::min(a, b));
  EXPECT_EQ(SymExpr::min(a, SymExpr::min(b, x)), SymExpr::min(SymExpr::min(a, b), x));
  EXPECT_EQ(SymExpr::min(SymExpr::mod(x, 8), 9), SymExpr::mod(x, 8));
  EXPECT_EQ(SymExpr::min(x, SymExpr::max(x, a)), x);
  EXPECT_EQ(SymExpr::min(a + 1, b + 1), SymExpr::min(a, b) + 1);
  EXPECT_EQ(SymExpr::max(a + x, b + x), SymExpr::max(a, b) + x);
  // Canonical form never depends on symbol ranges.
  EXPECT_EQ(SymExpr::min(a, 16).str(), "min(a, 16)");
}

TEST(SymExpr, Accessors) {
  SymExpr a = sym("batch");
  EXPECT_EQ(a.symbolName(), llvm::StringRef("batch"));
  EXPECT_EQ((a + 1).symbolName(), std::nullopt);
  EXPECT_EQ((2 * a).symbolName(), std::nullopt);
  EXPECT_TRUE(SymExpr(5).isConstant());
  EXPECT_EQ(SymExpr(5).constant(), 5);
  EXPECT_EQ(SymExpr().constant(), 0);
  EXPECT_FALSE(a.isConstant());
  EXPECT_EQ(a.constant(), std::nullopt);
  std::set<std::string, std::less<>> names;
  (SymExpr::floorDiv(sym("x") * sym("y"), sym("z")) + SymExpr::min(a, 3)).collectSymbols(names);
  EXPECT_EQ(names, (std::set<std::string, std::less<>>{"batch", "x", "y", "z"}));
  EXPECT_EQ(a.evaluate({}), std::nullopt);
  EXPECT_EQ((a * 3 + 1).evaluate({{"batch", 4}}), 13);
}

TEST(SymExpr, Substitute) {
  SymExpr seq = sym("seq"), half = sym("half");
  SymExpr e = 2 * half + seq;
  EXPECT_EQ(e.substitute({{"half", seq + 1}}), 3 * seq + 2);
  EXPECT_EQ(SymExpr::floorDiv(seq, 4).substitute({{"seq", 4 * half}}), half);
  EXPECT_EQ(e.substitute({{"other", SymExpr(1)}}), e);
  EXPECT_EQ(SymExpr::min(seq, 8).substitute({{"seq", SymExpr(3)}}), SymExpr(3));
}

//===----------------------------------------------------------------------===//
// Printing and parsing
//===----------------------------------------------------------------------===//

TEST(SymExpr, Str) {
  SymExpr a = sym("a"), b = sym("b");
  EXPECT_EQ(sym("batch").str(), "batch");
  EXPECT_EQ((sym("seq") + 1).str(), "seq + 1");
  EXPECT_EQ((2 * sym("half") - 3).str(), "2*half - 3");
  EXPECT_EQ((-sym("batch")).str(), "-batch");
  EXPECT_EQ(SymExpr::floorDiv(sym("seq"), 4).str(), "floordiv(seq, 4)");
  EXPECT_EQ(SymExpr::mod(sym("x"), 8).str(), "mod(x, 8)");
  EXPECT_EQ(SymExpr::min(a, 16).str(), "min(a, 16)");
  EXPECT_EQ(SymExpr::max(a, b).str(), "max(a, b)");
  EXPECT_EQ((sym("batch") * sym("seq")).str(), "batch*seq");
  EXPECT_EQ(SymExpr(0).str(), "0");
  EXPECT_EQ(SymExpr(-7).str(), "-7");
  EXPECT_EQ((a - b).str(), "a - b");
  EXPECT_EQ((a * a * b - 2 * a + 1).str(), "a*a*b - 2*a + 1");
  EXPECT_EQ(SymExpr::minOf({a, b, sym("c")}).str(), "min(a, b, c)");
  EXPECT_EQ(SymExpr(INT64_MIN).str(), "-9223372036854775808");
  EXPECT_EQ((a + INT64_MIN).str(), "a + -9223372036854775808");
  EXPECT_EQ(SymExpr::minOf({a, b, a}), SymExpr::min(a, b));
}

TEST(SymExprParser, Accepts) {
  SymExpr a = sym("a"), b = sym("b");
  EXPECT_EQ(parse("a + b*2"), a + 2 * b);
  EXPECT_EQ(parse("(a + b) * 2"), 2 * a + 2 * b);
  EXPECT_EQ(parse("a // 4"), SymExpr::floorDiv(a, 4));
  EXPECT_EQ(parse("a % 4"), SymExpr::mod(a, 4));
  EXPECT_EQ(parse("-a // 2"), SymExpr::floorDiv(-a, 2)); // unary minus binds tighter, as in Python
  EXPECT_EQ(parse("- -a"), a);
  EXPECT_EQ(parse("a - b - 1"), a - b - 1);
  EXPECT_EQ(parse("min(a, max(b, 3))"), SymExpr::min(a, SymExpr::max(b, 3)));
  EXPECT_EQ(parse("min(a, b, 2)"), SymExpr::minOf({a, b, 2}));
  EXPECT_EQ(parse("floordiv(a*4 + 2, 2)"), 2 * a + 1);
  EXPECT_EQ(parse("  x.y_1  "), sym("x.y_1"));
  EXPECT_EQ(parse("-9223372036854775808"), SymExpr(INT64_MIN));
  EXPECT_EQ(parse("9223372036854775807"), SymExpr(INT64_MAX));
  EXPECT_EQ(parse("min"), sym("min")); // a name is only a function when called
}

TEST(SymExprParser, RejectsWithColumn) {
  EXPECT_EQ(parseError(""), "symbolic expression \"\": expected an operand at column 1");
  EXPECT_EQ(parseError("a +"), "symbolic expression \"a +\": expected an operand at column 4");
  EXPECT_EQ(parseError("(a"), "symbolic expression \"(a\": expected \")\" at column 3");
  EXPECT_EQ(parseError("foo(1)"),
            "symbolic expression \"foo(1)\": unknown function \"foo\" at column 1");
  EXPECT_EQ(parseError("floordiv(a)"), "symbolic expression \"floordiv(a)\": floordiv takes 2 "
                                       "arguments; expected \",\" at column 11");
  EXPECT_EQ(parseError("mod(a, b, c)"), "symbolic expression \"mod(a, b, c)\": mod takes 2 "
                                        "arguments; expected \")\" at column 9");
  EXPECT_EQ(parseError("99999999999999999999"),
            "symbolic expression \"99999999999999999999\": integer literal 99999999999999999999 "
            "does not fit in 64 bits at column 1");
  EXPECT_EQ(parseError("9223372036854775808"),
            "symbolic expression \"9223372036854775808\": integer literal 9223372036854775808 "
            "does not fit in 64 bits at column 1");
  EXPECT_EQ(parseError("a $ b"),
            "symbolic expression \"a $ b\": unexpected character \"$\" at column 3");
  EXPECT_EQ(parseError("a b"), "symbolic expression \"a b\": unexpected \"b\" at column 3");
  EXPECT_EQ(parseError("a)"), "symbolic expression \"a)\": unexpected \")\" at column 2");
  EXPECT_EQ(parseError("a / 2"), "symbolic expression \"a / 2\": unexpected character \"/\" "
                                 "(floor division is written \"//\") at column 3");
  EXPECT_EQ(parseError("min(a)"), "symbolic expression \"min(a)\": min takes at least 2 "
                                  "arguments; expected \",\" at column 6");
  EXPECT_EQ(parseError("max(a, b"),
            "symbolic expression \"max(a, b\": expected \",\" or \")\" at column 9");
  EXPECT_EQ(parseError(llvm::StringRef("a\x01", 2)),
            "symbolic expression \"a\\01\": unexpected character \"\\x01\" at column 2");
  std::string deep = parseError(std::string(3000, '(') + "a" + std::string(3000, ')'));
  EXPECT_NE(deep.find("expression nests deeper than 1000 levels at column 1001"), std::string::npos)
      << deep.substr(deep.size() - 100);
  EXPECT_EQ(parse(std::string(900, '(') + "a" + std::string(900, ')')), sym("a"));
}

// Random text: the parser must never crash, and whatever it accepts must print and read back.
TEST(SymExprParser, RandomInputNeverCrashes) {
  const std::string alphabet = "ab1290-+*/%(),  minaxfloordv$\x01.";
  std::mt19937 rng(31337);
  int accepted = 0;
  for (int i = 0; i != 20000; ++i) {
    std::string text;
    size_t len = rng() % 24;
    for (size_t j = 0; j != len; ++j)
      text += alphabet[rng() % alphabet.size()];
    llvm::Expected<SymExpr> e = parseSymExpr(text);
    if (!e) {
      llvm::consumeError(e.takeError());
      continue;
    }
    ++accepted;
    checkRoundTrip(*e, text);
    if (HasFailure())
      return;
  }
  EXPECT_GT(accepted, 100);
}

TEST(SymExprParser, LargeInputsStayFast) {
  // A chain of products must not expand (or print) exponentially.
  std::string sum, product = "(a + b)", mins = "min(x0", chain = "(x0 + 1)";
  for (int i = 1; i != 400; ++i)
    chain.append("*(x").append(std::to_string(i)).append(" + 1)");
  for (int i = 0; i != 500; ++i)
    sum.append("x").append(std::to_string(i)).append(" + ");
  sum += "1";
  for (int i = 0; i != 40; ++i)
    product += "*(a + b)";
  for (int i = 1; i != 100; ++i)
    mins.append(", x").append(std::to_string(i));
  mins += ")";
  for (const std::string &text : {sum, product, mins, chain}) {
    SymExpr e = parse(text);
    checkRoundTrip(e, text.substr(0, 40));
  }
}

//===----------------------------------------------------------------------===//
// Overflow
//===----------------------------------------------------------------------===//

TEST(SymExpr, OverflowIsKeptUnsimplified) {
  SymExpr a = sym("a");
  SymExpr big = SymExpr(INT64_MAX) + 1;
  EXPECT_FALSE(big.isConstant());
  EXPECT_EQ(big.evaluate({}), std::nullopt);
  checkRoundTrip(big, "INT64_MAX + 1");
  SymExpr neg = -SymExpr(INT64_MIN);
  EXPECT_EQ(neg.evaluate({}), std::nullopt);
  checkRoundTrip(neg, "-INT64_MIN");
  SymExpr product = (a * INT64_MAX) * 2;
  EXPECT_EQ(product.evaluate({{"a", 0}}), 0);
  EXPECT_EQ(product.evaluate({{"a", 1}}), std::nullopt);
  checkRoundTrip(product, "a*INT64_MAX*2");
  EXPECT_EQ((a * INT64_MIN - a * INT64_MIN), SymExpr(0));
  SymExpr q = SymExpr::floorDiv(INT64_MIN, -1);
  EXPECT_EQ(q.evaluate({}), std::nullopt);
  checkRoundTrip(q, "floordiv(INT64_MIN, -1)");
  EXPECT_EQ(SymExpr::mod(INT64_MIN, -1), SymExpr(0));
  SymExpr exact = SymExpr::floorDiv(INT64_MIN * a, -a);
  EXPECT_EQ(exact.evaluate({{"a", 1}}), std::nullopt);
  EXPECT_EQ(exact.evaluate({{"a", 0}}), std::nullopt);
  checkRoundTrip(exact, "floordiv(INT64_MIN*a, -a)");
  // A range that passes int64 is unbounded, never wrapped.
  ValueRange r = rangeOf(a * a * a, {{"a", {1, 1LL << 40, 1}}});
  EXPECT_EQ(r.lo, 1);
  EXPECT_EQ(r.hi, INT64_MAX);
}

//===----------------------------------------------------------------------===//
// Ranges and proofs
//===----------------------------------------------------------------------===//

SymbolFactsMap facts(std::initializer_list<std::pair<const std::string, SymbolFacts>> list) {
  return SymbolFactsMap(list);
}

TEST(SymExprRange, Basics) {
  SymExpr b = sym("batch"), s = sym("seq");
  SymbolFactsMap f = facts({{"batch", {1, 512, 1}}, {"seq", {0, 10, 1}}});
  EXPECT_EQ(rangeOf(b, f), (ValueRange{1, 512}));
  EXPECT_EQ(rangeOf(b + s, f), (ValueRange{1, 522}));
  EXPECT_EQ(rangeOf(b - s, f), (ValueRange{-9, 512}));
  EXPECT_EQ(rangeOf(b * s, f), (ValueRange{0, 5120}));
  EXPECT_EQ(rangeOf(SymExpr::floorDiv(b, 4), f), (ValueRange{0, 128}));
  EXPECT_EQ(rangeOf(SymExpr::mod(b, 4), f), (ValueRange{0, 3}));
  EXPECT_EQ(rangeOf(SymExpr::min(b, 16), f), (ValueRange{1, 16}));
  EXPECT_EQ(rangeOf(SymExpr::max(b, s), f), (ValueRange{1, 512}));
  EXPECT_EQ(rangeOf(s * s - 1, f), (ValueRange{-1, 99}));
  EXPECT_EQ(rangeOf(sym("free"), f), (ValueRange{INT64_MIN, INT64_MAX}));
  EXPECT_EQ(rangeOf(SymExpr::mod(sym("free"), 8), f), (ValueRange{0, 7}));
  EXPECT_EQ(rangeOf(b, facts({{"batch", {1, 30, 8}}})), (ValueRange{8, 24}));
  EXPECT_EQ(rangeOf(SymExpr::mod(b, 8), facts({{"batch", {1, 64, 8}}})), (ValueRange{0, 0}));
}

TEST(SymExprProve, DecidedCases) {
  SymExpr batch = sym("batch"), half = sym("half"), seq = sym("seq");
  SymbolFactsMap f = facts({{"batch", {1, 512, 1}}});
  EXPECT_EQ(proveLE(batch, 512, f), Truth::True);
  EXPECT_EQ(proveLE(batch, 16, f), Truth::Unknown);
  EXPECT_EQ(proveLE(batch + 1, 0, f), Truth::False);
  EXPECT_EQ(proveLT(batch, 513, f), Truth::True);
  EXPECT_EQ(proveLT(batch, 1, f), Truth::False);
  EXPECT_EQ(proveLT(0, batch, f), Truth::True);
  EXPECT_EQ(proveEQ(batch, 0, f), Truth::False);
  EXPECT_EQ(proveEQ(batch, 7, f), Truth::Unknown);
  EXPECT_EQ(proveEQ(batch + batch, 2 * batch, f), Truth::True);
  EXPECT_EQ(proveEQ(SymExpr::min(batch, 512), batch, f), Truth::True);
  EXPECT_EQ(proveLE(SymExpr::min(batch, 16), 16, f), Truth::True);
  EXPECT_EQ(proveLE(batch, SymExpr::max(batch, seq), f), Truth::True);
  EXPECT_EQ(proveLE(4 * SymExpr::floorDiv(batch, 4), batch, f), Truth::True);
  EXPECT_EQ(proveLE(batch, 4 * SymExpr::floorDiv(batch + 3, 4), f), Truth::True);

  SymbolFactsMap by8 = facts({{"batch", {8, 512, 8}}});
  EXPECT_EQ(proveEQ(SymExpr::mod(batch, 8), 0, by8), Truth::True);
  EXPECT_EQ(proveEQ(SymExpr::mod(batch, 8), 0, f), Truth::Unknown);
  EXPECT_EQ(proveEQ(SymExpr::mod(batch + 1, 8), 0, by8), Truth::False);
  EXPECT_EQ(proveEQ(8 * SymExpr::floorDiv(batch, 8), batch, by8), Truth::True);

  EXPECT_EQ(proveDivisible(2 * half, 2, {}), Truth::True);
  EXPECT_EQ(proveDivisible(2 * half + 1, 2, {}), Truth::False);
  EXPECT_EQ(proveDivisible(half, 2, {}), Truth::Unknown);
  EXPECT_EQ(proveDivisible(2 * batch + 16, 4, facts({{"batch", {2, 64, 2}}})), Truth::True);
  EXPECT_EQ(proveDivisible(2 * batch + 16, 4, f), Truth::Unknown);
  EXPECT_EQ(proveDivisible(batch, 8, by8), Truth::True);
  EXPECT_EQ(proveDivisible(batch, 16, by8), Truth::Unknown);
  EXPECT_EQ(proveDivisible(12, 4, {}), Truth::True);
  EXPECT_EQ(proveDivisible(13, 4, {}), Truth::False);
  EXPECT_EQ(proveDivisible(batch, 6, facts({{"batch", {12, 12, 1}}})), Truth::True);
  EXPECT_EQ(proveDivisible(batch, 0, f), Truth::False);
  EXPECT_EQ(proveDivisible(batch, -4, by8), Truth::True);
  EXPECT_EQ(proveDivisible(batch, 1, f), Truth::True);
  EXPECT_EQ(proveEQ(2 * batch, 2 * seq + 1, {}), Truth::False);
}

/// Checks every definite answer against all assignments allowed by the facts.
class Soundness {
public:
  Soundness(std::vector<std::string> symbols, SymbolFactsMap facts) : Facts(std::move(facts)) {
    std::vector<Env> all{Env{}};
    for (const std::string &s : symbols) {
      const SymbolFacts &f = Facts.at(s);
      std::vector<Env> next;
      for (const Env &e : all)
        for (int64_t v = f.lo; v <= f.hi; ++v)
          if (v % f.divisor == 0) {
            Env g = e;
            g[s] = v;
            next.push_back(std::move(g));
          }
      all = std::move(next);
    }
    Envs = std::move(all);
  }

  /// `holds(va, vb)` for every assignment where both sides are defined.
  template <typename Pred>
  void check(const char *what, Truth answer, const Sample &a, const Sample &b, Pred holds) {
    if (answer == Truth::Unknown) {
      ++Unknown;
      return;
    }
    ++Decided;
    for (const Env &env : Envs) {
      std::optional<int64_t> va = evalRef(*a.ref, env), vb = evalRef(*b.ref, env);
      if (va && vb && holds(*va, *vb) != (answer == Truth::True)) {
        ADD_FAILURE() << what << "(" << refStr(*a.ref) << ", " << refStr(*b.ref) << ") answered "
                      << toString(answer).str() << " but fails at " << envStr(env) << "(values "
                      << *va << ", " << *vb << ")";
        return;
      }
    }
  }

  void checkRange(const Sample &a) {
    ValueRange r = rangeOf(a.expr, Facts);
    for (const Env &env : Envs)
      if (std::optional<int64_t> v = evalRef(*a.ref, env); v && !r.contains(*v)) {
        ADD_FAILURE() << refStr(*a.ref) << " = " << *v << " at " << envStr(env)
                      << " is outside its range " << r.lo << ".." << r.hi;
        return;
      }
  }

  SymbolFactsMap Facts;
  std::vector<Env> Envs;
  int Decided = 0, Unknown = 0;
};

TEST(SymExprProve, SoundByBruteForce) {
  std::vector<std::string> symbols{"x", "y"};
  Generator gen(8086, symbols, {-3, -2, -1, 0, 1, 2, 3, 4, 8});
  int decided = 0, total = 0;
  for (int i = 0; i != 2500; ++i) {
    SymbolFactsMap f;
    for (const std::string &s : symbols) {
      SymbolFacts sf;
      sf.lo = gen.between(i % 3 == 0 ? -4 : 0, 6);
      sf.hi = sf.lo + gen.between(0, i % 5 == 0 ? 0 : 9);
      sf.divisor = gen.between(1, 4);
      f[s] = sf;
    }
    Soundness sound(symbols, f);
    Sample a = gen.make(1 + i % 3), b = gen.make(i % 3);
    int64_t k = gen.between(-4, 6);
    Sample kSample = gen.constant(k);
    sound.check("proveLE", proveLE(a.expr, b.expr, f), a, b,
                [](int64_t x, int64_t y) { return x <= y; });
    sound.check("proveLT", proveLT(a.expr, b.expr, f), a, b,
                [](int64_t x, int64_t y) { return x < y; });
    sound.check("proveEQ", proveEQ(a.expr, b.expr, f), a, b,
                [](int64_t x, int64_t y) { return x == y; });
    sound.check("proveDivisible", proveDivisible(a.expr, k, f), a, kSample,
                [](int64_t x, int64_t y) { return y == 0 ? x == 0 : x % y == 0; });
    sound.checkRange(a);
    sound.checkRange(b);
    decided += sound.Decided;
    total += sound.Decided + sound.Unknown;
    if (HasFailure())
      return;
  }
  // The provers must not be trivially "unknown".
  EXPECT_GT(decided * 3, total) << decided << " of " << total << " decided";
}

TEST(SymExprProve, EmptyFactsAreNeverDecided) {
  SymExpr x = sym("x");
  SymbolFactsMap empty = facts({{"x", {5, 2, 1}}});
  EXPECT_EQ(proveLE(x, 0, empty), Truth::Unknown);
  EXPECT_EQ(proveEQ(x, 0, empty), Truth::Unknown);
  SymbolFactsMap noMultiple = facts({{"x", {1, 7, 8}}});
  EXPECT_EQ(proveLE(x, 0, noMultiple), Truth::Unknown);
  EXPECT_EQ(toString(Truth::True), "true");
  EXPECT_EQ(toString(Truth::False), "false");
  EXPECT_EQ(toString(Truth::Unknown), "unknown");
}

} // namespace
