// The GEMM epilogues the micro-kernel applies in registers: a convolution's bias, a residual and
// relu (ResNet's conv + batch norm + add + relu), recognized in the epilogue expression.
#include "codegen/IndexAnalysis.h"
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
    // Affine in the batch, row and column (loops 0 to 2), the column's coefficient 1.
    auto none = [](unsigned) { return false; };
    auto tile = [](unsigned loop) { return loop <= 2; };
    unsigned column = 0;
    return codegen::isAffine(entry, load.operands[0], {none, tile}, 2, column) && column == 1;
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

unsigned tileEpilogueFlags(const std::optional<TileEpilogue> &te) {
  if (!te)
    return 0;
  return (te->bias ? AddBias : 0) | (te->residual ? AddResidual : 0) | (te->relu ? Relu : 0);
}

} // namespace aotc::cpu::gemm
