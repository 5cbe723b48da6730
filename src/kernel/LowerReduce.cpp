// Lowering of reductions (sum, mean, amax, amin, prod, argmax) and softmax to staged values: a
// Reduce stage in the consumer's kernel when the consumer iterates the reduction's rows, else a
// kernel of their own.
#include "kernel/LowerImpl.h"

#include <algorithm>
#include <limits>

namespace aotc::kir::lower {

LValue *Lowerer::reduce(LValue *in, ReduceOp op, llvm::ArrayRef<int64_t> dimsIn, bool keepdim,
                        DType outType, bool mean, std::string opName) {
  size_t rank = in->shape.size();
  std::vector<int64_t> dims(dimsIn.begin(), dimsIn.end());
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  auto reduced = [&](size_t d) { return std::binary_search(dims.begin(), dims.end(), int64_t(d)); };
  Shape outShape;
  StagedSpec spec;
  spec.op = op;
  for (size_t d = 0; d < rank; ++d) {
    if (reduced(d)) {
      spec.inner.push_back(in->shape[d]);
      if (keepdim) {
        outShape.push_back(1);
        spec.kept.push_back(false);
      }
    } else {
      outShape.push_back(in->shape[d]);
      spec.kept.push_back(true);
    }
  }
  bool arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  bool extreme = op == ReduceOp::Max || op == ReduceOp::Min || arg;
  if (extreme)
    spec.accType = computeType(in->dtype);
  else
    spec.accType = isFloating(outType) ? computeType(outType) : DType::I64;
  // The value being combined: the input converted as the op's dtype says (sum(x, dtype=f64)).
  DType valueType = extreme ? computeType(in->dtype) : computeType(outType);
  DType accType = spec.accType;
  std::vector<bool> isReduced(rank);
  for (size_t d = 0; d < rank; ++d)
    isReduced[d] = reduced(d);
  spec.body = [this, in, isReduced, keepdim, valueType,
               accType](Scope &s, llvm::ArrayRef<ExprId> out, llvm::ArrayRef<ExprId> inner) {
    IndexList idx;
    size_t j = 0, o = 0;
    for (size_t d = 0; d < isReduced.size(); ++d) {
      if (isReduced[d]) {
        idx.push_back(inner[j++]);
        if (keepdim)
          ++o;
      } else {
        idx.push_back(out[o++]);
      }
    }
    return cast(accType, cast(valueType, read(in, s, idx)));
  };
  if (mean) {
    SymExpr count = numelOf(spec.inner);
    spec.finish = [this, count, accType](Scope &, llvm::ArrayRef<ExprId>, ExprId r) {
      return binary(BinaryOp::Div, r, cast(accType, dim(count)));
    };
  }
  LValue *v =
      staged(arg ? DType::I64 : outType, outShape, {in}, std::move(opName), std::move(spec));
  bool trailing = !dims.empty();
  for (size_t k = 0; k < dims.size(); ++k)
    trailing &= dims[k] == static_cast<int64_t>(rank - dims.size() + k);
  if (trailing) {
    v->rowKept = static_cast<int>(rank - dims.size());
    v->rowRank = rank;
  }
  return v;
}

LValue *softmaxOf(Lowerer &L, LValue *x, int64_t dim, DType out, bool log, bool safe) {
  DType ct = computeType(out);
  LValue *xc = x;
  if (computeType(x->dtype) != ct || x->dtype != out)
    xc = L.pointwise(out, x->shape, {x}, "to_copy",
                     [&L, x, ct, out](Scope &s, llvm::ArrayRef<ExprId> idx) {
                       return L.cast(ct, L.cast(out, L.read(x, s, idx)));
                     });
  LValue *m = L.reduce(xc, ReduceOp::Max, {dim}, true, out, false, "amax");
  m->uses = safe ? 2 : 1;
  LValue *shifted = L.pointwise(
      out, x->shape, {xc, m}, "sub", [&L, xc, m, ct](Scope &s, llvm::ArrayRef<ExprId> idx) {
        return L.binary(BinaryOp::Sub, L.read(xc, s, idx), L.readBroadcast(m, s, idx, ct));
      });
  shifted->uses = 2;
  LValue *e = L.pointwise(out, x->shape, {shifted}, "exp",
                          [&L, shifted](Scope &s, llvm::ArrayRef<ExprId> idx) {
                            return L.unary(UnaryOp::Exp, L.read(shifted, s, idx));
                          });
  e->uses = log ? 1 : 2;
  LValue *sum = L.reduce(e, ReduceOp::Sum, {dim}, true, out, false, "sum");
  sum->uses = 1;
  std::vector<LValue *> deps = {e, shifted, sum};
  if (safe)
    deps.push_back(m);
  LValue *r =
      L.pointwise(out, x->shape, deps, log ? "log_softmax" : "softmax",
                  [&L, e, shifted, sum, m, ct, log, safe](Scope &s, llvm::ArrayRef<ExprId> idx) {
                    ExprId total = L.readBroadcast(sum, s, idx, ct);
                    ExprId y = log ? L.binary(BinaryOp::Sub, L.read(shifted, s, idx),
                                              L.unary(UnaryOp::Log, total))
                                   : L.binary(BinaryOp::Div, L.read(e, s, idx), total);
                    if (!safe)
                      return y;
                    ExprId ninf = L.cNum(-std::numeric_limits<double>::infinity(), ct);
                    ExprId hidden = L.binary(BinaryOp::Eq, L.readBroadcast(m, s, idx, ct), ninf);
                    return L.select(hidden, L.cNum(0, ct), y);
                  });
  return r;
}

/// cumsum / cumprod along `dim`: element i reduces the elements 0..n-1 of its row with those
/// past i replaced by the identity, so a scan is a Reduce stage like any other. That is n^2 work
/// per row instead of n: fine for the sequence lengths scans meet (positions, masks), and it
/// fuses with what follows.
static LValue *scanOf(Lowerer &L, LValue *in, int64_t dim, DType out, bool product) {
  StagedSpec spec;
  spec.op = product ? ReduceOp::Prod : ReduceOp::Sum;
  spec.accType = isFloating(out) ? computeType(out) : DType::I64;
  spec.inner = {in->shape[dim]};
  spec.kept.assign(in->shape.size(), true);
  DType acc = spec.accType, valueType = computeType(out);
  spec.body = [&L, in, dim, acc, valueType, product](Scope &s, llvm::ArrayRef<ExprId> idx,
                                                     llvm::ArrayRef<ExprId> inner) {
    IndexList at(idx.begin(), idx.end());
    at[dim] = inner[0];
    ExprId x = L.cast(acc, L.cast(valueType, L.read(in, s, at)));
    ExprId inside = L.binary(BinaryOp::Le, inner[0], idx[dim]);
    return L.select(inside, x, L.cNum(product ? 1 : 0, acc));
  };
  return L.staged(out, in->shape, {in}, product ? "cumprod" : "cumsum", std::move(spec));
}

llvm::Error Lowerer::lowerReduction(const Node &n) {
  LValue *in = get(n.operand(0));
  size_t rank = in->shape.size();
  DType out = n.result()->type().dtype();
  bool keepdim = intAttr(n, "keepdim").constant().value_or(0) != 0;
  std::vector<int64_t> dims;
  auto addDims = [&](llvm::StringRef name) -> llvm::Error {
    const Attribute *a = n.attr(name);
    if (!a) {
      for (size_t d = 0; d < rank; ++d)
        dims.push_back(d);
      return llvm::Error::success();
    }
    for (const SymExpr &e : intListAttr(n, name)) {
      auto c = e.constant();
      if (!c)
        return unsupported(n, n.name().str() + " over a symbolic dim");
      dims.push_back(normDim(*c, rank));
    }
    // `dim=[]` reduces everything, as torch's sum does.
    if (dims.empty())
      for (size_t d = 0; d < rank; ++d)
        dims.push_back(d);
    return llvm::Error::success();
  };
  std::string name = n.name().str();
  LValue *r = nullptr;
  switch (n.kind()) {
  case OpKind::Sum:
  case OpKind::Mean:
  case OpKind::Amax:
  case OpKind::Amin:
  case OpKind::Prod: {
    if (llvm::Error err = addDims("dim"))
      return err;
    ReduceOp op = n.kind() == OpKind::Amax   ? ReduceOp::Max
                  : n.kind() == OpKind::Amin ? ReduceOp::Min
                  : n.kind() == OpKind::Prod ? ReduceOp::Prod
                                             : ReduceOp::Sum;
    static const char *const Names[] = {"sum", "mean", "amax", "amin", "prod"};
    const char *opName =
        Names[static_cast<unsigned>(n.kind()) - static_cast<unsigned>(OpKind::Sum)];
    r = reduce(in, op, dims, keepdim, out, n.kind() == OpKind::Mean, opName);
    break;
  }
  case OpKind::Argmax: {
    if (n.attr("dim")) {
      if (llvm::Error err = addDims("dim"))
        return err;
    } else {
      for (size_t d = 0; d < rank; ++d)
        dims.push_back(d);
    }
    r = reduce(in, ReduceOp::ArgMax, dims, keepdim, DType::I64, false, "argmax");
    break;
  }
  case OpKind::Cumsum:
  case OpKind::Cumprod: {
    if (rank == 0)
      return unsupported(n, "a scan of a 0-d tensor");
    int64_t d = normDim(intAttr(n, "dim").constant().value_or(0), rank);
    r = scanOf(*this, in, d, out, n.kind() == OpKind::Cumprod);
    break;
  }
  case OpKind::Softmax:
  case OpKind::LogSoftmax: {
    int64_t d = normDim(intAttr(n, "dim").constant().value_or(-1), rank);
    r = softmaxOf(*this, in, d, out, n.kind() == OpKind::LogSoftmax);
    break;
  }
  default:
    return unsupported(n);
  }
  if (!(r->shape == shapeOf(n.result())))
    return unsupported(n, name + " with this shape");
  set(n.result(), r);
  return llvm::Error::success();
}

} // namespace aotc::kir::lower
