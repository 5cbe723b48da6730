// Symbolic integer expressions over named dims: constants, symbols, +, *, floordiv, mod, min, max,
// kept in a canonical form so that equal expressions compare equal, plus range analysis and proofs.
#ifndef AOTC_IR_SYMEXPR_H
#define AOTC_IR_SYMEXPR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace aotc {

class SymNode;

/// An immutable integer expression in canonical form. Cheap to copy (shared node).
/// Semantics are Python's: floordiv rounds toward negative infinity and mod takes the divisor's
/// sign. Simplification may make an expression defined where the original divided by zero
/// (`0*floordiv(x, 0)` is 0); wherever the original is defined, the value is kept.
class SymExpr {
public:
  SymExpr();              // the constant 0
  SymExpr(int64_t value); // NOLINT: constants convert implicitly
  static SymExpr symbol(llvm::StringRef name);

  static SymExpr floorDiv(const SymExpr &a, const SymExpr &b);
  static SymExpr mod(const SymExpr &a, const SymExpr &b);
  static SymExpr min(const SymExpr &a, const SymExpr &b);
  static SymExpr max(const SymExpr &a, const SymExpr &b);
  /// min / max of one or more operands (`min(a, b, c)`); `args` must not be empty.
  static SymExpr minOf(llvm::ArrayRef<SymExpr> args);
  static SymExpr maxOf(llvm::ArrayRef<SymExpr> args);

  friend SymExpr operator+(const SymExpr &a, const SymExpr &b);
  friend SymExpr operator-(const SymExpr &a, const SymExpr &b);
  friend SymExpr operator-(const SymExpr &a);
  friend SymExpr operator*(const SymExpr &a, const SymExpr &b);

  bool isConstant() const;
  std::optional<int64_t> constant() const;
  /// The name when the expression is exactly one symbol.
  std::optional<llvm::StringRef> symbolName() const;

  /// Structural equality of canonical forms.
  friend bool operator==(const SymExpr &a, const SymExpr &b);
  /// A total, deterministic order (no addresses involved); used for sorting and map keys.
  friend bool operator<(const SymExpr &a, const SymExpr &b);

  SymExpr substitute(const std::map<std::string, SymExpr, std::less<>> &bindings) const;
  /// nullopt when a symbol is unbound, a division by zero occurs or an intermediate value of the
  /// canonical form overflows int64.
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t, std::less<>> &values) const;
  void collectSymbols(std::set<std::string, std::less<>> &out) const;

  /// Deterministic text: `batch`, `seq + 1`, `2*half - 3`, `floordiv(seq, 4)`, `mod(x, 8)`,
  /// `min(a, 16)`, `max(a, b)`, `min(a, b, c)`. parseSymExpr reads it back to an equal expression.
  std::string str() const;

  const SymNode &node() const { return *Node; }

private:
  explicit SymExpr(std::shared_ptr<const SymNode> node);
  std::shared_ptr<const SymNode> Node;
  friend class SymNode;
};

/// One factor of a monomial: a symbol, or an operation the polynomial form keeps as a unit.
struct SymAtom {
  enum class Kind : uint8_t {
    Symbol,
    FloorDiv, // args: dividend, divisor
    Mod,      // args: dividend, divisor
    Min,      // args: two or more, sorted
    Max,      // args: two or more, sorted
    Add,      // args: two, sorted; only where merging the sum would overflow int64
    Mul,      // args: two, sorted; only where expanding the product would overflow or blow up
  };
  Kind kind = Kind::Symbol;
  std::string name; // Symbol only
  llvm::SmallVector<SymExpr, 2> args;
};

/// `coeff * factors[0] * factors[1] * ...`; factors are sorted and repeat for powers.
struct SymTerm {
  int64_t coeff = 1;
  llvm::SmallVector<SymAtom, 2> factors;
};

/// The canonical form: `constant + sum(terms)`. Terms are sorted, have distinct non-empty
/// monomials and nonzero coefficients.
class SymNode {
public:
  int64_t constant() const { return Constant; }
  llvm::ArrayRef<SymTerm> terms() const { return Terms; }

private:
  friend struct SymNodeAccess; // the canonicalizer, in SymExpr.cpp
  static SymExpr wrap(std::shared_ptr<const SymNode> node) { return SymExpr(std::move(node)); }

  int64_t Constant = 0;
  llvm::SmallVector<SymTerm, 1> Terms;
  // Atoms in the printed form, counting shared subexpressions each time they occur; it bounds
  // expansion so that printing and evaluation stay polynomial in the input.
  uint64_t Weight = 1;
};

/// Parses the text form printed by SymExpr::str(); also accepts parentheses, unary minus, `//`
/// and `%` (Python precedence). Errors name the column: `symbolic expression "a +": expected an
/// operand at column 4`.
llvm::Expected<SymExpr> parseSymExpr(llvm::StringRef text);

/// What is known about one symbol: an inclusive range and that it is a multiple of `divisor`.
struct SymbolFacts {
  int64_t lo = 1;
  int64_t hi = INT64_MAX;
  int64_t divisor = 1;
};
using SymbolFactsMap = std::map<std::string, SymbolFacts, std::less<>>;

/// An inclusive range; INT64_MIN / INT64_MAX stand for unbounded.
struct ValueRange {
  int64_t lo = INT64_MIN;
  int64_t hi = INT64_MAX;
  bool contains(int64_t v) const { return lo <= v && v <= hi; }
  friend bool operator==(const ValueRange &, const ValueRange &) = default;
};

/// A sound over-approximation of the values `e` takes when every symbol respects `facts`
/// (symbols missing from `facts` are unbounded; divisors are used too).
ValueRange rangeOf(const SymExpr &e, const SymbolFactsMap &facts);

enum class Truth { True, False, Unknown };
llvm::StringRef toString(Truth t);

/// True: holds for every assignment allowed by `facts` (where both sides are defined); False:
/// fails for every such assignment; Unknown otherwise, when the analysis cannot tell, or when no
/// assignment satisfies `facts`. Divisors are used: with batch % 8 == 0, mod(batch, 8) == 0.
Truth proveLE(const SymExpr &a, const SymExpr &b, const SymbolFactsMap &facts);
Truth proveLT(const SymExpr &a, const SymExpr &b, const SymbolFactsMap &facts);
Truth proveEQ(const SymExpr &a, const SymExpr &b, const SymbolFactsMap &facts);
Truth proveDivisible(const SymExpr &a, int64_t k, const SymbolFactsMap &facts);

} // namespace aotc

#endif
