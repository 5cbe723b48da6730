// Meta functions of reductions and softmax.
#include "Meta.h"

#include "llvm/ADT/SmallBitVector.h"

#include <cmath>

namespace aotc::meta {

namespace {
// The reduced shape for `dims` (all dims when empty), dropping them or keeping them as 1.
llvm::Expected<Shape> reduceShape(const Args &args, const Type &self, llvm::ArrayRef<int64_t> dims,
                                  bool keepdim) {
  llvm::SmallBitVector reduced(self.rank(), dims.empty());
  for (int64_t d : dims) {
    auto n = args.normalizeDim(d, self.rank(), "dim");
    if (!n)
      return n.takeError();
    if (self.rank() == 0)
      continue;
    if (reduced[*n])
      return args.error("dim {} appears more than once in the list of dims", d);
    reduced.set(*n);
  }
  Shape out;
  for (size_t i = 0; i < self.rank(); ++i) {
    if (!reduced[i])
      out.push_back(self.shape()[i]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

// Sums and products of integers accumulate in i64 unless a dtype is given.
DType accumulateType(const Args &args, DType in) {
  if (auto dt = args.dtype("dtype"))
    return *dt;
  return isFloating(in) ? in : DType::I64;
}

Result reduceWith(const Args &args, std::vector<int64_t> dims, DType dtype) {
  auto self = args.tensor("self");
  if (!self)
    return self.takeError();
  auto shape = reduceShape(args, **self, dims, args.boolean("keepdim"));
  if (!shape)
    return shape.takeError();
  return one(Type::tensor(dtype, std::move(*shape)));
}
} // namespace

Result metaSum(const Args &args) {
  auto self = args.tensor("self");
  auto dims = args.constInts("dim");
  if (!self || !dims)
    return llvm::joinErrors(self.takeError(), dims.takeError());
  return reduceWith(args, *dims, accumulateType(args, (*self)->dtype()));
}

Result metaMean(const Args &args) {
  auto self = args.tensor("self");
  auto dims = args.constInts("dim");
  if (!self || !dims)
    return llvm::joinErrors(self.takeError(), dims.takeError());
  DType dt = args.dtype("dtype").value_or((*self)->dtype());
  if (!isFloating(dt))
    return args.error("mean needs a floating-point input or dtype, got {}", toString(dt).str());
  return reduceWith(args, *dims, dt);
}

Result metaMinMaxReduce(const Args &args) {
  auto self = args.tensor("self");
  auto dims = args.constInts("dim");
  if (!self || !dims)
    return llvm::joinErrors(self.takeError(), dims.takeError());
  return reduceWith(args, *dims, (*self)->dtype());
}

Result metaProd(const Args &args) {
  auto self = args.tensor("self");
  auto dim = args.constInt("dim");
  if (!self || !dim)
    return llvm::joinErrors(self.takeError(), dim.takeError());
  return reduceWith(args, {*dim}, accumulateType(args, (*self)->dtype()));
}

Result metaArgmax(const Args &args) {
  auto self = args.tensor("self");
  if (!self)
    return self.takeError();
  if (!args.attr("dim")) {
    // Over the flattened tensor: a 0-d result, or all ones with keepdim.
    Shape shape(args.boolean("keepdim") ? (*self)->rank() : 0, SymExpr(1));
    return one(Type::tensor(DType::I64, shape));
  }
  auto dim = args.constInt("dim");
  if (!dim)
    return dim.takeError();
  return reduceWith(args, {*dim}, DType::I64);
}

Result metaSoftmax(const Args &args) {
  auto self = args.tensor("self");
  auto dim = args.constInt("dim");
  if (!self || !dim)
    return llvm::joinErrors(self.takeError(), dim.takeError());
  if (auto n = args.normalizeDim(*dim, (*self)->rank(), "dim"); !n)
    return n.takeError();
  DType dt = args.dtype("dtype").value_or((*self)->dtype());
  if (!isFloating(dt))
    return args.error("needs a floating-point input or dtype, got {}", toString(dt).str());
  return one(Type::tensor(dt, (*self)->shape()));
}

} // namespace aotc::meta

namespace aotc::meta {

// Float results: integer inputs are converted to the default dtype, as torch.logsumexp does.
Result metaLogsumexp(const Args &args) {
  auto self = args.tensor("self");
  auto dims = args.constInts("dim");
  if (!self || !dims)
    return llvm::joinErrors(self.takeError(), dims.takeError());
  DType in = (*self)->dtype();
  return reduceWith(args, *dims, isFloating(in) ? in : DType::F32);
}

Result metaVar(const Args &args) {
  auto self = args.tensor("self");
  auto dims = args.constInts("dim");
  if (!self || !dims)
    return llvm::joinErrors(self.takeError(), dims.takeError());
  if (!isFloating((*self)->dtype()))
    return args.error("needs a floating-point input, got {}", (*self)->str());
  return reduceWith(args, *dims, (*self)->dtype());
}

Result metaVectorNorm(const Args &args) {
  auto self = args.tensor("self");
  auto dims = args.constInts("dim");
  if (!self || !dims)
    return llvm::joinErrors(self.takeError(), dims.takeError());
  DType dt = args.dtype("dtype").value_or((*self)->dtype());
  if (!isFloating(dt))
    return args.error("needs a floating-point input or dtype, got {}", toString(dt).str());
  const Attribute *ord = args.attr("ord");
  double p = ord->kind() == Attribute::Kind::Float ? ord->getFloat()
             : ord->getInt().constant()            ? static_cast<double>(*ord->getInt().constant())
                                                   : 0;
  if (!(p > 0) || std::isinf(p))
    return args.error("ord must be a positive finite number, got {}", ord->str());
  return reduceWith(args, *dims, dt);
}

// The result keeps the input's shape; integer and bool scans accumulate in i64, as torch's do.
Result metaScan(const Args &args) {
  auto self = args.tensor("self");
  auto dim = args.constInt("dim");
  if (!self || !dim)
    return llvm::joinErrors(self.takeError(), dim.takeError());
  if (auto n = args.normalizeDim(*dim, (*self)->rank(), "dim"); !n)
    return n.takeError();
  return one(Type::tensor(accumulateType(args, (*self)->dtype()), (*self)->shape()));
}

} // namespace aotc::meta
