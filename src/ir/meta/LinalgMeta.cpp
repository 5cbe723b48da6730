// Meta functions of contractions (mm, matmul, linear, convolution, attention), pooling,
// normalization and indexing.
#include "Meta.h"

namespace aotc::meta {

namespace {
// `a` and `b` must agree: equal dims or an error naming both operands and dims.
llvm::Error requireEqual(const Args &args, const SymExpr &a, const SymExpr &b,
                         llvm::StringRef what) {
  if (args.knownEqual(a, b))
    return llvm::Error::success();
  return args.error("{} must match, got {} and {}", what.str(), a.str(), b.str());
}

llvm::Error requireRank(const Args &args, const Type &t, llvm::StringRef name,
                        std::initializer_list<size_t> ranks) {
  for (size_t r : ranks)
    if (t.rank() == r)
      return llvm::Error::success();
  std::string expected;
  for (size_t r : ranks)
    expected += (expected.empty() ? "" : " or ") + std::to_string(r) + "-d";
  return args.error("{} must be {}, got {}", name.str(), expected, t.str());
}

llvm::Error requireSameDType(const Args &args, const Type &a, const Type &b, llvm::StringRef what) {
  if (a.dtype() == b.dtype())
    return llvm::Error::success();
  return args.error("{} must have the same dtype, got {} and {}", what.str(),
                    toString(a.dtype()).str(), toString(b.dtype()).str());
}

// Output length of a sliding window: floor((in + 2p - d(k-1) - 1) / s) + 1.
SymExpr windowOut(const SymExpr &in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return SymExpr::floorDiv(in + 2 * p - d * (k - 1) - 1, s) + 1;
}

// A per-spatial-dim list attribute: `n` values, or one value broadcast to `n`.
llvm::Expected<std::vector<int64_t>> spatialList(const Args &args, llvm::StringRef name, size_t n,
                                                 std::vector<int64_t> dflt) {
  auto v = args.constInts(name);
  if (!v)
    return v.takeError();
  if (v->empty())
    return dflt;
  if (v->size() == 1)
    return std::vector<int64_t>(n, (*v)[0]);
  if (v->size() != n)
    return args.error("{} needs {} values, got {}", name.str(), n, v->size());
  return *v;
}
} // namespace

namespace {
// The product of two matrices bound to the schema arguments `lhs` and `rhs`.
Result matrixProduct(const Args &args, llvm::StringRef lhs, llvm::StringRef rhs) {
  auto self = args.tensor(lhs);
  auto mat2 = args.tensor(rhs);
  if (!self || !mat2)
    return llvm::joinErrors(self.takeError(), mat2.takeError());
  const Type &a = **self, &b = **mat2;
  if (auto e = requireRank(args, a, lhs, {2}))
    return e;
  if (auto e = requireRank(args, b, rhs, {2}))
    return e;
  if (auto e = requireSameDType(args, a, b, fmt::format("{} and {}", lhs.str(), rhs.str())))
    return e;
  if (auto e = requireEqual(args, a.shape()[1], b.shape()[0],
                            fmt::format("dim 1 of {} and dim 0 of {}", lhs.str(), rhs.str())))
    return e;
  return one(Type::tensor(a.dtype(), {a.shape()[0], b.shape()[1]}));
}
} // namespace

Result metaMm(const Args &args) { return matrixProduct(args, "self", "mat2"); }

Result metaBmm(const Args &args) {
  auto self = args.tensor("self");
  auto mat2 = args.tensor("mat2");
  if (!self || !mat2)
    return llvm::joinErrors(self.takeError(), mat2.takeError());
  const Type &a = **self, &b = **mat2;
  if (auto e = requireRank(args, a, "self", {3}))
    return e;
  if (auto e = requireRank(args, b, "mat2", {3}))
    return e;
  if (auto e = requireSameDType(args, a, b, "self and mat2"))
    return e;
  if (auto e = requireEqual(args, a.shape()[0], b.shape()[0], "batch dims of self and mat2"))
    return e;
  if (auto e = requireEqual(args, a.shape()[2], b.shape()[1], "dim 2 of self and dim 1 of mat2"))
    return e;
  return one(Type::tensor(a.dtype(), {a.shape()[0], a.shape()[1], b.shape()[2]}));
}

Result metaMatmul(const Args &args) {
  auto self = args.tensor("self");
  auto other = args.tensor("other");
  if (!self || !other)
    return llvm::joinErrors(self.takeError(), other.takeError());
  const Type &a = **self, &b = **other;
  if (a.rank() == 0 || b.rank() == 0)
    return args.error("both operands need at least one dim, got {} and {}", a.str(), b.str());
  if (auto e = requireSameDType(args, a, b, "self and other"))
    return e;
  // 1-d operands are promoted to matrices and the added dim is removed afterwards.
  SymExpr k1 = a.shape().back();
  SymExpr k2 = b.rank() == 1 ? b.shape()[0] : b.shape()[b.rank() - 2];
  if (auto e = requireEqual(args, k1, k2, "the contracted dims of self and other"))
    return e;
  Shape batchA(a.shape().begin(), a.shape().end() - std::min<size_t>(a.rank(), 2));
  Shape batchB(b.shape().begin(), b.shape().end() - std::min<size_t>(b.rank(), 2));
  Type ta = Type::tensor(a.dtype(), batchA), tb = Type::tensor(b.dtype(), batchB);
  auto batch = args.broadcast({&ta, &tb});
  if (!batch)
    return batch.takeError();
  Shape out = *batch;
  if (a.rank() >= 2)
    out.push_back(a.shape()[a.rank() - 2]);
  if (b.rank() >= 2)
    out.push_back(b.shape().back());
  return one(Type::tensor(a.dtype(), out));
}

Result metaAddmm(const Args &args) {
  auto mm = matrixProduct(args, "mat1", "mat2");
  if (!mm)
    return mm.takeError();
  auto bias = args.tensor("self");
  if (!bias)
    return bias.takeError();
  Type out = (*mm)[0];
  auto shape = args.broadcast({*bias, &out});
  if (!shape)
    return shape.takeError();
  if (*shape != out.shape())
    return args.error("self {} does not broadcast to the product's shape {}", (*bias)->str(),
                      out.str());
  if (auto e = requireSameDType(args, **bias, out, "self and the product"))
    return e;
  return mm;
}

Result metaLinear(const Args &args) {
  auto input = args.tensor("input");
  auto weight = args.tensor("weight");
  auto bias = args.optionalTensor("bias");
  if (!input || !weight || !bias)
    return llvm::joinErrors(llvm::joinErrors(input.takeError(), weight.takeError()),
                            bias.takeError());
  const Type &x = **input, &w = **weight;
  if (x.rank() == 0)
    return args.error("input must have at least one dim, got {}", x.str());
  if (auto e = requireRank(args, w, "weight", {1, 2}))
    return e;
  if (auto e = requireSameDType(args, x, w, "input and weight"))
    return e;
  if (!args.knownEqual(x.shape().back(), w.shape().back())) {
    // A classifier after a conv stack without its flatten: [N, C, 1, 1] into Linear(C, ...).
    SymExpr trailing = 1;
    for (size_t i = 1; i < x.rank(); ++i)
      trailing = trailing * x.shape()[i];
    bool flatten = x.rank() > 2 && args.env().proveEQ(trailing, w.shape().back()) == Truth::True;
    return args.error("the last dims of input and weight must match, got {} and {} (input {}, "
                      "weight {}){}",
                      x.shape().back().str(), w.shape().back().str(), x.str(), w.str(),
                      flatten ? "; flatten the input first: x.flatten(1)" : "");
  }
  Shape out(x.shape().begin(), x.shape().end() - 1);
  if (w.rank() == 2)
    out.push_back(w.shape()[0]);
  if (*bias) {
    Type y = Type::tensor(x.dtype(), out);
    auto shape = args.broadcast({*bias, &y});
    if (!shape)
      return shape.takeError();
    if (*shape != out)
      return args.error("bias {} does not broadcast to the output shape {}", (*bias)->str(),
                        y.str());
  }
  return one(Type::tensor(x.dtype(), out));
}

namespace {
/// conv_transpose: weight [in, out / groups, kernel...], each spatial dim
/// (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1.
Result transposedConvolution(const Args &args, const Type &x, const Type &w, const Type *bias) {
  if (auto e = requireRank(args, x, "input", {3, 4}))
    return e;
  if (w.rank() != x.rank())
    return args.error("weight {} must have the rank of input {}", w.str(), x.str());
  if (auto e = requireSameDType(args, x, w, "input and weight"))
    return e;
  size_t spatial = x.rank() - 2;
  auto groups = args.constInt("groups");
  if (!groups)
    return groups.takeError();
  if (*groups < 1)
    return args.error("groups must be positive, got {}", *groups);
  auto stride = spatialList(args, "stride", spatial, std::vector<int64_t>(spatial, 1));
  auto padding = spatialList(args, "padding", spatial, std::vector<int64_t>(spatial, 0));
  auto dilation = spatialList(args, "dilation", spatial, std::vector<int64_t>(spatial, 1));
  auto outPad = spatialList(args, "output_padding", spatial, std::vector<int64_t>(spatial, 0));
  if (!stride || !padding || !dilation || !outPad)
    return llvm::joinErrors(llvm::joinErrors(stride.takeError(), padding.takeError()),
                            llvm::joinErrors(dilation.takeError(), outPad.takeError()));
  if (auto e = requireEqual(args, x.shape()[1], w.shape()[0], "input channels and weight dim 0"))
    return e;
  if (args.env().proveDivisible(w.shape()[0], *groups) != Truth::True)
    return args.error("input channels {} must be divisible by groups {}", w.shape()[0].str(),
                      *groups);
  SymExpr channels = w.shape()[1] * *groups;
  if (bias) {
    if (bias->rank() != 1)
      return args.error("bias must be 1-d, got {}", bias->str());
    if (auto e = requireEqual(args, bias->shape()[0], channels, "bias size and output channels"))
      return e;
  }
  Shape out{x.shape()[0], channels};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t s = (*stride)[i], p = (*padding)[i], d = (*dilation)[i], op = (*outPad)[i];
    if (s < 1 || d < 1 || p < 0 || op < 0)
      return args.error("stride and dilation must be positive, padding and output_padding "
                        "non-negative");
    if (op >= s && op >= d)
      return args.error("output_padding {} must be smaller than stride {} or dilation {}", op, s,
                        d);
    auto k = w.shape()[2 + i].constant();
    if (!k)
      return args.error("kernel size must be static, got {}", w.shape()[2 + i].str());
    SymExpr o = (x.shape()[2 + i] - 1) * s + (d * (*k - 1) + op + 1 - 2 * p);
    if (args.env().proveLE(1, o) != Truth::True)
      return args.error("the output size {} of spatial dim {} is not positive", o.str(), i);
    out.push_back(o);
  }
  return one(Type::tensor(x.dtype(), out));
}
} // namespace

Result metaConvolution(const Args &args) {
  auto input = args.tensor("input");
  auto weight = args.tensor("weight");
  auto bias = args.optionalTensor("bias");
  if (!input || !weight || !bias)
    return llvm::joinErrors(llvm::joinErrors(input.takeError(), weight.takeError()),
                            bias.takeError());
  const Type &x = **input, &w = **weight;
  if (args.boolean("transposed"))
    return transposedConvolution(args, x, w, *bias);
  if (auto e = requireRank(args, x, "input", {3, 4, 5}))
    return e;
  if (w.rank() != x.rank())
    return args.error("weight {} must have the rank of input {}", w.str(), x.str());
  if (auto e = requireSameDType(args, x, w, "input and weight"))
    return e;
  size_t spatial = x.rank() - 2;
  auto groups = args.constInt("groups");
  if (!groups)
    return groups.takeError();
  if (*groups < 1)
    return args.error("groups must be positive, got {}", *groups);
  auto stride = spatialList(args, "stride", spatial, std::vector<int64_t>(spatial, 1));
  auto padding = spatialList(args, "padding", spatial, std::vector<int64_t>(spatial, 0));
  auto dilation = spatialList(args, "dilation", spatial, std::vector<int64_t>(spatial, 1));
  if (!stride || !padding || !dilation)
    return llvm::joinErrors(llvm::joinErrors(stride.takeError(), padding.takeError()),
                            dilation.takeError());
  if (auto e = requireEqual(args, x.shape()[1], w.shape()[1] * *groups,
                            "input channels and weight channels * groups"))
    return e;
  if (args.env().proveDivisible(w.shape()[0], *groups) != Truth::True)
    return args.error("output channels {} must be divisible by groups {}", w.shape()[0].str(),
                      *groups);
  if (*bias) {
    if ((*bias)->rank() != 1)
      return args.error("bias must be 1-d, got {}", (*bias)->str());
    if (auto e =
            requireEqual(args, (*bias)->shape()[0], w.shape()[0], "bias size and output channels"))
      return e;
  }
  Shape out{x.shape()[0], w.shape()[0]};
  for (size_t i = 0; i < spatial; ++i) {
    if ((*stride)[i] < 1 || (*dilation)[i] < 1 || (*padding)[i] < 0)
      return args.error("stride and dilation must be positive and padding non-negative");
    auto k = w.shape()[2 + i].constant();
    if (!k)
      return args.error("kernel size must be static, got {}", w.shape()[2 + i].str());
    SymExpr o = windowOut(x.shape()[2 + i], *k, (*stride)[i], (*padding)[i], (*dilation)[i]);
    if (args.env().proveLE(1, o) == Truth::False)
      return args.error("the kernel ({}) is larger than the padded input ({}) in spatial dim {}",
                        *k, (x.shape()[2 + i] + 2 * (*padding)[i]).str(), i);
    out.push_back(o);
  }
  return one(Type::tensor(x.dtype(), out));
}

namespace {
Result pool2d(const Args &args, bool hasDilation) {
  auto self = args.tensor("self");
  if (!self)
    return self.takeError();
  const Type &x = **self;
  if (auto e = requireRank(args, x, "self", {3, 4}))
    return e;
  auto kernel = spatialList(args, "kernel_size", 2, {});
  if (!kernel)
    return kernel.takeError();
  if (kernel->size() != 2)
    return args.error("kernel_size needs 2 values");
  auto stride = spatialList(args, "stride", 2, *kernel);
  auto padding = spatialList(args, "padding", 2, {0, 0});
  auto dilation = hasDilation ? spatialList(args, "dilation", 2, {1, 1})
                              : llvm::Expected<std::vector<int64_t>>(std::vector<int64_t>{1, 1});
  if (!stride || !padding || !dilation)
    return llvm::joinErrors(llvm::joinErrors(stride.takeError(), padding.takeError()),
                            dilation.takeError());
  bool ceil = args.boolean("ceil_mode");
  Shape out(x.shape().begin(), x.shape().end() - 2);
  for (size_t i = 0; i < 2; ++i) {
    int64_t k = (*kernel)[i], s = (*stride)[i], p = (*padding)[i], d = (*dilation)[i];
    if (k < 1 || s < 1 || d < 1 || p < 0)
      return args.error("kernel_size, stride and dilation must be positive, padding non-negative");
    if (2 * p > d * (k - 1) + 1)
      return args.error("padding {} must be at most half of the effective kernel size {}", p,
                        d * (k - 1) + 1);
    const SymExpr &in = x.shape()[x.rank() - 2 + i];
    SymExpr o = windowOut(in, k, s, p, d);
    if (ceil) {
      // Ceil mode drops a last window that would start in the right padding; that needs the
      // input size, so only static sizes are supported.
      auto n = in.constant();
      if (!n)
        return args.error("ceil_mode needs static spatial dims, got {}", in.str());
      int64_t len = (*n + 2 * p - d * (k - 1) - 1 + (s - 1)) / s + 1;
      if ((len - 1) * s >= *n + p)
        --len;
      o = len;
    }
    if (args.env().proveLE(1, o) == Truth::False)
      return args.error("the window ({}) is larger than the padded input ({})", k,
                        (in + 2 * p).str());
    out.push_back(o);
  }
  return one(Type::tensor(x.dtype(), out));
}
} // namespace

Result metaMaxPool2d(const Args &args) { return pool2d(args, true); }
Result metaAvgPool2d(const Args &args) {
  if (const Attribute *d = args.attr("divisor_override"))
    if (d->getInt().constant().value_or(1) <= 0)
      return args.error("divisor_override must be positive, got {}", d->getInt().str());
  return pool2d(args, false);
}

Result metaAdaptiveAvgPool2d(const Args &args) {
  auto self = args.tensor("self");
  if (!self)
    return self.takeError();
  const Type &x = **self;
  if (auto e = requireRank(args, x, "self", {3, 4}))
    return e;
  std::vector<SymExpr> size = args.ints("output_size");
  if (size.size() != 2)
    return args.error("output_size needs 2 values");
  Shape out(x.shape().begin(), x.shape().end() - 2);
  for (const SymExpr &s : size) {
    if (args.env().proveLE(1, s) != Truth::True)
      return args.error("output_size must be positive, got {}", s.str());
    out.push_back(s);
  }
  return one(Type::tensor(x.dtype(), out));
}

namespace {
// Optional per-channel (or per-feature) tensors of a normalization must have `shape`.
llvm::Error requireShape(const Args &args, llvm::StringRef name, llvm::ArrayRef<SymExpr> shape) {
  auto t = args.optionalTensor(name);
  if (!t)
    return t.takeError();
  if (!*t)
    return llvm::Error::success();
  bool ok = (*t)->rank() == shape.size();
  for (size_t i = 0; ok && i < shape.size(); ++i)
    ok = args.knownEqual((*t)->shape()[i], shape[i]);
  if (!ok)
    return args.error("{} must have shape {}, got {}", name.str(), shapeStr(shape), (*t)->str());
  return llvm::Error::success();
}
} // namespace

Result metaBatchNorm(const Args &args) {
  auto input = args.tensor("input");
  if (!input)
    return input.takeError();
  const Type &x = **input;
  if (args.boolean("training"))
    return args.error("training mode is not supported; aotc exports inference graphs");
  if (x.rank() < 2)
    return args.error("input must have at least 2 dims, got {}", x.str());
  if (!args.node().operand("running_mean") || !args.node().operand("running_var"))
    return args.error("running_mean and running_var are required at inference");
  Shape c{x.shape()[1]};
  for (llvm::StringRef name : {"weight", "bias", "running_mean", "running_var"})
    if (auto e = requireShape(args, name, c))
      return e;
  return one(x);
}

/// layer_norm and rms_norm: `normalized_shape` is the trailing dims of the input, and each of
/// `affine` (weight, bias) has that shape when given.
static Result normalizeTrailing(const Args &args, llvm::ArrayRef<llvm::StringRef> affine) {
  auto input = args.tensor("input");
  if (!input)
    return input.takeError();
  const Type &x = **input;
  std::vector<SymExpr> normalized = args.ints("normalized_shape");
  if (normalized.empty() || normalized.size() > x.rank())
    return args.error("normalized_shape {} must be 1 to {} trailing dims of {}",
                      shapeStr(normalized), x.rank(), x.str());
  for (size_t i = 0; i < normalized.size(); ++i)
    if (!args.knownEqual(normalized[i], x.shape()[x.rank() - normalized.size() + i]))
      return args.error("normalized_shape {} does not match the trailing dims of {}",
                        shapeStr(normalized), x.str());
  for (llvm::StringRef name : affine)
    if (auto e = requireShape(args, name, normalized))
      return e;
  if (!isFloating(x.dtype()))
    return args.error("needs a floating-point input, got {}", x.str());
  return one(x);
}

Result metaLayerNorm(const Args &args) { return normalizeTrailing(args, {"weight", "bias"}); }
Result metaRmsNorm(const Args &args) { return normalizeTrailing(args, {"weight"}); }

Result metaGroupNorm(const Args &args) {
  auto input = args.tensor("input");
  auto groups = args.constInt("num_groups");
  if (!input || !groups)
    return llvm::joinErrors(input.takeError(), groups.takeError());
  const Type &x = **input;
  if (x.rank() < 2)
    return args.error("input must have at least 2 dims, got {}", x.str());
  if (*groups < 1 || args.env().proveDivisible(x.shape()[1], *groups) != Truth::True)
    return args.error("channels {} must be divisible by num_groups {}", x.shape()[1].str(),
                      *groups);
  Shape c{x.shape()[1]};
  for (llvm::StringRef name : {"weight", "bias"})
    if (auto e = requireShape(args, name, c))
      return e;
  return one(x);
}

Result metaSdpa(const Args &args) {
  auto q = args.tensor("query");
  auto k = args.tensor("key");
  auto v = args.tensor("value");
  auto mask = args.optionalTensor("attn_mask");
  if (!q || !k || !v || !mask)
    return llvm::joinErrors(llvm::joinErrors(q.takeError(), k.takeError()),
                            llvm::joinErrors(v.takeError(), mask.takeError()));
  const Type &Q = **q, &K = **k, &V = **v;
  if (Q.rank() < 2 || K.rank() != Q.rank() || V.rank() != Q.rank())
    return args.error("query, key and value must have the same rank >= 2, got {}, {} and {}",
                      Q.str(), K.str(), V.str());
  if (K.dtype() != Q.dtype() || V.dtype() != Q.dtype())
    return args.error("query, key and value must have the same dtype");
  if (!isFloating(Q.dtype()))
    return args.error("needs floating-point inputs, got {}", toString(Q.dtype()).str());
  size_t r = Q.rank();
  if (auto e = requireEqual(args, Q.shape()[r - 1], K.shape()[r - 1],
                            "the embedding dims of query and key"))
    return e;
  if (auto e = requireEqual(args, K.shape()[r - 2], V.shape()[r - 2],
                            "the sequence dims of key and value"))
    return e;
  bool gqa = args.boolean("enable_gqa");
  for (size_t i = 0; i + 2 < r; ++i) {
    // With grouped-query attention, query heads are a multiple of key/value heads.
    bool heads = gqa && i + 3 == r;
    auto kvHeads = K.shape()[i].constant();
    bool qMatches = heads ? kvHeads && *kvHeads > 0 &&
                                args.env().proveDivisible(Q.shape()[i], *kvHeads) == Truth::True
                          : args.knownEqual(Q.shape()[i], K.shape()[i]);
    if (qMatches && args.knownEqual(K.shape()[i], V.shape()[i]))
      continue;
    auto qHeads = Q.shape()[i].constant();
    if (!gqa && i + 3 == r && kvHeads && qHeads && *kvHeads > 0 && *qHeads > *kvHeads &&
        *qHeads % *kvHeads == 0 && args.knownEqual(K.shape()[i], V.shape()[i]))
      return args.error("query has {} heads but key and value have {} (query {}, key {}); for "
                        "grouped-query attention pass enable_gqa = true",
                        *qHeads, *kvHeads, Q.str(), K.str());
    return args.error("the batch dims of query, key and value must match, got {}, {} and {}",
                      Q.str(), K.str(), V.str());
  }
  Shape out(Q.shape().begin(), Q.shape().end() - 1);
  out.push_back(V.shape()[r - 1]);
  if (*mask) {
    if (args.boolean("is_causal"))
      return args.error("is_causal and attn_mask cannot both be set");
    if ((*mask)->dtype() != DType::Bool && (*mask)->dtype() != Q.dtype())
      return args.error("attn_mask must be bool or {}, got {}", toString(Q.dtype()).str(),
                        (*mask)->str());
    Shape scores(Q.shape().begin(), Q.shape().end() - 1);
    scores.push_back(K.shape()[r - 2]);
    Type s = Type::tensor(Q.dtype(), scores);
    auto b = args.broadcast({*mask, &s});
    if (!b)
      return b.takeError();
    if (*b != scores)
      return args.error("attn_mask {} does not broadcast to the scores' shape {}", (*mask)->str(),
                        s.str());
  }
  const Attribute *dropout = args.attr("dropout_p");
  if (dropout && dropout->getFloat() != 0.0)
    return args.error("dropout_p must be 0 at inference, got {}", dropout->str());
  return one(Type::tensor(Q.dtype(), out));
}

Result metaEmbedding(const Args &args) {
  auto weight = args.tensor("weight");
  auto indices = args.tensor("indices");
  if (!weight || !indices)
    return llvm::joinErrors(weight.takeError(), indices.takeError());
  if (auto e = requireRank(args, **weight, "weight", {2}))
    return e;
  if (!isIntegral((*indices)->dtype()))
    return args.error("indices must be an integer tensor, got {}", (*indices)->str());
  Shape out = (*indices)->shape();
  out.push_back((*weight)->shape()[1]);
  return one(Type::tensor((*weight)->dtype(), out));
}

Result metaIndexSelect(const Args &args) {
  auto self = args.tensor("self");
  auto index = args.tensor("index");
  auto dim = args.constInt("dim");
  if (!self || !index || !dim)
    return llvm::joinErrors(llvm::joinErrors(self.takeError(), index.takeError()), dim.takeError());
  auto d = args.normalizeDim(*dim, (*self)->rank(), "dim");
  if (!d)
    return d.takeError();
  if ((*index)->rank() > 1 || !isIntegral((*index)->dtype()))
    return args.error("index must be a 0-d or 1-d integer tensor, got {}", (*index)->str());
  Shape out = (*self)->shape();
  if (!out.empty())
    out[*d] = (*index)->numel();
  return one(Type::tensor((*self)->dtype(), out));
}

Result metaGather(const Args &args) {
  auto self = args.tensor("self");
  auto index = args.tensor("index");
  auto dim = args.constInt("dim");
  if (!self || !index || !dim)
    return llvm::joinErrors(llvm::joinErrors(self.takeError(), index.takeError()), dim.takeError());
  if (auto d = args.normalizeDim(*dim, (*self)->rank(), "dim"); !d)
    return d.takeError();
  if (!isIntegral((*index)->dtype()) || (*index)->rank() != (*self)->rank())
    return args.error("index must be an integer tensor of the rank of self, got {} for {}",
                      (*index)->str(), (*self)->str());
  return one(Type::tensor((*self)->dtype(), (*index)->shape()));
}

} // namespace aotc::meta

namespace aotc::meta {

// sort and topk: the values in self's dtype and their i64 positions along `dim`.
Result metaSort(const Args &args) {
  auto self = args.tensor("self");
  auto dim = args.constInt("dim");
  if (!self || !dim)
    return llvm::joinErrors(self.takeError(), dim.takeError());
  if (auto d = args.normalizeDim(*dim, (*self)->rank(), "dim"); !d)
    return d.takeError();
  return llvm::SmallVector<Type, 1>{**self, Type::tensor(DType::I64, (*self)->shape())};
}

// topk keeps k <= the size of `dim` (provably, when either is symbolic).
Result metaTopk(const Args &args) {
  auto self = args.tensor("self");
  auto dim = args.constInt("dim");
  if (!self || !dim)
    return llvm::joinErrors(self.takeError(), dim.takeError());
  const Type &x = **self;
  auto d = args.normalizeDim(*dim, x.rank(), "dim");
  if (!d)
    return d.takeError();
  const Attribute *k = args.attr("k");
  if (!k || k->kind() != Attribute::Kind::Int)
    return args.error("attribute 'k' is missing");
  SymExpr size = x.rank() ? x.shape()[*d] : SymExpr(1);
  SymExpr kk = k->getInt();
  if (auto c = kk.constant(); c && *c < 0)
    return args.error("k must be non-negative, got {}", *c);
  if (args.env().proveLE(kk, size) != Truth::True)
    return args.error("k ({}) must be at most the size {} of dim {} of {}", kk.str(), size.str(),
                      *dim, x.str());
  Shape shape = x.shape();
  if (x.rank())
    shape[*d] = kk;
  return llvm::SmallVector<Type, 1>{Type::tensor(x.dtype(), shape),
                                    Type::tensor(DType::I64, shape)};
}

} // namespace aotc::meta

namespace aotc::meta {

// scatter / scatter_add: index and src of self's rank, index within src everywhere and within
// self outside `dim` (provably, for symbolic dims); src of self's dtype.
Result metaScatter(const Args &args) {
  auto self = args.tensor("self");
  auto index = args.tensor("index");
  auto src = args.tensor("src");
  auto dim = args.constInt("dim");
  if (!self || !index || !src || !dim)
    return llvm::joinErrors(
        llvm::joinErrors(llvm::joinErrors(self.takeError(), index.takeError()), src.takeError()),
        dim.takeError());
  const Type &x = **self, &i = **index, &s = **src;
  auto d = args.normalizeDim(*dim, x.rank(), "dim");
  if (!d)
    return d.takeError();
  if (!isIntegral(i.dtype()))
    return args.error("index must be an integer tensor, got {}", i.str());
  if (i.rank() != x.rank() || s.rank() != x.rank())
    return args.error("index {} and src {} must have the rank of self {}", i.str(), s.str(),
                      x.str());
  if (s.dtype() != x.dtype())
    return args.error("src {} must have the dtype of self {}", s.str(), x.str());
  for (size_t k = 0; k < i.rank(); ++k) {
    if (args.env().proveLE(i.shape()[k], s.shape()[k]) != Truth::True)
      return args.error("index {} must be no larger than src {} in dim {}", i.str(), s.str(), k);
    if (k != *d && args.env().proveLE(i.shape()[k], x.shape()[k]) != Truth::True)
      return args.error("index {} must be no larger than self {} in dim {}", i.str(), x.str(), k);
  }
  return one(x);
}

} // namespace aotc::meta
