// How the kernel IR's index expressions vary along loops: the questions a backend asks before it
// reads consecutive points of a loop as one vector (an affine offset whose coefficient along the
// loop is 1, or one that does not read the loop at all).
#ifndef AOTC_CODEGEN_INDEXANALYSIS_H
#define AOTC_CODEGEN_INDEXANALYSIS_H

#include "kernel/Kernel.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace aotc::codegen {

/// The roles of the loop vars in one question.
struct LoopRoles {
  /// Loop vars that hold still where the question is asked (the other outer loops of a thread's
  /// consecutive points): they may appear anywhere, as constants do.
  llvm::function_ref<bool(unsigned)> fixed;
  /// Loop vars that may appear in the affine terms of isAffine, scaled by invariant coefficients.
  llvm::function_ref<bool(unsigned)> affine;
};

/// Whether integer expression `id` reads no memory, no reduction or GEMM result, and no loop var
/// other than `roles.fixed` ones.
bool isInvariant(const kir::EntryKernels &entry, kir::ExprId id, const LoopRoles &roles);

/// Whether `id` is c + sum_l coef_l * loopVar(l) over `roles.affine` loops, with c and the
/// coefficients invariant, and the coefficient of loop `unit`, where it appears, exactly 1: sums
/// of such terms, products of an invariant and a term, loop vars alone. `unitUses` counts the
/// appearances of `unit` (1: the offset moves by one element per step of that loop).
bool isAffine(const kir::EntryKernels &entry, kir::ExprId id, const LoopRoles &roles, unsigned unit,
              unsigned &unitUses);

/// Whether `id` reads loop var `loop`, through any operand (the offsets of its loads included).
bool readsLoop(const kir::EntryKernels &entry, kir::ExprId id, unsigned loop);

/// Whether `id` loads from a buffer, through any operand.
bool readsMemory(const kir::EntryKernels &entry, kir::ExprId id);

/// Whether `id` is a select with an arm that loads from a buffer: the backends that emit it as a
/// branch (ExprEmitter::lazySelects) load only the arm it takes.
bool isLoadingSelect(const kir::EntryKernels &entry, const kir::Expr &e);

/// Integer clamps min(max(e, lo), hi) or max(min(e, hi), lo), constants lo <= hi, over an
/// e = a * loopVar(loop) + r that moves with `loop` (a > 0 a constant, r a constant plus
/// constant multiples of loop vars whose extents are known constants): a pooling window's padding
/// read as the nearest edge element.
struct ClampInterior {
  /// Each clamp with its operand e, which it passes through unchanged inside [begin, end).
  llvm::SmallVector<std::pair<kir::ExprId, kir::ExprId>, 4> clamps;
  /// The points of `loop` where every clamp is the identity: empty when begin >= end.
  int64_t begin = 0, end = 0;
};
/// The clamps of `roots` that read `loop`, and where along it none clamps, given the constant
/// extents of the other loops (`extent`, nullopt where unknown). nullopt when no clamp reads
/// `loop`, or when one that does is not of that form or its r has no known range.
std::optional<ClampInterior>
clampInterior(const kir::EntryKernels &entry, llvm::ArrayRef<kir::ExprId> roots, unsigned loop,
              llvm::function_ref<std::optional<int64_t>(unsigned)> extent);

} // namespace aotc::codegen

#endif
