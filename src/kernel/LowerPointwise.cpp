// Lowering of pointwise ops (math, comparisons, logic, where, casts) and creation ops to point
// functions: they never make a kernel of their own, their consumers inline them.
#include "kernel/LowerImpl.h"

#include <cmath>

namespace aotc::kir::lower {

namespace {

using Combine = std::function<ExprId(Lowerer &, llvm::ArrayRef<ExprId>)>;

std::string shortName(const Node &n) {
  llvm::StringRef name = n.name();
  name.consume_front("aten.");
  name = name.split('.').first;
  name.consume_front("_");
  return name.str();
}

/// A pointwise value of node `n`: each input read broadcast and converted to its arg type, then
/// combined by `f` and converted to the result's compute type.
LValue *elementwise(Lowerer &L, const Node &n, std::vector<LValue *> ins,
                    std::vector<DType> argTypes, Combine f) {
  DType out = n.result()->type().dtype();
  return L.pointwise(out, L.shapeOf(n.result()), ins, shortName(n),
                     [&L, ins, argTypes, f, out](Scope &s, llvm::ArrayRef<ExprId> idx) {
                       llvm::SmallVector<ExprId, 3> args;
                       for (size_t i = 0; i < ins.size(); ++i)
                         args.push_back(L.readBroadcast(ins[i], s, idx, argTypes[i]));
                       // A half result is rounded at each op, as eager PyTorch does.
                       return L.cast(computeType(out), L.cast(out, f(L, args)));
                     });
}

/// The scalar attribute `name` as a constant (or a Dim for a symbolic int) of type `t`.
ExprId scalarAttr(Lowerer &L, const Node &n, llvm::StringRef name, DType t, double dflt = 0) {
  const Attribute *a = n.attr(name);
  if (!a)
    return L.cNum(dflt, t);
  switch (a->kind()) {
  case Attribute::Kind::Float:
    return L.cNum(a->getFloat(), t);
  case Attribute::Kind::Bool:
    return L.cNum(a->getBool() ? 1 : 0, t);
  case Attribute::Kind::Int: {
    SymExpr v = L.expand(a->getInt());
    if (auto c = v.constant())
      return isFloating(t) ? L.cNum(static_cast<double>(*c), t) : L.cInt(*c, t);
    return L.cast(t, L.dim(v));
  }
  default:
    return L.cNum(dflt, t);
  }
}

bool attrIsOne(const Node &n, llvm::StringRef name) {
  const Attribute *a = n.attr(name);
  if (!a)
    return true;
  if (a->kind() == Attribute::Kind::Int)
    return a->getInt() == SymExpr(1);
  if (a->kind() == Attribute::Kind::Float)
    return a->getFloat() == 1.0;
  return false;
}

bool attrIsFloat(const Node &n, llvm::StringRef name) {
  const Attribute *a = n.attr(name);
  return a && a->kind() == Attribute::Kind::Float;
}

ExprId truncFloat(Lowerer &L, ExprId q) {
  return L.select(L.binary(BinaryOp::Lt, q, L.cNum(0, L.typeOf(q))), L.unary(UnaryOp::Ceil, q),
                  L.unary(UnaryOp::Floor, q));
}

} // namespace

llvm::Error Lowerer::lowerPointwise(const Node &n) {
  DType out = n.result()->type().dtype();
  DType ct = computeType(out);
  std::vector<LValue *> ins;
  for (const Value *v : n.operands())
    ins.push_back(get(v));
  auto un = [&](UnaryOp op) {
    return elementwise(*this, n, ins, {ct},
                       [op](Lowerer &L, llvm::ArrayRef<ExprId> a) { return L.unary(op, a[0]); });
  };
  auto bin = [&](BinaryOp op, DType argType) {
    return elementwise(
        *this, n, ins, {argType, argType},
        [op](Lowerer &L, llvm::ArrayRef<ExprId> a) { return L.binary(op, a[0], a[1]); });
  };
  // Binary op of the tensor and the scalar attribute `other`.
  auto binScalar = [&](BinaryOp op, DType argType, bool reversed = false) {
    const Node *node = &n;
    return elementwise(*this, n, ins, {argType},
                       [op, argType, node, reversed](Lowerer &L, llvm::ArrayRef<ExprId> a) {
                         ExprId other = scalarAttr(L, *node, "other", argType);
                         return reversed ? L.binary(op, other, a[0]) : L.binary(op, a[0], other);
                       });
  };
  DType cmpType = ct;
  if (ins.size() == 2 && ins[0] && ins[1])
    cmpType = computeType(promoteTypes(ins[0]->dtype, ins[1]->dtype));
  else if (!ins.empty() && ins[0]) {
    cmpType = computeType(ins[0]->dtype);
    if (!isFloating(cmpType) && attrIsFloat(n, "other"))
      cmpType = DType::F64;
  }
  LValue *r = nullptr;
  const Node *node = &n;
  switch (n.kind()) {
  case OpKind::Abs:
    r = un(UnaryOp::Abs);
    break;
  case OpKind::Neg:
    r = un(UnaryOp::Neg);
    break;
  case OpKind::Exp:
    r = un(UnaryOp::Exp);
    break;
  case OpKind::Log:
    r = un(UnaryOp::Log);
    break;
  case OpKind::Log1p:
    r = un(UnaryOp::Log1p);
    break;
  case OpKind::Sqrt:
    r = un(UnaryOp::Sqrt);
    break;
  case OpKind::Rsqrt:
    r = un(UnaryOp::Rsqrt);
    break;
  case OpKind::Reciprocal:
    r = un(UnaryOp::Reciprocal);
    break;
  case OpKind::Sin:
    r = un(UnaryOp::Sin);
    break;
  case OpKind::Cos:
    r = un(UnaryOp::Cos);
    break;
  case OpKind::Tanh:
    r = un(UnaryOp::Tanh);
    break;
  case OpKind::Erf:
    r = un(UnaryOp::Erf);
    break;
  case OpKind::Sigmoid:
    r = un(UnaryOp::Sigmoid);
    break;
  case OpKind::Floor:
  case OpKind::Ceil:
  case OpKind::Round:
    if (!isFloating(out))
      r = elementwise(*this, n, ins, {ct},
                      [](Lowerer &, llvm::ArrayRef<ExprId> a) { return a[0]; });
    else
      r = un(n.kind() == OpKind::Floor  ? UnaryOp::Floor
             : n.kind() == OpKind::Ceil ? UnaryOp::Ceil
                                        : UnaryOp::Round);
    break;
  case OpKind::Relu:
    r = elementwise(*this, n, ins, {ct}, [ct](Lowerer &L, llvm::ArrayRef<ExprId> a) {
      return L.binary(BinaryOp::Max, a[0], L.cNum(0, ct));
    });
    break;
  case OpKind::Gelu: {
    const Attribute *ap = n.attr("approximate");
    bool tanhForm = ap && ap->getStr() == "tanh";
    r = elementwise(*this, n, ins, {ct}, [ct, tanhForm](Lowerer &L, llvm::ArrayRef<ExprId> a) {
      ExprId x = a[0];
      ExprId half = L.binary(BinaryOp::Mul, x, L.cNum(0.5, ct));
      ExprId inner;
      if (tanhForm) {
        ExprId x3 = L.binary(BinaryOp::Mul, L.binary(BinaryOp::Mul, x, x), x);
        ExprId s = L.binary(BinaryOp::Add, x, L.binary(BinaryOp::Mul, x3, L.cNum(0.044715, ct)));
        inner = L.unary(UnaryOp::Tanh, L.binary(BinaryOp::Mul, s, L.cNum(0.7978845608028654, ct)));
      } else {
        inner = L.unary(UnaryOp::Erf, L.binary(BinaryOp::Mul, x, L.cNum(0.7071067811865476, ct)));
      }
      return L.binary(BinaryOp::Mul, half, L.binary(BinaryOp::Add, inner, L.cNum(1, ct)));
    });
    break;
  }
  case OpKind::Silu:
    r = elementwise(*this, n, ins, {ct}, [](Lowerer &L, llvm::ArrayRef<ExprId> a) {
      return L.binary(BinaryOp::Mul, a[0], L.unary(UnaryOp::Sigmoid, a[0]));
    });
    break;
  case OpKind::Clamp:
    r = elementwise(*this, n, ins, {ct}, [ct, node](Lowerer &L, llvm::ArrayRef<ExprId> a) {
      ExprId x = a[0];
      if (node->attr("min"))
        x = L.binary(BinaryOp::Max, x, scalarAttr(L, *node, "min", ct));
      if (node->attr("max"))
        x = L.binary(BinaryOp::Min, x, scalarAttr(L, *node, "max", ct));
      return x;
    });
    break;
  case OpKind::PowScalar:
    r = elementwise(*this, n, ins, {ct}, [ct, node](Lowerer &L, llvm::ArrayRef<ExprId> a) {
      return L.binary(BinaryOp::Pow, a[0], scalarAttr(L, *node, "exponent", ct));
    });
    break;
  case OpKind::LogicalNot:
    r = elementwise(*this, n, ins, {DType::Bool}, [](Lowerer &L, llvm::ArrayRef<ExprId> a) {
      return L.unary(UnaryOp::Not, a[0]);
    });
    break;
  case OpKind::ToCopy:
    r = elementwise(*this, n, ins, {computeType(ins[0]->dtype)},
                    [out](Lowerer &L, llvm::ArrayRef<ExprId> a) {
                      // Rounding to a half type is part of the value; compute on in f32.
                      return L.cast(computeType(out), L.cast(out, a[0]));
                    });
    break;
  case OpKind::AddTensor:
  case OpKind::SubTensor: {
    BinaryOp op = n.kind() == OpKind::AddTensor ? BinaryOp::Add : BinaryOp::Sub;
    bool one = attrIsOne(n, "alpha");
    r = elementwise(
        *this, n, ins, {ct, ct}, [op, one, ct, node](Lowerer &L, llvm::ArrayRef<ExprId> a) {
          ExprId b =
              one ? a[1] : L.binary(BinaryOp::Mul, a[1], scalarAttr(L, *node, "alpha", ct, 1));
          return L.binary(op, a[0], b);
        });
    break;
  }
  case OpKind::MulTensor:
    r = bin(BinaryOp::Mul, ct);
    break;
  case OpKind::DivTensor:
    r = bin(BinaryOp::Div, ct);
    break;
  case OpKind::DivTensorMode: {
    const Attribute *m = n.attr("rounding_mode");
    std::string mode = m ? m->getStr() : "";
    r = elementwise(*this, n, ins, {ct, ct}, [mode, ct](Lowerer &L, llvm::ArrayRef<ExprId> a) {
      if (isFloating(ct)) {
        ExprId q = L.binary(BinaryOp::Div, a[0], a[1]);
        if (mode == "floor")
          return L.unary(UnaryOp::Floor, q);
        return mode == "trunc" ? truncFloat(L, q) : q;
      }
      return L.binary(mode == "floor" ? BinaryOp::FloorDiv : BinaryOp::Div, a[0], a[1]);
    });
    break;
  }
  case OpKind::Remainder:
    r = bin(BinaryOp::Mod, ct);
    break;
  case OpKind::PowTensor:
    r = bin(BinaryOp::Pow, ct);
    break;
  case OpKind::Maximum:
    r = bin(BinaryOp::Max, ct);
    break;
  case OpKind::Minimum:
    r = bin(BinaryOp::Min, ct);
    break;
  case OpKind::AddScalar:
  case OpKind::SubScalar:
  case OpKind::RsubScalar: {
    OpKind k = n.kind();
    r = elementwise(*this, n, ins, {ct}, [k, ct, node](Lowerer &L, llvm::ArrayRef<ExprId> a) {
      ExprId other = scalarAttr(L, *node, "other", ct);
      ExprId alpha = attrIsOne(*node, "alpha") ? NoExpr : scalarAttr(L, *node, "alpha", ct, 1);
      if (k == OpKind::RsubScalar) {
        ExprId x = alpha == NoExpr ? a[0] : L.binary(BinaryOp::Mul, a[0], alpha);
        return L.binary(BinaryOp::Sub, other, x);
      }
      ExprId y = alpha == NoExpr ? other : L.binary(BinaryOp::Mul, other, alpha);
      return L.binary(k == OpKind::AddScalar ? BinaryOp::Add : BinaryOp::Sub, a[0], y);
    });
    break;
  }
  case OpKind::MulScalar:
    r = binScalar(BinaryOp::Mul, ct);
    break;
  case OpKind::DivScalar:
    r = binScalar(BinaryOp::Div, ct);
    break;
  case OpKind::EqTensor:
    r = bin(BinaryOp::Eq, cmpType);
    break;
  case OpKind::NeTensor:
    r = bin(BinaryOp::Ne, cmpType);
    break;
  case OpKind::LtTensor:
    r = bin(BinaryOp::Lt, cmpType);
    break;
  case OpKind::LeTensor:
    r = bin(BinaryOp::Le, cmpType);
    break;
  case OpKind::GtTensor:
    r = bin(BinaryOp::Gt, cmpType);
    break;
  case OpKind::GeTensor:
    r = bin(BinaryOp::Ge, cmpType);
    break;
  case OpKind::EqScalar:
    r = binScalar(BinaryOp::Eq, cmpType);
    break;
  case OpKind::NeScalar:
    r = binScalar(BinaryOp::Ne, cmpType);
    break;
  case OpKind::LtScalar:
    r = binScalar(BinaryOp::Lt, cmpType);
    break;
  case OpKind::LeScalar:
    r = binScalar(BinaryOp::Le, cmpType);
    break;
  case OpKind::GtScalar:
    r = binScalar(BinaryOp::Gt, cmpType);
    break;
  case OpKind::GeScalar:
    r = binScalar(BinaryOp::Ge, cmpType);
    break;
  case OpKind::LogicalAnd:
    r = bin(BinaryOp::And, DType::Bool);
    break;
  case OpKind::LogicalOr:
    r = bin(BinaryOp::Or, DType::Bool);
    break;
  case OpKind::BitwiseAndTensor:
    r = bin(BinaryOp::BitAnd, ct);
    break;
  case OpKind::BitwiseOrTensor:
    r = bin(BinaryOp::BitOr, ct);
    break;
  case OpKind::BitwiseXorTensor:
    r = bin(BinaryOp::BitXor, ct);
    break;
  case OpKind::BitwiseLeftShiftTensor:
    r = bin(BinaryOp::Shl, ct);
    break;
  case OpKind::BitwiseRightShiftTensor:
    r = bin(BinaryOp::Shr, ct);
    break;
  case OpKind::BitwiseAndScalar:
    r = binScalar(BinaryOp::BitAnd, ct);
    break;
  case OpKind::BitwiseOrScalar:
    r = binScalar(BinaryOp::BitOr, ct);
    break;
  case OpKind::BitwiseXorScalar:
    r = binScalar(BinaryOp::BitXor, ct);
    break;
  case OpKind::BitwiseLeftShiftScalar:
    r = binScalar(BinaryOp::Shl, ct);
    break;
  case OpKind::BitwiseRightShiftScalar:
    r = binScalar(BinaryOp::Shr, ct);
    break;
  case OpKind::BitwiseNot:
    r = un(UnaryOp::BitNot);
    break;
  case OpKind::Where:
    r = elementwise(
        *this, n, ins, {DType::Bool, ct, ct},
        [this](Lowerer &, llvm::ArrayRef<ExprId> a) { return select(a[0], a[1], a[2]); });
    break;
  case OpKind::Addcmul:
    r = elementwise(*this, n, ins, {ct, ct, ct}, [ct, node](Lowerer &L, llvm::ArrayRef<ExprId> a) {
      ExprId prod = L.binary(BinaryOp::Mul, a[1], a[2]);
      if (!attrIsOne(*node, "value"))
        prod = L.binary(BinaryOp::Mul, scalarAttr(L, *node, "value", ct, 1), prod);
      return L.binary(BinaryOp::Add, a[0], prod);
    });
    break;
  case OpKind::Lerp:
    r = elementwise(*this, n, ins, {ct, ct, ct}, [ct](Lowerer &L, llvm::ArrayRef<ExprId> a) {
      // torch's two-sided form keeps lerp exact at both ends.
      ExprId diff = L.binary(BinaryOp::Sub, a[1], a[0]);
      ExprId lo = L.binary(BinaryOp::Add, a[0], L.binary(BinaryOp::Mul, a[2], diff));
      ExprId hi =
          L.binary(BinaryOp::Sub, a[1],
                   L.binary(BinaryOp::Mul, diff, L.binary(BinaryOp::Sub, L.cNum(1, ct), a[2])));
      ExprId small = L.binary(BinaryOp::Lt, L.unary(UnaryOp::Abs, a[2]), L.cNum(0.5, ct));
      return L.select(small, lo, hi);
    });
    break;
  default:
    return unsupported(n);
  }
  set(n.result(), r);
  return llvm::Error::success();
}

llvm::Error Lowerer::lowerCreation(const Node &n) {
  const Node *node = &n;
  if (n.kind() == OpKind::SymSize) {
    LValue *src = get(n.operand(0));
    int64_t d = normDim(intAttr(n, "dim").constant().value_or(0), src->shape.size());
    SymExpr size = src->shape[d];
    set(n.result(), pointwise(DType::I64, {}, {}, "sym_size",
                              [this, size](Scope &, llvm::ArrayRef<ExprId>) { return dim(size); }));
    return llvm::Error::success();
  }
  if (!n.result()->type().isTensor())
    return unsupported(n);
  DType out = n.result()->type().dtype();
  DType ct = computeType(out);
  Shape shape = shapeOf(n.result());
  PointFn fn;
  switch (n.kind()) {
  case OpKind::Zeros:
  case OpKind::Ones: {
    double v = n.kind() == OpKind::Ones ? 1 : 0;
    fn = [this, v, ct](Scope &, llvm::ArrayRef<ExprId>) { return cNum(v, ct); };
    break;
  }
  case OpKind::Full:
    fn = [this, ct, node](Scope &, llvm::ArrayRef<ExprId>) {
      return scalarAttr(*this, *node, "fill_value", ct);
    };
    break;
  case OpKind::Arange:
    fn = [this, out, ct, node](Scope &, llvm::ArrayRef<ExprId> idx) {
      if (!isFloating(out)) {
        ExprId v = iadd(scalarAttr(*this, *node, "start", DType::I64),
                        imul(idx[0], scalarAttr(*this, *node, "step", DType::I64, 1)));
        return cast(ct, v);
      }
      ExprId i = cast(DType::F64, idx[0]);
      ExprId v = binary(BinaryOp::Add, scalarAttr(*this, *node, "start", DType::F64),
                        binary(BinaryOp::Mul, i, scalarAttr(*this, *node, "step", DType::F64, 1)));
      return cast(ct, v);
    };
    break;
  default:
    return unsupported(n);
  }
  set(n.result(), pointwise(out, shape, {}, shortName(n), fn));
  return llvm::Error::success();
}

} // namespace aotc::kir::lower
