// The Lowerer's machinery: hash-consed expressions, lowered values, reading them inside a kernel,
// and realizing them into buffers as loop kernels or GEMM calls with epilogues.
#include "kernel/LowerImpl.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <fmt/format.h>

#include <cstring>
#include <set>

namespace aotc::kir::lower {

DType computeType(DType t) { return isHalfFloat(t) ? DType::F32 : t; }

llvm::SmallVector<SymExpr, 4> denseStrides(llvm::ArrayRef<SymExpr> shape) {
  llvm::SmallVector<SymExpr, 4> strides(shape.size());
  SymExpr s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s = s * shape[i];
  }
  return strides;
}

SymExpr numelOf(llvm::ArrayRef<SymExpr> shape) {
  SymExpr n = 1;
  for (const SymExpr &d : shape)
    n = n * d;
  return n;
}

llvm::Error Lowerer::unsupported(const Node &node, llvm::StringRef what) const {
  std::string op = what.empty() ? node.name().str() : what.str();
  return llvm::createStringError(fmt::format("{}: {} is not supported by the {} backend yet",
                                             node.loc().str(), op, Target.backend));
}

// ---- Expressions ----

static Expr newExpr(ExprKind kind, DType type) {
  Expr e;
  e.kind = kind;
  e.type = type;
  return e;
}

ExprId Lowerer::make(Expr e) {
  uint64_t fbits;
  std::memcpy(&fbits, &e.fval, sizeof fbits);
  std::string key =
      fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|", static_cast<int>(e.kind), static_cast<int>(e.type),
                  static_cast<int>(e.unary), static_cast<int>(e.binary), e.index, e.ival, fbits,
                  e.kind == ExprKind::Dim || e.kind == ExprKind::CheckIndex ? e.sym.str() : "");
  for (ExprId op : e.operands)
    key += std::to_string(op) + ",";
  auto [it, inserted] = Pool.try_emplace(key, static_cast<ExprId>(E->exprs.size()));
  if (!inserted)
    return it->second;
  uint64_t mask = 0;
  if (e.kind == ExprKind::LoopVar)
    mask = e.index < 64 ? uint64_t(1) << e.index : ~uint64_t(0);
  for (ExprId op : e.operands)
    mask |= VarMask[op];
  VarMask.push_back(mask);
  E->exprs.push_back(std::move(e));
  return it->second;
}

ExprId Lowerer::cInt(int64_t v, DType t) {
  Expr e = newExpr(ExprKind::Const, t);
  e.ival = t == DType::Bool ? (v != 0) : v;
  return make(e);
}

ExprId Lowerer::cFloat(double v, DType t) {
  Expr e = newExpr(ExprKind::Const, t);
  e.fval = t == DType::F32 ? static_cast<double>(static_cast<float>(v)) : v;
  return make(e);
}

ExprId Lowerer::cNum(double v, DType t) {
  if (isFloating(t))
    return cFloat(v, computeType(t));
  if (t == DType::Bool)
    return cBool(v != 0);
  return cInt(static_cast<int64_t>(v), t);
}

ExprId Lowerer::loopVar(unsigned i) {
  Expr e = newExpr(ExprKind::LoopVar, DType::I64);
  e.index = i;
  return make(e);
}

ExprId Lowerer::dim(const SymExpr &s) {
  if (auto c = s.constant())
    return cInt(*c);
  Expr e = newExpr(ExprKind::Dim, DType::I64);
  e.sym = s;
  return make(e);
}

ExprId Lowerer::load(uint32_t buffer, ExprId offset) {
  Expr e = newExpr(ExprKind::Load, E->buffers[buffer].dtype);
  e.index = buffer;
  e.operands = {offset};
  return make(e);
}

ExprId Lowerer::unary(UnaryOp op, ExprId a) {
  Expr e = newExpr(ExprKind::Unary, op == UnaryOp::Not ? DType::Bool : typeOf(a));
  e.unary = op;
  e.operands = {a};
  return make(e);
}

static bool isCompare(BinaryOp op) {
  return op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::Lt || op == BinaryOp::Le ||
         op == BinaryOp::Gt || op == BinaryOp::Ge;
}

ExprId Lowerer::binary(BinaryOp op, ExprId a, ExprId b) {
  DType t = isCompare(op) || op == BinaryOp::And || op == BinaryOp::Or ? DType::Bool : typeOf(a);
  Expr e = newExpr(ExprKind::Binary, t);
  e.binary = op;
  e.operands = {a, b};
  return make(e);
}

ExprId Lowerer::select(ExprId c, ExprId a, ExprId b) {
  if (expr(c).kind == ExprKind::Const)
    return expr(c).ival ? a : b;
  if (a == b)
    return a;
  Expr e = newExpr(ExprKind::Select, typeOf(a));
  e.operands = {c, a, b};
  return make(e);
}

ExprId Lowerer::cast(DType t, ExprId a) {
  if (typeOf(a) == t)
    return a;
  const Expr &src = expr(a);
  if (src.kind == ExprKind::Const && t != DType::F16 && t != DType::BF16) {
    if (isFloating(src.type))
      return isFloating(t) ? cFloat(src.fval, t) : cInt(static_cast<int64_t>(src.fval), t);
    return isFloating(t) ? cFloat(static_cast<double>(src.ival), t) : cInt(src.ival, t);
  }
  Expr e = newExpr(ExprKind::Cast, t);
  e.operands = {a};
  return make(e);
}

ExprId Lowerer::reduceValue(unsigned stage, DType t) {
  Expr e = newExpr(ExprKind::ReduceValue, t);
  e.index = stage;
  return make(e);
}

ExprId Lowerer::acc(DType t) { return make(newExpr(ExprKind::Acc, t)); }

static std::optional<int64_t> constOf(const Expr &e) {
  if (e.kind == ExprKind::Const && !isFloating(e.type))
    return e.ival;
  return std::nullopt;
}

// The value of an integer constant or a dim, as a symbolic expression.
static std::optional<SymExpr> symOf(const Lowerer &L, ExprId e) {
  const Expr &x = L.expr(e);
  if (x.kind == ExprKind::Const && !isFloating(x.type))
    return SymExpr(x.ival);
  if (x.kind == ExprKind::Dim)
    return x.sym;
  return std::nullopt;
}

namespace {
// (x % c) * s, or x % c with s = 1.
struct ModTerm {
  ExprId x, scale;
  SymExpr c, s;
};
} // namespace

static std::optional<ModTerm> modTerm(const Lowerer &L, ExprId e) {
  const Expr &t = L.expr(e);
  ExprId mod = e, scale = NoExpr;
  if (t.kind == ExprKind::Binary && t.binary == BinaryOp::Mul) {
    for (unsigned side = 0; side < 2 && scale == NoExpr; ++side) {
      const Expr &m = L.expr(t.operands[side]);
      if (m.kind == ExprKind::Binary && m.binary == BinaryOp::Mod && symOf(L, t.operands[1 - side]))
        mod = t.operands[side], scale = t.operands[1 - side];
    }
    if (scale == NoExpr)
      return std::nullopt;
  }
  const Expr &m = L.expr(mod);
  if (m.kind != ExprKind::Binary || m.binary != BinaryOp::Mod)
    return std::nullopt;
  std::optional<SymExpr> c = symOf(L, m.operands[1]);
  if (!c || *c == SymExpr(0))
    return std::nullopt;
  SymExpr s = scale == NoExpr ? SymExpr(1) : *symOf(L, scale);
  return ModTerm{m.operands[0], scale, *c, s};
}

// Whether `e` is (x // c) * (c * s) for the mod term's x, c and s.
static bool isFloorTerm(const Lowerer &L, ExprId e, const ModTerm &mt) {
  const Expr &mul = L.expr(e);
  if (mul.kind != ExprKind::Binary || mul.binary != BinaryOp::Mul)
    return false;
  for (unsigned side = 0; side < 2; ++side) {
    const Expr &div = L.expr(mul.operands[side]);
    std::optional<SymExpr> t = symOf(L, mul.operands[1 - side]);
    if (t && div.kind == ExprKind::Binary && div.binary == BinaryOp::FloorDiv &&
        div.operands[0] == mt.x && symOf(L, div.operands[1]) == mt.c && *t == mt.c * mt.s)
      return true;
  }
  return false;
}

// Reshapes index a flattened dim as (x // c) * (c * s) + (x % c) * s; Python's floor division
// and modulo make that x * s for any c != 0, and the index stays affine (contiguous loads
// vectorize). Finds the first term among the Add chain `sum` and returns the chain without it,
// plus x * s.
ExprId Lowerer::foldDivModPair(ExprId sum, ExprId mod) {
  std::optional<ModTerm> mt = modTerm(*this, mod);
  if (!mt)
    return NoExpr;
  if (isFloorTerm(*this, sum, *mt))
    return mt->scale == NoExpr ? mt->x : imul(mt->x, mt->scale);
  const Expr &s = expr(sum);
  if (s.kind != ExprKind::Binary || s.binary != BinaryOp::Add)
    return NoExpr;
  ExprId l = s.operands[0], r = s.operands[1];
  if (ExprId inner = foldDivModPair(l, mod); inner != NoExpr)
    return iadd(inner, r);
  if (ExprId inner = foldDivModPair(r, mod); inner != NoExpr)
    return iadd(l, inner);
  return NoExpr;
}

ExprId Lowerer::iadd(ExprId a, ExprId b) {
  auto ca = constOf(expr(a)), cb = constOf(expr(b));
  if (ca && cb)
    return cInt(*ca + *cb);
  if (ca && *ca == 0)
    return b;
  if (cb && *cb == 0)
    return a;
  if (ExprId x = foldDivModPair(a, b); x != NoExpr)
    return x;
  if (ExprId x = foldDivModPair(b, a); x != NoExpr)
    return x;
  return binary(BinaryOp::Add, a, b);
}

ExprId Lowerer::isub(ExprId a, ExprId b) {
  auto ca = constOf(expr(a)), cb = constOf(expr(b));
  if (ca && cb)
    return cInt(*ca - *cb);
  if (cb && *cb == 0)
    return a;
  return binary(BinaryOp::Sub, a, b);
}

ExprId Lowerer::imul(ExprId a, ExprId b) {
  auto ca = constOf(expr(a)), cb = constOf(expr(b));
  if (ca && cb)
    return cInt(*ca * *cb);
  if ((ca && *ca == 0) || (cb && *cb == 0))
    return cInt(0);
  if (ca && *ca == 1)
    return b;
  if (cb && *cb == 1)
    return a;
  return binary(BinaryOp::Mul, a, b);
}

ExprId Lowerer::ifloordiv(ExprId a, ExprId b) {
  auto cb = constOf(expr(b));
  if (cb && *cb == 1)
    return a;
  auto ca = constOf(expr(a));
  if (ca && *ca == 0)
    return a;
  return binary(BinaryOp::FloorDiv, a, b);
}

ExprId Lowerer::imod(ExprId a, ExprId b) {
  auto cb = constOf(expr(b));
  if (cb && *cb == 1)
    return cInt(0);
  auto ca = constOf(expr(a));
  if (ca && *ca == 0)
    return a;
  return binary(BinaryOp::Mod, a, b);
}

ExprId Lowerer::imin(ExprId a, ExprId b) {
  auto ca = constOf(expr(a)), cb = constOf(expr(b));
  if (ca && cb)
    return cInt(std::min(*ca, *cb));
  return a == b ? a : binary(BinaryOp::Min, a, b);
}

ExprId Lowerer::imax(ExprId a, ExprId b) {
  auto ca = constOf(expr(a)), cb = constOf(expr(b));
  if (ca && cb)
    return cInt(std::max(*ca, *cb));
  return a == b ? a : binary(BinaryOp::Max, a, b);
}

ExprId Lowerer::checkIndex(ExprId i, const SymExpr &size, uint32_t check) {
  Expr e = newExpr(ExprKind::CheckIndex, DType::I64);
  e.index = check;
  e.sym = size;
  e.operands = {cast(DType::I64, i)};
  return make(e);
}

uint32_t Lowerer::newIndexCheck(const Node &n, llvm::StringRef operand, int64_t dim,
                                const SymExpr &size) {
  std::string where = n.loc().isKnown() ? fmt::format("{} ({})", n.schema().name, n.loc().str())
                                        : std::string(n.schema().name);
  E->indexChecks.push_back(fmt::format("{}: indices into dim {} of {} must be in 0..{}", where, dim,
                                       operand.str(), (size - 1).str()));
  return static_cast<uint32_t>(E->indexChecks.size());
}

ExprId Lowerer::clampIndex(ExprId i, const SymExpr &size) {
  return imax(imin(i, dim(size - 1)), cInt(0));
}

ExprId Lowerer::offsetOf(const Layout &layout, llvm::ArrayRef<ExprId> idx) {
  ExprId off = dim(layout.offset);
  for (size_t k = 0; k < idx.size(); ++k) {
    if (layout.strides[k] == SymExpr(0))
      continue;
    off = iadd(off, imul(idx[k], dim(layout.strides[k])));
  }
  return off;
}

IndexList Lowerer::unflatten(ExprId linear, llvm::ArrayRef<SymExpr> dims) {
  IndexList idx(dims.size());
  SymExpr inner = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    if (dims[k] == SymExpr(1)) {
      idx[k] = cInt(0);
      continue;
    }
    ExprId q = ifloordiv(linear, dim(inner));
    idx[k] = k == 0 ? q : imod(q, dim(dims[k]));
    inner = inner * dims[k];
  }
  return idx;
}

IndexList Lowerer::reshapeIndices(llvm::ArrayRef<ExprId> idx, llvm::ArrayRef<SymExpr> to,
                                  llvm::ArrayRef<SymExpr> from) {
  // Dims of extent 1 take no part: their index is 0. The others split into groups whose
  // extents multiply to the same product on both sides (a merge, a split, or one dim kept), so
  // each index only mixes the dims of its group.
  llvm::SmallVector<size_t, 8> t, f;
  for (size_t k = 0; k < to.size(); ++k)
    if (!(to[k] == SymExpr(1)))
      t.push_back(k);
  for (size_t k = 0; k < from.size(); ++k)
    if (!(from[k] == SymExpr(1)))
      f.push_back(k);
  IndexList out(from.size(), cInt(0));
  size_t i = 0, j = 0;
  while (i < t.size() && j < f.size()) {
    // The shortest pair of runs t[i..i2), f[j..j2) with equal products; the rest, if none.
    size_t i2 = t.size(), j2 = f.size();
    SymExpr pt = 1;
    bool found = false;
    for (size_t a = i; a < t.size() && !found; ++a) {
      pt = pt * to[t[a]];
      SymExpr pf = 1;
      for (size_t b = j; b < f.size(); ++b) {
        pf = pf * from[f[b]];
        if (pf == pt) {
          i2 = a + 1, j2 = b + 1, found = true;
          break;
        }
      }
    }
    llvm::SmallVector<ExprId, 4> part;
    llvm::SmallVector<SymExpr, 4> partDims, fromDims;
    for (size_t a = i; a < i2; ++a) {
      part.push_back(idx[t[a]]);
      partDims.push_back(to[t[a]]);
    }
    for (size_t b = j; b < j2; ++b)
      fromDims.push_back(from[f[b]]);
    IndexList sub = unflatten(flatten(part, partDims), fromDims);
    for (size_t b = j; b < j2; ++b)
      out[f[b]] = sub[b - j];
    i = i2, j = j2;
  }
  return out;
}

ExprId Lowerer::flatten(llvm::ArrayRef<ExprId> idx, llvm::ArrayRef<SymExpr> dims) {
  ExprId lin = cInt(0);
  for (size_t k = 0; k < idx.size(); ++k)
    lin = iadd(imul(lin, dim(dims[k])), idx[k]);
  return lin;
}

// ---- Values ----

LValue *Lowerer::newValue(DType dtype, Shape shape, LKind kind, std::string opName) {
  LValue &v = Storage.emplace_back();
  v.id = static_cast<unsigned>(Storage.size() - 1);
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.kind = kind;
  v.opName = std::move(opName);
  if (Current) {
    v.loc = Current->loc();
    v.number = Current->numResults() ? Numbers.lookup(Current->result(0)) : 0;
    v.name = fmt::format("%{}", v.number);
  }
  return &v;
}

LValue *Lowerer::realizedValue(DType dtype, Shape shape, Layout layout, std::string name) {
  LValue *v = newValue(dtype, std::move(shape), LKind::Realized, "copy");
  v->layout = std::move(layout);
  v->name = std::move(name);
  v->cost = 0;
  return v;
}

static unsigned addCost(unsigned a, unsigned b) { return std::min(a + b, 1000u); }

LValue *Lowerer::pointwise(DType dtype, Shape shape, std::vector<LValue *> deps, std::string opName,
                           PointFn fn) {
  LValue *v = newValue(dtype, std::move(shape), LKind::Pointwise, std::move(opName));
  v->point = std::move(fn);
  for (LValue *d : deps)
    if (!d->layout)
      v->cost = addCost(v->cost, d->cost);
  v->deps = std::move(deps);
  return v;
}

LValue *Lowerer::view(LValue *src, Shape shape,
                      std::function<IndexList(llvm::ArrayRef<ExprId>)> map,
                      std::optional<Layout> layout) {
  LValue *v =
      newValue(src->dtype, std::move(shape), layout ? LKind::Realized : LKind::View, src->opName);
  if (layout) {
    v->layout = std::move(layout);
    v->cost = 0;
    return v;
  }
  v->deps = {src};
  v->cost = src->layout ? 1 : src->cost;
  v->point = [this, src, map](Scope &s, llvm::ArrayRef<ExprId> idx) {
    IndexList inner = map(idx);
    return read(src, s, inner);
  };
  return v;
}

LValue *Lowerer::staged(DType dtype, Shape shape, std::vector<LValue *> deps, std::string opName,
                        StagedSpec spec) {
  LValue *v = newValue(dtype, std::move(shape), LKind::Staged, std::move(opName));
  v->deps = std::move(deps);
  v->cost = 1;
  auto sp = std::make_shared<StagedSpec>(std::move(spec));
  v->point = [this, v, sp](Scope &s, llvm::ArrayRef<ExprId> idx) -> ExprId {
    std::vector<ExprId> key;
    uint64_t used = 0;
    for (size_t k = 0; k < idx.size(); ++k)
      if (sp->kept[k]) {
        key.push_back(idx[k]);
        used |= varsOf(idx[k]);
      }
    // A Reduce stage of this kernel computes the value once per outer point; that only pays
    // when every outer loop selects a different reduction (else it is recomputed) and no inner
    // loop is involved.
    bool stageable = s.allowStages && Options.fuse;
    uint64_t outerMask = s.numOuter >= 64 ? ~uint64_t(0) : (uint64_t(1) << s.numOuter) - 1;
    if (used & ~outerMask)
      stageable = false;
    for (unsigned o = 0; o < s.numOuter && o < 64; ++o)
      if (!(used >> o & 1) && s.outer[o] != SymExpr(1))
        stageable = false;
    if (s.forceStage == v && s.allowStages)
      stageable = true;
    if (!stageable) {
      if (auto l = realize(v); !l)
        return deferError(l.takeError(), cNum(0, v->dtype));
      return read(v, s, idx);
    }
    auto memoKey = std::make_pair(v->id | 0x80000000u, key);
    auto it = s.memo.find(memoKey);
    ExprId reduced;
    if (it != s.memo.end()) {
      reduced = it->second;
    } else {
      IndexList inner;
      for (size_t k = 0; k < sp->inner.size(); ++k)
        inner.push_back(loopVar(s.numOuter + k));
      ExprId value = cast(sp->accType, sp->body(s, idx, inner));
      Stage st;
      st.kind = Stage::Kind::Reduce;
      st.inner = sp->inner;
      st.reduce = sp->op;
      st.accType = sp->accType;
      st.value = value;
      s.stages.push_back(std::move(st));
      bool arg = sp->op == ReduceOp::ArgMax || sp->op == ReduceOp::ArgMin;
      reduced = reduceValue(s.stages.size() - 1, arg ? DType::I64 : sp->accType);
      s.memo[memoKey] = reduced;
    }
    ExprId out = sp->finish ? sp->finish(s, idx, reduced) : reduced;
    return cast(computeType(v->dtype), cast(v->dtype, out));
  };
  return v;
}

ExprId Lowerer::read(LValue *v, Scope &s, llvm::ArrayRef<ExprId> idx) {
  if (v->layout)
    return cast(computeType(v->dtype), load(v->layout->buffer, offsetOf(*v->layout, idx)));
  auto key = std::make_pair(v->id, std::vector<ExprId>(idx.begin(), idx.end()));
  if (auto it = s.memo.find(key); it != s.memo.end())
    return it->second;
  if (v->kind != LKind::View && v->kind != LKind::Realized && !v->opName.empty() &&
      std::find(s.opNames.begin(), s.opNames.end(), v->opName) == s.opNames.end())
    s.opNames.push_back(v->opName);
  ExprId r = v->point(s, idx);
  // A nested realization may have given `v` a layout meanwhile; the value is the same.
  s.memo[key] = r;
  return r;
}

ExprId Lowerer::readBroadcast(LValue *v, Scope &s, llvm::ArrayRef<ExprId> idx, DType t) {
  size_t rank = v->shape.size();
  IndexList sub(rank);
  for (size_t k = 0; k < rank; ++k) {
    size_t o = idx.size() - rank + k;
    sub[k] = v->shape[k] == SymExpr(1) ? cInt(0) : idx[o];
  }
  ExprId r = read(v, s, sub);
  return cast(t, r);
}

uint32_t Lowerer::newBuffer(Buffer::Kind kind, DType dtype, uint32_t index, SymExpr numel,
                            std::string name) {
  Buffer b;
  b.kind = kind;
  b.dtype = dtype;
  b.index = index;
  b.numel = std::move(numel);
  b.name = std::move(name);
  E->buffers.push_back(std::move(b));
  return static_cast<uint32_t>(E->buffers.size() - 1);
}

std::optional<SymExpr> mergedStride(llvm::ArrayRef<SymExpr> strides, llvm::ArrayRef<SymExpr> dims) {
  // One stride S must walk them: strides[k] == S * prod(dims[k+1:]).
  SymExpr stride = 0;
  for (size_t k = dims.size(); k-- > 0;)
    if (dims[k] != SymExpr(1)) {
      stride = strides[k];
      break;
    }
  SymExpr inner = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    if (dims[k] != SymExpr(1) && !(strides[k] == stride * inner))
      return std::nullopt;
    inner = inner * dims[k];
  }
  return stride;
}

bool Lowerer::isContiguous(const Layout &l, llvm::ArrayRef<SymExpr> shape) const {
  auto dense = denseStrides(shape);
  for (size_t k = 0; k < shape.size(); ++k)
    if (shape[k] != SymExpr(1) && !(l.strides[k] == dense[k]))
      return false;
  return true;
}

llvm::Expected<Layout> Lowerer::realize(LValue *v) {
  if (v->layout)
    return *v->layout;
  uint32_t buf = newBuffer(Buffer::Kind::Arena, v->dtype, 0, numelOf(v->shape), v->name);
  if (llvm::Error err = realizeInto(v, buf))
    return err;
  return *v->layout;
}

namespace {

/// The values that a kernel realizing `root` computes inline and that nothing else reads: of the
/// unrealized pointwise and GEMM values of root's shape that root reaches through pointwise
/// values, those whose every use (LValue::uses: graph consumers and outputs) is by `root` or by
/// another value of the set. A GEMM in it may compute root in its epilogue even where it has
/// several uses (GELU's x * 0.5 * (1 + tanh(c * (x + 0.044715 * x^3))) reads x three times):
/// no other kernel needs its sum.
llvm::DenseSet<const LValue *> fusedRegion(LValue *root) {
  auto inRegion = [&](const LValue *d) {
    return !d->layout && d->shape == root->shape &&
           (d->kind == LKind::Pointwise || d->kind == LKind::Gemm);
  };
  // Every value root reaches, and the distinct values among them that read each one.
  llvm::SetVector<LValue *> reached;
  llvm::DenseMap<const LValue *, llvm::SmallPtrSet<const LValue *, 4>> readers;
  reached.insert(root);
  for (size_t i = 0; i < reached.size(); ++i) {
    LValue *x = reached[i];
    if (x != root && x->kind != LKind::Pointwise)
      continue;
    for (LValue *d : x->deps)
      if (d != root && inRegion(d)) {
        readers[d].insert(x);
        reached.insert(d);
      }
  }
  // Drop the values that something outside reads until none is left: a value read only by
  // values of the set is read by nothing else.
  llvm::DenseSet<const LValue *> region(reached.begin(), reached.end());
  for (bool changed = true; changed;) {
    changed = false;
    for (LValue *x : reached) {
      if (x == root || !region.contains(x))
        continue;
      unsigned inside =
          llvm::count_if(readers[x], [&](const LValue *r) { return region.contains(r); });
      if (inside != x->uses) {
        region.erase(x);
        changed = true;
      }
    }
  }
  return region;
}

} // namespace

LValue *Lowerer::findGemm(LValue *root) {
  if (root->layout)
    return nullptr;
  if (root->kind == LKind::Gemm)
    return root;
  if (root->kind != LKind::Pointwise)
    return nullptr;
  llvm::DenseSet<const LValue *> region = fusedRegion(root);
  // The first GEMM of the region, depth first through its pointwise values, as root reads them.
  std::function<LValue *(LValue *)> find = [&](LValue *v) -> LValue * {
    for (LValue *d : v->deps) {
      if (!region.contains(d))
        continue;
      if (d->kind == LKind::Gemm) {
        // The epilogue rounds a 16-bit result where the target's GEMMs store one.
        bool half = isHalfFloat(root->dtype);
        if (d->dtype == root->dtype || (half && Target.gemmHalfOperands))
          return d;
        continue;
      }
      if (LValue *g = find(d))
        return g;
    }
    return nullptr;
  };
  return find(root);
}

unsigned Lowerer::rowSplit(LValue *v) {
  unsigned rank = v->shape.size();
  if (!Options.fuse)
    return rank;
  std::vector<LValue *> stack = {v};
  std::set<unsigned> seen;
  while (!stack.empty()) {
    LValue *x = stack.back();
    stack.pop_back();
    if (x->layout || !seen.insert(x->id).second)
      continue;
    if (x->rowKept >= 0 && x->rowRank == rank)
      return x->rowKept;
    for (LValue *d : x->deps)
      stack.push_back(d);
  }
  return rank;
}

std::string Lowerer::kernelName(const Scope &s, const LValue *root) {
  std::string base;
  for (size_t i = 0; i < s.opNames.size() && i < 3; ++i)
    base += (i ? "_" : "") + s.opNames[i];
  if (base.empty())
    base = root->opName.empty() ? "copy" : root->opName;
  return uniqueKernelName(fmt::format("{}_{}", base, root->number));
}

std::string Lowerer::uniqueKernelName(std::string name) {
  unsigned &n = KernelNames[name];
  if (n++)
    name += fmt::format("_{}", n - 1);
  return name;
}

llvm::Error Lowerer::realizeInto(LValue *v, uint32_t buffer) {
  if (Options.fuse || v->kind == LKind::Gemm)
    if (LValue *g = findGemm(v))
      return emitGemm(v, g, buffer);
  v->realizing = true;
  unsigned p = rowSplit(v);
  std::vector<SymExpr> outer(v->shape.begin(), v->shape.begin() + p);
  Scope s(p, outer, true);
  s.forceStage = v->kind == LKind::Staged ? v : nullptr;
  IndexList idx;
  for (unsigned k = 0; k < v->shape.size(); ++k)
    idx.push_back(loopVar(k));
  Layout dense{buffer, 0, denseStrides(v->shape)};
  ExprId value;
  if (v->layout) {
    value = read(v, s, idx);
  } else {
    value = v->point(s, idx);
    if (v->kind != LKind::View && !v->opName.empty() &&
        std::find(s.opNames.begin(), s.opNames.end(), v->opName) == s.opNames.end())
      s.opNames.insert(s.opNames.begin(), v->opName);
  }
  Stage store;
  store.kind = Stage::Kind::Store;
  store.inner.assign(v->shape.begin() + p, v->shape.end());
  store.buffer = buffer;
  store.offset = offsetOf(dense, idx);
  store.value = value;
  LoopKernel k;
  k.name = kernelName(s, v);
  k.outer = outer;
  k.parallelLoops = p;
  k.stages = std::move(s.stages);
  k.stages.push_back(std::move(store));
  k.loc = v->loc;
  E->steps.push_back(std::move(k));
  if (!v->layout)
    v->layout = dense;
  v->realizing = false;
  return llvm::Error::success();
}

llvm::Error Lowerer::emitGemm(LValue *root, LValue *g, uint32_t buffer) {
  const GemmSpec &spec = *g->gemm;
  if (spec.winograd)
    return emitWinograd(root, g, buffer);
  Scope s(3, {spec.batch, spec.m, spec.n}, false);
  s.accFor = g;
  ExprId b = loopVar(0), m = loopVar(1), n = loopVar(2);
  IndexList idx;
  if (spec.foldBatch) {
    llvm::SmallVector<SymExpr, 4> lead(root->shape.begin(), root->shape.end() - 1);
    idx = unflatten(m, lead);
  } else {
    idx = unflatten(b, spec.batchDims);
    idx.push_back(m);
  }
  if (spec.nDims.empty())
    idx.push_back(n);
  else
    idx.append(unflatten(n, spec.nDims));
  s.accIdx = idx;
  ExprId value = read(root, s, idx);
  GemmCall call;
  call.dtype = DType::F32;
  // Operands that are bf16 or fp16 values (halfGemm) reach the tensor cores of their type as
  // they are, whatever --precision permits for f32 ones.
  DType at = E->buffers[spec.a.buffer].dtype, bt = E->buffers[spec.b.buffer].dtype;
  call.precision = at == bt ? ownPrecision(at, Options.precision) : Options.precision;
  call.batch = spec.batch;
  call.m = spec.m;
  call.n = spec.n;
  call.k = spec.k;
  call.a = spec.a;
  call.b = spec.b;
  call.out = buffer;
  call.epilogue = value == acc(DType::F32) ? NoExpr : value;
  if (std::find(s.opNames.begin(), s.opNames.end(), g->opName) == s.opNames.end())
    s.opNames.insert(s.opNames.begin(), g->opName);
  call.name = kernelName(s, root);
  call.loc = g->loc;
  E->steps.push_back(std::move(call));
  Layout dense{buffer, 0, denseStrides(root->shape)};
  root->layout = dense;
  return llvm::Error::success();
}

llvm::Expected<MatrixOperand> Lowerer::matrixOperand(LValue *v, llvm::ArrayRef<SymExpr> batchDims) {
  auto layout = realize(v);
  if (!layout)
    return layout.takeError();
  size_t rank = v->shape.size();
  size_t nb = batchDims.size();
  // The operand's own batch dims are the trailing ones of batchDims (broadcast from the left).
  auto tryMerge = [&](const Layout &l) -> std::optional<MatrixOperand> {
    MatrixOperand op;
    op.buffer = l.buffer;
    op.offset = l.offset;
    op.rowStride = l.strides[rank - 2];
    op.colStride = l.strides[rank - 1];
    size_t own = rank - 2;
    // Strides over the broadcast batch shape: 0 where the operand has no dim or a 1.
    std::vector<SymExpr> st(nb, SymExpr(0));
    for (size_t k = 0; k < own; ++k) {
      size_t o = nb - own + k;
      st[o] = v->shape[k] == SymExpr(1) ? SymExpr(0) : l.strides[k];
    }
    std::optional<SymExpr> stride = mergedStride(st, batchDims);
    if (!stride)
      return std::nullopt;
    op.batchStride = *stride;
    return op;
  };
  if (auto op = tryMerge(*layout))
    return *op;
  // Materialize the operand broadcast to the full batch shape, densely.
  Shape full(batchDims.begin(), batchDims.end());
  full.push_back(v->shape[rank - 2]);
  full.push_back(v->shape[rank - 1]);
  LValue *copy =
      pointwise(v->dtype, full, {v}, "copy", [this, v](Scope &s, llvm::ArrayRef<ExprId> idx) {
        return readBroadcast(v, s, idx, computeType(v->dtype));
      });
  copy->name = v->name;
  copy->number = v->number;
  auto l2 = realize(copy);
  if (!l2)
    return l2.takeError();
  MatrixOperand op;
  op.buffer = l2->buffer;
  op.offset = 0;
  op.rowStride = full[nb + 1];
  op.colStride = 1;
  op.batchStride = full[nb] * full[nb + 1];
  return op;
}

} // namespace aotc::kir::lower
