// Tensor methods and operators of the DSL: each records one op of the IR (Ops.def) at the
// caller's line.
#include "aotc/Functional.h"

#include "Tracer.h"

#include <fmt/format.h>

namespace aotc {

namespace {

using A = NamedAttribute;

Tensor op1(OpKind kind, std::vector<Tensor> operands, std::vector<A> attrs, const Loc &loc) {
  return activeTracer(loc).emit1(kind, operands, std::move(attrs), loc);
}

A attr(const char *name, Attribute a) { return {name, std::move(a)}; }
A intAttr(const char *name, int64_t v) { return {name, Attribute::integer(v)}; }
A boolAttr(const char *name, bool v) { return {name, Attribute::boolean(v)}; }

/// In place: the functional result becomes `self`'s value; on a buffer, a mutation of the entry.
Tensor &assign(Tensor &self, const Tensor &result, const Loc &loc) {
  Tracer &t = activeTracer(loc);
  detail::TensorImpl &impl = *self.impl();
  const detail::TensorImpl &r = *result.impl();
  if (!(r.type == impl.type)) {
    t.fail(toSourceLoc(loc), fmt::format("an in-place op would change {} into {}; in-place "
                                         "results must keep the dtype and shape",
                                         impl.type.str(), r.type.str()));
    throw TraceAbort();
  }
  if (impl.isState && impl.stateKind == InputKind::Parameter) {
    t.fail(toSourceLoc(loc), fmt::format("parameter \"{}\" is written in place; only buffers "
                                         "can be mutated by an entry",
                                         impl.stateName));
    throw TraceAbort();
  }
  impl.value = r.value;
  impl.generation = r.generation;
  if (impl.isState)
    t.noteBufferWrite(self.impl());
  return self;
}

} // namespace

int64_t Tensor::dim() const { return static_cast<int64_t>(Impl->type.rank()); }

// Sizes in user code are over root dims (`2*half`, not `twice_half`), so arithmetic on them
// simplifies.
static SymInt sizeOf(const SymExpr &d) {
  Tracer *t = Tracer::current();
  return makeSym(t ? t->env().expand(d) : d);
}

SymInt Tensor::size(int64_t d, Loc loc) const {
  int64_t r = dim();
  if (d < -r || d >= r)
    throw DslError(
        fmt::format("{}:{}: dim {} is out of range for {}", loc.file_name(), loc.line(), d, str()));
  return sizeOf(Impl->type.shape()[d < 0 ? d + r : d]);
}

SymIntList Tensor::sizes() const {
  SymIntList out;
  for (const SymExpr &d : Impl->type.shape())
    out.push_back(sizeOf(d));
  return out;
}

SymInt Tensor::numel() const { return makeSym(Impl->type.numel()); }
DType Tensor::dtype() const { return Impl->type.dtype(); }
std::string Tensor::str() const { return Impl ? Impl->type.str() : "<undefined>"; }

#define AOTC_UNARY(method, Kind)                                                                   \
  Tensor Tensor::method(Loc loc) const { return op1(OpKind::Kind, {*this}, {}, loc); }
AOTC_UNARY(abs, Abs)
AOTC_UNARY(neg, Neg)
AOTC_UNARY(exp, Exp)
AOTC_UNARY(log, Log)
AOTC_UNARY(log1p, Log1p)
AOTC_UNARY(sqrt, Sqrt)
AOTC_UNARY(rsqrt, Rsqrt)
AOTC_UNARY(reciprocal, Reciprocal)
AOTC_UNARY(sin, Sin)
AOTC_UNARY(cos, Cos)
AOTC_UNARY(tanh, Tanh)
AOTC_UNARY(erf, Erf)
AOTC_UNARY(sigmoid, Sigmoid)
AOTC_UNARY(floor, Floor)
AOTC_UNARY(ceil, Ceil)
AOTC_UNARY(round, Round)
AOTC_UNARY(relu, Relu)
AOTC_UNARY(silu, Silu)
AOTC_UNARY(logical_not, LogicalNot)
AOTC_UNARY(bitwise_not, BitwiseNot)
AOTC_UNARY(contiguous, Contiguous)
#undef AOTC_UNARY

Tensor Tensor::gelu(const std::string &approximate, Loc loc) const {
  return op1(OpKind::Gelu, {*this}, {attr("approximate", Attribute::string(approximate))}, loc);
}

Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max, Loc loc) const {
  std::vector<A> attrs;
  if (min)
    attrs.push_back(attr("min", scalarAttr(*min)));
  if (max)
    attrs.push_back(attr("max", scalarAttr(*max)));
  return op1(OpKind::Clamp, {*this}, attrs, loc);
}

Tensor Tensor::clamp_min(const Scalar &min, Loc loc) const { return clamp(min, std::nullopt, loc); }
Tensor Tensor::clamp_max(const Scalar &max, Loc loc) const { return clamp(std::nullopt, max, loc); }

Tensor Tensor::pow(const Scalar &e, Loc loc) const {
  return op1(OpKind::PowScalar, {*this}, {attr("exponent", scalarAttr(e))}, loc);
}
Tensor Tensor::pow(const Tensor &e, Loc loc) const {
  return op1(OpKind::PowTensor, {*this, e}, {}, loc);
}
Tensor Tensor::to(DType dtype, Loc loc) const {
  return op1(OpKind::ToCopy, {*this}, {attr("dtype", Attribute::dtype(dtype))}, loc);
}

Tensor Tensor::add(const Tensor &o, const Scalar &alpha, Loc loc) const {
  return op1(OpKind::AddTensor, {*this, o}, {attr("alpha", scalarAttr(alpha))}, loc);
}
Tensor Tensor::sub(const Tensor &o, const Scalar &alpha, Loc loc) const {
  return op1(OpKind::SubTensor, {*this, o}, {attr("alpha", scalarAttr(alpha))}, loc);
}

#define AOTC_BINARY(method, Kind)                                                                  \
  Tensor Tensor::method(const Tensor &o, Loc loc) const {                                          \
    return op1(OpKind::Kind, {*this, o}, {}, loc);                                                 \
  }
AOTC_BINARY(mul, MulTensor)
AOTC_BINARY(div, DivTensor)
AOTC_BINARY(remainder, Remainder)
AOTC_BINARY(maximum, Maximum)
AOTC_BINARY(minimum, Minimum)
AOTC_BINARY(eq, EqTensor)
AOTC_BINARY(ne, NeTensor)
AOTC_BINARY(lt, LtTensor)
AOTC_BINARY(le, LeTensor)
AOTC_BINARY(gt, GtTensor)
AOTC_BINARY(ge, GeTensor)
AOTC_BINARY(logical_and, LogicalAnd)
AOTC_BINARY(logical_or, LogicalOr)
AOTC_BINARY(bitwise_and, BitwiseAndTensor)
AOTC_BINARY(bitwise_or, BitwiseOrTensor)
AOTC_BINARY(bitwise_xor, BitwiseXorTensor)
AOTC_BINARY(bitwise_left_shift, BitwiseLeftShiftTensor)
AOTC_BINARY(bitwise_right_shift, BitwiseRightShiftTensor)
AOTC_BINARY(matmul, Matmul)
AOTC_BINARY(mm, Mm)
AOTC_BINARY(bmm, Bmm)
#undef AOTC_BINARY

#define AOTC_BINARY_SCALAR(method, Kind)                                                           \
  Tensor Tensor::method(const Scalar &o, Loc loc) const {                                          \
    return op1(OpKind::Kind, {*this}, {attr("other", scalarAttr(o))}, loc);                        \
  }
AOTC_BINARY_SCALAR(bitwise_and, BitwiseAndScalar)
AOTC_BINARY_SCALAR(bitwise_or, BitwiseOrScalar)
AOTC_BINARY_SCALAR(bitwise_xor, BitwiseXorScalar)
AOTC_BINARY_SCALAR(bitwise_left_shift, BitwiseLeftShiftScalar)
AOTC_BINARY_SCALAR(bitwise_right_shift, BitwiseRightShiftScalar)
#undef AOTC_BINARY_SCALAR

Tensor Tensor::div(const Tensor &o, const std::string &mode, Loc loc) const {
  return op1(OpKind::DivTensorMode, {*this, o}, {attr("rounding_mode", Attribute::string(mode))},
             loc);
}

Tensor Tensor::addcmul(const Tensor &t1, const Tensor &t2, const Scalar &value, Loc loc) const {
  return op1(OpKind::Addcmul, {*this, t1, t2}, {attr("value", scalarAttr(value))}, loc);
}

Tensor Tensor::lerp(const Tensor &end, const Tensor &weight, Loc loc) const {
  return op1(OpKind::Lerp, {*this, end, weight}, {}, loc);
}

Tensor Tensor::masked_fill(const Tensor &mask, const Scalar &value, Loc loc) const {
  // torch's masked_fill keeps self's dtype: the fill value is a 0-d tensor of that dtype.
  Tensor fill = op1(OpKind::Full, {},
                    {attr("size", Attribute::intList({})), attr("fill_value", scalarAttr(value)),
                     attr("dtype", Attribute::dtype(dtype()))},
                    loc);
  return op1(OpKind::Where, {mask, fill, *this}, {}, loc);
}

// An empty list of dims reduces everything, as None does; the graph says None.
static std::vector<A> reduceAttrs(const IntList &dims, bool keepdim) {
  std::vector<A> attrs{boolAttr("keepdim", keepdim)};
  if (!dims.empty())
    attrs.push_back(attr("dim", intsAttr(dims)));
  return attrs;
}

Tensor Tensor::sum(IntList dims, bool keepdim, std::optional<DType> dt, Loc loc) const {
  std::vector<A> attrs = reduceAttrs(dims, keepdim);
  if (dt)
    attrs.push_back(attr("dtype", Attribute::dtype(*dt)));
  return op1(OpKind::Sum, {*this}, attrs, loc);
}
Tensor Tensor::mean(IntList dims, bool keepdim, std::optional<DType> dt, Loc loc) const {
  std::vector<A> attrs = reduceAttrs(dims, keepdim);
  if (dt)
    attrs.push_back(attr("dtype", Attribute::dtype(*dt)));
  return op1(OpKind::Mean, {*this}, attrs, loc);
}
Tensor Tensor::amax(IntList dims, bool keepdim, Loc loc) const {
  return op1(OpKind::Amax, {*this}, {attr("dim", intsAttr(dims)), boolAttr("keepdim", keepdim)},
             loc);
}
Tensor Tensor::amin(IntList dims, bool keepdim, Loc loc) const {
  return op1(OpKind::Amin, {*this}, {attr("dim", intsAttr(dims)), boolAttr("keepdim", keepdim)},
             loc);
}
Tensor Tensor::prod(int64_t d, bool keepdim, Loc loc) const {
  return op1(OpKind::Prod, {*this}, {intAttr("dim", d), boolAttr("keepdim", keepdim)}, loc);
}
Tensor Tensor::argmax(std::optional<int64_t> d, bool keepdim, Loc loc) const {
  std::vector<A> attrs{boolAttr("keepdim", keepdim)};
  if (d)
    attrs.push_back(intAttr("dim", *d));
  return op1(OpKind::Argmax, {*this}, attrs, loc);
}
Tensor Tensor::logsumexp(IntList dims, bool keepdim, Loc loc) const {
  return op1(OpKind::Logsumexp, {*this},
             {attr("dim", intsAttr(dims)), boolAttr("keepdim", keepdim)}, loc);
}
static std::vector<A> varianceAttrs(const IntList &dims, const std::optional<Scalar> &correction,
                                    bool keepdim) {
  std::vector<A> attrs = reduceAttrs(dims, keepdim);
  if (correction)
    attrs.push_back(attr("correction", scalarAttr(*correction)));
  return attrs;
}
Tensor Tensor::var(IntList dims, std::optional<Scalar> correction, bool keepdim, Loc loc) const {
  return op1(OpKind::Var, {*this}, varianceAttrs(dims, correction, keepdim), loc);
}
Tensor Tensor::std(IntList dims, std::optional<Scalar> correction, bool keepdim, Loc loc) const {
  return op1(OpKind::Std, {*this}, varianceAttrs(dims, correction, keepdim), loc);
}
Tensor Tensor::norm(const Scalar &p, IntList dims, bool keepdim, Loc loc) const {
  std::vector<A> attrs = reduceAttrs(dims, keepdim);
  attrs.push_back(attr("ord", scalarAttr(p)));
  return op1(OpKind::VectorNorm, {*this}, attrs, loc);
}
static std::vector<A> scanAttrs(int64_t d, const std::optional<DType> &dt) {
  std::vector<A> attrs{intAttr("dim", d)};
  if (dt)
    attrs.push_back(attr("dtype", Attribute::dtype(*dt)));
  return attrs;
}
Tensor Tensor::cumsum(int64_t d, std::optional<DType> dt, Loc loc) const {
  return op1(OpKind::Cumsum, {*this}, scanAttrs(d, dt), loc);
}
Tensor Tensor::cumprod(int64_t d, std::optional<DType> dt, Loc loc) const {
  return op1(OpKind::Cumprod, {*this}, scanAttrs(d, dt), loc);
}
Tensor Tensor::softmax(int64_t d, Loc loc) const {
  return op1(OpKind::Softmax, {*this}, {intAttr("dim", d)}, loc);
}
Tensor Tensor::log_softmax(int64_t d, Loc loc) const {
  return op1(OpKind::LogSoftmax, {*this}, {intAttr("dim", d)}, loc);
}

Tensor Tensor::view(SymIntList size, Loc loc) const {
  return op1(OpKind::View, {*this}, {attr("size", intsAttr(size))}, loc);
}
Tensor Tensor::reshape(SymIntList shape, Loc loc) const {
  return op1(OpKind::Reshape, {*this}, {attr("shape", intsAttr(shape))}, loc);
}
Tensor Tensor::permute(IntList dims, Loc loc) const {
  return op1(OpKind::Permute, {*this}, {attr("dims", intsAttr(dims))}, loc);
}
Tensor Tensor::transpose(int64_t d0, int64_t d1, Loc loc) const {
  return op1(OpKind::Transpose, {*this}, {intAttr("dim0", d0), intAttr("dim1", d1)}, loc);
}
Tensor Tensor::t(Loc loc) const {
  if (dim() > 2)
    throw DslError(fmt::format("{}:{}: t() expects a tensor with at most 2 dims, got {}",
                               loc.file_name(), loc.line(), str()));
  return dim() < 2 ? *this : transpose(0, 1, loc);
}
Tensor Tensor::expand(SymIntList size, Loc loc) const {
  return op1(OpKind::Expand, {*this}, {attr("size", intsAttr(size))}, loc);
}
Tensor Tensor::squeeze(int64_t d, Loc loc) const {
  return op1(OpKind::Squeeze, {*this}, {attr("dim", intsAttr(IntList{d}))}, loc);
}
Tensor Tensor::unsqueeze(int64_t d, Loc loc) const {
  return op1(OpKind::Unsqueeze, {*this}, {intAttr("dim", d)}, loc);
}
Tensor Tensor::slice(int64_t d, std::optional<SymInt> start, std::optional<SymInt> end,
                     int64_t step, Loc loc) const {
  std::vector<A> attrs{intAttr("dim", d), intAttr("step", step)};
  if (start)
    attrs.push_back(attr("start", Attribute::integer(symOf(*start))));
  if (end)
    attrs.push_back(attr("end", Attribute::integer(symOf(*end))));
  return op1(OpKind::Slice, {*this}, attrs, loc);
}
Tensor Tensor::select(int64_t d, const SymInt &index, Loc loc) const {
  return op1(OpKind::Select, {*this},
             {intAttr("dim", d), attr("index", Attribute::integer(symOf(index)))}, loc);
}
Tensor Tensor::flatten(int64_t s, int64_t e, Loc loc) const {
  return op1(OpKind::Flatten, {*this}, {intAttr("start_dim", s), intAttr("end_dim", e)}, loc);
}
std::vector<Tensor> Tensor::split(int64_t size, int64_t d, Loc loc) const {
  return activeTracer(loc).emit(OpKind::Split, {*this},
                                {intAttr("split_size", size), intAttr("dim", d)}, loc);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d, Loc loc) const {
  int64_t n = this->size(d, loc).value(loc);
  if (chunks < 1)
    throw DslError(fmt::format("{}:{}: chunk needs a positive number of chunks, got {}",
                               loc.file_name(), loc.line(), chunks));
  return split((n + chunks - 1) / chunks, d, loc);
}
std::vector<Tensor> Tensor::unbind(int64_t d, Loc loc) const {
  int64_t n = this->size(d, loc).value(loc);
  std::vector<Tensor> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(select(d, i, loc));
  return out;
}
Tensor Tensor::flip(IntList dims, Loc loc) const {
  return op1(OpKind::Flip, {*this}, {attr("dims", intsAttr(dims))}, loc);
}
Tensor Tensor::roll(IntList shifts, IntList dims, Loc loc) const {
  return op1(OpKind::Roll, {*this},
             {attr("shifts", intsAttr(shifts)), attr("dims", intsAttr(dims))}, loc);
}
Tensor Tensor::repeat(SymIntList repeats, Loc loc) const {
  return op1(OpKind::Repeat, {*this}, {attr("repeats", intsAttr(repeats))}, loc);
}
Tensor Tensor::tril(int64_t diagonal, Loc loc) const {
  return op1(OpKind::Tril, {*this}, {intAttr("diagonal", diagonal)}, loc);
}
Tensor Tensor::triu(int64_t diagonal, Loc loc) const {
  return op1(OpKind::Triu, {*this}, {intAttr("diagonal", diagonal)}, loc);
}
// Sorting and selecting.
static std::tuple<Tensor, Tensor> pair(const std::vector<Tensor> &results) {
  return {results.at(0), results.at(1)};
}
std::tuple<Tensor, Tensor> Tensor::sort(int64_t d, bool descending, Loc loc) const {
  return sort(std::nullopt, d, descending, loc);
}
std::tuple<Tensor, Tensor> Tensor::sort(std::optional<bool> stable, int64_t d, bool descending,
                                        Loc loc) const {
  std::vector<A> attrs;
  if (stable)
    attrs.push_back(boolAttr("stable", *stable));
  attrs.push_back(intAttr("dim", d));
  attrs.push_back(boolAttr("descending", descending));
  return pair(activeTracer(loc).emit(OpKind::Sort, {*this}, attrs, loc));
}
Tensor Tensor::argsort(int64_t d, bool descending, Loc loc) const {
  return std::get<1>(sort(std::nullopt, d, descending, loc));
}
Tensor Tensor::argsort(bool stable, int64_t d, bool descending, Loc loc) const {
  return std::get<1>(sort(stable, d, descending, loc));
}
std::tuple<Tensor, Tensor> Tensor::topk(const SymInt &k, int64_t d, bool largest, bool sorted,
                                        Loc loc) const {
  return pair(activeTracer(loc).emit(OpKind::Topk, {*this},
                                     {attr("k", Attribute::integer(symOf(k))), intAttr("dim", d),
                                      boolAttr("largest", largest), boolAttr("sorted", sorted)},
                                     loc));
}

Tensor Tensor::scatter(int64_t d, const Tensor &index, const Tensor &src, Loc loc) const {
  return op1(OpKind::Scatter, {*this, index, src}, {intAttr("dim", d)}, loc);
}
Tensor Tensor::scatter(int64_t d, const Tensor &index, const Scalar &value, Loc loc) const {
  return scatter(d, index, full(index.sizes(), value, dtype(), loc), loc);
}
Tensor Tensor::scatter_add(int64_t d, const Tensor &index, const Tensor &src, Loc loc) const {
  return op1(OpKind::ScatterAdd, {*this, index, src}, {intAttr("dim", d)}, loc);
}
Tensor Tensor::index_put(const std::vector<Tensor> &indices, const Tensor &values, bool accumulate,
                         Loc loc) const {
  auto fail = [&](const std::string &what) {
    return DslError(fmt::format("{}:{}: {}", loc.file_name(), loc.line(), what));
  };
  if (indices.size() != 1 || !indices[0].defined())
    throw fail(fmt::format("index_put takes one index tensor (for dim 0), got {}", indices.size()));
  const Tensor &ids = indices[0];
  if (ids.dtype() == boolean)
    throw fail("index_put with a bool mask is not supported; use masked_fill or where");
  if (!isIntegral(ids.dtype()))
    throw fail(fmt::format("index_put needs an integer index tensor, got {}", ids.str()));
  if (dim() == 0)
    throw fail(fmt::format("index_put needs a tensor with at least one dim, got {}", str()));
  SymInt rows = size(0, loc), count = ids.numel();
  // Flat ids, negatives counted from the end as torch does.
  Tensor flat = ids.dtype() == i64 ? ids : ids.to(i64, loc);
  if (ids.dim() != 1)
    flat = flat.reshape({count}, loc);
  Tensor wrapped = flat + full({}, Scalar(rows), i64, loc);
  flat = aotc::where(flat < ScalarAt(0, loc), wrapped, flat, loc);
  SymIntList target{count}, expanded = ids.sizes(), ones{count};
  for (int64_t k = 1; k < dim(); ++k) {
    target.push_back(size(k, loc));
    expanded.push_back(size(k, loc));
    ones.push_back(1);
  }
  Tensor src = values.expand(expanded, loc).reshape(target, loc);
  Tensor index = flat.view(ones, loc).expand(target, loc);
  return accumulate ? scatter_add(0, index, src, loc) : scatter(0, index, src, loc);
}
Tensor Tensor::repeat_interleave(const SymInt &repeats, std::optional<int64_t> d, Loc loc) const {
  if (auto r = repeats.maybe_static(); r && *r < 0)
    throw DslError(fmt::format("{}:{}: repeat_interleave needs non-negative repeats, got {}",
                               loc.file_name(), loc.line(), *r));
  Tensor x = d || dim() == 1 ? *this : flatten(0, -1, loc);
  int64_t rank = x.dim(), at = d.value_or(0);
  if (at < -rank || at >= rank)
    throw DslError(fmt::format("{}:{}: dim {} is out of range for {}", loc.file_name(), loc.line(),
                               at, x.str()));
  at = at < 0 ? at + rank : at;
  SymIntList sizes = x.sizes();
  sizes.insert(sizes.begin() + at + 1, repeats);
  return x.unsqueeze(at + 1, loc).expand(sizes, loc).flatten(at, at + 1, loc);
}
Tensor Tensor::index_select(int64_t d, const Tensor &index, Loc loc) const {
  return op1(OpKind::IndexSelect, {*this, index}, {intAttr("dim", d)}, loc);
}
Tensor Tensor::gather(int64_t d, const Tensor &index, Loc loc) const {
  return op1(OpKind::Gather, {*this, index}, {intAttr("dim", d)}, loc);
}

Tensor Tensor::item(Loc loc) const {
  // A one-element tensor stays a tensor: its value is unknown until run time.
  return reshape({}, loc);
}

Tensor::operator bool() const {
  if (Tracer *t = Tracer::current())
    t->dataDependentBranch(*Impl);
  return true;
}

Tensor &Tensor::add_(const Tensor &o, const Scalar &alpha, Loc loc) {
  return assign(*this, add(o, alpha, loc), loc);
}
Tensor &Tensor::sub_(const Tensor &o, const Scalar &alpha, Loc loc) {
  return assign(*this, sub(o, alpha, loc), loc);
}
Tensor &Tensor::mul_(const Tensor &o, Loc loc) { return assign(*this, mul(o, loc), loc); }
Tensor &Tensor::mul_(const Scalar &o, Loc loc) {
  return assign(*this, op1(OpKind::MulScalar, {*this}, {attr("other", scalarAttr(o))}, loc), loc);
}
Tensor &Tensor::relu_(Loc loc) { return assign(*this, relu(loc), loc); }
Tensor &Tensor::copy_(const Tensor &src, Loc loc) {
  // copy_ casts and broadcasts src into self's dtype and shape.
  Tensor v = src.to(dtype(), loc).expand(sizes(), loc);
  return assign(*this, v, loc);
}
Tensor &Tensor::zero_(Loc loc) { return fill_(0, loc); }
Tensor &Tensor::fill_(const Scalar &value, Loc loc) {
  return assign(*this,
                op1(OpKind::Full, {},
                    {attr("size", intsAttr(sizes())), attr("fill_value", scalarAttr(value)),
                     attr("dtype", Attribute::dtype(dtype()))},
                    loc),
                loc);
}

namespace {
Tensor scalarOp(OpKind kind, const Tensor &a, const Scalar &s, const Loc &loc,
                const char *name = "other") {
  return op1(kind, {a}, {attr(name, scalarAttr(s))}, loc);
}
} // namespace

Tensor operator+(const Tensor &a, const TensorAt &b) { return a.add(b.value, 1, b.loc); }
Tensor operator-(const Tensor &a, const TensorAt &b) { return a.sub(b.value, 1, b.loc); }
Tensor operator*(const Tensor &a, const TensorAt &b) { return a.mul(b.value, b.loc); }
Tensor operator/(const Tensor &a, const TensorAt &b) { return a.div(b.value, b.loc); }
Tensor operator+(const Tensor &a, const ScalarAt &b) {
  return scalarOp(OpKind::AddScalar, a, b.value, b.loc);
}
Tensor operator-(const Tensor &a, const ScalarAt &b) {
  return scalarOp(OpKind::SubScalar, a, b.value, b.loc);
}
Tensor operator*(const Tensor &a, const ScalarAt &b) {
  return scalarOp(OpKind::MulScalar, a, b.value, b.loc);
}
Tensor operator/(const Tensor &a, const ScalarAt &b) {
  return scalarOp(OpKind::DivScalar, a, b.value, b.loc);
}
Tensor operator+(const Scalar &a, const TensorAt &b) {
  return scalarOp(OpKind::AddScalar, b.value, a, b.loc);
}
Tensor operator-(const Scalar &a, const TensorAt &b) {
  return scalarOp(OpKind::RsubScalar, b.value, a, b.loc);
}
Tensor operator*(const Scalar &a, const TensorAt &b) {
  return scalarOp(OpKind::MulScalar, b.value, a, b.loc);
}
Tensor operator-(const TensorAt &a) { return a.value.neg(a.loc); }
Tensor operator<(const Tensor &a, const TensorAt &b) { return a.lt(b.value, b.loc); }
Tensor operator<=(const Tensor &a, const TensorAt &b) { return a.le(b.value, b.loc); }
Tensor operator>(const Tensor &a, const TensorAt &b) { return a.gt(b.value, b.loc); }
Tensor operator>=(const Tensor &a, const TensorAt &b) { return a.ge(b.value, b.loc); }
Tensor operator==(const Tensor &a, const TensorAt &b) { return a.eq(b.value, b.loc); }
Tensor operator!=(const Tensor &a, const TensorAt &b) { return a.ne(b.value, b.loc); }
Tensor operator<(const Tensor &a, const ScalarAt &b) {
  return scalarOp(OpKind::LtScalar, a, b.value, b.loc);
}
Tensor operator<=(const Tensor &a, const ScalarAt &b) {
  return scalarOp(OpKind::LeScalar, a, b.value, b.loc);
}
Tensor operator>(const Tensor &a, const ScalarAt &b) {
  return scalarOp(OpKind::GtScalar, a, b.value, b.loc);
}
Tensor operator>=(const Tensor &a, const ScalarAt &b) {
  return scalarOp(OpKind::GeScalar, a, b.value, b.loc);
}
Tensor operator==(const Tensor &a, const ScalarAt &b) {
  return scalarOp(OpKind::EqScalar, a, b.value, b.loc);
}
Tensor operator!=(const Tensor &a, const ScalarAt &b) {
  return scalarOp(OpKind::NeScalar, a, b.value, b.loc);
}
Tensor operator&(const Tensor &a, const TensorAt &b) { return a.bitwise_and(b.value, b.loc); }
Tensor operator|(const Tensor &a, const TensorAt &b) { return a.bitwise_or(b.value, b.loc); }
Tensor operator^(const Tensor &a, const TensorAt &b) { return a.bitwise_xor(b.value, b.loc); }
Tensor operator<<(const Tensor &a, const TensorAt &b) {
  return a.bitwise_left_shift(b.value, b.loc);
}
Tensor operator>>(const Tensor &a, const TensorAt &b) {
  return a.bitwise_right_shift(b.value, b.loc);
}
Tensor operator&(const Tensor &a, const ScalarAt &b) { return a.bitwise_and(b.value, b.loc); }
Tensor operator|(const Tensor &a, const ScalarAt &b) { return a.bitwise_or(b.value, b.loc); }
Tensor operator^(const Tensor &a, const ScalarAt &b) { return a.bitwise_xor(b.value, b.loc); }
Tensor operator<<(const Tensor &a, const ScalarAt &b) {
  return a.bitwise_left_shift(b.value, b.loc);
}
Tensor operator>>(const Tensor &a, const ScalarAt &b) {
  return a.bitwise_right_shift(b.value, b.loc);
}
// The commutative ops with the number first, as libtorch's `1 & t`.
Tensor operator&(const Scalar &a, const TensorAt &b) { return b.value.bitwise_and(a, b.loc); }
Tensor operator|(const Scalar &a, const TensorAt &b) { return b.value.bitwise_or(a, b.loc); }
Tensor operator^(const Scalar &a, const TensorAt &b) { return b.value.bitwise_xor(a, b.loc); }
// The shifts with the number first, as libtorch's `1 << t` (ATen's .Scalar_Tensor overloads):
// the number as a 0-d tensor of the dtype ATen computes in, t's for a number of its kind or
// below (a wrapped number does not promote a tensor), i64 for an integer shifting a bool tensor,
// f32 for a float shifting an integer one (which the shift refuses, naming the dtype, as ATen
// does).
static DType shiftedNumberType(const Scalar &n, const Tensor &t) {
  DType dt = t.dtype();
  if (n.kind() == Scalar::Kind::Float && !isFloating(dt))
    return DType::F32;
  if (n.kind() == Scalar::Kind::Int && dt == DType::Bool)
    return DType::I64;
  return dt;
}
Tensor operator<<(const Scalar &a, const TensorAt &b) {
  Tensor n = full({}, a, shiftedNumberType(a, b.value), b.loc);
  return n.bitwise_left_shift(b.value, b.loc);
}
Tensor operator>>(const Scalar &a, const TensorAt &b) {
  Tensor n = full({}, a, shiftedNumberType(a, b.value), b.loc);
  return n.bitwise_right_shift(b.value, b.loc);
}
Tensor operator~(const TensorAt &a) { return a.value.bitwise_not(a.loc); }
Tensor &operator+=(Tensor &a, const TensorAt &b) { return a.add_(b.value, 1, b.loc); }
Tensor &operator*=(Tensor &a, const TensorAt &b) { return a.mul_(b.value, b.loc); }

} // namespace aotc
