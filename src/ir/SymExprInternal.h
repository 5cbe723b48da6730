// Helpers shared by the SymExpr implementation files (canonicalizer and range analysis); not
// part of the public API.
#ifndef AOTC_SRC_IR_SYMEXPRINTERNAL_H
#define AOTC_SRC_IR_SYMEXPRINTERNAL_H

#include "aotc/ir/SymExpr.h"

#include <cstddef>

namespace aotc::detail {

/// The atom alone as an expression; reuses the atom as is instead of re-canonicalizing it.
SymExpr atomExpr(const SymAtom &atom);
/// The total order on atoms that sorts the factors of a monomial.
int compareAtoms(const SymAtom &a, const SymAtom &b);
/// `e` without `e.node().terms()[index]`.
SymExpr dropTerm(const SymExpr &e, size_t index);
/// A range of `e` over all integer values of its symbols. It builds no new floordiv / mod / min /
/// max atoms, so the canonicalizer can call it without recursing into itself.
ValueRange intrinsicRange(const SymExpr &e);

} // namespace aotc::detail

#endif
