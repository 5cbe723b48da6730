// The kernel IR's text form (deterministic, expressions in infix form) and the weight blob layout.
#include "kernel/Kernel.h"
#include "kernel/MemoryPlan.h"

#include "aotc/ir/Attribute.h"
#include "aotc/ir/Type.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/STLExtras.h"

#include <fmt/format.h>

#include <cmath>

namespace aotc::kir {

namespace {
constexpr llvm::StringLiteral PrecisionNames[] = {"fp32", "tf32", "bf16", "fp16"};
} // namespace

llvm::StringRef toString(Precision p) { return PrecisionNames[unsigned(p)]; }

llvm::Expected<Precision> parsePrecision(llvm::StringRef name) {
  for (auto [i, n] : llvm::enumerate(PrecisionNames))
    if (name == n)
      return Precision(i);
  return llvm::createStringError(
      fmt::format("unknown precision '{}' (expected fp32, tf32, bf16 or fp16)", name.str()));
}

std::optional<DType> sixteenBitType(Precision p) {
  if (p == Precision::BF16)
    return DType::BF16;
  if (p == Precision::FP16)
    return DType::F16;
  return std::nullopt;
}

bool multipleOf(const EntryKernels &entry, const SymExpr &s, int64_t k) {
  if (std::optional<int64_t> v = s.constant())
    return *v % k == 0;
  return rangeOf(SymExpr::mod(s, SymExpr(k)), entry.facts) == ValueRange{0, 0};
}

Precision ownPrecision(DType t, Precision otherwise) {
  return t == DType::BF16 ? Precision::BF16 : t == DType::F16 ? Precision::FP16 : otherwise;
}

namespace {

uint64_t alignTo64(uint64_t n) { return (n + 63) / 64 * 64; }

std::string symStr(const SymExpr &e) {
  std::string s = e.str();
  if (e.isConstant() || e.symbolName())
    return s;
  return fmt::format("({})", s);
}

const char *infixOf(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
    return "+";
  case BinaryOp::Sub:
    return "-";
  case BinaryOp::Mul:
    return "*";
  case BinaryOp::Div:
    return "/";
  case BinaryOp::FloorDiv:
    return "//";
  case BinaryOp::Mod:
    return "%";
  case BinaryOp::Eq:
    return "==";
  case BinaryOp::Ne:
    return "!=";
  case BinaryOp::Lt:
    return "<";
  case BinaryOp::Le:
    return "<=";
  case BinaryOp::Gt:
    return ">";
  case BinaryOp::Ge:
    return ">=";
  case BinaryOp::And:
    return "&&";
  case BinaryOp::Or:
    return "||";
  case BinaryOp::BitAnd:
    return "&";
  case BinaryOp::BitOr:
    return "|";
  case BinaryOp::BitXor:
    return "^";
  case BinaryOp::Shl:
    return "<<";
  case BinaryOp::Shr:
    return ">>";
  default:
    return nullptr;
  }
}

class ExprPrinter {
public:
  explicit ExprPrinter(const EntryKernels &entry) : Entry(entry) {}

  std::string str(ExprId id) const {
    if (id == NoExpr)
      return "<none>";
    const Expr &e = Entry.expr(id);
    switch (e.kind) {
    case ExprKind::Const:
      if (isFloating(e.type))
        return e.type == DType::F32
                   ? floatText(e.fval)
                   : fmt::format("{}({})", toString(e.type).str(), floatText(e.fval));
      if (e.type == DType::Bool)
        return e.ival ? "true" : "false";
      return std::to_string(e.ival);
    case ExprKind::LoopVar:
      return fmt::format("i{}", e.index);
    case ExprKind::Dim:
      return symStr(e.sym);
    case ExprKind::Load:
      return fmt::format("b{}[{}]", e.index, str(e.operands[0]));
    case ExprKind::Unary:
      if (e.unary == UnaryOp::Neg)
        return fmt::format("-{}", str(e.operands[0]));
      if (e.unary == UnaryOp::Not)
        return fmt::format("!{}", str(e.operands[0]));
      if (e.unary == UnaryOp::BitNot)
        return fmt::format("~{}", str(e.operands[0]));
      return fmt::format("{}({})", toString(e.unary), str(e.operands[0]));
    case ExprKind::Binary:
      if (const char *op = infixOf(e.binary))
        return fmt::format("({} {} {})", str(e.operands[0]), op, str(e.operands[1]));
      return fmt::format("{}({}, {})", toString(e.binary), str(e.operands[0]), str(e.operands[1]));
    case ExprKind::Select:
      return fmt::format("select({}, {}, {})", str(e.operands[0]), str(e.operands[1]),
                         str(e.operands[2]));
    case ExprKind::Cast:
      return fmt::format("{}({})", toString(e.type).str(), str(e.operands[0]));
    case ExprKind::ReduceValue:
      return fmt::format("r{}", e.index);
    case ExprKind::Acc:
      return "acc";
    case ExprKind::CheckIndex:
      return fmt::format("check{}({}, {})", e.index, str(e.operands[0]), symStr(e.sym));
    }
    return "?";
  }

private:
  const EntryKernels &Entry;
};

llvm::StringRef kindName(Buffer::Kind k) {
  switch (k) {
  case Buffer::Kind::Input:
    return "input";
  case Buffer::Kind::Output:
    return "output";
  case Buffer::Kind::Weight:
    return "weight";
  case Buffer::Kind::State:
    return "state";
  case Buffer::Kind::Arena:
    return "arena";
  }
  return "?";
}

} // namespace

const WinogradMatrices &winogradMatrices(int tile) {
  static const double inputT2[] = {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1};
  static const double filter2[] = {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1};
  static const double outputT2[] = {1, 1, 1, 0, 0, 1, -1, -1};
  static const double inputT4[] = {4, 0,  -5, 0, 1, 0, 0, -4, -4, 1,  1, 0, 0, 4, -4, -1, 1, 0,
                                   0, -2, -1, 2, 1, 0, 0, 2,  -1, -2, 1, 0, 0, 4, 0,  -5, 0, 1};
  static const double filter4[] = {1.0 / 4,  0,         0,        -1.0 / 6, -1.0 / 6, -1.0 / 6,
                                   -1.0 / 6, 1.0 / 6,   -1.0 / 6, 1.0 / 24, 1.0 / 12, 1.0 / 6,
                                   1.0 / 24, -1.0 / 12, 1.0 / 6,  0,        0,        1};
  static const double outputT4[] = {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0,
                                    0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1};
  static const WinogradMatrices f2{2, 4, inputT2, filter2, outputT2};
  static const WinogradMatrices f4{4, 6, inputT4, filter4, outputT4};
  return tile == 4 ? f4 : f2;
}

void winogradFilter(int tile, const float g[9], float *u) {
  const WinogradMatrices &w = winogradMatrices(tile);
  int p = w.points;
  // t = G g (p x 3), then u = t G^T (p x p).
  double t[6][3];
  for (int r = 0; r < p; ++r)
    for (int c = 0; c < 3; ++c) {
      t[r][c] = 0;
      for (int k = 0; k < 3; ++k)
        t[r][c] += w.filter[r * 3 + k] * g[k * 3 + c];
    }
  for (int r = 0; r < p; ++r)
    for (int c = 0; c < p; ++c) {
      double v = 0;
      for (int k = 0; k < 3; ++k)
        v += t[r][k] * w.filter[c * 3 + k];
      u[r * p + c] = static_cast<float>(v);
    }
}

namespace {

/// G+ = (G^T G)^-1 G^T (3 x points) of F(t x t, 3x3), computed once per tile.
struct WinogradPseudoInverse {
  double m[3][6] = {};
  explicit WinogradPseudoInverse(int tile) {
    const WinogradMatrices &w = winogradMatrices(tile);
    double gtg[3][3] = {};
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c)
        for (int k = 0; k < w.points; ++k)
          gtg[r][c] += w.filter[k * 3 + r] * w.filter[k * 3 + c];
    double inv[3][3];
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) {
        // The cofactor of (c, r): the adjugate's (r, c).
        int r1 = (c + 1) % 3, r2 = (c + 2) % 3, c1 = (r + 1) % 3, c2 = (r + 2) % 3;
        inv[r][c] = gtg[r1][c1] * gtg[r2][c2] - gtg[r1][c2] * gtg[r2][c1];
      }
    double det = gtg[0][0] * inv[0][0] + gtg[0][1] * inv[1][0] + gtg[0][2] * inv[2][0];
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < w.points; ++c)
        for (int k = 0; k < 3; ++k)
          m[r][c] += inv[r][k] / det * w.filter[c * 3 + k];
  }
};

} // namespace

void winogradFilterInverse(int tile, const float *u, float g[9]) {
  static const WinogradPseudoInverse two(2), four(4);
  const double(*pinv)[6] = (tile == 2 ? two : four).m;
  int p = tile + 2;
  // g = G+ u G+^T.
  double t[3][6] = {};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < p; ++c)
      for (int k = 0; k < p; ++k)
        t[r][c] += pinv[r][k] * u[k * p + c];
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) {
      double v = 0;
      for (int k = 0; k < p; ++k)
        v += t[r][k] * pinv[c][k];
      g[r * 3 + c] = static_cast<float>(v);
    }
}

void unpackHeldWeight(const HeldWeight &held, const float *holder, float *out) {
  int taps = held.taps(), components = held.components();
  int64_t stride = held.componentStride();
  float u[36];
  for (int64_t r = 0; r < held.m; ++r)
    for (int64_t c = 0; c < held.k; ++c) {
      int64_t pos = held.position(r, c);
      float *to = out + (r * held.k + c) * taps;
      if (!held.winogradTile) {
        *to = holder[pos];
        continue;
      }
      for (int b = 0; b < components; ++b)
        u[b] = holder[b * stride + pos];
      winogradFilterInverse(held.winogradTile, u, to);
    }
}

namespace {

std::string operandText(const MatrixOperand &m) {
  if (const ConvWindow *w = m.conv ? &*m.conv : nullptr)
    return fmt::format("b{}[{} + batch*{} + channel*{} + h*{} + w*{}] im2col in {}x{} kernel {}x{} "
                       "stride {}x{} pad {}x{} dilation {}x{} out width {}",
                       m.buffer, symStr(m.offset), symStr(m.batchStride), symStr(w->channelStride),
                       symStr(w->heightStride), symStr(w->widthStride), symStr(w->height),
                       symStr(w->width), symStr(w->kernelH), symStr(w->kernelW), symStr(w->strideH),
                       symStr(w->strideW), symStr(w->padH), symStr(w->padW), symStr(w->dilH),
                       symStr(w->dilW), symStr(w->outWidth));
  if (m.pairPanelCols)
    return fmt::format("b{}[{} + bf16 k-pair panels of {} columns]", m.buffer, symStr(m.offset),
                       m.pairPanelCols);
  if (m.panelCols)
    return fmt::format("b{}[{} + panels of {} columns]", m.buffer, symStr(m.offset), m.panelCols);
  if (m.panelRows && m.batchStride == SymExpr(0))
    return fmt::format("b{}[{} + panels of {} rows]", m.buffer, symStr(m.offset), m.panelRows);
  if (m.panelRows)
    return fmt::format("b{}[{} + batch*{} + panels of {} rows]", m.buffer, symStr(m.offset),
                       symStr(m.batchStride), m.panelRows);
  if (m.winogradTile)
    return fmt::format("winograd F({0}x{0}, 3x3) of b{1}[{2} + row*{3} + col*{4}]", m.winogradTile,
                       m.buffer, symStr(m.offset), symStr(m.rowStride), symStr(m.colStride));
  return fmt::format("b{}[{} + batch*{} + row*{} + col*{}]", m.buffer, symStr(m.offset),
                     symStr(m.batchStride), symStr(m.rowStride), symStr(m.colStride));
}

std::string operandText(const AttentionOperand &o, llvm::StringRef head) {
  return fmt::format("b{}[{} + batch*{} + {}*{} + row*{} + col*{}]", o.buffer, symStr(o.offset),
                     symStr(o.batchStride), head.str(), symStr(o.headStride), symStr(o.rowStride),
                     symStr(o.colStride));
}

void printAttention(const AttentionCall &a, const std::string &indent, llvm::raw_ostream &os) {
  os << indent << "attention " << a.name << " " << toString(a.dtype);
  if (a.precision != Precision::FP32)
    os << " precision " << toString(a.precision);
  os << " batch " << a.batch.str() << " heads " << a.heads.str() << " group " << a.group.str()
     << " l " << a.l.str() << " s " << a.s.str() << " e " << a.e.str() << " ev " << a.ev.str()
     << (a.causal ? " causal" : "") << " scale " << floatText(a.scale) << "  # " << a.loc.str()
     << "\n";
  os << indent << "  q = " << operandText(a.q, "head") << "\n";
  os << indent << "  k = " << operandText(a.k, "kvhead") << "\n";
  os << indent << "  v = " << operandText(a.v, "kvhead") << "\n";
  if (a.mask)
    os << indent << "  mask = " << operandText(*a.mask, "head") << "\n";
  if (a.partials)
    os << indent << "  partials = b" << *a.partials << " splits " << a.splits.str() << "\n";
  os << indent << "  out = b" << a.out << (a.headsInRows ? " heads in rows" : "") << "\n";
}

void printSteps(const ExprPrinter &p, const std::vector<Step> &steps, const std::string &indent,
                llvm::raw_ostream &os) {
  for (const Step &step : steps) {
    if (const auto *k = std::get_if<LoopKernel>(&step)) {
      os << indent << "kernel " << k->name << " outer " << shapeStr(k->outer) << " parallel "
         << k->parallelLoops << (k->independent ? " independent" : "") << "  # " << k->loc.str()
         << "\n";
      for (size_t s = 0; s < k->stages.size(); ++s) {
        const Stage &st = k->stages[s];
        os << indent << "  ";
        if (st.kind == Stage::Kind::Reduce)
          os << "r" << s << " = reduce " << toString(st.reduce) << " " << toString(st.accType)
             << " over " << shapeStr(st.inner) << ": " << p.str(st.value) << "\n";
        else
          os << "store over " << shapeStr(st.inner) << ": b" << st.buffer << "[" << p.str(st.offset)
             << "] = " << p.str(st.value) << "\n";
      }
    } else if (const auto *g = std::get_if<GemmCall>(&step)) {
      os << indent << "gemm " << g->name << " " << toString(g->dtype);
      if (g->precision != Precision::FP32)
        os << " precision " << toString(g->precision);
      os << " batch " << g->batch.str() << " m " << g->m.str() << " n " << g->n.str() << " k "
         << g->k.str() << "  # " << g->loc.str() << "\n";
      os << indent << "  a = " << operandText(g->a) << "\n";
      os << indent << "  b = " << operandText(g->b) << "\n";
      os << indent << "  out = b" << g->out;
      if (g->epilogue != NoExpr)
        os << " epilogue " << p.str(g->epilogue);
      os << "\n";
    } else if (const auto *a = std::get_if<AttentionCall>(&step)) {
      printAttention(*a, indent, os);
    } else {
      const auto &c = std::get<CondStep>(step);
      os << indent << "cond b" << c.predicate << "  # " << c.loc.str() << "\n";
      os << indent << "then\n";
      printSteps(p, c.thenSteps, indent + "  ", os);
      os << indent << "else\n";
      printSteps(p, c.elseSteps, indent + "  ", os);
      os << indent << "end\n";
    }
  }
}

void printEntry(const EntryKernels &e, llvm::raw_ostream &os) {
  ExprPrinter p(e);
  os << "entry @" << e.name << "(";
  for (size_t i = 0; i < e.symbols.size(); ++i)
    os << (i ? ", " : "") << e.symbols[i];
  os << ") {\n";
  for (size_t i = 0; i < e.inputs.size(); ++i)
    os << "  input " << i << " \"" << e.inputs[i].name << "\" : " << toString(e.inputs[i].dtype)
       << shapeStr(e.inputs[i].shape) << "\n";
  for (size_t i = 0; i < e.outputs.size(); ++i)
    os << "  output " << i << " \"" << e.outputs[i].name << "\" : " << toString(e.outputs[i].dtype)
       << shapeStr(e.outputs[i].shape) << "\n";
  for (const Guard &g : e.guards)
    os << "  guard " << g.str() << "\n";
  for (size_t i = 0; i < e.buffers.size(); ++i) {
    const Buffer &b = e.buffers[i];
    os << "  buffer b" << i << " = " << kindName(b.kind);
    if (b.kind != Buffer::Kind::Arena)
      os << " " << b.index;
    os << " \"" << b.name << "\" : " << toString(b.dtype) << " x " << b.numel.str();
    if (b.kind == Buffer::Kind::Arena)
      os << " at " << b.arenaOffset.str();
    if (!(b.viewOffset == SymExpr(0)))
      os << " from element " << b.viewOffset.str();
    os << "\n";
  }
  os << "  arena " << e.arenaBytes.str() << " bytes\n";
  for (size_t i = 0; i < e.indexChecks.size(); ++i)
    os << "  check" << i + 1 << " " << e.indexChecks[i] << "\n";
  printSteps(p, e.steps, "  ", os);
  os << "}\n";
}

} // namespace

std::optional<LinearDim> linearDim(const SymExpr &dim) {
  llvm::ArrayRef<SymTerm> terms = dim.node().terms();
  if (terms.size() != 1 || terms[0].coeff < 1 || terms[0].factors.size() != 1 ||
      terms[0].factors[0].kind != SymAtom::Kind::Symbol)
    return std::nullopt;
  return LinearDim{terms[0].factors[0].name, terms[0].coeff, dim.node().constant()};
}

void elideHeldWeights(Program &blob, llvm::ArrayRef<const Program *> readers) {
  llvm::BitVector read(blob.weights.size());
  for (const Program *p : readers)
    for (const EntryKernels &e : p->entries)
      for (const Step &step : e.steps)
        for (uint32_t i : buffersOfStep(e, step)) {
          const Buffer &b = e.buffers[i];
          if (b.kind == Buffer::Kind::Weight || b.kind == Buffer::Kind::State)
            read.set(b.index);
        }
  for (size_t i = 0; i < blob.weights.size(); ++i) {
    Weight &w = blob.weights[i];
    w.stored =
        !w.derived && (read.test(i) || !w.heldBy || w.mutableBuffer || heldByDerived(blob, w));
  }
}

void layoutWeights(Program &program) {
  uint64_t offset = 0;
  // Immutable weights first, then the mutable buffers, so that the state is one range.
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1)
      program.stateOffset = offset;
    for (Weight &w : program.weights) {
      if (w.mutableBuffer != (pass == 1))
        continue;
      if (!w.stored) {
        if (!w.derived)
          w.offset = w.nbytes = 0;
        continue;
      }
      w.nbytes = w.numel() * byteSize(w.dtype);
      w.offset = offset;
      offset = alignTo64(offset + w.nbytes);
    }
  }
  program.stateBytes = offset - program.stateOffset;
  program.weightBytes = offset;
  uint64_t derived = 0;
  for (Weight &w : program.weights)
    if (w.derived) {
      w.nbytes = w.numel() * byteSize(w.dtype);
      w.offset = derived;
      derived = alignTo64(derived + w.nbytes);
    }
  program.derivedBytes = derived;
}

void print(const Program &program, llvm::raw_ostream &os) {
  os << "program @" << program.name << " weights " << program.weightBytes << " bytes, state at "
     << program.stateOffset << " (" << program.stateBytes << " bytes)";
  if (program.derivedBytes)
    os << ", derived " << program.derivedBytes << " bytes";
  os << "\n";
  for (size_t i = 0; i < program.weights.size(); ++i) {
    const Weight &w = program.weights[i];
    os << "weight " << i << " \"" << w.name << "\" : " << toString(w.dtype) << "[";
    for (size_t d = 0; d < w.shape.size(); ++d)
      os << (d ? ", " : "") << w.shape[d];
    os << "]" << (w.mutableBuffer ? " mutable" : "");
    if (w.derived) {
      os << " derived at load, at " << w.offset << " (" << w.nbytes << " bytes)\n";
      continue;
    }
    if (w.stored && !heldByDerived(program, w)) {
      os << " at " << w.offset << " (" << w.nbytes << " bytes)\n";
      continue;
    }
    const HeldWeight &h = *w.heldBy;
    if (w.stored)
      os << " at " << w.offset << " (" << w.nbytes << " bytes), also in weight " << h.holder;
    else
      os << " only in weight " << h.holder;
    if (h.winogradTile)
      os << fmt::format(" as winograd F({0}x{0}, 3x3)", h.winogradTile);
    if (h.pairPanelCols)
      os << fmt::format(" as k-pair panels of {} columns{}", h.pairPanelCols,
                        h.transposed ? ", transposed" : "");
    else
      os << (h.panelRows ? fmt::format(" in panels of {} rows{}", h.panelRows,
                                       h.transposed ? " of its transpose" : "")
                         : " dense");
    DType holder = program.weights[h.holder].dtype;
    os << (holder == DType::BF16  ? ", rounded to bf16"
           : holder == DType::F16 ? ", rounded to fp16"
                                  : "")
       << "\n";
  }
  for (const EntryKernels &e : program.entries) {
    os << "\n";
    printEntry(e, os);
  }
}

std::string toString(UnaryOp op) {
  static const char *const Names[] = {"neg",     "abs",   "exp",  "log",   "log1p", "sqrt",
                                      "rsqrt",   "recip", "sin",  "cos",   "tanh",  "erf",
                                      "sigmoid", "floor", "ceil", "round", "not",   "bitnot"};
  return Names[static_cast<unsigned>(op)];
}

std::string toString(BinaryOp op) {
  static const char *const Names[] = {
      "add", "sub", "mul", "div", "floordiv", "mod", "pow",    "min",   "max",    "eq",  "ne",
      "lt",  "le",  "gt",  "ge",  "and",      "or",  "bitand", "bitor", "bitxor", "shl", "shr"};
  return Names[static_cast<unsigned>(op)];
}

std::string toString(ReduceOp op) {
  static const char *const Names[] = {"sum", "prod", "max", "min", "argmax", "argmin"};
  return Names[static_cast<unsigned>(op)];
}

} // namespace aotc::kir
