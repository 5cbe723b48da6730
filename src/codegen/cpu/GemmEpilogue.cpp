// The GEMM epilogues the micro-kernel applies in registers: a convolution's bias, a residual and
// relu (ResNet's conv + batch norm + add + relu), recognized in the epilogue expression.
#include "codegen/cpu/GemmEmitter.h"

#include <cmath>

namespace aotc::cpu::gemm {

namespace {

bool isF32Const(const kir::Expr &e, double value) {
  return e.kind == kir::ExprKind::Const && e.type == DType::F32 && e.fval == value &&
         !std::signbit(e.fval);
}

bool isLoopVar(const kir::EntryKernels &entry, kir::ExprId id, unsigned loop) {
  const kir::Expr &e = entry.expr(id);
  return e.kind == kir::ExprKind::LoopVar && e.index == loop;
}

// Whether `id` is an integer constant or dim expression that reads no memory and no loop var.
bool isInvariant(const kir::EntryKernels &entry, kir::ExprId id) {
  const kir::Expr &e = entry.expr(id);
  if (e.kind == kir::ExprKind::Load || e.kind == kir::ExprKind::CheckIndex ||
      e.kind == kir::ExprKind::Acc || e.kind == kir::ExprKind::ReduceValue ||
      e.kind == kir::ExprKind::LoopVar || isFloating(e.type))
    return false;
  return all_of(e.operands, [&](kir::ExprId o) { return isInvariant(entry, o); });
}

bool isOne(const kir::Expr &e) {
  return (e.kind == kir::ExprKind::Const && !isFloating(e.type) && e.ival == 1) ||
         (e.kind == kir::ExprKind::Dim && e.sym == SymExpr(1));
}

// Whether `id` is c + sum_l coef_l * loopVar(l) with invariant c and coefficients, and the
// column's (loop 2) coefficient, when present, exactly 1: sums of such terms, products of an
// invariant and a term, loop vars alone. `column` counts the column's appearances.
bool isAffine(const kir::EntryKernels &entry, kir::ExprId id, unsigned &column) {
  const kir::Expr &e = entry.expr(id);
  if (isInvariant(entry, id))
    return true;
  if (e.kind == kir::ExprKind::LoopVar) {
    column += e.index == 2;
    return e.index <= 2;
  }
  if (e.kind != kir::ExprKind::Binary || e.type != DType::I64)
    return false;
  kir::ExprId x = e.operands[0], y = e.operands[1];
  if (e.binary == kir::BinaryOp::Add)
    return isAffine(entry, x, column) && isAffine(entry, y, column);
  if (e.binary != kir::BinaryOp::Mul)
    return false;
  // A term times 1 is the term.
  if (isOne(entry.expr(x)))
    return isAffine(entry, y, column);
  if (isOne(entry.expr(y)))
    return isAffine(entry, x, column);
  // A scaled term may not hold the column: its coefficient would not be 1.
  unsigned inner = 0;
  bool ok = (isInvariant(entry, x) && isAffine(entry, y, inner)) ||
            (isInvariant(entry, y) && isAffine(entry, x, inner));
  return ok && inner == 0;
}

bool isF32Load(const kir::EntryKernels &entry, const kir::Expr &e) {
  return e.kind == kir::ExprKind::Load && e.type == DType::F32 &&
         entry.buffers[e.index].dtype == DType::F32;
}

} // namespace

std::optional<TileEpilogue> matchTileEpilogue(const kir::EntryKernels &entry,
                                              const kir::GemmCall &g) {
  if (g.epilogue == kir::NoExpr || entry.expr(g.epilogue).type != DType::F32)
    return std::nullopt;
  auto isBias = [&](const kir::Expr &load) { return isLoopVar(entry, load.operands[0], 1); };
  auto isResidual = [&](const kir::Expr &load) {
    unsigned column = 0;
    return isAffine(entry, load.operands[0], column) && column == 1;
  };
  // x + load (either order) with `load` an f32 load other than of the output that `is` accepts:
  // x becomes the other operand.
  auto peel = [&](kir::ExprId &x, auto is) -> const kir::Expr * {
    const kir::Expr &e = entry.expr(x);
    if (e.kind != kir::ExprKind::Binary || e.binary != kir::BinaryOp::Add || e.type != DType::F32)
      return nullptr;
    for (unsigned side : {1u, 0u}) {
      const kir::Expr &load = entry.expr(e.operands[side]);
      if (isF32Load(entry, load) && load.index != g.out && is(load)) {
        x = e.operands[1 - side];
        return &load;
      }
    }
    return nullptr;
  };
  TileEpilogue out;
  kir::ExprId x = g.epilogue;
  const kir::Expr &top = entry.expr(x);
  if (top.kind == kir::ExprKind::Binary && top.binary == kir::BinaryOp::Max &&
      isF32Const(entry.expr(top.operands[1]), 0.0)) {
    out.relu = true;
    x = top.operands[0];
  }
  // relu?((acc + bias) + residual): the residual is outermost.
  out.residual = peel(x, isResidual);
  out.bias = peel(x, isBias);
  if (entry.expr(x).kind != kir::ExprKind::Acc)
    return std::nullopt;
  return out;
}

} // namespace aotc::cpu::gemm
