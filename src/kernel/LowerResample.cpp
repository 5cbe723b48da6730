// Lowering of the resampling ops. pad is a view (reflect, replicate) or a select of the element
// and the fill value by position (constant); nearest interpolation is a view whose indices are
// computed in f32 as torch computes them, linear and cubic interpolation a weighed sum of 2 or 4
// taps per resampled dim read from the realized input.
#include "kernel/LowerImpl.h"

#include "aotc/ir/Resample.h"

namespace aotc::kir::lower {

namespace {

/// The input positions of one output position of a resampled dim, and their weights (NoExpr:
/// weight 1).
struct TapExprs {
  llvm::SmallVector<ExprId, 4> at;
  llvm::SmallVector<ExprId, 4> w;
};

} // namespace

llvm::Error Lowerer::lowerResample(const Node &n) {
  LValue *src = get(n.operand(0));
  Shape shape = shapeOf(n.result());
  size_t rank = shape.size();
  // As lowerShape does for views: a GEMM waiting for its epilogue, or a value built on row
  // reductions read at other positions, is realized first and read from its buffer.
  if (Options.fuse && !src->layout &&
      (src->kind == LKind::Gemm || (rowSplit(src) < rank && !(shape == src->shape))))
    if (auto l = realize(src); !l)
      return l.takeError();
  DType out = n.result()->type().dtype();
  DType ct = computeType(out);

  if (n.kind() == OpKind::Pad) {
    std::vector<SymExpr> pads = intListAttr(n, "pad");
    const Attribute *m = n.attr("mode");
    std::string mode = m ? m->getStr() : "constant";
    std::vector<SymExpr> lo(rank, SymExpr(0));
    for (size_t i = 0; 2 * i + 1 < pads.size(); ++i)
      lo[rank - 1 - i] = pads[2 * i];
    Shape from = src->shape;
    if (mode == "constant") {
      double value = numberAttr(n.attr("value")).value_or(0);
      LValue *r =
          pointwise(out, shape, {src}, "constant_pad",
                    [this, src, from, shape, lo, value, ct](Scope &s, llvm::ArrayRef<ExprId> idx) {
                      IndexList sub(idx.begin(), idx.end());
                      ExprId inside = cBool(true);
                      for (size_t d = 0; d < sub.size(); ++d) {
                        if (lo[d] == SymExpr(0) && from[d] == shape[d])
                          continue;
                        ExprId j = isub(idx[d], dim(lo[d]));
                        ExprId ok = binary(BinaryOp::And, binary(BinaryOp::Ge, j, cInt(0)),
                                           binary(BinaryOp::Lt, j, dim(from[d])));
                        inside = expr(inside).kind == ExprKind::Const
                                     ? ok
                                     : binary(BinaryOp::And, inside, ok);
                        // Both sides of the select may be evaluated: the read stays in bounds.
                        sub[d] = clampIndex(j, from[d]);
                      }
                      return select(inside, cast(ct, read(src, s, sub)), cNum(value, ct));
                    });
      set(n.result(), r);
      return llvm::Error::success();
    }
    bool reflect = mode == "reflect";
    LValue *v = view(
        src, shape,
        [this, from, shape, lo, reflect](llvm::ArrayRef<ExprId> idx) {
          IndexList sub(idx.begin(), idx.end());
          for (size_t d = 0; d < sub.size(); ++d) {
            if (lo[d] == SymExpr(0) && from[d] == shape[d])
              continue;
            ExprId j = isub(idx[d], dim(lo[d]));
            if (reflect) {
              // |j| reflects the left side, 2 (n - 1) - |j| the right: n - 1 - |n - 1 - |j||.
              ExprId a = imax(j, isub(cInt(0), j));
              ExprId last = dim(from[d] - 1);
              ExprId b = isub(last, a);
              sub[d] = isub(last, imax(b, isub(cInt(0), b)));
            } else {
              sub[d] = clampIndex(j, from[d]);
            }
          }
          return sub;
        },
        std::nullopt);
    v->name = valueName(n.result());
    set(n.result(), v);
    return llvm::Error::success();
  }

  std::optional<UpsampleOp> op = upsampleOp(n.kind());
  if (!op)
    return unsupported(n);
  bool alignCorners = op->hasAlignCorners() && intAttr(n, "align_corners").constant().value_or(0);
  bool nearest = op->mode == UpsampleMode::Nearest || op->mode == UpsampleMode::NearestExact;
  // Source coordinates in f32 as torch's CPU kernels compute them (f64 for f64 inputs, but for
  // nearest, whose scale is always a float).
  DType coord = nearest ? DType::F32 : ct;
  std::vector<SymExpr> ins, outs;
  std::vector<std::optional<double>> scales;
  for (unsigned i = 0; i < op->spatial; ++i) {
    ins.push_back(src->shape[2 + i]);
    outs.push_back(shape[2 + i]);
    scales.push_back(numberAttr(n.attr(op->scaleAttr(i))));
  }
  // The ratio of input to output coordinates (area_pixel_compute_scale, compute_scales_value).
  auto ratio = [this, coord, alignCorners](const SymExpr &in, const SymExpr &o,
                                           std::optional<double> scale) -> ExprId {
    auto round = [coord](double v) {
      return coord == DType::F32 ? static_cast<double>(static_cast<float>(v)) : v;
    };
    if (alignCorners) {
      if (auto ci = in.constant(), co = o.constant(); ci && co)
        return cFloat(*co > 1 ? round(round(*ci - 1) / round(*co - 1)) : 0, coord);
      ExprId r =
          binary(BinaryOp::Div, cast(coord, dim(in - 1)), cast(coord, imax(dim(o - 1), cInt(1))));
      return select(binary(BinaryOp::Gt, dim(o), cInt(1)), r, cFloat(0, coord));
    }
    if (scale)
      return cFloat(round(1.0 / *scale), coord);
    if (auto ci = in.constant(), co = o.constant(); ci && co)
      return cFloat(coord == DType::F32
                        ? static_cast<double>(static_cast<float>(*ci) / static_cast<float>(*co))
                        : static_cast<double>(*ci) / static_cast<double>(*co),
                    coord);
    return binary(BinaryOp::Div, cast(coord, dim(in)), cast(coord, dim(o)));
  };
  auto taps = [this, op, coord, alignCorners, ratio](ExprId o, const SymExpr &in,
                                                     const SymExpr &outSize,
                                                     std::optional<double> scale) {
    TapExprs t;
    ExprId of = cast(coord, o);
    auto fl = [&](double v) { return cFloat(v, coord); };
    auto mul = [&](ExprId a, ExprId b) { return binary(BinaryOp::Mul, a, b); };
    auto add = [&](ExprId a, ExprId b) { return binary(BinaryOp::Add, a, b); };
    auto sub = [&](ExprId a, ExprId b) { return binary(BinaryOp::Sub, a, b); };
    auto floorIndex = [&](ExprId x) {
      return imin(cast(DType::I64, unary(UnaryOp::Floor, x)), dim(in - 1));
    };
    if (op->mode == UpsampleMode::Nearest || op->mode == UpsampleMode::NearestExact) {
      bool exact = op->mode == UpsampleMode::NearestExact;
      // nearest_idx keeps the sizes that are equal or double exact, whatever the scale says.
      if (!exact && outSize == in)
        t.at.push_back(o);
      else if (!exact && outSize == in * 2)
        t.at.push_back(ifloordiv(o, cInt(2)));
      else
        t.at.push_back(floorIndex(mul(exact ? add(of, fl(0.5)) : of, ratio(in, outSize, scale))));
      t.w.push_back(NoExpr);
      return t;
    }
    if (op->mode == UpsampleMode::Linear && outSize == in) {
      t.at.push_back(o);
      t.w.push_back(NoExpr);
      return t;
    }
    ExprId r = ratio(in, outSize, scale);
    bool cubic = op->mode == UpsampleMode::Cubic;
    ExprId real = alignCorners ? mul(r, of) : sub(mul(r, add(of, fl(0.5))), fl(0.5));
    if (!alignCorners && !cubic)
      real = binary(BinaryOp::Max, real, fl(0));
    ExprId i0 = floorIndex(real);
    ExprId lambda =
        binary(BinaryOp::Min, binary(BinaryOp::Max, sub(real, cast(coord, i0)), fl(0)), fl(1));
    if (!cubic) {
      t.at = {i0, imin(iadd(i0, cInt(1)), dim(in - 1))};
      t.w = {sub(fl(1), lambda), lambda};
      return t;
    }
    // get_cubic_upsample_coefficients with A = -0.75.
    const double a = -0.75;
    auto nearTap = [&](ExprId x) {
      return add(mul(mul(sub(mul(fl(a + 2), x), fl(a + 3)), x), x), fl(1));
    };
    auto farTap = [&](ExprId x) {
      return sub(mul(add(mul(sub(mul(fl(a), x), fl(5 * a)), x), fl(8 * a)), x), fl(4 * a));
    };
    ExprId rest = sub(fl(1), lambda);
    t.w = {farTap(add(lambda, fl(1))), nearTap(lambda), nearTap(rest), farTap(add(rest, fl(1)))};
    for (int j = 0; j < 4; ++j)
      t.at.push_back(clampIndex(iadd(i0, cInt(j - 1)), in));
    return t;
  };

  if (nearest) {
    LValue *v = view(
        src, shape,
        [this, ins, outs, scales, taps](llvm::ArrayRef<ExprId> idx) {
          IndexList sub(idx.begin(), idx.end());
          for (size_t i = 0; i < ins.size(); ++i)
            sub[2 + i] = taps(idx[2 + i], ins[i], outs[i], scales[i]).at[0];
          return sub;
        },
        std::nullopt);
    v->name = valueName(n.result());
    set(n.result(), v);
    return llvm::Error::success();
  }

  // Each output element reads 2 or 4 input elements per dim: the input is computed once.
  if (auto l = realize(src); !l)
    return l.takeError();
  std::string opName = op->mode == UpsampleMode::Cubic ? "upsample_bicubic"
                       : op->spatial == 2              ? "upsample_bilinear"
                                                       : "upsample_linear";
  LValue *r =
      pointwise(out, shape, {src}, opName,
                [this, src, ins, outs, scales, taps, ct](Scope &s, llvm::ArrayRef<ExprId> idx) {
                  std::vector<TapExprs> t;
                  for (size_t i = 0; i < ins.size(); ++i)
                    t.push_back(taps(idx[2 + i], ins[i], outs[i], scales[i]));
                  auto weigh = [this](ExprId x, ExprId w) {
                    return w == NoExpr ? x : binary(BinaryOp::Mul, x, w);
                  };
                  auto sum = [this](ExprId acc, ExprId x) {
                    return acc == NoExpr ? x : binary(BinaryOp::Add, acc, x);
                  };
                  // torch's order: the taps along the width first, then those rows along the
                  // height.
                  const TapExprs &cols = t.back();
                  auto row = [&](ExprId h) {
                    ExprId acc = NoExpr;
                    for (size_t k = 0; k < cols.at.size(); ++k) {
                      IndexList sub = {idx[0], idx[1]};
                      if (h != NoExpr)
                        sub.push_back(h);
                      sub.push_back(cols.at[k]);
                      acc = sum(acc, weigh(cast(ct, read(src, s, sub)), cols.w[k]));
                    }
                    return acc;
                  };
                  if (t.size() == 1)
                    return row(NoExpr);
                  ExprId acc = NoExpr;
                  for (size_t j = 0; j < t[0].at.size(); ++j)
                    acc = sum(acc, weigh(row(t[0].at[j]), t[0].w[j]));
                  return acc;
                });
  set(n.result(), r);
  return llvm::Error::success();
}

} // namespace aotc::kir::lower
