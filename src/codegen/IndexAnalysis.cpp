// The index analysis of IndexAnalysis.h.
#include "codegen/IndexAnalysis.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <functional>
#include <limits>

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

namespace {

// sum_l coef[l] * loopVar(l) + c, every coefficient a constant (coef by loop number, zero past
// its end).
struct Linear {
  llvm::SmallVector<int64_t, 8> coef;
  int64_t c = 0;
  int64_t of(unsigned loop) const { return loop < coef.size() ? coef[loop] : 0; }
  bool constant() const {
    return llvm::all_of(coef, [](int64_t k) { return k == 0; });
  }
  // this += k * other
  void add(const Linear &other, int64_t k) {
    if (coef.size() < other.coef.size())
      coef.resize(other.coef.size(), 0);
    for (auto [loop, x] : llvm::enumerate(other.coef))
      coef[loop] += k * x;
    c += k * other.c;
  }
};

std::optional<int64_t> intConst(const kir::Expr &e) {
  if (e.kind == kir::ExprKind::Const && !isFloating(e.type))
    return e.ival;
  return std::nullopt;
}

std::optional<Linear> linear(const kir::EntryKernels &entry, kir::ExprId id) {
  const kir::Expr &e = entry.expr(id);
  Linear l;
  if (std::optional<int64_t> c = intConst(e)) {
    l.c = *c;
    return l;
  }
  if (e.kind == kir::ExprKind::LoopVar) {
    l.coef.resize(e.index + 1, 0);
    l.coef[e.index] = 1;
    return l;
  }
  if (e.kind != kir::ExprKind::Binary || e.type != DType::I64)
    return std::nullopt;
  std::optional<Linear> x = linear(entry, e.operands[0]), y = linear(entry, e.operands[1]);
  if (!x || !y)
    return std::nullopt;
  switch (e.binary) {
  case kir::BinaryOp::Add:
  case kir::BinaryOp::Sub:
    l.add(*x, 1);
    l.add(*y, e.binary == kir::BinaryOp::Add ? 1 : -1);
    return l;
  case kir::BinaryOp::Mul:
    // An affine term times a constant.
    if (x->constant())
      l.add(*y, x->c);
    else if (y->constant())
      l.add(*x, y->c);
    else
      return std::nullopt;
    return l;
  default:
    return std::nullopt;
  }
}

// floor(x / y) and ceil(x / y) for y > 0.
int64_t floorDiv(int64_t x, int64_t y) { return x / y - (x % y != 0 && x < 0); }
int64_t ceilDiv(int64_t x, int64_t y) { return -floorDiv(-x, y); }

} // namespace

std::optional<ClampInterior>
clampInterior(const kir::EntryKernels &entry, llvm::ArrayRef<kir::ExprId> roots, unsigned loop,
              llvm::function_ref<std::optional<int64_t>(unsigned)> extent) {
  ClampInterior out;
  out.begin = std::numeric_limits<int64_t>::min();
  out.end = std::numeric_limits<int64_t>::max();
  bool ok = true;
  llvm::SmallDenseSet<kir::ExprId, 16> seen;
  // The clamp `id` is: its operand e with the bounds, or nullopt.
  auto asClamp =
      [&](const kir::Expr &e) -> std::optional<std::tuple<kir::ExprId, int64_t, int64_t>> {
    if (e.kind != kir::ExprKind::Binary || e.type != DType::I64 ||
        (e.binary != kir::BinaryOp::Max && e.binary != kir::BinaryOp::Min))
      return std::nullopt;
    const kir::Expr &in = entry.expr(e.operands[0]);
    kir::BinaryOp other = e.binary == kir::BinaryOp::Max ? kir::BinaryOp::Min : kir::BinaryOp::Max;
    std::optional<int64_t> outer = intConst(entry.expr(e.operands[1]));
    if (!outer || in.kind != kir::ExprKind::Binary || in.binary != other)
      return std::nullopt;
    std::optional<int64_t> inner = intConst(entry.expr(in.operands[1]));
    if (!inner)
      return std::nullopt;
    int64_t lo = e.binary == kir::BinaryOp::Max ? *outer : *inner;
    int64_t hi = e.binary == kir::BinaryOp::Max ? *inner : *outer;
    if (lo > hi)
      return std::nullopt;
    return std::tuple(in.operands[0], lo, hi);
  };
  std::function<void(kir::ExprId)> visit = [&](kir::ExprId id) {
    if (!ok || !seen.insert(id).second)
      return;
    const kir::Expr &e = entry.expr(id);
    auto clamp = asClamp(e);
    bool minMax = e.kind == kir::ExprKind::Binary && !isFloating(e.type) &&
                  (e.binary == kir::BinaryOp::Max || e.binary == kir::BinaryOp::Min);
    if (!clamp || !readsLoop(entry, id, loop)) {
      // A min or max of `loop` that is not such a clamp keeps its lanes from vectorizing.
      if (minMax && readsLoop(entry, id, loop))
        ok = false;
      for (kir::ExprId o : e.operands)
        visit(o);
      return;
    }
    auto [operand, lo, hi] = *clamp;
    std::optional<Linear> l = linear(entry, operand);
    if (!l || l->of(loop) <= 0) {
      ok = false;
      return;
    }
    int64_t a = l->of(loop), rMin = l->c, rMax = l->c;
    for (auto [other, k] : llvm::enumerate(l->coef)) {
      if (other == loop || k == 0)
        continue;
      std::optional<int64_t> n = extent(other);
      if (!n || *n <= 0) {
        ok = false;
        return;
      }
      rMin += std::min<int64_t>(0, k * (*n - 1));
      rMax += std::max<int64_t>(0, k * (*n - 1));
    }
    // lo <= a * v + rMin and a * v + rMax <= hi.
    out.begin = std::max(out.begin, ceilDiv(lo - rMin, a));
    out.end = std::min(out.end, floorDiv(hi - rMax, a) + 1);
    out.clamps.push_back({id, operand});
  };
  for (kir::ExprId root : roots)
    if (root != kir::NoExpr)
      visit(root);
  if (!ok || out.clamps.empty())
    return std::nullopt;
  return out;
}

} // namespace aotc::codegen
