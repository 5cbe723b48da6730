// Meta functions of pointwise ops: broadcasting and PyTorch's type promotion.
#include "Meta.h"

namespace aotc::meta {

namespace {
// Integer and bool inputs of float math become the default dtype, as in torch.
DType floatOf(DType t) { return isFloating(t) ? t : DType::F32; }

Result unaryWith(const Args &args, DType (*dtypeOf)(DType)) {
  auto self = args.tensor("self");
  if (!self)
    return self.takeError();
  return one(Type::tensor(dtypeOf((*self)->dtype()), (*self)->shape()));
}

Result binaryWith(const Args &args, llvm::StringRef otherName, DType (*dtypeOf)(DType)) {
  auto self = args.tensor("self");
  if (!self)
    return self.takeError();
  auto other = args.tensor(otherName);
  if (!other)
    return other.takeError();
  auto shape = args.broadcast({*self, *other});
  if (!shape)
    return shape.takeError();
  return one(Type::tensor(dtypeOf(args.resultType({*self, *other})), std::move(*shape)));
}

Result scalarWith(const Args &args, llvm::StringRef scalarName, DType (*dtypeOf)(DType)) {
  auto self = args.tensor("self");
  if (!self)
    return self.takeError();
  if (!args.attr(scalarName))
    return args.error("attribute '{}' is missing", scalarName.str());
  DType dt = args.resultType({*self}, {scalarName});
  return one(Type::tensor(dtypeOf(dt), (*self)->shape()));
}

DType same(DType t) { return t; }
DType toBool(DType) { return DType::Bool; }
} // namespace

Result metaUnary(const Args &args) { return unaryWith(args, same); }
Result metaUnaryFloat(const Args &args) { return unaryWith(args, floatOf); }
Result metaUnaryBool(const Args &args) { return unaryWith(args, toBool); }

Result metaGelu(const Args &args) {
  const std::string &mode = args.attr("approximate")->getStr();
  if (mode != "none" && mode != "tanh")
    return args.error("approximate must be \"none\" or \"tanh\", got \"{}\"", mode);
  return unaryWith(args, floatOf);
}

// torch's activation kernels are defined for floating dtypes only ("not implemented for
// 'Long'"); the result keeps the input's type.
Result metaActivation(const Args &args) {
  auto self = args.tensor("self");
  if (!self)
    return self.takeError();
  if (!isFloating((*self)->dtype()))
    return args.error("needs a floating-point input, got {}", (*self)->str());
  return one(**self);
}

// PReLU's weight is one slope, or one per channel (dim 1, or the only dim of a 1-d input).
Result metaPrelu(const Args &args) {
  auto self = metaActivation(args);
  if (!self)
    return self.takeError();
  auto weight = args.tensor("weight");
  if (!weight)
    return weight.takeError();
  const Type &x = (*self)[0], &w = **weight;
  if (w.rank() > 1)
    return args.error("weight must be a scalar or 1-d tensor, got {}", w.str());
  if (w.dtype() != x.dtype())
    return args.error("weight {} must have the input's dtype, {}", w.str(), x.str());
  SymExpr slopes = w.numel();
  if (slopes == SymExpr(1))
    return self;
  if (x.rank() == 0)
    return args.error("a 0-d input takes a single slope, got weight {}", w.str());
  SymExpr channels = x.rank() > 1 ? x.shape()[1] : SymExpr(1);
  if (!args.knownEqual(channels, slopes))
    return args.error("weight has {} slopes for {} channels of input {}", slopes.str(),
                      channels.str(), x.str());
  return self;
}

Result metaClamp(const Args &args) {
  auto self = args.tensor("self");
  if (!self)
    return self.takeError();
  return one(Type::tensor(args.resultType({*self}, {"min", "max"}), (*self)->shape()));
}

Result metaToCopy(const Args &args) {
  auto self = args.tensor("self");
  if (!self)
    return self.takeError();
  auto dt = args.dtype("dtype");
  if (!dt)
    return args.error("attribute 'dtype' is missing");
  return one(Type::tensor(*dt, (*self)->shape()));
}

Result metaBinary(const Args &args) {
  const OpSchema &s = args.node().schema();
  return binaryWith(args, s.args[1].name, same);
}
Result metaBinaryFloat(const Args &args) { return binaryWith(args, "other", floatOf); }
Result metaCompare(const Args &args) { return binaryWith(args, "other", toBool); }

Result metaDivMode(const Args &args) {
  const Attribute *mode = args.attr("rounding_mode");
  if (!mode)
    return binaryWith(args, "other", floatOf);
  if (mode->getStr() != "trunc" && mode->getStr() != "floor")
    return args.error("rounding_mode must be \"trunc\" or \"floor\", got \"{}\"", mode->getStr());
  return binaryWith(args, "other", same);
}

Result metaBinaryScalar(const Args &args) {
  const OpSchema &s = args.node().schema();
  return scalarWith(args, s.args[1].name, same);
}
Result metaBinaryScalarFloat(const Args &args) { return scalarWith(args, "other", floatOf); }
Result metaCompareScalar(const Args &args) { return scalarWith(args, "other", toBool); }

// torch's bitwise kernels are defined for integers and bool (shifts for integers only): a
// floating operand is refused as ATen refuses it ("bitwise_and_cpu" not implemented for 'Float').
static Result bitwiseChecked(const Args &args, Result r, bool allowBool) {
  if (!r)
    return r;
  DType t = (*r)[0].dtype();
  if (isFloating(t) || (!allowBool && t == DType::Bool))
    return args.error("not implemented for {} inputs; it takes {} tensors", toString(t).str(),
                      allowBool ? "integer or bool" : "integer");
  return r;
}

Result metaBitwise(const Args &args) {
  return bitwiseChecked(args, binaryWith(args, "other", same), true);
}
Result metaBitwiseScalar(const Args &args) {
  return bitwiseChecked(args, scalarWith(args, "other", same), true);
}
Result metaBitwiseNot(const Args &args) {
  return bitwiseChecked(args, unaryWith(args, same), true);
}
Result metaShift(const Args &args) {
  return bitwiseChecked(args, binaryWith(args, "other", same), false);
}
Result metaShiftScalar(const Args &args) {
  return bitwiseChecked(args, scalarWith(args, "other", same), false);
}

Result metaWhere(const Args &args) {
  auto cond = args.tensor("condition");
  auto self = args.tensor("self");
  auto other = args.tensor("other");
  if (!cond || !self || !other)
    return llvm::joinErrors(llvm::joinErrors(cond.takeError(), self.takeError()),
                            other.takeError());
  if ((*cond)->dtype() != DType::Bool)
    return args.error("condition must be a bool tensor, got {}", (*cond)->str());
  auto shape = args.broadcast({*cond, *self, *other});
  if (!shape)
    return shape.takeError();
  return one(Type::tensor(args.resultType({*self, *other}), std::move(*shape)));
}

Result metaTernary(const Args &args) {
  llvm::SmallVector<const Type *, 3> types;
  for (const ArgSchema &a : args.node().schema().args) {
    if (a.type != ArgType::Tensor)
      continue;
    auto t = args.tensor(a.name);
    if (!t)
      return t.takeError();
    types.push_back(*t);
  }
  auto shape = args.broadcast(types);
  if (!shape)
    return shape.takeError();
  return one(Type::tensor(args.resultType(types, {"value"}), std::move(*shape)));
}

} // namespace aotc::meta
