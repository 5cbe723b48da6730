// Helpers shared by the SymExpr implementation files (canonicalizer and range analysis); not
// part of the public API.
#ifndef AOTC_SRC_IR_SYMEXPRINTERNAL_H
#define AOTC_SRC_IR_SYMEXPRINTERNAL_H

#include "aotc/ir/SymExpr.h"

#include <cstddef>

namespace aotc::detail {

/// The atom when `e` is exactly one atom (coefficient 1, no constant).
const SymAtom *soleAtom(const SymExpr &e);
/// The atom alone as an expression; reuses the atom as is instead of re-canonicalizing it.
SymExpr atomExpr(const SymAtom &atom);
/// The total order on atoms that sorts the factors of a monomial.
int compareAtoms(const SymAtom &a, const SymAtom &b);
/// `e` without `e.node().terms()[index]`.
SymExpr dropTerm(const SymExpr &e, size_t index);
/// operands[0] +/- operands[1] +/- ... (subtract[i]: minus), evaluated left to right exactly as
/// the operators would, but in O(n log n) instead of O(n^2) term copies.
SymExpr sumOf(llvm::ArrayRef<SymExpr> operands, llvm::ArrayRef<bool> subtract);
/// A range of `e` over all integer values of its symbols. It builds no new floordiv / mod / min /
/// max atoms, so the canonicalizer can call it without recursing into itself.
ValueRange intrinsicRange(const SymExpr &e);

} // namespace aotc::detail

#endif
