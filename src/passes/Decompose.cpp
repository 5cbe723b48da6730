// Decomposition to the core op set: linear becomes addmm/mm, and batch_norm, the activations
// (gelu, silu, hardtanh, hardswish, hardsigmoid, leaky_relu, elu, softplus, mish, prelu),
// softmax, log_softmax, layer_norm and group_norm become pointwise ops and reductions that fusion
// can group; a transposed convolution becomes a padded convolution.
#include "passes/Passes.h"

#include "aotc/ir/Builder.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"

#include <cmath>
#include <numbers>
#include <optional>
#include <vector>

namespace aotc {
namespace {

/// Builds the expansion of one node right before it, every new node carrying the node's source
/// location so that errors and `aotc inspect` still point at the user's line. The first error
/// sticks and later calls return null, so a rewrite reads as straight-line math and checks once.
class Expander {
public:
  Expander(const ShapeEnv &env, Node &node) : B(env, *node.parentBlock()), Loc(node.loc()) {
    B.setInsertionPoint(*node.parentBlock(), node.parentBlock()->find(&node));
  }

  Value *op(OpKind kind, llvm::ArrayRef<Value *> operands,
            llvm::ArrayRef<NamedAttribute> attrs = {}) {
    if (llvm::is_contained(operands, nullptr))
      return nullptr;
    return withOptional(kind, operands, attrs);
  }
  /// `op` where a null operand is an absent optional tensor (a convolution without bias), not a
  /// failed step: those must be checked by the caller.
  Value *withOptional(OpKind kind, llvm::ArrayRef<Value *> operands,
                      llvm::ArrayRef<NamedAttribute> attrs = {}) {
    if (Err)
      return nullptr;
    auto v = B.create1(kind, operands, attrs, Loc);
    if (!v) {
      Err = v.takeError();
      return nullptr;
    }
    return *v;
  }

  // Scalar constants stay attributes of `.Scalar` ops: no constant tensors to allocate or fold.
  Value *mulScalar(Value *x, double c) {
    return op(OpKind::MulScalar, {x}, {{"other", Attribute::floating(c)}});
  }
  Value *addScalar(Value *x, double c) {
    return op(OpKind::AddScalar, {x}, {{"other", Attribute::floating(c)}});
  }
  Value *reshape(Value *x, std::vector<SymExpr> shape) {
    return op(OpKind::Reshape, {x}, {{"shape", Attribute::intList(std::move(shape))}});
  }
  /// A reduction over `dims` that keeps them, so its result broadcasts back against its input.
  Value *reduce(OpKind kind, Value *x, std::vector<SymExpr> dims) {
    return op(
        kind, {x},
        {{"dim", Attribute::intList(std::move(dims))}, {"keepdim", Attribute::boolean(true)}});
  }

  llvm::Error takeError() { return Err ? std::move(Err) : llvm::Error::success(); }

private:
  Builder B;
  SourceLoc Loc;
  llvm::Error Err = llvm::Error::success();
};

bool isFloatTensor(const Value *v) {
  return v && v->type().isTensor() && isFloating(v->type().dtype());
}

std::optional<int64_t> constantInt(const Attribute *a) {
  if (!a || a->kind() != Attribute::Kind::Int)
    return std::nullopt;
  return a->getInt().constant();
}

double floatAttr(const Node &node, llvm::StringRef name) {
  const Attribute *a = node.attr(name);
  if (!a)
    return 0;
  if (a->kind() == Attribute::Kind::Float)
    return a->getFloat();
  return static_cast<double>(constantInt(a).value_or(0));
}

/// A per-channel tensor [C] reshaped to [C, 1, ...] so that it broadcasts along dim 1 of an
/// input of rank `rank`; an [N, C] input needs no reshape.
Value *perChannel(Expander &e, Value *v, size_t rank) {
  if (!v || rank <= 2)
    return v;
  std::vector<SymExpr> shape{v->type().shape()[0]};
  shape.resize(rank - 1, SymExpr(1));
  return e.reshape(v, std::move(shape));
}

/// `linear(x, w, b)` is `x @ w^T + b`. A 2-d x maps onto addmm (mm without bias) directly; any
/// other rank is flattened to [prod(leading dims), in] and reshaped back, so GEMM sees one matrix
/// product whatever the batch dims are, symbolic or not.
Value *decomposeLinear(Expander &e, Node &node) {
  Value *x = node.operand("input"), *w = node.operand("weight"), *b = node.operand("bias");
  // A 1-d weight is a dot product, not a GEMM; it stays for the backends to handle whole.
  if (w->type().rank() != 2)
    return nullptr;
  const Shape &xs = x->type().shape();
  Value *wt =
      e.op(OpKind::Permute, {w}, {{"dims", Attribute::intList(std::vector<SymExpr>{1, 0})}});
  Value *x2 = x;
  if (xs.size() != 2) {
    SymExpr rows = 1;
    for (size_t i = 0; i + 1 < xs.size(); ++i)
      rows = rows * xs[i];
    x2 = e.reshape(x, {rows, xs.back()});
  }
  Value *y = b ? e.op(OpKind::Addmm, {b, x2, wt}) : e.op(OpKind::Mm, {x2, wt});
  if (xs.size() == 2)
    return y;
  std::vector<SymExpr> out(xs.begin(), xs.end() - 1);
  out.push_back(w->type().shape()[0]);
  return e.reshape(y, std::move(out));
}

/// Inference batch_norm is a per-channel scale and shift. The scale `rsqrt(var + eps) * weight`
/// depends on state tensors only, so weight folding can precompute it.
Value *decomposeBatchNorm(Expander &e, Node &node) {
  const Attribute *training = node.attr("training");
  if (training && training->getBool())
    return nullptr;
  Value *x = node.operand("input");
  size_t rank = x->type().rank();
  Value *mean = perChannel(e, node.operand("running_mean"), rank);
  Value *var = perChannel(e, node.operand("running_var"), rank);
  Value *weight = perChannel(e, node.operand("weight"), rank);
  Value *bias = perChannel(e, node.operand("bias"), rank);
  Value *scale = e.op(OpKind::Rsqrt, {e.addScalar(var, floatAttr(node, "eps"))});
  if (weight)
    scale = e.op(OpKind::MulTensor, {scale, weight});
  Value *y = e.op(OpKind::MulTensor, {e.op(OpKind::SubTensor, {x, mean}), scale});
  return bias ? e.op(OpKind::AddTensor, {y, bias}) : y;
}

/// The same formulas as PyTorch's kernels, which multiply by 1/sqrt(2) rather than divide.
Value *decomposeGelu(Expander &e, Node &node) {
  Value *x = node.operand(0);
  Value *inner;
  if (node.attr("approximate")->getStr() == "tanh") {
    Value *cube = e.op(OpKind::PowScalar, {x}, {{"exponent", Attribute::integer(3)}});
    Value *poly = e.op(OpKind::AddTensor, {x, e.mulScalar(cube, 0.044715)});
    inner = e.op(OpKind::Tanh, {e.mulScalar(poly, std::sqrt(2 / std::numbers::pi))});
  } else {
    inner = e.op(OpKind::Erf, {e.mulScalar(x, 1 / std::numbers::sqrt2)});
  }
  return e.op(OpKind::MulTensor, {e.mulScalar(x, 0.5), e.addScalar(inner, 1)});
}

Value *decomposeSilu(Expander &e, Node &node) {
  Value *x = node.operand(0);
  return e.op(OpKind::MulTensor, {x, e.op(OpKind::Sigmoid, {x})});
}

Value *scalarOp(Expander &e, OpKind kind, Value *x, double c) {
  return e.op(kind, {x}, {{"other", Attribute::floating(c)}});
}

/// `clamp(x, lo, hi)` with the bounds as written (ints stay ints).
Value *clampOf(Expander &e, Value *x, Attribute lo, Attribute hi) {
  return e.op(OpKind::Clamp, {x}, {{"min", std::move(lo)}, {"max", std::move(hi)}});
}

/// `where(x > 0, x, negative)`: the form of every activation that only bends the negative side.
Value *positiveOr(Expander &e, Value *x, Value *negative) {
  Value *positive = e.op(OpKind::GtScalar, {x}, {{"other", Attribute::integer(0)}});
  return e.op(OpKind::Where, {positive, x, negative});
}

// hardtanh (ReLU6 is hardtanh(0, 6)) is a clamp, as Inductor decomposes it.
Value *decomposeHardtanh(Expander &e, Node &node) {
  return clampOf(e, node.operand(0), *node.attr("min_val"), *node.attr("max_val"));
}

/// relu6(x + 3) / 6, the gate hardswish multiplies by (ATen's formula, in its order).
Value *hardGate(Expander &e, Value *x) {
  Value *shifted = e.addScalar(x, 3);
  return clampOf(e, shifted, Attribute::integer(0), Attribute::integer(6));
}

Value *decomposeHardsigmoid(Expander &e, Node &node) {
  return scalarOp(e, OpKind::DivScalar, hardGate(e, node.operand(0)), 6);
}

Value *decomposeHardswish(Expander &e, Node &node) {
  Value *x = node.operand(0);
  return scalarOp(e, OpKind::DivScalar, e.op(OpKind::MulTensor, {x, hardGate(e, x)}), 6);
}

Value *decomposeLeakyRelu(Expander &e, Node &node) {
  Value *x = node.operand(0);
  return positiveOr(e, x, e.mulScalar(x, floatAttr(node, "negative_slope")));
}

/// scale * (x > 0 ? x : alpha * (exp(input_scale * x) - 1)); factors of 1 are left out.
Value *decomposeElu(Expander &e, Node &node) {
  Value *x = node.operand(0);
  double alpha = floatAttr(node, "alpha"), scale = floatAttr(node, "scale"),
         inputScale = floatAttr(node, "input_scale");
  Value *scaledIn = inputScale == 1 ? x : e.mulScalar(x, inputScale);
  Value *negative = e.addScalar(e.op(OpKind::Exp, {scaledIn}), -1);
  if (alpha * scale != 1)
    negative = e.mulScalar(negative, alpha * scale);
  Value *positive = scale == 1 ? x : e.mulScalar(x, scale);
  Value *isPositive = e.op(OpKind::GtScalar, {x}, {{"other", Attribute::integer(0)}});
  return e.op(OpKind::Where, {isPositive, positive, negative});
}

/// log1p(exp(beta * x)) / beta, or x where beta * x > threshold (where exp would overflow).
Value *softplusOf(Expander &e, Value *x, double beta, double threshold) {
  Value *scaled = beta == 1 ? x : e.mulScalar(x, beta);
  Value *smooth = e.op(OpKind::Log1p, {e.op(OpKind::Exp, {scaled})});
  if (beta != 1)
    smooth = scalarOp(e, OpKind::DivScalar, smooth, beta);
  Value *linear = e.op(OpKind::GtScalar, {scaled}, {{"other", Attribute::floating(threshold)}});
  return e.op(OpKind::Where, {linear, x, smooth});
}

Value *decomposeSoftplus(Expander &e, Node &node) {
  return softplusOf(e, node.operand(0), floatAttr(node, "beta"), floatAttr(node, "threshold"));
}

/// x * tanh(softplus(x)); the threshold only avoids exp's overflow (tanh is 1 there anyway).
Value *decomposeMish(Expander &e, Node &node) {
  Value *x = node.operand(0);
  return e.op(OpKind::MulTensor, {x, e.op(OpKind::Tanh, {softplusOf(e, x, 1, 20)})});
}

/// The slopes broadcast along the channels (dim 1) of the input.
Value *decomposePrelu(Expander &e, Node &node) {
  Value *x = node.operand("self");
  Value *weight = node.operand("weight");
  if (weight->type().rank() == 1)
    weight = perChannel(e, weight, x->type().rank());
  return positiveOr(e, x, e.op(OpKind::MulTensor, {weight, x}));
}

/// softmax and log_softmax, stabilized by subtracting the row maximum as the reference kernels
/// do. A `dtype` converts the input first, which is what PyTorch does before computing.
Value *decomposeSoftmax(Expander &e, Node &node) {
  Value *x = node.operand(0);
  if (x->type().rank() == 0)
    return nullptr;
  if (const Attribute *dt = node.attr("dtype"); dt && dt->getDType() != x->type().dtype())
    x = e.op(OpKind::ToCopy, {x}, {{"dtype", *dt}});
  std::vector<SymExpr> dims{node.attr("dim")->getInt()};
  Value *shifted = e.op(OpKind::SubTensor, {x, e.reduce(OpKind::Amax, x, dims)});
  Value *exps = e.op(OpKind::Exp, {shifted});
  Value *sum = e.reduce(OpKind::Sum, exps, dims);
  if (node.kind() == OpKind::LogSoftmax)
    return e.op(OpKind::SubTensor, {shifted, e.op(OpKind::Log, {sum})});
  return e.op(OpKind::DivTensor, {exps, sum});
}

/// The reduced dims of a reduction node (its `dim` list normalized; none or [] is every dim).
std::vector<SymExpr> reducedDims(const Node &node, size_t rank) {
  std::vector<SymExpr> dims;
  if (const Attribute *a = node.attr("dim"))
    for (const SymExpr &d :
         a->kind() == Attribute::Kind::Int ? std::vector<SymExpr>{a->getInt()} : a->getIntList()) {
      int64_t c = d.constant().value_or(0);
      dims.push_back(c < 0 ? c + static_cast<int64_t>(rank) : c);
    }
  if (dims.empty())
    for (size_t d = 0; d < rank; ++d)
      dims.push_back(static_cast<int64_t>(d));
  return dims;
}

/// `y` (reduced with keepdim) reshaped to the node's result when the node drops its dims.
Value *dropKept(Expander &e, Node &node, Value *y) {
  const Shape &out = node.result()->type().shape();
  if (y->type().shape() == out)
    return y;
  return e.reshape(y, std::vector<SymExpr>(out.begin(), out.end()));
}

/// log(sum(exp(x - m))) + m with m the maximum, where an infinite maximum counts as 0 (ATen's
/// masking) so that a group of -inf gives -inf rather than NaN: m - m is 0 exactly when m is
/// finite.
Value *decomposeLogsumexp(Expander &e, Node &node) {
  Value *x = node.operand(0);
  DType out = node.result()->type().dtype();
  if (x->type().rank() == 0)
    return nullptr;
  if (x->type().dtype() != out)
    x = e.op(OpKind::ToCopy, {x}, {{"dtype", Attribute::dtype(out)}});
  std::vector<SymExpr> dims = reducedDims(node, x->type().rank());
  Value *m = e.reduce(OpKind::Amax, x, dims);
  Value *finite =
      e.op(OpKind::EqScalar, {e.op(OpKind::SubTensor, {m, m})}, {{"other", Attribute::integer(0)}});
  Value *zero = e.op(OpKind::Full, {},
                     {{"size", Attribute::intList({})},
                      {"fill_value", Attribute::integer(0)},
                      {"dtype", Attribute::dtype(out)}});
  m = e.op(OpKind::Where, {finite, m, zero});
  Value *sum = e.reduce(OpKind::Sum, e.op(OpKind::Exp, {e.op(OpKind::SubTensor, {x, m})}), dims);
  return dropKept(e, node, e.op(OpKind::AddTensor, {e.op(OpKind::Log, {sum}), m}));
}

/// sum((x - mean)^2) / max(0, N - correction): the two-pass form, N the (maybe symbolic)
/// number of reduced elements. A float correction needs N known.
Value *decomposeVar(Expander &e, Node &node) {
  Value *x = node.operand(0);
  size_t rank = x->type().rank();
  if (rank == 0)
    return nullptr;
  std::vector<SymExpr> dims = reducedDims(node, rank);
  SymExpr count = 1;
  for (const SymExpr &d : dims)
    count = count * x->type().shape()[*d.constant()];
  const Attribute *c = node.attr("correction");
  Attribute divisor = Attribute::integer(0);
  if (!c || c->kind() != Attribute::Kind::Float) {
    int64_t correction = c ? c->getInt().constant().value_or(1) : 1;
    divisor = Attribute::integer(SymExpr::max(count - correction, SymExpr(0)));
  } else if (auto n = count.constant()) {
    divisor = Attribute::floating(std::max(0.0, static_cast<double>(*n) - c->getFloat()));
  } else {
    return nullptr;
  }
  Value *centered = e.op(OpKind::SubTensor, {x, e.reduce(OpKind::Mean, x, dims)});
  Value *sq = e.reduce(OpKind::Sum, e.op(OpKind::MulTensor, {centered, centered}), dims);
  Value *var = e.op(OpKind::DivScalar, {sq}, {{"other", divisor}});
  if (node.kind() == OpKind::Std)
    var = e.op(OpKind::Sqrt, {var});
  return dropKept(e, node, var);
}

/// ord 1: sum |x|; ord 2: sqrt(sum x*x); any other: (sum |x|^ord)^(1/ord).
Value *decomposeVectorNorm(Expander &e, Node &node) {
  Value *x = node.operand(0);
  DType out = node.result()->type().dtype();
  size_t rank = x->type().rank();
  if (rank == 0)
    return nullptr;
  if (x->type().dtype() != out)
    x = e.op(OpKind::ToCopy, {x}, {{"dtype", Attribute::dtype(out)}});
  double p = floatAttr(node, "ord");
  std::vector<SymExpr> dims = reducedDims(node, rank);
  Value *terms = p == 2 ? e.op(OpKind::MulTensor, {x, x}) : e.op(OpKind::Abs, {x});
  if (p != 1 && p != 2)
    terms = e.op(OpKind::PowScalar, {terms}, {{"exponent", Attribute::floating(p)}});
  Value *sum = e.reduce(OpKind::Sum, terms, dims);
  if (p == 2)
    sum = e.op(OpKind::Sqrt, {sum});
  else if (p != 1)
    sum = e.op(OpKind::PowScalar, {sum}, {{"exponent", Attribute::floating(1 / p)}});
  return dropKept(e, node, sum);
}

/// `(x - mean) * rsqrt(var + eps)` with the statistics over `dims` (kept), biased variance as
/// mean((x - mean)^2): the two-pass form, which keeps f32 results close to the reference.
Value *normalize(Expander &e, Value *x, const std::vector<SymExpr> &dims, double eps) {
  Value *centered = e.op(OpKind::SubTensor, {x, e.reduce(OpKind::Mean, x, dims)});
  Value *var = e.reduce(OpKind::Mean, e.op(OpKind::MulTensor, {centered, centered}), dims);
  return e.op(OpKind::MulTensor, {centered, e.op(OpKind::Rsqrt, {e.addScalar(var, eps)})});
}

Value *affine(Expander &e, Value *y, Value *weight, Value *bias) {
  if (weight)
    y = e.op(OpKind::MulTensor, {y, weight});
  return bias ? e.op(OpKind::AddTensor, {y, bias}) : y;
}

/// layer_norm over the trailing dims; weight and bias have those dims' shape and broadcast as is.
Value *decomposeLayerNorm(Expander &e, Node &node) {
  Value *x = node.operand("input");
  int64_t rank = static_cast<int64_t>(x->type().rank());
  int64_t k = static_cast<int64_t>(node.attr("normalized_shape")->getIntList().size());
  std::vector<SymExpr> dims;
  for (int64_t d = rank - k; d < rank; ++d)
    dims.push_back(d);
  Value *y = normalize(e, x, dims, floatAttr(node, "eps"));
  return affine(e, y, node.operand("weight"), node.operand("bias"));
}

/// x * rsqrt(mean(x * x) + eps) * weight over the trailing dims, eps defaulting to the dtype's
/// machine epsilon as torch's rms_norm does.
Value *decomposeRmsNorm(Expander &e, Node &node) {
  Value *x = node.operand("input");
  int64_t rank = static_cast<int64_t>(x->type().rank());
  int64_t k = static_cast<int64_t>(node.attr("normalized_shape")->getIntList().size());
  std::vector<SymExpr> dims;
  for (int64_t d = rank - k; d < rank; ++d)
    dims.push_back(d);
  double eps = node.attr("eps") ? floatAttr(node, "eps") : machineEpsilon(x->type().dtype());
  Value *meanSquare = e.reduce(OpKind::Mean, e.op(OpKind::MulTensor, {x, x}), dims);
  Value *y = e.op(OpKind::MulTensor, {x, e.op(OpKind::Rsqrt, {e.addScalar(meanSquare, eps)})});
  return affine(e, y, node.operand("weight"), nullptr);
}

/// group_norm: statistics per (sample, group) over [N, G, C/G * spatial], then the per-channel
/// affine on the original shape. A symbolic channel count stays whole: C/G would be a floordiv
/// the reshape cannot prove to multiply back to C.
Value *decomposeGroupNorm(Expander &e, Node &node) {
  Value *x = node.operand("input");
  const Shape &xs = x->type().shape();
  std::optional<int64_t> channels = xs[1].constant();
  std::optional<int64_t> groups = constantInt(node.attr("num_groups"));
  if (!channels || !groups || *groups < 1 || *channels % *groups != 0)
    return nullptr;
  SymExpr groupSize = *channels / *groups;
  for (size_t i = 2; i < xs.size(); ++i)
    groupSize = groupSize * xs[i];
  Value *grouped = e.reshape(x, {xs[0], *groups, groupSize});
  Value *y = normalize(e, grouped, {2}, floatAttr(node, "eps"));
  y = e.reshape(y, std::vector<SymExpr>(xs.begin(), xs.end()));
  // Separate statements: the order of function arguments is unspecified, and the printed
  // order of the nodes must not depend on the host compiler.
  Value *weight = perChannel(e, node.operand("weight"), xs.size());
  Value *bias = perChannel(e, node.operand("bias"), xs.size());
  return affine(e, y, weight, bias);
}

// Resampling and transposed convolution.

/// conv_transpose as a convolution with stride 1 (zero insertion, then a pad on both sides and
/// the flipped kernel with in and out channels swapped per group): it keeps the GEMM and
/// Winograd paths of convolution, and the weight's rewrite (reshape, permute, flip) is
/// weight-only, so FoldWeights precomputes it. A stride s multiplies the MACs by s per dim (the
/// inserted zeros); the padded input is a select by position that fuses into the convolution's
/// read. Padding larger than dilation * (kernel - 1) crops (negative constant padding).
Value *decomposeConvTranspose(Expander &e, Node &node) {
  Value *x = node.operand("input"), *w = node.operand("weight"), *b = node.operand("bias");
  const Shape &xs = x->type().shape(), &ws = w->type().shape();
  size_t spatial = xs.size() - 2;
  auto list = [&](llvm::StringRef name, int64_t dflt) {
    std::vector<int64_t> v;
    if (const Attribute *a = node.attr(name))
      for (const SymExpr &c : a->getIntList())
        v.push_back(c.constant().value_or(dflt));
    if (v.empty())
      v.push_back(dflt);
    v.resize(spatial, v.back());
    return v;
  };
  std::vector<int64_t> stride = list("stride", 1), padding = list("padding", 0),
                       dilation = list("dilation", 1), outPad = list("output_padding", 0);
  std::optional<int64_t> groups = constantInt(node.attr("groups"));
  std::optional<int64_t> cin = ws[0].constant(), coutG = ws[1].constant();
  if (!groups || !cin || !coutG)
    return nullptr;
  std::vector<int64_t> kernel;
  for (size_t i = 0; i < spatial; ++i)
    kernel.push_back(*ws[2 + i].constant());

  // Zero insertion: [N, C, H, W] -> [N, C, H, 1, W, 1] -> pad to [N, C, H, sh, W, sw] ->
  // [N, C, H * sh, W * sw], whose last sh - 1 rows (sw - 1 columns) the pad below crops.
  Value *up = x;
  if (llvm::any_of(stride, [](int64_t s) { return s > 1; })) {
    std::vector<SymExpr> split{xs[0], xs[1]}, merged{xs[0], xs[1]};
    std::vector<SymExpr> zeros;
    for (size_t i = 0; i < spatial; ++i) {
      split.push_back(xs[2 + i]);
      split.push_back(1);
      merged.push_back(xs[2 + i] * stride[i]);
    }
    for (size_t i = spatial; i-- > 0;) {
      zeros.push_back(0);
      zeros.push_back(stride[i] - 1);
      zeros.push_back(0);
      zeros.push_back(0);
    }
    zeros.resize(zeros.size() - 2);
    up = e.reshape(
        e.op(OpKind::Pad, {e.reshape(x, split)}, {{"pad", Attribute::intList(std::move(zeros))}}),
        merged);
  }
  std::vector<SymExpr> pads;
  for (size_t i = spatial; i-- > 0;) {
    int64_t reach = dilation[i] * (kernel[i] - 1);
    pads.push_back(reach - padding[i]);
    pads.push_back(reach - padding[i] + outPad[i] - (stride[i] - 1));
  }
  Value *padded = e.op(OpKind::Pad, {up}, {{"pad", Attribute::intList(std::move(pads))}});

  // Weight [Cin, Cout/g, k...] -> [g, Cin/g, Cout/g, k...] -> [g, Cout/g, Cin/g, k...] ->
  // [Cout, Cin/g, k...], flipped along the kernel dims.
  int64_t g = *groups, cinG = *cin / g;
  std::vector<SymExpr> grouped{g, cinG, *coutG}, perm{0, 2, 1}, flat{g * *coutG, cinG}, flips;
  for (size_t i = 0; i < spatial; ++i) {
    grouped.push_back(kernel[i]);
    perm.push_back(static_cast<int64_t>(3 + i));
    flat.push_back(kernel[i]);
    flips.push_back(static_cast<int64_t>(2 + i));
  }
  Value *wt = e.op(OpKind::Permute, {e.reshape(w, grouped)},
                   {{"dims", Attribute::intList(std::move(perm))}});
  wt = e.op(OpKind::Flip, {e.reshape(wt, flat)}, {{"dims", Attribute::intList(std::move(flips))}});

  std::vector<SymExpr> ones(spatial, SymExpr(1)), none(spatial, SymExpr(0)), dil;
  for (int64_t d : dilation)
    dil.push_back(d);
  if (!padded || !wt)
    return nullptr;
  return e.withOptional(OpKind::Convolution, {padded, wt, b},
                        {{"stride", Attribute::intList(ones)},
                         {"padding", Attribute::intList(none)},
                         {"dilation", Attribute::intList(std::move(dil))},
                         {"transposed", Attribute::boolean(false)},
                         {"output_padding", Attribute::intList(none)},
                         {"groups", Attribute::integer(g)}});
}

using Decomposition = Value *(*)(Expander &, Node &);

/// The rewrite of `node`, or null for ops that stay whole (GEMM, convolution, attention, and
/// everything already in the core set). Pointwise activations decompose only on floating inputs
/// of their own result dtype, where the pointwise math keeps the dtype the op promised.
Decomposition decompositionFor(const Node &node) {
  // Factories (arange, full, zeros, ones) have no operands and nothing to decompose.
  if (node.operands().empty())
    return nullptr;
  bool sameFloat = isFloatTensor(node.operand(0)) && node.numResults() == 1 &&
                   node.operand(0)->type() == node.result()->type();
  switch (node.kind()) {
  case OpKind::Linear:
    return decomposeLinear;
  case OpKind::BatchNorm:
    return sameFloat ? decomposeBatchNorm : nullptr;
  case OpKind::Gelu:
    return sameFloat ? decomposeGelu : nullptr;
  case OpKind::Silu:
    return sameFloat ? decomposeSilu : nullptr;
  case OpKind::Hardtanh:
    return sameFloat ? decomposeHardtanh : nullptr;
  case OpKind::Hardswish:
    return sameFloat ? decomposeHardswish : nullptr;
  case OpKind::Hardsigmoid:
    return sameFloat ? decomposeHardsigmoid : nullptr;
  case OpKind::LeakyRelu:
    return sameFloat ? decomposeLeakyRelu : nullptr;
  case OpKind::Elu:
    return sameFloat ? decomposeElu : nullptr;
  case OpKind::Softplus:
    return sameFloat ? decomposeSoftplus : nullptr;
  case OpKind::Mish:
    return sameFloat ? decomposeMish : nullptr;
  case OpKind::Prelu:
    return sameFloat ? decomposePrelu : nullptr;
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
    return decomposeSoftmax;
  case OpKind::Logsumexp:
    return decomposeLogsumexp;
  case OpKind::Var:
  case OpKind::Std:
    return decomposeVar;
  case OpKind::VectorNorm:
    return decomposeVectorNorm;
  case OpKind::LayerNorm:
    return sameFloat ? decomposeLayerNorm : nullptr;
  case OpKind::GroupNorm:
    return sameFloat ? decomposeGroupNorm : nullptr;
  case OpKind::RmsNorm:
    return sameFloat ? decomposeRmsNorm : nullptr;
  case OpKind::Convolution: {
    const Attribute *transposed = node.attr("transposed");
    return transposed && transposed->getBool() ? decomposeConvTranspose : nullptr;
  }
  default:
    return nullptr;
  }
}

} // namespace

llvm::Error runDecompose(Graph &graph, const DecomposeOptions &options) {
  for (const auto &entry : graph.entries()) {
    // Collected first: a rewrite erases the node it expands, which Block::walk must not see.
    std::vector<Node *> worklist;
    entry->body().walk([&](Node &node) { worklist.push_back(&node); });
    for (Node *node : worklist) {
      if (llvm::is_contained(options.keep, node->kind()))
        continue;
      Decomposition rewrite = decompositionFor(*node);
      if (!rewrite)
        continue;
      Expander e(graph.shapeEnv(), *node);
      Value *replacement = rewrite(e, *node);
      if (llvm::Error err = e.takeError())
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "entry @%s: decomposing %s (%s): %s", entry->name().c_str(),
                                       node->name().str().c_str(), node->loc().str().c_str(),
                                       llvm::toString(std::move(err)).c_str());
      if (!replacement)
        continue;
      // The expansion computes the op's own type; a mismatch is a bug in a rewrite above.
      if (!(replacement->type() == node->result()->type()))
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(), "entry @%s: decomposing %s gave %s instead of %s",
            entry->name().c_str(), node->name().str().c_str(), replacement->type().str().c_str(),
            node->result()->type().str().c_str());
      Block &block = *node->parentBlock();
      block.replaceAllUsesWith(node->result(), replacement);
      block.erase(block.find(node));
    }
  }
  return llvm::Error::success();
}

llvm::Error runDecompose(Graph &graph) { return runDecompose(graph, DecomposeOptions{}); }

} // namespace aotc
