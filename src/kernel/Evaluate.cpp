// The kernel-IR evaluator: binds the entry's symbols from the input shapes, lays the arena out as
// planned, and runs every loop kernel and GEMM point by point with bounds-checked accesses.
#include "kernel/Evaluate.h"

#include "aotc/tensor/ReferenceMath.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

namespace aotc::kir {

namespace {

struct Val {
  double f = 0;
  int64_t i = 0;
};

int64_t floatToInt(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9.2233720368547758e18)
    return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

class Evaluator {
public:
  Evaluator(const EntryKernels &e) : E(e), Cache(e.exprs.size()), Stamp(e.exprs.size(), 0) {}

  const EntryKernels &E;
  std::map<std::string, int64_t, std::less<>> Symbols;
  struct Buf {
    uint8_t *data = nullptr;
    int64_t numel = 0;
    DType dtype = DType::F32;
    bool writable = true;
  };
  std::vector<Buf> Bufs;
  std::vector<Val> Cache;
  std::vector<uint64_t> Stamp;
  uint64_t Now = 1;
  std::vector<int64_t> Loops;
  std::vector<Val> Reduced;
  double AccValue = 0;
  std::string Error;
  uint32_t FailedCheck = 0; // the first CheckIndex that saw an index out of range

  void runSteps(const std::vector<Step> &steps) {
    for (const Step &step : steps) {
      if (const auto *k = std::get_if<LoopKernel>(&step)) {
        runKernel(*k);
        if (!Error.empty())
          Error = "kernel " + k->name + ": " + Error;
      } else if (const auto *g = std::get_if<GemmCall>(&step)) {
        runGemm(*g);
        if (!Error.empty())
          Error = "gemm " + g->name + ": " + Error;
      } else if (const auto *a = std::get_if<AttentionCall>(&step)) {
        runAttention(*a);
        if (!Error.empty())
          Error = "attention " + a->name + ": " + Error;
      } else {
        const auto &c = std::get<CondStep>(step);
        Val pred = loadElem(c.predicate, 0);
        if (Error.empty())
          runSteps(pred.i ? c.thenSteps : c.elseSteps);
      }
      if (!Error.empty())
        return;
    }
  }

  int64_t sym(const SymExpr &s) {
    auto v = s.evaluate(Symbols);
    if (!v) {
      fail("cannot evaluate " + s.str());
      return 0;
    }
    return *v;
  }

  void fail(std::string msg) {
    if (Error.empty())
      Error = std::move(msg);
  }

  bool check(uint32_t b, int64_t off) {
    if (b >= Bufs.size() || off < 0 || off >= Bufs[b].numel) {
      fail(fmt::format("access to b{}[{}] is out of bounds ({} elements)", b, off,
                       b < Bufs.size() ? Bufs[b].numel : 0));
      return false;
    }
    return true;
  }

  Val loadElem(uint32_t b, int64_t off) {
    Val v;
    if (!check(b, off))
      return v;
    const Buf &buf = Bufs[b];
    const uint8_t *p = buf.data + off * static_cast<int64_t>(byteSize(buf.dtype));
    switch (buf.dtype) {
    case DType::F64: {
      double x;
      std::memcpy(&x, p, 8);
      v.f = x;
      break;
    }
    case DType::F32: {
      float x;
      std::memcpy(&x, p, 4);
      v.f = x;
      break;
    }
    case DType::F16: {
      uint16_t x;
      std::memcpy(&x, p, 2);
      v.f = halfToFloat(x);
      break;
    }
    case DType::BF16: {
      uint16_t x;
      std::memcpy(&x, p, 2);
      v.f = bfloat16ToFloat(x);
      break;
    }
    case DType::I64: {
      int64_t x;
      std::memcpy(&x, p, 8);
      v.i = x;
      break;
    }
    case DType::I32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      v.i = x;
      break;
    }
    case DType::I16: {
      int16_t x;
      std::memcpy(&x, p, 2);
      v.i = x;
      break;
    }
    case DType::I8:
      v.i = static_cast<int8_t>(*p);
      break;
    case DType::U8:
      v.i = *p;
      break;
    case DType::Bool:
      v.i = *p != 0;
      break;
    }
    return v;
  }

  Val convert(Val v, DType from, DType to) {
    Val r;
    if (isFloating(to)) {
      r.f = roundToFloat(to, isFloating(from) ? v.f : static_cast<double>(v.i));
    } else if (to == DType::Bool) {
      r.i = isFloating(from) ? (v.f != 0) : (v.i != 0);
    } else {
      r.i = wrapInt(to, isFloating(from) ? floatToInt(v.f) : v.i);
    }
    return r;
  }

  void storeElem(uint32_t b, int64_t off, Val v, DType from) {
    if (!check(b, off))
      return;
    Buf &buf = Bufs[b];
    if (!buf.writable) {
      fail(fmt::format("store into read-only buffer b{}", b));
      return;
    }
    Val c = convert(v, from, buf.dtype);
    uint8_t *p = buf.data + off * static_cast<int64_t>(byteSize(buf.dtype));
    switch (buf.dtype) {
    case DType::F64: {
      double x = c.f;
      std::memcpy(p, &x, 8);
      break;
    }
    case DType::F32: {
      float x = static_cast<float>(c.f);
      std::memcpy(p, &x, 4);
      break;
    }
    case DType::F16: {
      uint16_t x = floatToHalf(static_cast<float>(c.f));
      std::memcpy(p, &x, 2);
      break;
    }
    case DType::BF16: {
      uint16_t x = floatToBFloat16(static_cast<float>(c.f));
      std::memcpy(p, &x, 2);
      break;
    }
    case DType::I64: {
      int64_t x = c.i;
      std::memcpy(p, &x, 8);
      break;
    }
    case DType::I32: {
      int32_t x = static_cast<int32_t>(c.i);
      std::memcpy(p, &x, 4);
      break;
    }
    case DType::I16: {
      int16_t x = static_cast<int16_t>(c.i);
      std::memcpy(p, &x, 2);
      break;
    }
    case DType::I8:
    case DType::U8:
    case DType::Bool:
      *p = static_cast<uint8_t>(c.i);
      break;
    }
  }

  static double pyMod(double a, double b) {
    double r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  }

  Val eval(ExprId id) {
    if (Stamp[id] == Now)
      return Cache[id];
    const Expr &e = E.expr(id);
    Val r;
    bool fl = isFloating(e.type);
    switch (e.kind) {
    case ExprKind::Const:
      if (fl)
        r.f = roundToFloat(e.type, e.fval);
      else
        r.i = e.ival;
      break;
    case ExprKind::LoopVar:
      r.i = e.index < Loops.size() ? Loops[e.index] : 0;
      if (e.index >= Loops.size())
        fail(fmt::format("loop var i{} is not bound", e.index));
      break;
    case ExprKind::Dim:
      r.i = sym(e.sym);
      break;
    case ExprKind::Load:
      r = loadElem(e.index, eval(e.operands[0]).i);
      break;
    case ExprKind::Unary:
      r = unary(e, eval(e.operands[0]));
      break;
    case ExprKind::Binary:
      r = binary(e, eval(e.operands[0]), eval(e.operands[1]));
      break;
    case ExprKind::Select:
      r = eval(e.operands[0]).i ? eval(e.operands[1]) : eval(e.operands[2]);
      break;
    case ExprKind::Cast:
      r = convert(eval(e.operands[0]), E.expr(e.operands[0]).type, e.type);
      break;
    case ExprKind::ReduceValue:
      if (e.index < Reduced.size())
        r = Reduced[e.index];
      else
        fail(fmt::format("r{} read before its stage ran", e.index));
      break;
    case ExprKind::Acc:
      r.f = AccValue;
      break;
    case ExprKind::CheckIndex: {
      int64_t i = eval(e.operands[0]).i, size = sym(e.sym);
      if (i < 0 || i >= size) {
        if (FailedCheck == 0)
          FailedCheck = e.index;
        i = std::max<int64_t>(std::min(i, size - 1), 0);
      }
      r.i = i;
      break;
    }
    }
    Stamp[id] = Now;
    Cache[id] = r;
    return r;
  }

  Val unary(const Expr &e, Val a) {
    Val r;
    if (!isFloating(e.type)) {
      switch (e.unary) {
      case UnaryOp::Neg:
        r.i = -a.i;
        break;
      case UnaryOp::Abs:
        r.i = a.i < 0 ? -a.i : a.i;
        break;
      case UnaryOp::Not:
        r.i = !a.i;
        break;
      case UnaryOp::BitNot:
        r.i = e.type == DType::Bool ? !a.i : ~a.i;
        break;
      default:
        r.i = a.i;
        break;
      }
      r.i = wrapInt(e.type, r.i);
      return r;
    }
    double x = a.f, y = 0;
    switch (e.unary) {
    case UnaryOp::Neg:
      y = -x;
      break;
    case UnaryOp::Abs:
      y = std::fabs(x);
      break;
    case UnaryOp::Exp:
      y = std::exp(x);
      break;
    case UnaryOp::Log:
      y = std::log(x);
      break;
    case UnaryOp::Log1p:
      y = std::log1p(x);
      break;
    case UnaryOp::Sqrt:
      y = std::sqrt(x);
      break;
    case UnaryOp::Rsqrt:
      y = 1 / std::sqrt(x);
      break;
    case UnaryOp::Reciprocal:
      y = 1 / x;
      break;
    case UnaryOp::Sin:
      y = std::sin(x);
      break;
    case UnaryOp::Cos:
      y = std::cos(x);
      break;
    case UnaryOp::Tanh:
      y = std::tanh(x);
      break;
    case UnaryOp::Erf:
      y = std::erf(x);
      break;
    case UnaryOp::Sigmoid:
      y = 1 / (1 + std::exp(-x));
      break;
    case UnaryOp::Floor:
      y = std::floor(x);
      break;
    case UnaryOp::Ceil:
      y = std::ceil(x);
      break;
    case UnaryOp::Round:
      y = std::nearbyint(x);
      break;
    case UnaryOp::Not:
    case UnaryOp::BitNot:
      y = x == 0;
      break;
    }
    r.f = roundToFloat(e.type, y);
    return r;
  }

  Val binary(const Expr &e, Val a, Val b) {
    Val r;
    DType ot = E.expr(e.operands[0]).type;
    if (isFloating(ot)) {
      double x = a.f, y = b.f, z = 0;
      switch (e.binary) {
      case BinaryOp::Add:
        z = x + y;
        break;
      case BinaryOp::Sub:
        z = x - y;
        break;
      case BinaryOp::Mul:
        z = x * y;
        break;
      case BinaryOp::Div:
        z = x / y;
        break;
      case BinaryOp::FloorDiv:
        z = std::floor(x / y);
        break;
      case BinaryOp::Mod:
        z = pyMod(x, y);
        break;
      case BinaryOp::Pow:
        z = std::pow(x, y);
        break;
      case BinaryOp::Min:
        z = std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y);
        break;
      case BinaryOp::Max:
        z = std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y);
        break;
      case BinaryOp::Eq:
        r.i = x == y;
        return r;
      case BinaryOp::Ne:
        r.i = x != y;
        return r;
      case BinaryOp::Lt:
        r.i = x < y;
        return r;
      case BinaryOp::Le:
        r.i = x <= y;
        return r;
      case BinaryOp::Gt:
        r.i = x > y;
        return r;
      case BinaryOp::Ge:
        r.i = x >= y;
        return r;
      case BinaryOp::And:
        r.i = x != 0 && y != 0;
        return r;
      case BinaryOp::Or:
        r.i = x != 0 || y != 0;
        return r;
      case BinaryOp::BitAnd:
      case BinaryOp::BitOr:
      case BinaryOp::BitXor:
      case BinaryOp::Shl:
      case BinaryOp::Shr:
        fail(fmt::format("{} of floating-point values", toString(e.binary)));
        return r;
      }
      r.f = roundToFloat(e.type, z);
      return r;
    }
    int64_t x = a.i, y = b.i, z = 0;
    auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
    switch (e.binary) {
    case BinaryOp::Add:
      z = static_cast<int64_t>(u(x) + u(y));
      break;
    case BinaryOp::Sub:
      z = static_cast<int64_t>(u(x) - u(y));
      break;
    case BinaryOp::Mul:
      z = static_cast<int64_t>(u(x) * u(y));
      break;
    case BinaryOp::Div:
      if (y == 0) {
        fail("integer division by zero");
        break;
      }
      z = x / y;
      break;
    case BinaryOp::FloorDiv:
      if (y == 0) {
        fail("integer division by zero");
        break;
      }
      z = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0)))
        --z;
      break;
    case BinaryOp::Mod:
      if (y == 0) {
        fail("integer modulo by zero");
        break;
      }
      z = x % y;
      if (z != 0 && ((z < 0) != (y < 0)))
        z += y;
      break;
    case BinaryOp::Pow: {
      if (y < 0) {
        z = x == 1 ? 1 : x == -1 ? (y % 2 ? -1 : 1) : 0;
        break;
      }
      uint64_t base = u(x), res = 1;
      for (int64_t k = y; k > 0; k >>= 1, base *= base)
        if (k & 1)
          res *= base;
      z = static_cast<int64_t>(res);
      break;
    }
    case BinaryOp::Min:
      z = std::min(x, y);
      break;
    case BinaryOp::Max:
      z = std::max(x, y);
      break;
    case BinaryOp::Eq:
      z = x == y;
      break;
    case BinaryOp::Ne:
      z = x != y;
      break;
    case BinaryOp::Lt:
      z = x < y;
      break;
    case BinaryOp::Le:
      z = x <= y;
      break;
    case BinaryOp::Gt:
      z = x > y;
      break;
    case BinaryOp::Ge:
      z = x >= y;
      break;
    case BinaryOp::And:
      z = x && y;
      break;
    case BinaryOp::Or:
      z = x || y;
      break;
    case BinaryOp::BitAnd:
      z = x & y;
      break;
    case BinaryOp::BitOr:
      z = x | y;
      break;
    case BinaryOp::BitXor:
      z = x ^ y;
      break;
    case BinaryOp::Shl:
    case BinaryOp::Shr: {
      // Narrow signed values are held sign-extended and unsigned ones non-negative, so the i64
      // shift is the narrow type's, wrapped below.
      int64_t width = static_cast<int64_t>(byteSize(e.type)) * 8;
      bool inRange = y >= 0 && y < width;
      if (e.binary == BinaryOp::Shl)
        z = inRange ? static_cast<int64_t>(u(x) << y) : 0;
      else
        z = inRange ? x >> y : (isSigned(e.type) && x < 0 ? -1 : 0);
      break;
    }
    }
    r.i = wrapInt(e.type, z);
    return r;
  }

  /// Calls fn for every point of `extents`, writing the indices to Loops[base...].
  template <typename Fn> void forEach(const std::vector<int64_t> &extents, size_t base, Fn fn) {
    for (int64_t n : extents)
      if (n <= 0)
        return;
    Loops.resize(base + extents.size());
    std::vector<int64_t> idx(extents.size(), 0);
    while (true) {
      for (size_t k = 0; k < idx.size(); ++k)
        Loops[base + k] = idx[k];
      fn();
      if (!Error.empty())
        return;
      size_t k = idx.size();
      while (k > 0) {
        --k;
        if (++idx[k] < extents[k])
          break;
        idx[k] = 0;
        if (k == 0)
          return;
      }
      if (idx.empty())
        return;
    }
  }

  std::vector<int64_t> extents(const std::vector<SymExpr> &dims) {
    std::vector<int64_t> out;
    for (const SymExpr &d : dims)
      out.push_back(sym(d));
    return out;
  }

  void runKernel(const LoopKernel &k) {
    std::vector<int64_t> outer = extents(k.outer);
    size_t no = outer.size();
    forEach(outer, 0, [&] {
      std::vector<int64_t> saved(Loops.begin(), Loops.begin() + no);
      Reduced.assign(k.stages.size(), Val{});
      for (size_t s = 0; s < k.stages.size() && Error.empty(); ++s) {
        const Stage &st = k.stages[s];
        Loops.assign(saved.begin(), saved.end());
        std::vector<int64_t> inner = extents(st.inner);
        if (st.kind == Stage::Kind::Store) {
          forEach(inner, no, [&] {
            ++Now;
            Val v = eval(st.value);
            int64_t off = eval(st.offset).i;
            storeElem(st.buffer, off, v, E.expr(st.value).type);
          });
          continue;
        }
        DType vt = E.expr(st.value).type;
        bool fl = isFloating(st.accType);
        Val acc;
        int64_t best = 0, linear = 0;
        bool have = false;
        switch (st.reduce) {
        case ReduceOp::Sum:
          break;
        case ReduceOp::Prod:
          acc.f = 1;
          acc.i = 1;
          break;
        case ReduceOp::Max:
        case ReduceOp::ArgMax:
          acc.f = -INFINITY;
          acc.i = std::numeric_limits<int64_t>::min();
          break;
        case ReduceOp::Min:
        case ReduceOp::ArgMin:
          acc.f = INFINITY;
          acc.i = std::numeric_limits<int64_t>::max();
          break;
        }
        forEach(inner, no, [&] {
          ++Now;
          Val v = convert(eval(st.value), vt, st.accType);
          switch (st.reduce) {
          case ReduceOp::Sum:
            if (fl)
              acc.f = roundToFloat(st.accType, acc.f + v.f);
            else
              acc.i = wrapInt(st.accType, static_cast<int64_t>(static_cast<uint64_t>(acc.i) +
                                                               static_cast<uint64_t>(v.i)));
            break;
          case ReduceOp::Prod:
            if (fl)
              acc.f = roundToFloat(st.accType, acc.f * v.f);
            else
              acc.i = wrapInt(st.accType, static_cast<int64_t>(static_cast<uint64_t>(acc.i) *
                                                               static_cast<uint64_t>(v.i)));
            break;
          case ReduceOp::Max:
          case ReduceOp::Min: {
            bool mx = st.reduce == ReduceOp::Max;
            if (fl) {
              if (std::isnan(acc.f))
                break;
              if (std::isnan(v.f) || (mx ? v.f > acc.f : v.f < acc.f))
                acc.f = v.f;
            } else if (mx ? v.i > acc.i : v.i < acc.i) {
              acc.i = v.i;
            }
            break;
          }
          case ReduceOp::ArgMax:
          case ReduceOp::ArgMin: {
            bool mx = st.reduce == ReduceOp::ArgMax;
            bool better;
            if (fl)
              better = !have || (!std::isnan(acc.f) &&
                                 (std::isnan(v.f) || (mx ? v.f > acc.f : v.f < acc.f)));
            else
              better = !have || (mx ? v.i > acc.i : v.i < acc.i);
            if (better) {
              acc = v;
              best = linear;
              have = true;
            }
            break;
          }
          }
          ++linear;
        });
        if (st.reduce == ReduceOp::ArgMax || st.reduce == ReduceOp::ArgMin) {
          Reduced[s].i = best;
        } else {
          Reduced[s] = acc;
        }
      }
      Loops.assign(saved.begin(), saved.end());
    });
  }

  void runGemm(const GemmCall &g) {
    int64_t B = sym(g.batch), M = sym(g.m), N = sym(g.n), K = sym(g.k);
    // The operands' addressing, evaluated once.
    struct Addressing {
      int64_t off = 0, bs = 0, rs = 0, cs = 0;
      bool conv = false;
      unsigned panelRows = 0, pairPanelCols = 0, panelCols = 0;
      int winograd = 0;
      int64_t chs = 0, hs = 0, ws = 0, h = 0, w = 0, kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0,
              dh = 1, dw = 1, ow = 1;
    };
    auto addressing = [&](const MatrixOperand &o) {
      Addressing a;
      a.off = sym(o.offset);
      a.bs = sym(o.batchStride);
      a.rs = sym(o.rowStride);
      a.cs = sym(o.colStride);
      a.panelRows = o.panelRows;
      a.pairPanelCols = o.pairPanelCols;
      a.panelCols = o.panelCols;
      a.winograd = o.winogradTile;
      if (const ConvWindow *w = o.conv ? &*o.conv : nullptr) {
        a.conv = true;
        a.chs = sym(w->channelStride);
        a.hs = sym(w->heightStride);
        a.ws = sym(w->widthStride);
        a.h = sym(w->height);
        a.w = sym(w->width);
        a.kh = sym(w->kernelH);
        a.kw = sym(w->kernelW);
        a.sh = sym(w->strideH);
        a.sw = sym(w->strideW);
        a.ph = sym(w->padH);
        a.pw = sym(w->padW);
        a.dh = sym(w->dilH);
        a.dw = sym(w->dilW);
        a.ow = sym(w->outWidth);
      }
      return a;
    };
    Addressing aa = addressing(g.a), ba = addressing(g.b);
    // A Winograd filter's transform, [points^2, M, K].
    std::vector<float> filter;
    if (aa.winograd) {
      int64_t components = (aa.winograd + 2) * (aa.winograd + 2);
      if (B != components)
        return fail(fmt::format("a Winograd F({0}x{0}, 3x3) filter operand needs a batch of {1}, "
                                "not {2}",
                                aa.winograd, components, B));
      filter.resize(components * M * K);
      for (int64_t r = 0; r < M; ++r)
        for (int64_t c = 0; c < K; ++c) {
          float taps[9], u[36];
          for (int t = 0; t < 9; ++t)
            taps[t] =
                static_cast<float>(loadElem(g.a.buffer, aa.off + r * aa.rs + c * aa.cs + t).f);
          winogradFilter(aa.winograd, taps, u);
          for (int64_t b = 0; b < components; ++b)
            filter[(b * M + r) * K + c] = u[b];
        }
    }
    auto element = [&](uint32_t buffer, const Addressing &a, int64_t b, int64_t r,
                       int64_t c) -> float {
      int64_t base = a.off + b * a.bs;
      if (a.panelRows)
        return static_cast<float>(loadElem(buffer, base + panelOffset(r, c, K, a.panelRows)).f);
      if (a.panelCols)
        return static_cast<float>(loadElem(buffer, base + panelOffset(c, r, K, a.panelCols)).f);
      if (a.pairPanelCols)
        return static_cast<float>(
            loadElem(buffer, base + pairPanelOffset(r, c, K, a.pairPanelCols)).f);
      if (a.winograd)
        return filter[(b * M + r) * K + c];
      if (!a.conv)
        return static_cast<float>(loadElem(buffer, base + r * a.rs + c * a.cs).f);
      int64_t ci = r / (a.kh * a.kw), fh = r / a.kw % a.kh, fw = r % a.kw;
      int64_t ih = c / a.ow * a.sh - a.ph + fh * a.dh, iw = c % a.ow * a.sw - a.pw + fw * a.dw;
      if (ih < 0 || ih >= a.h || iw < 0 || iw >= a.w)
        return 0;
      return static_cast<float>(loadElem(buffer, base + ci * a.chs + ih * a.hs + iw * a.ws).f);
    };
    for (int64_t b = 0; b < B && Error.empty(); ++b)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          float sum = 0;
          for (int64_t k = 0; k < K; ++k)
            sum += element(g.a.buffer, aa, b, m, k) * element(g.b.buffer, ba, b, k, n);
          Val v;
          v.f = sum;
          DType vt = DType::F32;
          if (g.epilogue != NoExpr) {
            Loops = {b, m, n};
            AccValue = sum;
            ++Now;
            v = eval(g.epilogue);
            vt = E.expr(g.epilogue).type;
          }
          storeElem(g.out, (b * M + m) * N + n, v, vt);
        }
  }

  // The interpreter's sdpa over the call's strided operands: scores and sums in double, each
  // output rounded once.
  void runAttention(const AttentionCall &a) {
    int64_t batch = sym(a.batch), heads = sym(a.heads), group = sym(a.group);
    int64_t L = sym(a.l), S = sym(a.s), Ekey = sym(a.e), Ev = sym(a.ev);
    if (!Error.empty())
      return;
    if (heads <= 0 || group <= 0 || heads % group != 0)
      return fail(fmt::format("{} heads do not split into groups of {}", heads, group));
    struct Addressing {
      int64_t off, bs, hs, rs, cs;
    };
    auto addressing = [&](const AttentionOperand &o) {
      return Addressing{sym(o.offset), sym(o.batchStride), sym(o.headStride), sym(o.rowStride),
                        sym(o.colStride)};
    };
    Addressing q = addressing(a.q), k = addressing(a.k), v = addressing(a.v);
    std::optional<Addressing> mask;
    if (a.mask)
      mask = addressing(*a.mask);
    constexpr double Inf = std::numeric_limits<double>::infinity();
    std::vector<double> scores(S), row(Ev);
    for (int64_t bq = 0; bq < batch * heads && Error.empty(); ++bq) {
      int64_t outer = bq / heads, head = bq % heads, kvHead = head / group;
      int64_t qBase = q.off + outer * q.bs + head * q.hs;
      int64_t kBase = k.off + outer * k.bs + kvHead * k.hs;
      int64_t vBase = v.off + outer * v.bs + kvHead * v.hs;
      for (int64_t l = 0; l < L; ++l) {
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < Ekey; ++e)
            dot += loadElem(a.q.buffer, qBase + l * q.rs + e * q.cs).f *
                   loadElem(a.k.buffer, kBase + j * k.rs + e * k.cs).f;
          double x = dot * a.scale;
          if (a.causal && j > l)
            x = -Inf;
          if (mask) {
            int64_t at =
                mask->off + outer * mask->bs + head * mask->hs + l * mask->rs + j * mask->cs;
            Val m = loadElem(a.mask->buffer, at);
            x = Bufs[a.mask->buffer].dtype == DType::Bool ? (m.i ? x : -Inf) : x + m.f;
          }
          scores[j] = x;
        }
        attentionRow(
            scores,
            [&](int64_t j, int64_t e) {
              return loadElem(a.v.buffer, vBase + j * v.rs + e * v.cs).f;
            },
            row);
        for (int64_t e = 0; e < Ev; ++e) {
          Val out;
          out.f = row[e];
          storeElem(a.out, AttentionCall::outOffset(a.headsInRows, outer, head, heads, L, l, Ev, e),
                    out, DType::F64);
        }
      }
    }
  }
};

} // namespace

llvm::Expected<std::vector<HostTensor>> evaluate(const Program &program, unsigned entryIndex,
                                                 llvm::ArrayRef<HostTensor> inputs,
                                                 llvm::ArrayRef<HostTensor> weights) {
  auto error = [](std::string msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", msg.c_str());
  };
  if (entryIndex >= program.entries.size())
    return error(fmt::format("no entry {}", entryIndex));
  const EntryKernels &e = program.entries[entryIndex];
  if (inputs.size() != e.inputs.size())
    return error(
        fmt::format("entry @{} takes {} inputs, got {}", e.name, e.inputs.size(), inputs.size()));
  if (weights.size() != program.weights.size())
    return error(
        fmt::format("the program has {} weights, got {}", program.weights.size(), weights.size()));
  Evaluator ev(e);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorSig &sig = e.inputs[i];
    if (inputs[i].dtype() != sig.dtype || inputs[i].rank() != sig.shape.size())
      return error(fmt::format("input \"{}\" is {}, expected {} of rank {}", sig.name,
                               describe(inputs[i].dtype(), inputs[i].shape()),
                               toString(sig.dtype).str(), sig.shape.size()));
    for (size_t d = 0; d < sig.shape.size(); ++d)
      if (auto name = sig.shape[d].symbolName())
        ev.Symbols.emplace(name->str(), inputs[i].shape()[d]);
  }
  // Symbols only reachable as `scale * s + offset`; the check below rejects a remainder.
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t d = 0; d < e.inputs[i].shape.size(); ++d)
      if (auto lin = linearDim(e.inputs[i].shape[d]); lin && !ev.Symbols.count(lin->symbol))
        ev.Symbols.emplace(lin->symbol, (inputs[i].shape()[d] - lin->offset) / lin->scale);
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t d = 0; d < e.inputs[i].shape.size(); ++d) {
      auto v = e.inputs[i].shape[d].evaluate(ev.Symbols);
      if (!v || *v != inputs[i].shape()[d])
        return error(fmt::format("input \"{}\" dim {} is {}, expected {}", e.inputs[i].name, d,
                                 inputs[i].shape()[d], e.inputs[i].shape[d].str()));
    }
  auto arenaBytes = e.arenaBytes.evaluate(ev.Symbols);
  if (!arenaBytes)
    return error("cannot evaluate the arena size " + e.arenaBytes.str());
  std::vector<uint64_t> arena((*arenaBytes + 7) / 8 + 1, 0);
  std::vector<HostTensor> outputs, state(weights.begin(), weights.end());
  for (const TensorSig &sig : e.outputs) {
    std::vector<int64_t> shape;
    for (const SymExpr &d : sig.shape)
      shape.push_back(*d.evaluate(ev.Symbols));
    outputs.emplace_back(sig.dtype, shape);
  }
  std::vector<HostTensor> inputCopies(inputs.begin(), inputs.end());
  for (const Buffer &b : e.buffers) {
    Evaluator::Buf buf;
    buf.dtype = b.dtype;
    auto numel = b.numel.evaluate(ev.Symbols);
    if (!numel)
      return error("cannot evaluate the size of buffer " + b.name);
    buf.numel = *numel;
    switch (b.kind) {
    case Buffer::Kind::Input:
      buf.data = inputCopies[b.index].mutableData();
      buf.writable = false;
      break;
    case Buffer::Kind::Output: {
      auto off = b.viewOffset.evaluate(ev.Symbols);
      if (!off || *off < 0 || *off + buf.numel > outputs[b.index].numel())
        return error(fmt::format("output part \"{}\" at element {} does not fit in output {}",
                                 b.name, b.viewOffset.str(), b.index));
      buf.data = static_cast<uint8_t *>(outputs[b.index].mutableData()) +
                 *off * static_cast<int64_t>(byteSize(b.dtype));
      break;
    }
    case Buffer::Kind::Weight:
    case Buffer::Kind::State:
      if (state[b.index].dtype() != b.dtype || state[b.index].numel() != buf.numel)
        return error(fmt::format("weight {} (\"{}\") is {}, expected {} x {}", b.index, b.name,
                                 describe(state[b.index].dtype(), state[b.index].shape()),
                                 toString(b.dtype).str(), buf.numel));
      buf.data = state[b.index].mutableData();
      buf.writable = b.kind == Buffer::Kind::State;
      break;
    case Buffer::Kind::Arena: {
      auto off = b.arenaOffset.evaluate(ev.Symbols);
      if (!off || *off < 0 || *off % 64 != 0 ||
          *off + buf.numel * static_cast<int64_t>(byteSize(b.dtype)) > *arenaBytes)
        return error(fmt::format("arena buffer \"{}\" at {} does not fit in {} bytes", b.name,
                                 b.arenaOffset.str(), *arenaBytes));
      buf.data = reinterpret_cast<uint8_t *>(arena.data()) + *off;
      break;
    }
    }
    ev.Bufs.push_back(buf);
  }
  ev.runSteps(e.steps);
  if (!ev.Error.empty())
    return error(ev.Error);
  if (ev.FailedCheck)
    return error(fmt::format("an index is out of range in {}",
                             ev.FailedCheck <= e.indexChecks.size()
                                 ? e.indexChecks[ev.FailedCheck - 1]
                                 : fmt::format("check {}", ev.FailedCheck)));
  return outputs;
}

} // namespace aotc::kir
