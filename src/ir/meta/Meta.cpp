// The meta-function dispatch, the helpers every meta function shares, and the checked Builder.
#include "Meta.h"

namespace aotc {
namespace meta {

llvm::Expected<const Type *> Args::optionalTensor(llvm::StringRef name) const {
  Value *v = N.operand(name);
  if (!v)
    return nullptr;
  if (!v->type().isTensor())
    return error("operand '{}' must be a tensor, got {}", name.str(), v->type().str());
  return &v->type();
}

llvm::Expected<const Type *> Args::tensor(llvm::StringRef name) const {
  auto t = optionalTensor(name);
  if (t && !*t)
    return error("operand '{}' is missing", name.str());
  return t;
}

llvm::Expected<llvm::SmallVector<const Type *, 4>> Args::tensorList() const {
  llvm::SmallVector<const Type *, 4> out;
  for (Value *v : N.tensorListOperands()) {
    if (!v || !v->type().isTensor())
      return error("every operand of the tensor list must be a tensor");
    out.push_back(&v->type());
  }
  return out;
}

llvm::Expected<int64_t> Args::constInt(llvm::StringRef name) const {
  const Attribute *a = attr(name);
  if (!a || a->kind() != Attribute::Kind::Int)
    return error("attribute '{}' is missing", name.str());
  if (auto c = a->getInt().constant())
    return *c;
  return error("attribute '{}' must be a constant, got {}", name.str(), a->getInt().str());
}

llvm::Expected<std::vector<int64_t>> Args::constInts(llvm::StringRef name) const {
  std::vector<int64_t> out;
  for (const SymExpr &e : ints(name)) {
    auto c = e.constant();
    if (!c)
      return error("attribute '{}' must be constant, got {}", name.str(), e.str());
    out.push_back(*c);
  }
  return out;
}

std::vector<SymExpr> Args::ints(llvm::StringRef name) const {
  const Attribute *a = attr(name);
  if (!a)
    return {};
  if (a->kind() == Attribute::Kind::Int)
    return {a->getInt()};
  return a->getIntList();
}

bool Args::boolean(llvm::StringRef name) const {
  const Attribute *a = attr(name);
  return a && a->kind() == Attribute::Kind::Bool && a->getBool();
}

std::optional<DType> Args::dtype(llvm::StringRef name) const {
  const Attribute *a = attr(name);
  if (!a || a->kind() != Attribute::Kind::DType)
    return std::nullopt;
  return a->getDType();
}

llvm::Expected<unsigned> Args::normalizeDim(int64_t dim, size_t rank, llvm::StringRef what) const {
  int64_t r = static_cast<int64_t>(rank);
  int64_t lo = rank == 0 ? -1 : -r, hi = rank == 0 ? 0 : r - 1;
  if (dim < lo || dim > hi)
    return error("{} {} is out of range for a tensor of rank {} (expected {}..{})", what.str(), dim,
                 rank, lo, hi);
  return static_cast<unsigned>(dim < 0 ? dim + std::max<int64_t>(r, 1) : dim);
}

bool Args::knownEqual(const SymExpr &a, const SymExpr &b) const {
  if (a == b || Env.proveEQ(a, b) == Truth::True)
    return true;
  for (const Guard &g : Env.guards())
    if (g.kind == GuardKind::EQ && ((g.lhs == a && g.rhs == b) || (g.lhs == b && g.rhs == a)))
      return true;
  return false;
}

SymExpr Args::smin(const SymExpr &a, const SymExpr &b) const {
  if (Env.proveLE(a, b) == Truth::True)
    return a;
  if (Env.proveLE(b, a) == Truth::True)
    return b;
  return SymExpr::min(a, b);
}

SymExpr Args::smax(const SymExpr &a, const SymExpr &b) const {
  if (Env.proveLE(a, b) == Truth::True)
    return b;
  if (Env.proveLE(b, a) == Truth::True)
    return a;
  return SymExpr::max(a, b);
}

llvm::Expected<Shape> Args::broadcast(llvm::ArrayRef<const Type *> types) const {
  size_t rank = 0;
  for (const Type *t : types)
    rank = std::max(rank, t->rank());
  Shape out(rank, SymExpr(1));
  for (const Type *t : types) {
    size_t offset = rank - t->rank();
    for (size_t i = 0; i < t->rank(); ++i) {
      const SymExpr &d = t->shape()[i];
      SymExpr &o = out[offset + i];
      if (d == SymExpr(1) || knownEqual(o, d))
        continue;
      if (o == SymExpr(1)) {
        o = d;
        continue;
      }
      std::string shapes;
      for (const Type *u : types)
        shapes += (shapes.empty() ? "" : " and ") + shapeStr(u->shape());
      return error("shapes {} do not broadcast: dim {} is {} in one and {} in another", shapes,
                   static_cast<int64_t>(offset + i) - static_cast<int64_t>(rank), o.str(), d.str());
    }
  }
  return out;
}

DType Args::resultType(llvm::ArrayRef<const Type *> tensors,
                       llvm::ArrayRef<llvm::StringRef> scalarAttrs) const {
  llvm::SmallVector<ResultTypeOperand, 4> ops;
  for (const Type *t : tensors)
    ops.push_back(
        {t->rank() ? ResultTypeOperand::Kind::Tensor : ResultTypeOperand::Kind::ZeroDimTensor,
         t->dtype()});
  for (llvm::StringRef name : scalarAttrs) {
    const Attribute *a = attr(name);
    if (!a)
      continue;
    DType dt = a->kind() == Attribute::Kind::Float  ? DType::F64
               : a->kind() == Attribute::Kind::Bool ? DType::Bool
                                                    : DType::I64;
    ops.push_back({ResultTypeOperand::Kind::Number, dt});
  }
  return aotc::resultType(ops);
}

} // namespace meta

llvm::Expected<llvm::SmallVector<Type, 1>> inferResultTypes(const Node &node, const ShapeEnv &env) {
  meta::Args args(node, env);
  for (Value *v : node.operands()) {
    if (v && !v->type().isTensor())
      return args.error("operand of type {} is not a tensor", v->type().str());
  }
  switch (node.kind()) {
#define AOTC_OP(Enum, Name, Schema, Traits, Meta)                                                  \
  case OpKind::Enum:                                                                               \
    return meta::Meta(args);
#include "aotc/ir/Ops.def"
  }
  return args.error("unknown op");
}

//===----------------------------------------------------------------------===//
// Builder
//===----------------------------------------------------------------------===//

static llvm::Error checkOperands(const OpSchema &s, llvm::ArrayRef<Value *> operands) {
  unsigned fixed = s.numFixedOperands();
  bool list = s.hasTensorList();
  if (operands.size() < fixed || (!list && operands.size() != fixed))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   fmt::format("{}: expected {}{} operands, got {}", s.name,
                                               list ? "at least " : "", fixed, operands.size()));
  unsigned index = 0;
  for (const ArgSchema &a : s.args) {
    if (a.type == ArgType::TensorList) {
      for (size_t i = 0; i < operands.size() - fixed; ++i, ++index)
        if (!operands[index])
          return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                         fmt::format("{}: '{}' holds a none", s.name, a.name));
      continue;
    }
    if (a.type != ArgType::Tensor)
      continue;
    if (!operands[index] && !a.optional)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          fmt::format("{}: operand '{}' is required but none was given", s.name, a.name));
    ++index;
  }
  return llvm::Error::success();
}

llvm::Expected<Node *> Builder::create(OpKind kind, llvm::ArrayRef<Value *> operands,
                                       llvm::ArrayRef<NamedAttribute> attrs, SourceLoc loc) {
  if (auto err = checkOperands(schemaOf(kind), operands))
    return err;
  Node *node = B->insert(Pos, kind, operands, {}, std::move(loc));
  auto fail = [&](llvm::Error err) -> llvm::Expected<Node *> {
    B->erase(B->find(node));
    return err;
  };
  for (const NamedAttribute &a : attrs)
    if (auto err = node->setAttr(a.first, a.second))
      return fail(std::move(err));
  auto types = inferResultTypes(*node, Env);
  if (!types)
    return fail(types.takeError());
  for (Type &t : *types)
    node->addResult(std::move(t));
  return node;
}

llvm::Expected<Value *> Builder::create1(OpKind kind, llvm::ArrayRef<Value *> operands,
                                         llvm::ArrayRef<NamedAttribute> attrs, SourceLoc loc) {
  auto node = create(kind, operands, attrs, std::move(loc));
  if (!node)
    return node.takeError();
  if ((*node)->numResults() != 1)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        fmt::format("{} has {} results, not one", (*node)->name().str(), (*node)->numResults()));
  return (*node)->result();
}

} // namespace aotc
