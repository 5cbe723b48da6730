// The shape environment: named dims with inclusive ranges, derived dims, divisibility facts and
// the guards recorded while tracing, each guard with the source location that caused it.
#ifndef AOTC_IR_SHAPEENV_H
#define AOTC_IR_SHAPEENV_H

#include "aotc/ir/SourceLoc.h"
#include "aotc/ir/SymExpr.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace aotc {

/// A root dim: a free symbol with an inclusive range and an optional divisor (`batch % 8 == 0`).
struct SymbolDecl {
  std::string name;
  int64_t lo = 1;
  int64_t hi = INT64_MAX;
  int64_t divisor = 1;
  friend bool operator==(const SymbolDecl &, const SymbolDecl &) = default;
};

/// A derived dim: a name for an expression over root dims (`seq_plus_1 = seq + 1`).
struct DerivedDim {
  std::string name;
  SymExpr expr;
  friend bool operator==(const DerivedDim &, const DerivedDim &) = default;
};

enum class GuardKind { EQ, NE, LE, LT };
llvm::StringRef toString(GuardKind kind); // "==", "!=", "<=", "<"

/// A fact the traced program relies on: `lhs <kind> rhs`, and the line that made it necessary.
struct Guard {
  SymExpr lhs;
  GuardKind kind = GuardKind::EQ;
  SymExpr rhs;
  SourceLoc loc;
  std::string str() const; // `batch <= 16`
  friend bool operator==(const Guard &, const Guard &) = default;
};

class ShapeEnv {
public:
  /// Declares a root dim. Errors on a name that is not an identifier, a duplicate name, an empty
  /// range, lo < 0, divisor < 1, or a range holding no multiple of the divisor.
  llvm::Error addSymbol(SymbolDecl decl);
  /// Declares a derived dim; its expression may only use dims already declared. Derived dims in
  /// it are expanded, so the stored expression is over root dims only.
  llvm::Error addDerived(llvm::StringRef name, SymExpr expr);
  /// Narrows or widens the range of an existing root dim (the CLI's `--dyn NAME=LO..HI`); the
  /// same range checks as addSymbol apply.
  llvm::Error setRange(llvm::StringRef name, int64_t lo, int64_t hi);
  void addGuard(Guard guard);

  const SymbolDecl *findSymbol(llvm::StringRef name) const;
  const DerivedDim *findDerived(llvm::StringRef name) const;
  const std::vector<SymbolDecl> &symbols() const { return Symbols; }
  const std::vector<DerivedDim> &derived() const { return Derived; }
  const std::vector<Guard> &guards() const { return Guards; }

  /// Root-dim facts for the SymExpr provers.
  SymbolFactsMap facts() const;
  /// Replaces derived-dim names by their definitions.
  SymExpr expand(const SymExpr &e) const;
  /// Every symbol of `e` is a declared root or derived dim; otherwise an error naming the first
  /// undeclared one.
  llvm::Error checkDeclared(const SymExpr &e) const;

  Truth proveLE(const SymExpr &a, const SymExpr &b) const;
  Truth proveLT(const SymExpr &a, const SymExpr &b) const;
  Truth proveEQ(const SymExpr &a, const SymExpr &b) const;
  Truth proveDivisible(const SymExpr &a, int64_t k) const;

  friend bool operator==(const ShapeEnv &, const ShapeEnv &) = default;

private:
  std::vector<SymbolDecl> Symbols;
  std::vector<DerivedDim> Derived;
  std::vector<Guard> Guards;
};

} // namespace aotc

#endif
