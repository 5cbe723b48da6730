// The shape environment (root dims, derived dims, guards), SourceLoc printing and GuardKind names.
#include "aotc/ir/ShapeEnv.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <fmt/format.h>

namespace aotc {
namespace {

llvm::Error makeError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

/// Names must read back through parseSymExpr, which only knows identifiers.
bool isIdentifier(llvm::StringRef name) {
  if (name.empty() || !(llvm::isAlpha(name.front()) || name.front() == '_'))
    return false;
  return llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_' || c == '.'; });
}

llvm::Error checkRange(llvm::StringRef name, int64_t lo, int64_t hi, int64_t divisor) {
  if (lo > hi)
    return makeError(fmt::format("dim \"{}\" has an empty range {}..{}", name.str(), lo, hi));
  if (lo < 0)
    return makeError(fmt::format("dim \"{}\" has a negative lower bound {}", name.str(), lo));
  if (divisor < 1)
    return makeError(
        fmt::format("dim \"{}\" has divisor {}; it must be at least 1", name.str(), divisor));
  // The smallest multiple of the divisor that is >= lo (lo >= 0 here).
  int64_t first;
  if (__builtin_mul_overflow(lo / divisor + (lo % divisor != 0), divisor, &first) || first > hi)
    return makeError(
        fmt::format("dim \"{}\" has no multiple of {} in {}..{}", name.str(), divisor, lo, hi));
  return llvm::Error::success();
}

} // namespace

std::string SourceLoc::str() const {
  if (file.empty())
    return "<unknown>";
  if (line == 0)
    return file;
  if (column == 0)
    return fmt::format("{}:{}", file, line);
  return fmt::format("{}:{}:{}", file, line, column);
}

llvm::StringRef toString(GuardKind kind) {
  switch (kind) {
  case GuardKind::EQ:
    return "==";
  case GuardKind::NE:
    return "!=";
  case GuardKind::LE:
    return "<=";
  case GuardKind::LT:
    return "<";
  }
  llvm_unreachable("unknown GuardKind");
}

std::string Guard::str() const {
  return fmt::format("{} {} {}", lhs.str(), toString(kind).str(), rhs.str());
}

llvm::Error ShapeEnv::addSymbol(SymbolDecl decl) {
  if (!isIdentifier(decl.name))
    return makeError(fmt::format("dim name \"{}\" is not an identifier", decl.name));
  if (findSymbol(decl.name) || findDerived(decl.name))
    return makeError(fmt::format("dim \"{}\" is declared twice", decl.name));
  if (llvm::Error err = checkRange(decl.name, decl.lo, decl.hi, decl.divisor))
    return err;
  Symbols.push_back(std::move(decl));
  return llvm::Error::success();
}

llvm::Error ShapeEnv::addDerived(llvm::StringRef name, SymExpr expr) {
  if (!isIdentifier(name))
    return makeError(fmt::format("dim name \"{}\" is not an identifier", name.str()));
  if (findSymbol(name) || findDerived(name))
    return makeError(fmt::format("dim \"{}\" is declared twice", name.str()));
  std::set<std::string, std::less<>> used;
  expr.collectSymbols(used);
  for (const std::string &s : used)
    if (!findSymbol(s) && !findDerived(s))
      return makeError(fmt::format("derived dim \"{}\" uses undeclared dim \"{}\"", name.str(), s));
  // Stored over root dims only, so that expand() needs a single substitution.
  Derived.push_back({name.str(), expand(expr)});
  return llvm::Error::success();
}

llvm::Error ShapeEnv::setRange(llvm::StringRef name, int64_t lo, int64_t hi) {
  auto it = llvm::find_if(Symbols, [&](const SymbolDecl &d) { return d.name == name; });
  if (it == Symbols.end()) {
    if (findDerived(name))
      return makeError(
          fmt::format("dim \"{}\" is derived; its range follows from its definition", name.str()));
    return makeError(fmt::format("unknown dim \"{}\"", name.str()));
  }
  if (llvm::Error err = checkRange(name, lo, hi, it->divisor))
    return err;
  it->lo = lo;
  it->hi = hi;
  return llvm::Error::success();
}

void ShapeEnv::addGuard(Guard guard) { Guards.push_back(std::move(guard)); }

const SymbolDecl *ShapeEnv::findSymbol(llvm::StringRef name) const {
  auto it = llvm::find_if(Symbols, [&](const SymbolDecl &d) { return d.name == name; });
  return it == Symbols.end() ? nullptr : &*it;
}

const DerivedDim *ShapeEnv::findDerived(llvm::StringRef name) const {
  auto it = llvm::find_if(Derived, [&](const DerivedDim &d) { return d.name == name; });
  return it == Derived.end() ? nullptr : &*it;
}

SymbolFactsMap ShapeEnv::facts() const {
  SymbolFactsMap out;
  for (const SymbolDecl &d : Symbols)
    out[d.name] = SymbolFacts{d.lo, d.hi, d.divisor};
  return out;
}

SymExpr ShapeEnv::expand(const SymExpr &e) const {
  if (Derived.empty())
    return e;
  std::map<std::string, SymExpr, std::less<>> bindings;
  for (const DerivedDim &d : Derived)
    bindings[d.name] = d.expr;
  return e.substitute(bindings);
}

llvm::Error ShapeEnv::checkDeclared(const SymExpr &e) const {
  std::set<std::string, std::less<>> used;
  e.collectSymbols(used);
  for (const std::string &s : used)
    if (!findSymbol(s) && !findDerived(s))
      return makeError(fmt::format("expression \"{}\" uses undeclared dim \"{}\"", e.str(), s));
  return llvm::Error::success();
}

Truth ShapeEnv::proveLE(const SymExpr &a, const SymExpr &b) const {
  return aotc::proveLE(expand(a), expand(b), facts());
}

Truth ShapeEnv::proveLT(const SymExpr &a, const SymExpr &b) const {
  return aotc::proveLT(expand(a), expand(b), facts());
}

Truth ShapeEnv::proveEQ(const SymExpr &a, const SymExpr &b) const {
  return aotc::proveEQ(expand(a), expand(b), facts());
}

Truth ShapeEnv::proveDivisible(const SymExpr &a, int64_t k) const {
  return aotc::proveDivisible(expand(a), k, facts());
}

} // namespace aotc
