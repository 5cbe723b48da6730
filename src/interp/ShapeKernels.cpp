// Kernels of views (as copies: the IR is functional), concatenation and splitting, creation ops
// (arange, full, zeros, ones) and the scalar ops sym_size and _local_scalar_dense.
#include "Kernels.h"

#include "llvm/ADT/SmallBitVector.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace aotc::interp {

namespace {

std::string describeTensor(const HostTensor &t) { return describe(t.dtype(), t.shape()); }

KernelResult reshape(const KernelContext &ctx, llvm::StringRef attrName) {
  const HostTensor &x = *ctx.tensor("self");
  auto size = ctx.getInts(attrName);
  if (!size)
    return size.takeError();
  Dims shape = *size;
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0)
        return error("only one dim of {} can be -1", dimsStr(shape));
      inferred = static_cast<int>(i);
      continue;
    }
    if (shape[i] < 0 || __builtin_mul_overflow(known, shape[i], &known))
      return error("invalid size {} in {}", shape[i], dimsStr(shape));
  }
  if (inferred >= 0) {
    if (known == 0 || x.numel() % known != 0)
      return error("cannot view {} as {}", describeTensor(x), dimsStr(*size));
    shape[inferred] = x.numel() / known;
  } else if (known != x.numel()) {
    return error("cannot view {} ({} elements) as {}", describeTensor(x), x.numel(),
                 dimsStr(shape));
  }
  return one(reshapeCopy(x, shape));
}

KernelResult permute(const HostTensor &x, llvm::ArrayRef<int64_t> dims) {
  int64_t rank = x.rank();
  if (static_cast<int64_t>(dims.size()) != rank)
    return error("dims {} do not match the rank of {}", dimsStr(dims), describeTensor(x));
  Dims inStrides = stridesOf(x.shape()), shape, strides;
  llvm::SmallBitVector seen(rank);
  for (int64_t d : dims) {
    auto n = normalizeDim(d, rank);
    if (!n)
      return n.takeError();
    if (seen[*n])
      return error("dim {} appears twice in dims", d);
    seen.set(*n);
    shape.push_back(x.shape()[*n]);
    strides.push_back(inStrides[*n]);
  }
  return one(stridedCopy(x, shape, strides));
}

KernelResult transpose(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("self");
  auto d0 = ctx.getInt("dim0"), d1 = ctx.getInt("dim1");
  if (!d0 || !d1)
    return llvm::joinErrors(d0.takeError(), d1.takeError());
  auto a = normalizeDim(*d0, x.rank()), b = normalizeDim(*d1, x.rank());
  if (!a || !b)
    return llvm::joinErrors(a.takeError(), b.takeError());
  if (x.rank() == 0)
    return one(reshapeCopy(x, x.shape()));
  Dims dims;
  for (int64_t i = 0; i < static_cast<int64_t>(x.rank()); ++i)
    dims.push_back(i == *a ? *b : i == *b ? *a : i);
  return permute(x, dims);
}

KernelResult expand(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("self");
  auto size = ctx.getInts("size");
  if (!size)
    return size.takeError();
  if (size->size() < x.rank())
    return error("cannot expand {} to fewer dims {}", describeTensor(x), dimsStr(*size));
  size_t offset = size->size() - x.rank();
  Dims inStrides = stridesOf(x.shape()), shape, strides;
  for (size_t i = 0; i < size->size(); ++i) {
    int64_t s = (*size)[i];
    if (i < offset) {
      if (s < 0)
        return error("invalid size {} for the new leading dim {} of {}", s, i, dimsStr(*size));
      shape.push_back(s);
      strides.push_back(0);
      continue;
    }
    int64_t in = x.shape()[i - offset];
    if (s == -1 || s == in) {
      shape.push_back(in);
      strides.push_back(inStrides[i - offset]);
    } else if (in == 1 && s >= 0) {
      shape.push_back(s);
      strides.push_back(0);
    } else {
      return error("cannot expand {} to {}: dim {} is {}, not 1 or {}", describeTensor(x),
                   dimsStr(*size), i, in, s);
    }
  }
  return one(stridedCopy(x, shape, strides));
}

KernelResult squeeze(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("self");
  auto dims = ctx.getInts("dim");
  if (!dims)
    return dims.takeError();
  llvm::SmallBitVector drop(x.rank());
  for (int64_t d : *dims) {
    auto n = normalizeDim(d, x.rank());
    if (!n)
      return n.takeError();
    if (x.rank() && x.shape()[*n] == 1)
      drop.set(*n);
  }
  Dims shape;
  for (size_t i = 0; i < x.rank(); ++i)
    if (!drop[i])
      shape.push_back(x.shape()[i]);
  return one(reshapeCopy(x, shape));
}

KernelResult unsqueeze(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("self");
  auto dim = ctx.getInt("dim");
  if (!dim)
    return dim.takeError();
  auto d = normalizeDim(*dim, x.rank() + 1);
  if (!d)
    return d.takeError();
  Dims shape(x.shape().begin(), x.shape().end());
  shape.insert(shape.begin() + *d, 1);
  return one(reshapeCopy(x, shape));
}

// Python's slice semantics: negative bounds count from the end, then clamp to [0, size].
KernelResult slice(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("self");
  if (x.rank() == 0)
    return error("cannot slice a 0-d tensor");
  auto dim = ctx.getInt("dim"), step = ctx.getInt("step");
  auto start = ctx.getOptionalInt("start"), end = ctx.getOptionalInt("end");
  if (!dim || !step || !start || !end)
    return llvm::joinErrors(llvm::joinErrors(dim.takeError(), step.takeError()),
                            llvm::joinErrors(start.takeError(), end.takeError()));
  auto d = normalizeDim(*dim, x.rank());
  if (!d)
    return d.takeError();
  if (*step < 1)
    return error("step must be positive, got {}", *step);
  int64_t size = x.shape()[*d];
  auto bound = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v)
      return dflt;
    int64_t b = *v < 0 ? *v + size : *v;
    return std::clamp<int64_t>(b, 0, size);
  };
  int64_t lo = bound(*start, 0), hi = std::max(bound(*end, size), lo);
  Dims shape(x.shape().begin(), x.shape().end()), strides = stridesOf(x.shape());
  shape[*d] = (hi - lo + *step - 1) / *step;
  int64_t offset = lo * strides[*d];
  strides[*d] *= *step;
  return one(stridedCopy(x, shape, strides, offset));
}

KernelResult select(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("self");
  if (x.rank() == 0)
    return error("cannot select from a 0-d tensor");
  auto dim = ctx.getInt("dim"), index = ctx.getInt("index");
  if (!dim || !index)
    return llvm::joinErrors(dim.takeError(), index.takeError());
  auto d = normalizeDim(*dim, x.rank());
  if (!d)
    return d.takeError();
  int64_t size = x.shape()[*d];
  int64_t i = *index < 0 ? *index + size : *index;
  if (i < 0 || i >= size)
    return error("index {} is out of range for dim {} of size {}", *index, *dim, size);
  Dims shape(x.shape().begin(), x.shape().end()), strides = stridesOf(x.shape());
  int64_t offset = i * strides[*d];
  shape.erase(shape.begin() + *d);
  strides.erase(strides.begin() + *d);
  return one(stridedCopy(x, shape, strides, offset));
}

KernelResult flatten(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("self");
  auto s = ctx.getInt("start_dim"), e = ctx.getInt("end_dim");
  if (!s || !e)
    return llvm::joinErrors(s.takeError(), e.takeError());
  if (x.rank() == 0)
    return one(reshapeCopy(x, {1}));
  auto a = normalizeDim(*s, x.rank()), b = normalizeDim(*e, x.rank());
  if (!a || !b)
    return llvm::joinErrors(a.takeError(), b.takeError());
  if (*a > *b)
    return error("start_dim {} comes after end_dim {}", *s, *e);
  Dims shape(x.shape().begin(), x.shape().begin() + *a);
  shape.push_back(numelOf(x.shape().slice(*a, *b - *a + 1)));
  shape.append(x.shape().begin() + *b + 1, x.shape().end());
  return one(reshapeCopy(x, shape));
}

// Concatenates along `dim` after casting every tensor to the result dtype.
KernelResult concat(llvm::ArrayRef<HostTensor> parts, int64_t dim, DType r) {
  const HostTensor &first = parts[0];
  Dims shape(first.shape().begin(), first.shape().end());
  shape[dim] = 0;
  for (const HostTensor &t : parts) {
    bool fits = t.rank() == first.rank();
    for (size_t i = 0; fits && i < t.rank(); ++i)
      fits = static_cast<int64_t>(i) == dim || t.shape()[i] == first.shape()[i];
    if (!fits)
      return error("tensors must match except in dim {}, got {} and {}", dim, describeTensor(first),
                   describeTensor(t));
    shape[dim] += t.shape()[dim];
  }
  auto out = newTensor(r, shape);
  if (!out)
    return out.takeError();
  if (out->numel() == 0)
    return one(std::move(*out));
  size_t size = byteSize(r);
  int64_t outer = numelOf(llvm::ArrayRef<int64_t>(shape).take_front(dim));
  int64_t inner = numelOf(llvm::ArrayRef<int64_t>(shape).drop_front(dim + 1));
  uint8_t *dst = out->mutableData();
  for (int64_t o = 0; o < outer; ++o)
    for (const HostTensor &t : parts) {
      size_t chunk = t.shape()[dim] * inner * size;
      if (chunk)
        std::memcpy(dst, t.data() + o * chunk, chunk);
      dst += chunk;
    }
  return one(std::move(*out));
}

KernelResult catOrStack(const KernelContext &ctx, bool stack) {
  llvm::ArrayRef<const HostTensor *> list = ctx.tensorList();
  auto dim = ctx.getInt("dim");
  if (!dim)
    return dim.takeError();
  if (list.empty())
    return error("needs at least one tensor");
  int64_t rank = list[0]->rank();
  if (!stack && rank == 0)
    return error("cannot concatenate 0-d tensors");
  auto d = normalizeDim(*dim, stack ? rank + 1 : rank);
  if (!d)
    return d.takeError();
  DType r = ctx.resultDType();
  std::vector<HostTensor> parts;
  for (const HostTensor *t : list) {
    if (stack && t->shape() != list[0]->shape())
      return error("tensors must have the same shape, got {} and {}", describeTensor(*list[0]),
                   describeTensor(*t));
    auto cast = castTensor(*t, r);
    if (!cast)
      return cast.takeError();
    if (stack) {
      // Stacking is concatenating along a new dim of size 1.
      Dims shape(t->shape().begin(), t->shape().end());
      shape.insert(shape.begin() + *d, 1);
      cast = reshapeCopy(*cast, shape);
      if (!cast)
        return cast.takeError();
    }
    parts.push_back(std::move(*cast));
  }
  return concat(parts, *d, r);
}

KernelResult split(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("self");
  auto size = ctx.getInt("split_size"), dim = ctx.getInt("dim");
  if (!size || !dim)
    return llvm::joinErrors(size.takeError(), dim.takeError());
  if (x.rank() == 0)
    return error("cannot split a 0-d tensor");
  auto d = normalizeDim(*dim, x.rank());
  if (!d)
    return d.takeError();
  if (*size < 1)
    return error("split_size must be positive, got {}", *size);
  int64_t total = x.shape()[*d];
  Dims strides = stridesOf(x.shape());
  llvm::SmallVector<HostTensor, 1> out;
  // An empty dim still gives one (empty) piece, as torch.split does.
  for (int64_t at = 0; at < total || (at == 0 && total == 0); at += *size) {
    Dims shape(x.shape().begin(), x.shape().end());
    shape[*d] = std::min(*size, total - at);
    auto piece = stridedCopy(x, shape, strides, at * strides[*d]);
    if (!piece)
      return piece.takeError();
    out.push_back(std::move(*piece));
  }
  return out;
}

llvm::Expected<Dims> sizeAttr(const KernelContext &ctx) {
  auto size = ctx.getInts("size");
  if (!size)
    return size.takeError();
  for (int64_t s : *size)
    if (s < 0)
      return error("sizes must be non-negative, got {}", dimsStr(*size));
  return *size;
}

KernelResult fill(const KernelContext &ctx, const Scalar &value) {
  auto shape = sizeAttr(ctx);
  if (!shape)
    return shape.takeError();
  DType r = ctx.resultDType();
  // Created first, so that an impossible size is an error rather than a failed allocation.
  auto out = newTensor(r, *shape);
  if (!out)
    return out.takeError();
  for (int64_t i = 0; i < out->numel(); ++i) {
    if (isFloating(r))
      out->setDouble(i, scalarAsDouble(value, r));
    else
      out->setInt(i, scalarAsInt(value, r));
  }
  return one(std::move(*out));
}

KernelResult full(const KernelContext &ctx) {
  auto value = ctx.getScalar("fill_value");
  if (!value)
    return value.takeError();
  if (!*value)
    return error("fill_value is required");
  return fill(ctx, **value);
}

// torch's arange: for an integer dtype, or integer bounds, the bounds are int64 (floats truncated
// first) and the values start + i * step; otherwise the values are computed in double. The length
// is ceil((end - start) / step) either way.
KernelResult arange(const KernelContext &ctx) {
  auto start = ctx.getScalar("start"), end = ctx.getScalar("end"), step = ctx.getScalar("step");
  if (!start || !end || !step)
    return llvm::joinErrors(llvm::joinErrors(start.takeError(), end.takeError()), step.takeError());
  if (!*start || !*end || !*step)
    return error("start, end and step are required");
  DType r = ctx.resultDType();
  const Scalar &a = **start, &b = **end, &s = **step;
  constexpr int64_t MaxElements = int64_t(1) << 40;
  if (!isFloating(r) || (!a.isFloat() && !b.isFloat() && !s.isFloat())) {
    auto asInt = [](const Scalar &x) { return x.isFloat() ? doubleToInt(DType::I64, x.f) : x.i; };
    int64_t x0 = asInt(a), x1 = asInt(b), dx = asInt(s);
    if (dx == 0)
      return error("step must not be zero");
    int64_t span;
    if (__builtin_sub_overflow(dx > 0 ? x1 : x0, dx > 0 ? x0 : x1, &span) || dx == INT64_MIN)
      return error("the range {}..{} step {} is too large", x0, x1, dx);
    int64_t m = dx > 0 ? dx : -dx;
    int64_t n = span > 0 ? span / m + (span % m != 0) : 0;
    if (n > MaxElements)
      return error("too many elements ({})", n);
    std::vector<int64_t> values(n);
    for (int64_t i = 0; i < n; ++i)
      values[i] = wrapAdd(x0, wrapMul(i, dx));
    return one(fromInts(r, {n}, values));
  }
  double x0 = a.asDouble(), x1 = b.asDouble(), dx = s.asDouble();
  if (dx == 0 || !std::isfinite(x0) || !std::isfinite(x1))
    return error("floating-point bounds must be finite with a non-zero step");
  double len = std::ceil((x1 - x0) / dx);
  if (len > static_cast<double>(MaxElements))
    return error("too many elements ({})", len);
  int64_t n = len > 0 ? static_cast<int64_t>(len) : 0;
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i)
    values[i] = x0 + static_cast<double>(i) * dx;
  return one(fromDoubles(r, {n}, values));
}

KernelResult symSize(const KernelContext &ctx) {
  const HostTensor &x = *ctx.tensor("self");
  auto dim = ctx.getInt("dim");
  if (!dim)
    return dim.takeError();
  if (x.rank() == 0)
    return error("a 0-d tensor has no dims");
  auto d = normalizeDim(*dim, x.rank());
  if (!d)
    return d.takeError();
  return one(fromInts(DType::I64, {}, {x.shape()[*d]}));
}

} // namespace

KernelResult runShape(const KernelContext &ctx) {
  const HostTensor *self = ctx.tensor("self");
  switch (ctx.kind()) {
  case OpKind::View:
    return reshape(ctx, "size");
  case OpKind::Reshape:
    return reshape(ctx, "shape");
  case OpKind::Permute: {
    auto dims = ctx.getInts("dims");
    if (!dims)
      return dims.takeError();
    return permute(*self, *dims);
  }
  case OpKind::Transpose:
    return transpose(ctx);
  case OpKind::Expand:
    return expand(ctx);
  case OpKind::Squeeze:
    return squeeze(ctx);
  case OpKind::Unsqueeze:
    return unsqueeze(ctx);
  case OpKind::Slice:
    return slice(ctx);
  case OpKind::Select:
    return select(ctx);
  case OpKind::Flatten:
    return flatten(ctx);
  case OpKind::Contiguous:
    return one(reshapeCopy(*self, self->shape()));
  case OpKind::Cat:
    return catOrStack(ctx, false);
  case OpKind::Stack:
    return catOrStack(ctx, true);
  case OpKind::Split:
    return split(ctx);
  case OpKind::Arange:
    return arange(ctx);
  case OpKind::Full:
    return full(ctx);
  case OpKind::Zeros:
  case OpKind::Ones: {
    Scalar value;
    value.i = ctx.kind() == OpKind::Ones;
    return fill(ctx, value);
  }
  case OpKind::SymSize:
    return symSize(ctx);
  case OpKind::Item:
    if (self->numel() != 1)
      return error("needs a tensor with one element, got {}", describeTensor(*self));
    return one(reshapeCopy(*self, {}));
  default:
    return runPosition(ctx);
  }
}

} // namespace aotc::interp
