// Tests for the shape environment: root and derived dims, range errors, expansion, declaration
// checks, guards with their source locations, and the provers over the environment's facts.
#include "aotc/ir/ShapeEnv.h"

#include "llvm/Support/Error.h"

#include <gtest/gtest.h>

using namespace aotc;

namespace aotc {
static void PrintTo(const SymExpr &e, std::ostream *os) { *os << e.str(); }
static void PrintTo(Truth t, std::ostream *os) { *os << toString(t).str(); }
} // namespace aotc

namespace {

SymExpr sym(llvm::StringRef name) { return SymExpr::symbol(name); }

/// "" on success, otherwise the error's message.
std::string message(llvm::Error err) {
  if (!err)
    return "";
  return llvm::toString(std::move(err));
}

SymbolDecl decl(std::string name, int64_t lo, int64_t hi, int64_t divisor = 1) {
  return SymbolDecl{std::move(name), lo, hi, divisor};
}

TEST(SourceLoc, Str) {
  EXPECT_EQ((SourceLoc{"model.cpp", 42, 7}).str(), "model.cpp:42:7");
  EXPECT_EQ((SourceLoc{"model.cpp", 42, 0}).str(), "model.cpp:42");
  EXPECT_EQ((SourceLoc{"model.cpp", 0, 0}).str(), "model.cpp");
  EXPECT_EQ(SourceLoc().str(), "<unknown>");
  EXPECT_FALSE(SourceLoc().isKnown());
  EXPECT_TRUE((SourceLoc{"m.cpp", 1, 1}).isKnown());
}

TEST(ShapeEnv, DeclaresSymbols) {
  ShapeEnv env;
  ASSERT_EQ(message(env.addSymbol(decl("batch", 1, 512, 8))), "");
  ASSERT_EQ(message(env.addSymbol(decl("seq", 1, 1))), ""); // a range of one value is fine
  ASSERT_NE(env.findSymbol("batch"), nullptr);
  EXPECT_EQ(*env.findSymbol("batch"), decl("batch", 1, 512, 8));
  EXPECT_EQ(env.findSymbol("nope"), nullptr);
  EXPECT_EQ(env.symbols().size(), 2u);
  EXPECT_EQ(env.symbols()[1].name, "seq");
}

TEST(ShapeEnv, RejectsBadSymbols) {
  ShapeEnv env;
  ASSERT_EQ(message(env.addSymbol(decl("batch", 1, 8))), "");
  EXPECT_EQ(message(env.addSymbol(decl("batch", 1, 8))), "dim \"batch\" is declared twice");
  EXPECT_EQ(message(env.addSymbol(decl("s", 5, 2))), "dim \"s\" has an empty range 5..2");
  EXPECT_EQ(message(env.addSymbol(decl("s", -1, 2))), "dim \"s\" has a negative lower bound -1");
  EXPECT_EQ(message(env.addSymbol(decl("s", 1, 2, 0))),
            "dim \"s\" has divisor 0; it must be at least 1");
  EXPECT_EQ(message(env.addSymbol(decl("s", 1, 7, 8))), "dim \"s\" has no multiple of 8 in 1..7");
  EXPECT_EQ(message(env.addSymbol(decl("2x", 1, 2))), "dim name \"2x\" is not an identifier");
  EXPECT_EQ(message(env.addSymbol(decl("", 1, 2))), "dim name \"\" is not an identifier");
  EXPECT_EQ(env.symbols().size(), 1u); // failed declarations leave no trace
  EXPECT_EQ(message(env.addSymbol(decl("zero", 0, 0))), "");
  EXPECT_EQ(message(env.addSymbol(decl("huge", 0, INT64_MAX, 1LL << 62))), "");
}

TEST(ShapeEnv, DerivedDims) {
  ShapeEnv env;
  ASSERT_EQ(message(env.addSymbol(decl("seq", 1, 2048))), "");
  ASSERT_EQ(message(env.addSymbol(decl("half", 1, 1024))), "");
  ASSERT_EQ(message(env.addDerived("seq_plus_1", sym("seq") + 1)), "");
  ASSERT_EQ(message(env.addDerived("full", 2 * sym("half"))), "");
  // A derived dim may build on another; it is stored over root dims.
  ASSERT_EQ(message(env.addDerived("twice", 2 * sym("seq_plus_1"))), "");
  ASSERT_NE(env.findDerived("twice"), nullptr);
  EXPECT_EQ(env.findDerived("twice")->expr, 2 * sym("seq") + 2);
  EXPECT_EQ(env.findDerived("full")->expr, 2 * sym("half"));
  EXPECT_EQ(env.derived().size(), 3u);
  EXPECT_EQ(env.findDerived("seq"), nullptr);

  EXPECT_EQ(message(env.addDerived("s1", sym("foo") + 1)),
            "derived dim \"s1\" uses undeclared dim \"foo\"");
  EXPECT_EQ(message(env.addDerived("seq", sym("half"))), "dim \"seq\" is declared twice");
  EXPECT_EQ(message(env.addDerived("full", sym("half"))), "dim \"full\" is declared twice");
  EXPECT_EQ(message(env.addSymbol(decl("full", 1, 2))), "dim \"full\" is declared twice");
  EXPECT_EQ(message(env.addDerived("a b", sym("half"))), "dim name \"a b\" is not an identifier");
  EXPECT_EQ(env.derived().size(), 3u);
}

TEST(ShapeEnv, ExpandAndCheckDeclared) {
  ShapeEnv env;
  ASSERT_EQ(message(env.addSymbol(decl("seq", 1, 2048))), "");
  ASSERT_EQ(message(env.addDerived("s1", sym("seq") + 1)), "");
  EXPECT_EQ(env.expand(sym("s1") * 2), 2 * sym("seq") + 2);
  EXPECT_EQ(env.expand(sym("seq")), sym("seq"));
  EXPECT_EQ(env.expand(SymExpr::floorDiv(sym("s1") - 1, 2)), SymExpr::floorDiv(sym("seq"), 2));
  EXPECT_EQ(message(env.checkDeclared(sym("s1") + sym("seq"))), "");
  EXPECT_EQ(message(env.checkDeclared(SymExpr(3))), "");
  EXPECT_EQ(message(env.checkDeclared(sym("zeta") + sym("foo") + sym("seq"))),
            "expression \"foo + seq + zeta\" uses undeclared dim \"foo\"");
}

TEST(ShapeEnv, SetRange) {
  ShapeEnv env;
  ASSERT_EQ(message(env.addSymbol(decl("batch", 1, 512, 8))), "");
  ASSERT_EQ(message(env.addDerived("b2", 2 * sym("batch"))), "");
  EXPECT_EQ(message(env.setRange("batch", 8, 64)), "");
  EXPECT_EQ(*env.findSymbol("batch"), decl("batch", 8, 64, 8));
  EXPECT_EQ(message(env.setRange("batch", 64, 8)), "dim \"batch\" has an empty range 64..8");
  EXPECT_EQ(message(env.setRange("batch", 1, 7)), "dim \"batch\" has no multiple of 8 in 1..7");
  EXPECT_EQ(message(env.setRange("nope", 1, 2)), "unknown dim \"nope\"");
  EXPECT_EQ(message(env.setRange("b2", 1, 2)),
            "dim \"b2\" is derived; its range follows from its definition");
  EXPECT_EQ(*env.findSymbol("batch"), decl("batch", 8, 64, 8)); // unchanged by the failures
}

TEST(ShapeEnv, GuardsKeepTheirLocation) {
  ShapeEnv env;
  ASSERT_EQ(message(env.addSymbol(decl("batch", 1, 512))), "");
  SourceLoc where{"model.cpp", 42, 7};
  env.addGuard(Guard{sym("batch"), GuardKind::LE, SymExpr(16), where});
  env.addGuard(Guard{SymExpr::mod(sym("batch"), 8), GuardKind::EQ, SymExpr(0), {}});
  ASSERT_EQ(env.guards().size(), 2u);
  EXPECT_EQ(env.guards()[0].loc, where);
  EXPECT_EQ(env.guards()[0].loc.str(), "model.cpp:42:7");
  EXPECT_EQ(env.guards()[0].str(), "batch <= 16");
  EXPECT_EQ(env.guards()[1].str(), "mod(batch, 8) == 0");
  EXPECT_EQ(env.guards()[1].loc.str(), "<unknown>");
  EXPECT_EQ(toString(GuardKind::EQ), "==");
  EXPECT_EQ(toString(GuardKind::NE), "!=");
  EXPECT_EQ(toString(GuardKind::LE), "<=");
  EXPECT_EQ(toString(GuardKind::LT), "<");
}

TEST(ShapeEnv, FactsAndProofs) {
  ShapeEnv env;
  ASSERT_EQ(message(env.addSymbol(decl("batch", 8, 512, 8))), "");
  ASSERT_EQ(message(env.addSymbol(decl("half", 1, 64))), "");
  ASSERT_EQ(message(env.addDerived("seq", 2 * sym("half"))), "");
  SymbolFactsMap f = env.facts();
  ASSERT_EQ(f.size(), 2u); // root dims only
  EXPECT_EQ(f.at("batch").lo, 8);
  EXPECT_EQ(f.at("batch").hi, 512);
  EXPECT_EQ(f.at("batch").divisor, 8);
  EXPECT_EQ(f.at("half").divisor, 1);

  EXPECT_EQ(env.proveLE(sym("batch"), SymExpr(512)), Truth::True);
  EXPECT_EQ(env.proveLE(sym("batch"), SymExpr(16)), Truth::Unknown);
  EXPECT_EQ(env.proveLT(sym("seq"), SymExpr(129)), Truth::True);
  EXPECT_EQ(env.proveLT(sym("seq"), SymExpr(2)), Truth::False);
  EXPECT_EQ(env.proveEQ(SymExpr::mod(sym("batch"), 8), SymExpr(0)), Truth::True);
  EXPECT_EQ(env.proveEQ(SymExpr::floorDiv(sym("seq"), 2), sym("half")), Truth::True);
  EXPECT_EQ(env.proveDivisible(sym("seq"), 2), Truth::True);
  EXPECT_EQ(env.proveDivisible(sym("seq") + 1, 2), Truth::False);
  EXPECT_EQ(env.proveDivisible(sym("batch") * sym("half"), 8), Truth::True);
  EXPECT_EQ(env.proveDivisible(sym("half"), 2), Truth::Unknown);
}

TEST(ShapeEnv, Equality) {
  ShapeEnv a, b;
  ASSERT_EQ(message(a.addSymbol(decl("x", 1, 4))), "");
  ASSERT_EQ(message(b.addSymbol(decl("x", 1, 4))), "");
  EXPECT_TRUE(a == b);
  a.addGuard(Guard{sym("x"), GuardKind::NE, SymExpr(3), {"m.cpp", 3, 0}});
  EXPECT_FALSE(a == b);
  b.addGuard(Guard{sym("x"), GuardKind::NE, SymExpr(3), {"m.cpp", 3, 0}});
  EXPECT_TRUE(a == b);
}

} // namespace
