// The text form of symbolic expressions: SymExpr::str(), which SymExprParser.cpp reads back.
#include "aotc/ir/SymExpr.h"

#include "SymExprInternal.h"

#include "llvm/ADT/STLExtras.h"

#include <fmt/format.h>

namespace aotc {
namespace {

using Kind = SymAtom::Kind;
using detail::soleAtom;

/// Whether `e` prints as the right operand of `*` without parentheses.
bool isPrimary(const SymExpr &e) {
  if (std::optional<int64_t> c = e.constant())
    return *c >= 0;
  const SymAtom *atom = soleAtom(e);
  return atom && atom->kind != Kind::Mul;
}

/// Whether `e` is one product (or a constant), whose text read left to right rebuilds it.
bool isSingleTerm(const SymExpr &e) {
  return e.isConstant() || (e.node().constant() == 0 && e.node().terms().size() == 1);
}

void printExpr(const SymExpr &e, std::string &out);

void printOperand(const SymExpr &e, bool plain, std::string &out) {
  if (plain)
    return printExpr(e, out);
  out += '(';
  printExpr(e, out);
  out += ')';
}

/// `bare`: the atom is a whole term on its own, where an opaque product needs no parentheses.
void printAtom(const SymAtom &atom, std::string &out, bool bare) {
  auto call = [&](llvm::StringRef name) {
    out += name;
    out += '(';
    llvm::interleave(
        atom.args, [&](const SymExpr &arg) { printExpr(arg, out); }, [&] { out += ", "; });
    out += ')';
  };
  switch (atom.kind) {
  case Kind::Symbol:
    out += atom.name;
    return;
  case Kind::FloorDiv:
    return call("floordiv");
  case Kind::Mod:
    return call("mod");
  case Kind::Min:
    return call("min");
  case Kind::Max:
    return call("max");
  // Parenthesized so that reading the text back performs exactly this one addition or product
  // (which overflows again and rebuilds the atom). Only what the parser would regroup gets
  // parentheses: long product chains must not nest deeper than the parser allows.
  case Kind::Add:
    out += '(';
    printExpr(atom.args[0], out);
    out += " + ";
    printOperand(atom.args[1], isSingleTerm(atom.args[1]), out);
    out += ')';
    return;
  case Kind::Mul:
    if (!bare)
      out += '(';
    printOperand(atom.args[0], isSingleTerm(atom.args[0]), out);
    out += '*';
    printOperand(atom.args[1], isPrimary(atom.args[1]), out);
    if (!bare)
      out += ')';
    return;
  }
}

/// Appends ` + c`, ` - c` or the leading `c` / `-c`; INT64_MIN has no positive counterpart, so it
/// is added as a negative literal.
void printSigned(int64_t value, bool first, std::string &out) {
  if (first)
    out += std::to_string(value);
  else if (value < 0 && value != INT64_MIN)
    out += fmt::format(" - {}", -value);
  else
    out += fmt::format(" + {}", value);
}

// Appends to one buffer: deeply nested expressions print in linear time.
void printExpr(const SymExpr &e, std::string &out) {
  bool first = true;
  for (const SymTerm &t : e.node().terms()) {
    if (t.coeff == 1 || t.coeff == -1)
      out += first ? (t.coeff == 1 ? "" : "-") : (t.coeff == 1 ? " + " : " - ");
    else {
      printSigned(t.coeff, first, out);
      out += '*';
    }
    bool bare = t.coeff == 1 && t.factors.size() == 1;
    llvm::interleave(
        t.factors, [&](const SymAtom &atom) { printAtom(atom, out, bare); }, [&] { out += '*'; });
    first = false;
  }
  if (first || e.node().constant() != 0)
    printSigned(e.node().constant(), first, out);
}

} // namespace

std::string SymExpr::str() const {
  std::string out;
  printExpr(*this, out);
  return out;
}

} // namespace aotc
