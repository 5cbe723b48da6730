// Free functions of the DSL (creation, combination, convolution, normalization, attention) and
// aotc::cond.
#include "aotc/Functional.h"

#include "Tracer.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

namespace aotc {

namespace {

using A = NamedAttribute;

A attr(const char *name, Attribute a) { return {name, std::move(a)}; }
A intAttr(const char *name, int64_t v) { return {name, Attribute::integer(v)}; }
A boolAttr(const char *name, bool v) { return {name, Attribute::boolean(v)}; }
A floatAttr(const char *name, double v) { return {name, Attribute::floating(v)}; }

Tensor op1(OpKind kind, std::vector<Tensor> operands, std::vector<A> attrs, const Loc &loc) {
  return activeTracer(loc).emit1(kind, operands, std::move(attrs), loc);
}

/// Outside tracing, creation functions make placeholders for parameters and buffers: static
/// shapes, filled at export from the weights file or by their InitSpec.
Tensor placeholder(const SymIntList &size, DType dtype, InitSpec init, const Loc &loc) {
  Shape shape;
  for (const SymInt &s : size) {
    auto c = s.maybe_static();
    if (!c || *c < 0)
      throw DslError(fmt::format("{}:{}: a parameter or buffer needs static, non-negative sizes, "
                                 "got {}",
                                 loc.file_name(), loc.line(), s.str()));
    shape.push_back(*c);
  }
  auto impl = std::make_shared<detail::TensorImpl>();
  impl->type = Type::tensor(dtype, shape);
  impl->loc = toSourceLoc(loc);
  impl->init = init;
  return Tensor(impl);
}

Tensor create(OpKind kind, const SymIntList &size, std::vector<A> attrs, DType dtype, InitSpec init,
              const Loc &loc) {
  if (!Tracer::current())
    return placeholder(size, dtype, init, loc);
  attrs.push_back(attr("size", intsAttr(size)));
  attrs.push_back(attr("dtype", Attribute::dtype(dtype)));
  return op1(kind, {}, std::move(attrs), loc);
}

DType defaultDType(const Scalar &s) {
  return s.kind() == Scalar::Kind::Float ? f32 : s.kind() == Scalar::Kind::Bool ? boolean : i64;
}

} // namespace

namespace {
/// A tensor of host values: a graph constant while tracing, else a placeholder holding them.
Tensor fromHost(HostTensor t, const Loc &loc) {
  auto data = std::make_shared<const HostTensor>(std::move(t));
  if (Tracer *tracer = Tracer::current())
    return tracer->addConstant(std::move(data), loc);
  auto impl = std::make_shared<detail::TensorImpl>();
  Shape shape(data->shape().begin(), data->shape().end());
  impl->type = Type::tensor(data->dtype(), shape);
  impl->loc = toSourceLoc(loc);
  impl->init = {InitSpec::Kind::Data, 0, 0, std::move(data)};
  return Tensor(impl);
}

HostTensor hostTensor(llvm::ArrayRef<double> values, const IntList &shape, DType dtype,
                      const Loc &loc) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      throw DslError(fmt::format("{}:{}: tensor needs non-negative sizes, got {}", loc.file_name(),
                                 loc.line(), describe(dtype, shape)));
    n *= d;
  }
  if (n != static_cast<int64_t>(values.size()))
    throw DslError(fmt::format("{}:{}: tensor {} needs {} values, got {}", loc.file_name(),
                               loc.line(), describe(dtype, shape), n, values.size()));
  HostTensor t(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (isFloating(dtype))
      t.setDouble(i, values[i]);
    else
      t.setInt(i, static_cast<int64_t>(values[i]));
  }
  return t;
}
} // namespace

Tensor tensor(std::initializer_list<double> values, DType dtype, Loc loc) {
  std::vector<double> v(values);
  return fromHost(hostTensor(v, {static_cast<int64_t>(v.size())}, dtype, loc), loc);
}
Tensor tensor(std::initializer_list<int> values, DType dtype, Loc loc) {
  std::vector<double> v(values.begin(), values.end());
  return fromHost(hostTensor(v, {static_cast<int64_t>(v.size())}, dtype, loc), loc);
}
Tensor tensor(std::initializer_list<std::initializer_list<double>> rows, DType dtype, Loc loc) {
  std::vector<double> v;
  size_t width = rows.size() ? rows.begin()->size() : 0;
  for (const auto &row : rows) {
    if (row.size() != width)
      throw DslError(fmt::format("{}:{}: tensor rows must have the same length, got {} and {}",
                                 loc.file_name(), loc.line(), width, row.size()));
    v.insert(v.end(), row.begin(), row.end());
  }
  return fromHost(
      hostTensor(v, {static_cast<int64_t>(rows.size()), static_cast<int64_t>(width)}, dtype, loc),
      loc);
}
Tensor tensor(const std::vector<double> &values, IntList shape, DType dtype, Loc loc) {
  return fromHost(hostTensor(values, shape, dtype, loc), loc);
}
Tensor from_blob(const void *data, IntList shape, DType dtype, Loc loc) {
  for (int64_t d : shape)
    if (d < 0)
      throw DslError(fmt::format("{}:{}: from_blob needs non-negative sizes, got {}",
                                 loc.file_name(), loc.line(), describe(dtype, shape)));
  HostTensor t(dtype, shape);
  if (t.nbytes())
    std::memcpy(t.mutableData(), data, t.nbytes());
  return fromHost(std::move(t), loc);
}

Tensor empty(SymIntList size, DType dtype, Loc loc) {
  return create(OpKind::Zeros, size, {}, dtype, {}, loc);
}
Tensor zeros(SymIntList size, DType dtype, Loc loc) {
  return create(OpKind::Zeros, size, {}, dtype, {}, loc);
}
Tensor ones(SymIntList size, DType dtype, Loc loc) {
  return create(OpKind::Ones, size, {}, dtype, {InitSpec::Kind::Constant, 1}, loc);
}
Tensor full(SymIntList size, const Scalar &value, std::optional<DType> dtype, Loc loc) {
  DType dt = dtype.value_or(defaultDType(value));
  return create(OpKind::Full, size, {attr("fill_value", scalarAttr(value))}, dt,
                {InitSpec::Kind::Constant, value.toDouble()}, loc);
}

Tensor arange(const Scalar &end, std::optional<DType> dtype, Loc loc) {
  return arange(0, end, 1, dtype, loc);
}
Tensor arange(const Scalar &start, const Scalar &end, const Scalar &step,
              std::optional<DType> dtype, Loc loc) {
  std::vector<A> attrs{attr("start", scalarAttr(start)), attr("end", scalarAttr(end)),
                       attr("step", scalarAttr(step))};
  if (dtype)
    attrs.push_back(attr("dtype", Attribute::dtype(*dtype)));
  return op1(OpKind::Arange, {}, std::move(attrs), loc);
}

Tensor relu(const Tensor &x, Loc loc) { return x.relu(loc); }
Tensor gelu(const Tensor &x, const std::string &approximate, Loc loc) {
  return x.gelu(approximate, loc);
}
Tensor silu(const Tensor &x, Loc loc) { return x.silu(loc); }
Tensor sigmoid(const Tensor &x, Loc loc) { return x.sigmoid(loc); }
Tensor tanh(const Tensor &x, Loc loc) { return x.tanh(loc); }
Tensor exp(const Tensor &x, Loc loc) { return x.exp(loc); }
Tensor log(const Tensor &x, Loc loc) { return x.log(loc); }
Tensor sqrt(const Tensor &x, Loc loc) { return x.sqrt(loc); }
Tensor rsqrt(const Tensor &x, Loc loc) { return x.rsqrt(loc); }
Tensor pow(const Tensor &x, const Scalar &e, Loc loc) { return x.pow(e, loc); }
Tensor hardtanh(const Tensor &x, const Scalar &lo, const Scalar &hi, Loc loc) {
  return op1(OpKind::Hardtanh, {x},
             {attr("min_val", scalarAttr(lo)), attr("max_val", scalarAttr(hi))}, loc);
}
Tensor relu6(const Tensor &x, Loc loc) { return hardtanh(x, 0, 6, loc); }
Tensor hardswish(const Tensor &x, Loc loc) { return op1(OpKind::Hardswish, {x}, {}, loc); }
Tensor hardsigmoid(const Tensor &x, Loc loc) { return op1(OpKind::Hardsigmoid, {x}, {}, loc); }
Tensor leaky_relu(const Tensor &x, double slope, Loc loc) {
  return op1(OpKind::LeakyRelu, {x}, {floatAttr("negative_slope", slope)}, loc);
}
Tensor elu(const Tensor &x, double alpha, Loc loc) {
  return op1(OpKind::Elu, {x}, {floatAttr("alpha", alpha)}, loc);
}
Tensor mish(const Tensor &x, Loc loc) { return op1(OpKind::Mish, {x}, {}, loc); }
Tensor softplus(const Tensor &x, double beta, double threshold, Loc loc) {
  return op1(OpKind::Softplus, {x}, {floatAttr("beta", beta), floatAttr("threshold", threshold)},
             loc);
}
Tensor prelu(const Tensor &x, const Tensor &weight, Loc loc) {
  return op1(OpKind::Prelu, {x, weight}, {}, loc);
}
Tensor where(const Tensor &c, const Tensor &x, const Tensor &y, Loc loc) {
  return op1(OpKind::Where, {c, x, y}, {}, loc);
}
namespace {
/// A number as a 0-d tensor of its default dtype, which promotes like torch's wrapped numbers.
Tensor scalarTensor(const Scalar &s, const Loc &loc) {
  return op1(OpKind::Full, {},
             {attr("size", Attribute::intList({})), attr("fill_value", scalarAttr(s)),
              attr("dtype", Attribute::dtype(defaultDType(s)))},
             loc);
}
} // namespace
Tensor where(const Tensor &c, const Tensor &x, const Scalar &y, Loc loc) {
  return where(c, x, scalarTensor(y, loc), loc);
}
Tensor where(const Tensor &c, const Scalar &x, const Tensor &y, Loc loc) {
  return where(c, scalarTensor(x, loc), y, loc);
}
Tensor where(const Tensor &c, const Scalar &x, const Scalar &y, Loc loc) {
  return where(c, scalarTensor(x, loc), scalarTensor(y, loc), loc);
}
Tensor maximum(const Tensor &a, const Tensor &b, Loc loc) { return a.maximum(b, loc); }
#define AOTC_BITWISE(name)                                                                         \
  Tensor name(const Tensor &a, const Tensor &b, Loc loc) { return a.name(b, loc); }                \
  Tensor name(const Tensor &a, const Scalar &b, Loc loc) { return a.name(b, loc); }
AOTC_BITWISE(bitwise_and)
AOTC_BITWISE(bitwise_or)
AOTC_BITWISE(bitwise_xor)
AOTC_BITWISE(bitwise_left_shift)
AOTC_BITWISE(bitwise_right_shift)
#undef AOTC_BITWISE
Tensor bitwise_not(const Tensor &a, Loc loc) { return a.bitwise_not(loc); }
Tensor clamp_min(const Tensor &x, const Scalar &min, Loc loc) { return x.clamp_min(min, loc); }
Tensor clamp_max(const Tensor &x, const Scalar &max, Loc loc) { return x.clamp_max(max, loc); }
Tensor tril(const Tensor &x, int64_t diagonal, Loc loc) { return x.tril(diagonal, loc); }
Tensor triu(const Tensor &x, int64_t diagonal, Loc loc) { return x.triu(diagonal, loc); }
Tensor flip(const Tensor &x, IntList dims, Loc loc) { return x.flip(std::move(dims), loc); }
Tensor roll(const Tensor &x, IntList shifts, IntList dims, Loc loc) {
  return x.roll(std::move(shifts), std::move(dims), loc);
}
Tensor cumsum(const Tensor &x, int64_t dim, Loc loc) { return x.cumsum(dim, std::nullopt, loc); }
Tensor cumprod(const Tensor &x, int64_t dim, Loc loc) { return x.cumprod(dim, std::nullopt, loc); }
Tensor logsumexp(const Tensor &x, IntList dims, bool keepdim, Loc loc) {
  return x.logsumexp(std::move(dims), keepdim, loc);
}
Tensor one_hot(const Tensor &x, int64_t num_classes, Loc loc) {
  if (num_classes < 1)
    throw DslError(fmt::format("{}:{}: one_hot needs a positive num_classes (the largest id is not "
                               "known while tracing), got {}",
                               loc.file_name(), loc.line(), num_classes));
  if (x.dtype() != i64)
    throw DslError(fmt::format("{}:{}: one_hot takes an i64 tensor of class ids, got {}",
                               loc.file_name(), loc.line(), x.str()));
  Tensor classes = arange(num_classes, i64, loc);
  return x.unsqueeze(-1, loc).eq(classes, loc).to(i64, loc);
}
Tensor minimum(const Tensor &a, const Tensor &b, Loc loc) { return a.minimum(b, loc); }
std::tuple<Tensor, Tensor> sort(const Tensor &x, int64_t dim, bool descending, Loc loc) {
  return x.sort(dim, descending, loc);
}
Tensor argsort(const Tensor &x, int64_t dim, bool descending, Loc loc) {
  return x.argsort(dim, descending, loc);
}
std::tuple<Tensor, Tensor> topk(const Tensor &x, const SymInt &k, int64_t dim, bool largest,
                                bool sorted, Loc loc) {
  return x.topk(k, dim, largest, sorted, loc);
}
Tensor scatter(const Tensor &x, int64_t dim, const Tensor &index, const Tensor &src, Loc loc) {
  return x.scatter(dim, index, src, loc);
}
Tensor scatter_add(const Tensor &x, int64_t dim, const Tensor &index, const Tensor &src, Loc loc) {
  return x.scatter_add(dim, index, src, loc);
}
Tensor softmax(const Tensor &x, int64_t dim, Loc loc) { return x.softmax(dim, loc); }
Tensor log_softmax(const Tensor &x, int64_t dim, Loc loc) { return x.log_softmax(dim, loc); }
Tensor matmul(const Tensor &a, const Tensor &b, Loc loc) { return a.matmul(b, loc); }
Tensor mm(const Tensor &a, const Tensor &b, Loc loc) { return a.mm(b, loc); }
Tensor bmm(const Tensor &a, const Tensor &b, Loc loc) { return a.bmm(b, loc); }

Tensor addmm(const Tensor &bias, const Tensor &a, const Tensor &b, const Scalar &beta,
             const Scalar &alpha, Loc loc) {
  return op1(OpKind::Addmm, {bias, a, b},
             {attr("beta", scalarAttr(beta)), attr("alpha", scalarAttr(alpha))}, loc);
}
Tensor linear(const Tensor &x, const Tensor &w, const Tensor &b, Loc loc) {
  return op1(OpKind::Linear, {x, w, b}, {}, loc);
}

Tensor cat(const std::vector<Tensor> &ts, int64_t dim, Loc loc) {
  return op1(OpKind::Cat, ts, {intAttr("dim", dim)}, loc);
}
Tensor stack(const std::vector<Tensor> &ts, int64_t dim, Loc loc) {
  return op1(OpKind::Stack, ts, {intAttr("dim", dim)}, loc);
}

namespace {
Tensor convolution(const Tensor &x, const Tensor &w, const Tensor &b, IntList stride,
                   IntList padding, IntList dilation, int64_t groups, const Loc &loc) {
  IntList zeros(stride.size(), 0);
  return op1(OpKind::Convolution, {x, w, b},
             {attr("stride", intsAttr(stride)), attr("padding", intsAttr(padding)),
              attr("dilation", intsAttr(dilation)), boolAttr("transposed", false),
              attr("output_padding", intsAttr(zeros)), intAttr("groups", groups)},
             loc);
}
} // namespace

Tensor conv1d(const Tensor &x, const Tensor &w, const Tensor &b, int64_t stride, int64_t padding,
              int64_t dilation, int64_t groups, Loc loc) {
  return convolution(x, w, b, {stride}, {padding}, {dilation}, groups, loc);
}
Tensor conv2d(const Tensor &x, const Tensor &w, const Tensor &b, IntList stride, IntList padding,
              IntList dilation, int64_t groups, Loc loc) {
  auto two = [](IntList v) { return v.size() == 1 ? IntList{v[0], v[0]} : v; };
  return convolution(x, w, b, two(stride), two(padding), two(dilation), groups, loc);
}

Tensor max_pool2d(const Tensor &x, IntList k, IntList stride, IntList padding, IntList dilation,
                  bool ceil_mode, Loc loc) {
  return op1(OpKind::MaxPool2d, {x},
             {attr("kernel_size", intsAttr(k)), attr("stride", intsAttr(stride)),
              attr("padding", intsAttr(padding)), attr("dilation", intsAttr(dilation)),
              boolAttr("ceil_mode", ceil_mode)},
             loc);
}
Tensor avg_pool2d(const Tensor &x, IntList k, IntList stride, IntList padding, bool ceil_mode,
                  bool count_include_pad, Loc loc) {
  return op1(OpKind::AvgPool2d, {x},
             {attr("kernel_size", intsAttr(k)), attr("stride", intsAttr(stride)),
              attr("padding", intsAttr(padding)), boolAttr("ceil_mode", ceil_mode),
              boolAttr("count_include_pad", count_include_pad)},
             loc);
}
Tensor adaptive_avg_pool2d(const Tensor &x, IntList output_size, Loc loc) {
  return op1(OpKind::AdaptiveAvgPool2d, {x}, {attr("output_size", intsAttr(output_size))}, loc);
}

Tensor batch_norm(const Tensor &x, const Tensor &mean, const Tensor &var, const Tensor &w,
                  const Tensor &b, double eps, Loc loc) {
  return op1(OpKind::BatchNorm, {x, w, b, mean, var},
             {boolAttr("training", false), floatAttr("momentum", 0.1), floatAttr("eps", eps),
              boolAttr("cudnn_enabled", true)},
             loc);
}
Tensor layer_norm(const Tensor &x, IntList shape, const Tensor &w, const Tensor &b, double eps,
                  Loc loc) {
  return op1(OpKind::LayerNorm, {x, w, b},
             {attr("normalized_shape", intsAttr(shape)), floatAttr("eps", eps)}, loc);
}
Tensor rms_norm(const Tensor &x, IntList shape, const Tensor &w, std::optional<double> eps,
                Loc loc) {
  std::vector<A> attrs{attr("normalized_shape", intsAttr(shape))};
  if (eps)
    attrs.push_back(floatAttr("eps", *eps));
  return op1(OpKind::RmsNorm, {x, w}, std::move(attrs), loc);
}
Tensor group_norm(const Tensor &x, int64_t groups, const Tensor &w, const Tensor &b, double eps,
                  Loc loc) {
  return op1(OpKind::GroupNorm, {x, w, b}, {intAttr("num_groups", groups), floatAttr("eps", eps)},
             loc);
}
Tensor embedding(const Tensor &indices, const Tensor &weight, Loc loc) {
  return op1(OpKind::Embedding, {weight, indices}, {}, loc);
}

// Resampling, transposed convolution and 1-d pooling.
namespace {
[[noreturn]] void dslFail(const Loc &loc, const std::string &message) {
  throw DslError(fmt::format("{}:{}: {}", loc.file_name(), loc.line(), message));
}

/// One value per resampled dim from a list of one or of `n` (torch's _interp_output_size).
template <typename T>
std::vector<T> perDim(const std::vector<T> &v, size_t n, const char *what, const Loc &loc) {
  if (v.size() == 1)
    return std::vector<T>(n, v[0]);
  if (v.size() != n)
    dslFail(loc, fmt::format("interpolate needs 1 or {} values of {}, got {}", n, what, v.size()));
  return v;
}
} // namespace

Tensor pad(const Tensor &x, IntList pads, PadMode mode, double value, Loc loc) {
  static const char *const Names[] = {"constant", "reflect", "replicate"};
  std::vector<A> attrs{attr("pad", intsAttr(pads)),
                       attr("mode", Attribute::string(Names[static_cast<int>(mode)]))};
  if (mode == kConstant && value != 0)
    attrs.push_back(floatAttr("value", value));
  return op1(OpKind::Pad, {x}, std::move(attrs), loc);
}

Tensor interpolate(const Tensor &x, std::optional<SymIntList> size,
                   std::optional<std::vector<double>> scale_factor, InterpolateMode mode,
                   std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor,
                   Loc loc) {
  int64_t rank = x.dim();
  if (rank != 3 && rank != 4)
    dslFail(loc, fmt::format("interpolate takes a 3-d [N, C, W] or 4-d [N, C, H, W] input, got {}",
                             x.str()));
  size_t spatial = rank - 2;
  bool linear = mode == kLinear || mode == kBilinear || mode == kBicubic;
  if (mode == kLinear && rank != 3)
    dslFail(loc, fmt::format("interpolate mode linear needs a 3-d input, got {}", x.str()));
  if ((mode == kBilinear || mode == kBicubic) && rank != 4)
    dslFail(loc, fmt::format("interpolate mode {} needs a 4-d input, got {}",
                             mode == kBilinear ? "bilinear" : "bicubic", x.str()));
  if (align_corners && !linear)
    dslFail(loc, "align_corners can only be set with the interpolating modes linear, bilinear "
                 "and bicubic");
  if (size.has_value() == scale_factor.has_value())
    dslFail(loc, "interpolate needs exactly one of size and scale_factor");
  SymIntList sizes = x.sizes();
  SymIntList outSize;
  std::vector<std::optional<double>> scales(spatial);
  if (size) {
    outSize = perDim(*size, spatial, "size", loc);
  } else {
    std::vector<double> factors = perDim(*scale_factor, spatial, "scale_factor", loc);
    for (size_t i = 0; i < spatial; ++i) {
      const SymInt &in = sizes[2 + i];
      double f = factors[i];
      if (!(f > 0))
        dslFail(loc, fmt::format("interpolate needs a positive scale_factor, got {}", f));
      if (auto c = in.maybe_static()) {
        outSize.push_back(static_cast<int64_t>(std::floor(static_cast<double>(*c) * f)));
      } else if (f == std::floor(f)) {
        outSize.push_back(in * static_cast<int64_t>(f));
      } else {
        dslFail(loc, fmt::format("interpolate: scale_factor {} of dim {} ({}) is not a whole "
                                 "number, so the output size floor({} * {}) is not an integer "
                                 "expression of the dim; pass size instead",
                                 f, 2 + i, in.str(), in.str(), f));
      }
      if (!recompute_scale_factor.value_or(false))
        scales[i] = f;
    }
  }
  OpKind kind;
  switch (mode) {
  case InterpolateMode::Nearest:
    kind = spatial == 1 ? OpKind::UpsampleNearest1d : OpKind::UpsampleNearest2d;
    break;
  case InterpolateMode::NearestExact:
    kind = spatial == 1 ? OpKind::UpsampleNearestExact1d : OpKind::UpsampleNearestExact2d;
    break;
  case InterpolateMode::Linear:
    kind = OpKind::UpsampleLinear1d;
    break;
  case InterpolateMode::Bilinear:
    kind = OpKind::UpsampleBilinear2d;
    break;
  case InterpolateMode::Bicubic:
    kind = OpKind::UpsampleBicubic2d;
    break;
  }
  std::vector<A> attrs{attr("output_size", intsAttr(outSize))};
  if (linear)
    attrs.push_back(boolAttr("align_corners", align_corners.value_or(false)));
  for (size_t i = 0; i < spatial; ++i)
    if (scales[i])
      attrs.push_back(floatAttr(spatial == 1 ? "scales"
                                : i == 0     ? "scales_h"
                                             : "scales_w",
                                *scales[i]));
  return op1(kind, {x}, std::move(attrs), loc);
}

Tensor conv3d(const Tensor &x, const Tensor &w, const Tensor &b, IntList stride, IntList padding,
              IntList dilation, int64_t groups, Loc loc) {
  auto three = [](IntList v) { return v.size() == 1 ? IntList{v[0], v[0], v[0]} : v; };
  return convolution(x, w, b, three(stride), three(padding), three(dilation), groups, loc);
}

namespace {
Tensor convTranspose(const Tensor &x, const Tensor &w, const Tensor &b, IntList stride,
                     IntList padding, IntList outputPadding, int64_t groups, IntList dilation,
                     const Loc &loc) {
  return op1(OpKind::Convolution, {x, w, b},
             {attr("stride", intsAttr(stride)), attr("padding", intsAttr(padding)),
              attr("dilation", intsAttr(dilation)), boolAttr("transposed", true),
              attr("output_padding", intsAttr(outputPadding)), intAttr("groups", groups)},
             loc);
}
} // namespace

Tensor conv_transpose1d(const Tensor &x, const Tensor &w, const Tensor &b, int64_t stride,
                        int64_t padding, int64_t output_padding, int64_t groups, int64_t dilation,
                        Loc loc) {
  return convTranspose(x, w, b, {stride}, {padding}, {output_padding}, groups, {dilation}, loc);
}
Tensor conv_transpose2d(const Tensor &x, const Tensor &w, const Tensor &b, IntList stride,
                        IntList padding, IntList output_padding, int64_t groups, IntList dilation,
                        Loc loc) {
  auto two = [](IntList v) { return v.size() == 1 ? IntList{v[0], v[0]} : v; };
  return convTranspose(x, w, b, two(stride), two(padding), two(output_padding), groups,
                       two(dilation), loc);
}

namespace {
/// A 1-d pooling as the 2-d one over a height of 1 ([N, C, L] or [C, L]).
Tensor pool1d(const Tensor &x, const char *name,
              const std::function<Tensor(const Tensor &)> &pool2d, const Loc &loc) {
  if (x.dim() != 2 && x.dim() != 3)
    dslFail(loc,
            fmt::format("{} takes a 2-d [C, L] or 3-d [N, C, L] input, got {}", name, x.str()));
  return pool2d(x.unsqueeze(-2, loc)).squeeze(-2, loc);
}
} // namespace

Tensor max_pool1d(const Tensor &x, int64_t k, std::optional<int64_t> stride, int64_t padding,
                  int64_t dilation, bool ceil_mode, Loc loc) {
  return pool1d(
      x, "max_pool1d",
      [&](const Tensor &x2) {
        return max_pool2d(x2, {1, k}, {1, stride.value_or(k)}, {0, padding}, {1, dilation},
                          ceil_mode, loc);
      },
      loc);
}
Tensor avg_pool1d(const Tensor &x, int64_t k, std::optional<int64_t> stride, int64_t padding,
                  bool ceil_mode, bool count_include_pad, Loc loc) {
  return pool1d(
      x, "avg_pool1d",
      [&](const Tensor &x2) {
        return avg_pool2d(x2, {1, k}, {1, stride.value_or(k)}, {0, padding}, ceil_mode,
                          count_include_pad, loc);
      },
      loc);
}
Tensor adaptive_avg_pool1d(const Tensor &x, int64_t output_size, Loc loc) {
  return pool1d(
      x, "adaptive_avg_pool1d",
      [&](const Tensor &x2) {
        return adaptive_avg_pool2d(x2, {1, output_size}, loc);
      },
      loc);
}

Tensor scaled_dot_product_attention(const Tensor &q, const Tensor &k, const Tensor &v,
                                    const Tensor &mask, bool is_causal, std::optional<double> scale,
                                    bool enable_gqa, Loc loc) {
  std::vector<A> attrs{boolAttr("is_causal", is_causal), boolAttr("enable_gqa", enable_gqa)};
  if (scale)
    attrs.push_back(floatAttr("scale", *scale));
  return op1(OpKind::Sdpa, {q, k, v, mask}, std::move(attrs), loc);
}

std::vector<Tensor> cond(const Tensor &pred, const Branch &then_fn, const Branch &else_fn,
                         const std::vector<Tensor> &operands, Loc loc) {
  Tracer &t = activeTracer(loc);
  std::vector<Value *> lifted;
  // Branches may use tensors from outside (parameters, earlier values); those become extra
  // operands. The first trace finds them; if it found any, a second trace gives both branches
  // the same argument list.
  for (int attempt = 0; attempt < 2; ++attempt) {
    size_t liftedBefore = lifted.size();
    std::vector<Tensor> all{pred};
    all.insert(all.end(), operands.begin(), operands.end());
    std::vector<Value *> values;
    for (const Tensor &o : all)
      values.push_back(t.valueOf(o, loc));
    Node *node = t.beginNode(OpKind::Cond, values, loc);
    t.traceRegion(node->addRegion(), operands, lifted, then_fn);
    t.traceRegion(node->addRegion(), operands, lifted, else_fn);
    bool complete = node->region(0).numArguments() == operands.size() + lifted.size() &&
                    node->region(1).numArguments() == operands.size() + lifted.size();
    if (complete && (attempt == 1 || lifted.size() == liftedBefore))
      return t.finishNode(node, lifted, loc);
    t.discardNode(node);
  }
  t.fail(toSourceLoc(loc), "the branches of cond use different tensors from outside on a second "
                           "trace; branches must be deterministic");
  throw TraceAbort();
}

} // namespace aotc
