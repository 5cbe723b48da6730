// The index analysis of IndexAnalysis.h.
#include "codegen/IndexAnalysis.h"

#include "llvm/ADT/STLExtras.h"

namespace aotc::codegen {

namespace {

bool isOne(const kir::Expr &e) {
  return (e.kind == kir::ExprKind::Const && !isFloating(e.type) && e.ival == 1) ||
         (e.kind == kir::ExprKind::Dim && e.sym == SymExpr(1));
}

} // namespace

bool isInvariant(const kir::EntryKernels &entry, kir::ExprId id, const LoopRoles &roles) {
  const kir::Expr &e = entry.expr(id);
  if (e.kind == kir::ExprKind::LoopVar)
    return roles.fixed(e.index);
  if (e.kind == kir::ExprKind::Load || e.kind == kir::ExprKind::CheckIndex ||
      e.kind == kir::ExprKind::Acc || e.kind == kir::ExprKind::ReduceValue || isFloating(e.type))
    return false;
  return llvm::all_of(e.operands, [&](kir::ExprId o) { return isInvariant(entry, o, roles); });
}

bool isAffine(const kir::EntryKernels &entry, kir::ExprId id, const LoopRoles &roles, unsigned unit,
              unsigned &unitUses) {
  const kir::Expr &e = entry.expr(id);
  if (isInvariant(entry, id, roles))
    return true;
  if (e.kind == kir::ExprKind::LoopVar) {
    unitUses += e.index == unit;
    return roles.affine(e.index);
  }
  if (e.kind != kir::ExprKind::Binary || e.type != DType::I64)
    return false;
  kir::ExprId x = e.operands[0], y = e.operands[1];
  if (e.binary == kir::BinaryOp::Add)
    return isAffine(entry, x, roles, unit, unitUses) && isAffine(entry, y, roles, unit, unitUses);
  if (e.binary != kir::BinaryOp::Mul)
    return false;
  // A term times 1 is the term.
  if (isOne(entry.expr(x)))
    return isAffine(entry, y, roles, unit, unitUses);
  if (isOne(entry.expr(y)))
    return isAffine(entry, x, roles, unit, unitUses);
  // A scaled term may not hold the unit loop: its coefficient would not be 1.
  unsigned inner = 0;
  bool ok = (isInvariant(entry, x, roles) && isAffine(entry, y, roles, unit, inner)) ||
            (isInvariant(entry, y, roles) && isAffine(entry, x, roles, unit, inner));
  return ok && inner == 0;
}

bool readsLoop(const kir::EntryKernels &entry, kir::ExprId id, unsigned loop) {
  const kir::Expr &e = entry.expr(id);
  if (e.kind == kir::ExprKind::LoopVar)
    return e.index == loop;
  return llvm::any_of(e.operands, [&](kir::ExprId o) { return readsLoop(entry, o, loop); });
}

bool readsMemory(const kir::EntryKernels &entry, kir::ExprId id) {
  const kir::Expr &e = entry.expr(id);
  if (e.kind == kir::ExprKind::Load)
    return true;
  return llvm::any_of(e.operands, [&](kir::ExprId o) { return readsMemory(entry, o); });
}

bool isLoadingSelect(const kir::EntryKernels &entry, const kir::Expr &e) {
  return e.kind == kir::ExprKind::Select &&
         (readsMemory(entry, e.operands[1]) || readsMemory(entry, e.operands[2]));
}

} // namespace aotc::codegen
