// Meta functions of views, concatenation and splitting, creation ops, scalars and cond.
#include "Meta.h"

#include "llvm/ADT/SmallBitVector.h"

#include <cmath>

namespace aotc::meta {

Result metaReshape(const Args &args) {
  auto self = args.tensor("self");
  if (!self)
    return self.takeError();
  const Type &x = **self;
  llvm::StringRef attrName = args.node().kind() == OpKind::View ? "size" : "shape";
  std::vector<SymExpr> size = args.ints(attrName);
  int inferred = -1;
  SymExpr known = 1;
  for (size_t i = 0; i < size.size(); ++i) {
    auto c = size[i].constant();
    if (c && *c == -1) {
      if (inferred >= 0)
        return args.error("only one dim of {} can be -1", shapeStr(size));
      inferred = static_cast<int>(i);
      continue;
    }
    if (c && *c < 0)
      return args.error("invalid size {} in {}", *c, shapeStr(size));
    known = known * size[i];
  }
  SymExpr numel = x.numel();
  if (inferred >= 0) {
    // Cancel the dims both sides share first: floordiv by a symbolic product does not simplify.
    std::vector<SymExpr> in(x.shape().begin(), x.shape().end()), out;
    for (size_t i = 0; i < size.size(); ++i) {
      if (static_cast<int>(i) == inferred)
        continue;
      auto it = std::find(in.begin(), in.end(), size[i]);
      if (it != in.end())
        in.erase(it);
      else
        out.push_back(size[i]);
    }
    SymExpr num = 1, den = 1;
    for (const SymExpr &d : in)
      num = num * d;
    for (const SymExpr &d : out)
      den = den * d;
    size[inferred] = den == SymExpr(1) ? num : SymExpr::floorDiv(num, den);
    if (args.env().proveEQ(size[inferred] * known, numel) != Truth::True)
      return args.error("cannot view {} as {}: {} elements are not a multiple of {}", x.str(),
                        shapeStr(args.ints(attrName)), numel.str(), known.str());
  } else if (!args.knownEqual(known, numel)) {
    // Heads split from a width they do not divide (`view({b, s, 3, 128 / 3})`): where symbolic
    // element counts would hide it, name the division, after cancelling the dims both sides
    // share.
    std::vector<SymExpr> out(size.begin(), size.end());
    SymExpr rest = 1;
    for (const SymExpr &d : x.shape()) {
      auto it = std::find(out.begin(), out.end(), d);
      if (it != out.end())
        out.erase(it);
      else
        rest = rest * d;
    }
    if (auto total = rest.constant(); total && *total > 0 && !numel.isConstant())
      for (const SymExpr &d : out)
        if (auto c = d.constant(); c && *c > 1 && *total % *c != 0)
          return args.error("cannot view {} as {}: {} is not divisible by {}", x.str(),
                            shapeStr(size), *total, *c);
    return args.error("cannot view {} ({} elements) as {} ({} elements)", x.str(), numel.str(),
                      shapeStr(size), known.str());
  }
  return one(Type::tensor(x.dtype(), Shape(size.begin(), size.end())));
}

Result metaPermute(const Args &args) {
  auto self = args.tensor("self");
  auto dims = args.constInts("dims");
  if (!self || !dims)
    return llvm::joinErrors(self.takeError(), dims.takeError());
  const Type &x = **self;
  if (dims->size() != x.rank())
    return args.error("dims has {} entries but the input {} has rank {}", dims->size(), x.str(),
                      x.rank());
  llvm::SmallBitVector seen(x.rank());
  Shape out;
  for (int64_t d : *dims) {
    auto n = args.normalizeDim(d, x.rank(), "dim");
    if (!n)
      return n.takeError();
    if (seen[*n])
      return args.error("dim {} appears twice in dims", d);
    seen.set(*n);
    out.push_back(x.shape()[*n]);
  }
  return one(Type::tensor(x.dtype(), out));
}

Result metaTranspose(const Args &args) {
  auto self = args.tensor("self");
  auto d0 = args.constInt("dim0");
  auto d1 = args.constInt("dim1");
  if (!self || !d0 || !d1)
    return llvm::joinErrors(llvm::joinErrors(self.takeError(), d0.takeError()), d1.takeError());
  const Type &x = **self;
  auto a = args.normalizeDim(*d0, x.rank(), "dim0");
  auto b = args.normalizeDim(*d1, x.rank(), "dim1");
  if (!a || !b)
    return llvm::joinErrors(a.takeError(), b.takeError());
  Shape out = x.shape();
  if (!out.empty())
    std::swap(out[*a], out[*b]);
  return one(Type::tensor(x.dtype(), out));
}

Result metaExpand(const Args &args) {
  auto self = args.tensor("self");
  if (!self)
    return self.takeError();
  const Type &x = **self;
  std::vector<SymExpr> size = args.ints("size");
  if (size.size() < x.rank())
    return args.error("cannot expand {} to fewer dims {}", x.str(), shapeStr(size));
  size_t offset = size.size() - x.rank();
  Shape out;
  for (size_t i = 0; i < size.size(); ++i) {
    auto c = size[i].constant();
    if (c && *c == -1) {
      if (i < offset)
        return args.error("-1 is not allowed for the new leading dim {} of {}", i, shapeStr(size));
      out.push_back(x.shape()[i - offset]);
      continue;
    }
    if (c && *c < 0)
      return args.error("invalid size {} in {}", *c, shapeStr(size));
    if (i >= offset) {
      const SymExpr &in = x.shape()[i - offset];
      if (!(in == SymExpr(1)) && !args.knownEqual(in, size[i]))
        return args.error("cannot expand {} to {}: dim {} is {}, not 1 or {}", x.str(),
                          shapeStr(size), i, in.str(), size[i].str());
    }
    out.push_back(size[i]);
  }
  return one(Type::tensor(x.dtype(), out));
}

Result metaSqueeze(const Args &args) {
  auto self = args.tensor("self");
  auto dims = args.constInts("dim");
  if (!self || !dims)
    return llvm::joinErrors(self.takeError(), dims.takeError());
  const Type &x = **self;
  llvm::SmallBitVector drop(x.rank());
  for (int64_t d : *dims) {
    auto n = args.normalizeDim(d, x.rank(), "dim");
    if (!n)
      return n.takeError();
    if (x.rank() == 0)
      continue;
    // torch keeps a dim that is not 1; a dim that may or may not be 1 cannot be traced.
    Truth isOne = args.env().proveEQ(x.shape()[*n], 1);
    if (isOne == Truth::Unknown)
      return args.error("dim {} of {} may or may not be 1, so squeezing it is ambiguous", d,
                        x.str());
    if (isOne == Truth::True)
      drop.set(*n);
  }
  Shape out;
  for (size_t i = 0; i < x.rank(); ++i)
    if (!drop[i])
      out.push_back(x.shape()[i]);
  return one(Type::tensor(x.dtype(), out));
}

Result metaUnsqueeze(const Args &args) {
  auto self = args.tensor("self");
  auto dim = args.constInt("dim");
  if (!self || !dim)
    return llvm::joinErrors(self.takeError(), dim.takeError());
  const Type &x = **self;
  auto d = args.normalizeDim(*dim, x.rank() + 1, "dim");
  if (!d)
    return d.takeError();
  Shape out = x.shape();
  out.insert(out.begin() + *d, SymExpr(1));
  return one(Type::tensor(x.dtype(), out));
}

Result metaSlice(const Args &args) {
  auto self = args.tensor("self");
  auto dim = args.constInt("dim");
  auto step = args.constInt("step");
  if (!self || !dim || !step)
    return llvm::joinErrors(llvm::joinErrors(self.takeError(), dim.takeError()), step.takeError());
  const Type &x = **self;
  if (x.rank() == 0)
    return args.error("cannot slice a 0-d tensor");
  auto d = args.normalizeDim(*dim, x.rank(), "dim");
  if (!d)
    return d.takeError();
  if (*step < 1)
    return args.error("step must be positive, got {}", *step);
  const SymExpr &size = x.shape()[*d];
  // Python's slice semantics: a negative constant counts from the end; bounds clamp to the dim.
  auto bound = [&](llvm::StringRef name, SymExpr dflt) {
    const Attribute *a = args.attr(name);
    if (!a)
      return dflt;
    SymExpr v = a->getInt();
    if (auto c = v.constant(); c && *c < 0)
      v = size + *c;
    return args.smin(args.smax(v, 0), size);
  };
  // A negative bound counts from the end; a symbolic bound whose sign is unknown would need a
  // run-time choice between the two meanings.
  for (const char *name : {"start", "end"})
    if (const Attribute *a = args.attr(name);
        a && !a->getInt().isConstant() && args.env().proveLE(0, a->getInt()) != Truth::True)
      return args.error("{} {} may be negative, which would count from the end; slice with "
                        "bounds known to be non-negative",
                        name, a->getInt().str());
  SymExpr start = bound("start", 0), end = bound("end", size);
  SymExpr len = args.smax(SymExpr::floorDiv(end - start + (*step - 1), *step), 0);
  Shape out = x.shape();
  out[*d] = len;
  return one(Type::tensor(x.dtype(), out));
}

Result metaSelect(const Args &args) {
  auto self = args.tensor("self");
  auto dim = args.constInt("dim");
  if (!self || !dim)
    return llvm::joinErrors(self.takeError(), dim.takeError());
  const Type &x = **self;
  if (x.rank() == 0)
    return args.error("cannot select from a 0-d tensor");
  auto d = args.normalizeDim(*dim, x.rank(), "dim");
  if (!d)
    return d.takeError();
  SymExpr index = args.attr("index")->getInt();
  const SymExpr &size = x.shape()[*d];
  if (auto c = index.constant(); c && *c < 0)
    index = size + *c;
  if (args.env().proveLE(0, index) == Truth::False ||
      args.env().proveLT(index, size) == Truth::False)
    return args.error("index {} is out of range for dim {} of size {}",
                      args.attr("index")->getInt().str(), *dim, size.str());
  Shape out = x.shape();
  out.erase(out.begin() + *d);
  return one(Type::tensor(x.dtype(), out));
}

Result metaFlatten(const Args &args) {
  auto self = args.tensor("self");
  auto s = args.constInt("start_dim");
  auto e = args.constInt("end_dim");
  if (!self || !s || !e)
    return llvm::joinErrors(llvm::joinErrors(self.takeError(), s.takeError()), e.takeError());
  const Type &x = **self;
  if (x.rank() == 0)
    return one(Type::tensor(x.dtype(), {1}));
  auto a = args.normalizeDim(*s, x.rank(), "start_dim");
  auto b = args.normalizeDim(*e, x.rank(), "end_dim");
  if (!a || !b)
    return llvm::joinErrors(a.takeError(), b.takeError());
  if (*a > *b)
    return args.error("start_dim {} comes after end_dim {}", *s, *e);
  Shape out(x.shape().begin(), x.shape().begin() + *a);
  SymExpr merged = 1;
  for (unsigned i = *a; i <= *b; ++i)
    merged = merged * x.shape()[i];
  out.push_back(merged);
  out.append(x.shape().begin() + *b + 1, x.shape().end());
  return one(Type::tensor(x.dtype(), out));
}

Result metaCat(const Args &args) {
  auto list = args.tensorList();
  auto dim = args.constInt("dim");
  if (!list || !dim)
    return llvm::joinErrors(list.takeError(), dim.takeError());
  if (list->empty())
    return args.error("needs at least one tensor");
  const Type &first = *(*list)[0];
  auto d = args.normalizeDim(*dim, first.rank(), "dim");
  if (!d)
    return d.takeError();
  if (first.rank() == 0)
    return args.error("cannot concatenate 0-d tensors");
  Shape out = first.shape();
  out[*d] = 0;
  DType dt = first.dtype();
  for (const Type *t : *list) {
    if (t->rank() != first.rank())
      return args.error("tensors must have the same rank, got {} and {}", first.str(), t->str());
    for (size_t i = 0; i < t->rank(); ++i)
      if (i != *d && !args.knownEqual(t->shape()[i], first.shape()[i]))
        return args.error("tensors must match except in dim {}, got {} and {}", *dim, first.str(),
                          t->str());
    out[*d] = out[*d] + t->shape()[*d];
    dt = promoteTypes(dt, t->dtype());
  }
  return one(Type::tensor(dt, out));
}

Result metaStack(const Args &args) {
  auto list = args.tensorList();
  auto dim = args.constInt("dim");
  if (!list || !dim)
    return llvm::joinErrors(list.takeError(), dim.takeError());
  if (list->empty())
    return args.error("needs at least one tensor");
  const Type &first = *(*list)[0];
  auto d = args.normalizeDim(*dim, first.rank() + 1, "dim");
  if (!d)
    return d.takeError();
  DType dt = first.dtype();
  for (const Type *t : *list) {
    bool same = t->rank() == first.rank();
    for (size_t i = 0; same && i < t->rank(); ++i)
      same = args.knownEqual(t->shape()[i], first.shape()[i]);
    if (!same)
      return args.error("tensors must have the same shape, got {} and {}", first.str(), t->str());
    dt = promoteTypes(dt, t->dtype());
  }
  Shape out = first.shape();
  out.insert(out.begin() + *d, SymExpr(static_cast<int64_t>(list->size())));
  return one(Type::tensor(dt, out));
}

Result metaSplit(const Args &args) {
  auto self = args.tensor("self");
  auto split = args.constInt("split_size");
  auto dim = args.constInt("dim");
  if (!self || !split || !dim)
    return llvm::joinErrors(llvm::joinErrors(self.takeError(), split.takeError()), dim.takeError());
  const Type &x = **self;
  if (x.rank() == 0)
    return args.error("cannot split a 0-d tensor");
  auto d = args.normalizeDim(*dim, x.rank(), "dim");
  if (!d)
    return d.takeError();
  if (*split < 1)
    return args.error("split_size must be positive, got {}", *split);
  // The number of results is part of the graph, so the split dim must be static.
  auto size = x.shape()[*d].constant();
  if (!size)
    return args.error("the split dim {} must be static, got {}", *dim, x.shape()[*d].str());
  llvm::SmallVector<Type, 1> out;
  for (int64_t at = 0; at < *size || (at == 0 && *size == 0); at += *split) {
    Shape s = x.shape();
    s[*d] = std::min(*split, *size - at);
    out.push_back(Type::tensor(x.dtype(), s));
  }
  return out;
}

namespace {
DType defaultDTypeOf(const Attribute &a) {
  switch (a.kind()) {
  case Attribute::Kind::Float:
    return DType::F32;
  case Attribute::Kind::Bool:
    return DType::Bool;
  default:
    return DType::I64;
  }
}

llvm::Expected<Shape> sizeList(const Args &args) {
  std::vector<SymExpr> size = args.ints("size");
  for (const SymExpr &s : size)
    if (args.env().proveLE(0, s) == Truth::False)
      return args.error("sizes must be non-negative, got {}", shapeStr(size));
  return Shape(size.begin(), size.end());
}
} // namespace

Result metaArange(const Args &args) {
  const Attribute *start = args.attr("start"), *end = args.attr("end"), *step = args.attr("step");
  if (!start || !end || !step)
    return args.error("start, end and step are required");
  auto isInt = [](const Attribute *a) { return a->kind() == Attribute::Kind::Int; };
  bool allInts = isInt(start) && isInt(end) && isInt(step);
  DType dt = args.dtype("dtype").value_or(allInts ? DType::I64 : DType::F32);
  // torch computes in int64 when the bounds are ints or the dtype is not floating (truncating
  // float bounds toward zero first), and in double otherwise.
  auto asInt = [&](const Attribute *a) -> std::optional<SymExpr> {
    if (isInt(a))
      return a->getInt();
    if (a->kind() == Attribute::Kind::Float && std::isfinite(a->getFloat()) &&
        std::fabs(a->getFloat()) < 9.2e18)
      return SymExpr(static_cast<int64_t>(a->getFloat()));
    return std::nullopt;
  };
  SymExpr len;
  if (allInts || !isFloating(dt)) {
    auto a = asInt(start), b = asInt(end), st = asInt(step);
    if (!a || !b || !st)
      return args.error("bounds must be finite numbers");
    auto s = st->constant();
    if (!s || *s == 0)
      return args.error("step must be a non-zero constant, got {}", st->str());
    SymExpr span = *s > 0 ? *b - *a : *a - *b;
    int64_t m = *s > 0 ? *s : -*s;
    len = args.smax(SymExpr::floorDiv(span + (m - 1), m), 0);
  } else {
    auto num = [](const Attribute &a) -> std::optional<double> {
      if (a.kind() == Attribute::Kind::Float)
        return a.getFloat();
      if (a.kind() == Attribute::Kind::Int)
        if (auto c = a.getInt().constant())
          return static_cast<double>(*c);
      return std::nullopt;
    };
    auto a = num(*start), b = num(*end), s = num(*step);
    if (!a || !b || !s || *s == 0 || !std::isfinite(*a) || !std::isfinite(*b))
      return args.error("floating-point bounds must be finite constants with a non-zero step");
    double n = std::ceil((*b - *a) / *s);
    if (n > 1e15)
      return args.error("too many elements ({})", n);
    len = static_cast<int64_t>(std::max(n, 0.0));
  }
  return one(Type::tensor(dt, {len}));
}

Result metaFull(const Args &args) {
  const Attribute *fill = args.attr("fill_value");
  if (!fill)
    return args.error("fill_value is required");
  auto shape = sizeList(args);
  if (!shape)
    return shape.takeError();
  return one(Type::tensor(args.dtype("dtype").value_or(defaultDTypeOf(*fill)), *shape));
}

Result metaFill(const Args &args) {
  auto shape = sizeList(args);
  if (!shape)
    return shape.takeError();
  return one(Type::tensor(args.dtype("dtype").value_or(DType::F32), *shape));
}

Result metaSymSize(const Args &args) {
  auto self = args.tensor("self");
  auto dim = args.constInt("dim");
  if (!self || !dim)
    return llvm::joinErrors(self.takeError(), dim.takeError());
  if (auto d = args.normalizeDim(*dim, (*self)->rank(), "dim"); !d)
    return d.takeError();
  return one(Type::symInt());
}

Result metaItem(const Args &args) {
  auto self = args.tensor("self");
  if (!self)
    return self.takeError();
  if (args.env().proveEQ((*self)->numel(), 1) != Truth::True)
    return args.error("needs a tensor with one element, got {}", (*self)->str());
  return one(Type::scalar((*self)->dtype()));
}

Result metaCond(const Args &args) {
  const Node &n = args.node();
  auto pred = args.tensor("pred");
  if (!pred)
    return pred.takeError();
  if ((*pred)->dtype() != DType::Bool || args.env().proveEQ((*pred)->numel(), 1) != Truth::True)
    return args.error("pred must be a bool tensor with one element, got {}", (*pred)->str());
  if (n.numRegions() != 2)
    return args.error("needs a then-branch and an else-branch, got {} regions", n.numRegions());
  llvm::ArrayRef<Value *> operands = n.tensorListOperands();
  static const char *const Names[] = {"then", "else"};
  for (unsigned r = 0; r < 2; ++r) {
    const Block &b = n.region(r);
    if (b.numArguments() != operands.size())
      return args.error("the {}-branch takes {} arguments but {} operands are passed", Names[r],
                        b.numArguments(), operands.size());
    for (unsigned i = 0; i < operands.size(); ++i)
      if (!(b.argument(i)->type() == operands[i]->type()))
        return args.error("argument {} of the {}-branch is {} but the operand is {}", i, Names[r],
                          b.argument(i)->type().str(), operands[i]->type().str());
  }
  llvm::ArrayRef<Value *> thenOut = n.region(0).returns(), elseOut = n.region(1).returns();
  if (thenOut.size() != elseOut.size())
    return args.error("the branches return {} and {} values", thenOut.size(), elseOut.size());
  llvm::SmallVector<Type, 1> out;
  for (size_t i = 0; i < thenOut.size(); ++i) {
    if (!thenOut[i] || !elseOut[i])
      return args.error("branch output {} is missing", i);
    if (!(thenOut[i]->type() == elseOut[i]->type()))
      return args.error("output {} differs between branches: then returns {} but else returns {}",
                        i, thenOut[i]->type().str(), elseOut[i]->type().str());
    out.push_back(thenOut[i]->type());
  }
  return out;
}

} // namespace aotc::meta

namespace aotc::meta {

namespace {
/// `dims` normalized against `x`, each at most once.
llvm::Expected<std::vector<unsigned>> distinctDims(const Args &args, const Type &x,
                                                   llvm::ArrayRef<int64_t> dims) {
  llvm::SmallBitVector seen(std::max<size_t>(x.rank(), 1));
  std::vector<unsigned> out;
  for (int64_t d : dims) {
    auto n = args.normalizeDim(d, x.rank(), "dim");
    if (!n)
      return n.takeError();
    if (seen[*n])
      return args.error("dim {} appears twice in dims", d);
    seen.set(*n);
    out.push_back(*n);
  }
  return out;
}
} // namespace

Result metaFlip(const Args &args) {
  auto self = args.tensor("self");
  auto dims = args.constInts("dims");
  if (!self || !dims)
    return llvm::joinErrors(self.takeError(), dims.takeError());
  if (auto d = distinctDims(args, **self, *dims); !d)
    return d.takeError();
  return one(**self);
}

// Without dims, roll shifts the flattened tensor (one shift).
Result metaRoll(const Args &args) {
  auto self = args.tensor("self");
  auto shifts = args.constInts("shifts");
  auto dims = args.constInts("dims");
  if (!self || !shifts || !dims)
    return llvm::joinErrors(llvm::joinErrors(self.takeError(), shifts.takeError()),
                            dims.takeError());
  if (dims->empty() ? shifts->size() != 1 : shifts->size() != dims->size())
    return args.error("shifts and dims must have the same length (one shift without dims), got "
                      "{} and {}",
                      shifts->size(), dims->size());
  if (auto d = distinctDims(args, **self, *dims); !d)
    return d.takeError();
  return one(**self);
}

// repeat tiles the input: trailing dims multiply by their counts, extra counts add leading dims.
Result metaRepeat(const Args &args) {
  auto self = args.tensor("self");
  if (!self)
    return self.takeError();
  const Type &x = **self;
  std::vector<SymExpr> repeats = args.ints("repeats");
  if (repeats.size() < x.rank())
    return args.error("repeats has {} entries, fewer than the {} dims of input {}", repeats.size(),
                      x.rank(), x.str());
  size_t extra = repeats.size() - x.rank();
  Shape out;
  for (size_t i = 0; i < repeats.size(); ++i) {
    if (auto c = repeats[i].constant(); c && *c < 0)
      return args.error("repeats must be non-negative, got {}", *c);
    out.push_back(i < extra ? repeats[i] : repeats[i] * x.shape()[i - extra]);
  }
  return one(Type::tensor(x.dtype(), out));
}

// tril and triu keep the lower (upper) triangle of the last two dims, any diagonal offset.
Result metaTriangle(const Args &args) {
  auto self = args.tensor("self");
  auto diagonal = args.constInt("diagonal");
  if (!self || !diagonal)
    return llvm::joinErrors(self.takeError(), diagonal.takeError());
  if ((*self)->rank() < 2)
    return args.error("needs an input with at least 2 dims, got {}", (*self)->str());
  return one(**self);
}

} // namespace aotc::meta
