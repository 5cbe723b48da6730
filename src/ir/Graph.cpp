// Nodes, blocks, entries and graphs.
#include "aotc/ir/Graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

namespace aotc {

static llvm::Error makeError(std::string msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

//===----------------------------------------------------------------------===//
// Node
//===----------------------------------------------------------------------===//

Node::Node(OpKind kind, Block *parent) : Kind(kind), Parent(parent) {
  Attrs.resize(schema().args.size());
}

Value *Node::operand(llvm::StringRef argName) const {
  std::optional<unsigned> i = schema().operandIndex(argName, Operands.size());
  return i && *i < Operands.size() ? Operands[*i] : nullptr;
}

llvm::ArrayRef<Value *> Node::tensorListOperands() const {
  const OpSchema &s = schema();
  unsigned before = 0;
  for (const ArgSchema &a : s.args) {
    if (a.type == ArgType::TensorList)
      return llvm::ArrayRef<Value *>(Operands).slice(before,
                                                     Operands.size() - s.numFixedOperands());
    before += a.type == ArgType::Tensor;
  }
  return {};
}

llvm::SmallVector<Value *, 1> Node::results() const {
  llvm::SmallVector<Value *, 1> out;
  for (const auto &r : Results)
    out.push_back(r.get());
  return out;
}

Value *Node::addResult(Type t) {
  Results.push_back(std::unique_ptr<Value>(new Value(std::move(t), this, nullptr, Results.size())));
  return Results.back().get();
}

const Attribute *Node::attr(llvm::StringRef name) const {
  int i = schema().argIndex(name);
  if (i < 0)
    return nullptr;
  if (Attrs[i])
    return &*Attrs[i];
  const ArgSchema &arg = schema().args[i];
  return arg.defaultValue ? &*arg.defaultValue : nullptr;
}

std::vector<NamedAttribute> Node::explicitAttrs() const {
  std::vector<NamedAttribute> out;
  for (size_t i = 0; i < Attrs.size(); ++i)
    if (Attrs[i])
      out.emplace_back(schema().args[i].name, *Attrs[i]);
  return out;
}

static bool isIntLike(const Attribute &a) { return a.kind() == Attribute::Kind::Int; }

// Brings `value` into the canonical form of `arg`'s type, or explains why it does not fit.
static llvm::Expected<Attribute> coerce(const OpSchema &s, const ArgSchema &arg, Attribute value) {
  using K = Attribute::Kind;
  auto mismatch = [&](llvm::StringRef expected) {
    return makeError(fmt::format("{}: attribute '{}' must be {}, got {}", s.name, arg.name,
                                 expected.str(), value.str()));
  };
  switch (arg.type) {
  case ArgType::Int:
    if (!isIntLike(value))
      return mismatch("an int");
    return value;
  case ArgType::IntList: {
    if (isIntLike(value))
      value = Attribute::intList(
          std::vector<SymExpr>(arg.fixedLength ? arg.fixedLength : 1, value.getInt()));
    if (value.kind() != K::IntList)
      return mismatch("a list of ints");
    size_t n = value.getIntList().size();
    if (arg.fixedLength && n != arg.fixedLength && n != 0)
      return mismatch(fmt::format("a list of {} ints", arg.fixedLength));
    return value;
  }
  case ArgType::Float:
    if (isIntLike(value) && value.getInt().constant())
      return Attribute::floating(static_cast<double>(*value.getInt().constant()));
    if (value.kind() != K::Float)
      return mismatch("a float");
    return value;
  case ArgType::Bool:
    if (value.kind() != K::Bool)
      return mismatch("a bool");
    return value;
  case ArgType::Str:
    if (value.kind() != K::Str)
      return mismatch("a string");
    return value;
  case ArgType::Scalar:
    if (value.kind() != K::Int && value.kind() != K::Float && value.kind() != K::Bool)
      return mismatch("a number");
    return value;
  case ArgType::ScalarType:
    if (value.kind() != K::DType)
      return mismatch("a dtype");
    return value;
  case ArgType::Tensor:
  case ArgType::TensorList:
    return makeError(fmt::format("{}: '{}' is an operand, not an attribute", s.name, arg.name));
  }
  return value;
}

llvm::Error Node::setAttr(llvm::StringRef name, Attribute value) {
  const OpSchema &s = schema();
  int i = s.argIndex(name);
  if (i < 0)
    return makeError(fmt::format("{} has no attribute '{}'", s.name, name.str()));
  const ArgSchema &arg = s.args[i];
  auto coerced = coerce(s, arg, std::move(value));
  if (!coerced)
    return coerced.takeError();
  if (arg.defaultValue && *arg.defaultValue == *coerced)
    Attrs[i].reset();
  else
    Attrs[i] = std::move(*coerced);
  return llvm::Error::success();
}

void Node::clearAttr(llvm::StringRef name) {
  int i = schema().argIndex(name);
  if (i >= 0)
    Attrs[i].reset();
}

Block &Node::addRegion() {
  Regions.push_back(std::make_unique<Block>(this));
  return *Regions.back();
}

//===----------------------------------------------------------------------===//
// Block
//===----------------------------------------------------------------------===//

Value *Block::addArgument(Type t) {
  Args.push_back(std::unique_ptr<Value>(new Value(std::move(t), nullptr, this, Args.size())));
  return Args.back().get();
}

Node *Block::insert(iterator pos, OpKind kind, llvm::ArrayRef<Value *> operands,
                    llvm::ArrayRef<Type> resultTypes, SourceLoc loc) {
  auto node = std::unique_ptr<Node>(new Node(kind, this));
  node->Operands.assign(operands.begin(), operands.end());
  for (const Type &t : resultTypes)
    node->addResult(t);
  node->Loc = std::move(loc);
  return Nodes.insert(pos, std::move(node))->get();
}

Block::iterator Block::erase(iterator pos) { return Nodes.erase(pos); }

Block::iterator Block::find(const Node *node) {
  return std::find_if(Nodes.begin(), Nodes.end(),
                      [&](const std::unique_ptr<Node> &n) { return n.get() == node; });
}

void Block::replaceAllUsesWith(Value *from, Value *to) {
  for (auto &n : Nodes) {
    for (Value *&op : n->Operands)
      if (op == from)
        op = to;
    for (auto &r : n->Regions)
      r->replaceAllUsesWith(from, to);
  }
  std::replace(Returns.begin(), Returns.end(), from, to);
}

void Block::walk(const std::function<void(Node &)> &fn) {
  for (auto &n : Nodes) {
    fn(*n);
    for (auto &r : n->Regions)
      r->walk(fn);
  }
}

void Block::walk(const std::function<void(const Node &)> &fn) const {
  for (const auto &n : Nodes) {
    fn(*n);
    for (const auto &r : n->Regions)
      static_cast<const Block &>(*r).walk(fn);
  }
}

//===----------------------------------------------------------------------===//
// Entry and Graph
//===----------------------------------------------------------------------===//

llvm::StringRef toString(InputKind kind) {
  switch (kind) {
  case InputKind::User:
    return "input";
  case InputKind::Parameter:
    return "parameter";
  case InputKind::Buffer:
    return "buffer";
  case InputKind::Constant:
    return "constant";
  }
  return "?";
}

llvm::StringRef toString(OutputKind kind) {
  return kind == OutputKind::User ? "output" : "mutates";
}

Value *Entry::addInput(InputSpec spec, Type t) {
  Inputs.push_back(std::move(spec));
  return Body.addArgument(std::move(t));
}

void Entry::addOutput(OutputSpec spec, Value *v) {
  Outputs.push_back(std::move(spec));
  std::vector<Value *> rets(Body.returns().begin(), Body.returns().end());
  rets.push_back(v);
  Body.setReturns(rets);
}

llvm::Error Graph::addState(StateTensor t) {
  if (t.kind == InputKind::User)
    return makeError(
        fmt::format("state tensor \"{}\" must be a parameter, buffer or constant", t.name));
  if (findState(t.name))
    return makeError(fmt::format("state tensor \"{}\" is declared twice", t.name));
  if (!t.type.isTensor())
    return makeError(fmt::format("state tensor \"{}\" must have a tensor type", t.name));
  State.push_back(std::move(t));
  return llvm::Error::success();
}

const StateTensor *Graph::findState(llvm::StringRef name) const {
  for (const StateTensor &t : State)
    if (t.name == name)
      return &t;
  return nullptr;
}

Entry &Graph::addEntry(std::string name) {
  Entries.push_back(std::make_unique<Entry>(std::move(name)));
  return *Entries.back();
}

Entry *Graph::findEntry(llvm::StringRef name) {
  for (auto &e : Entries)
    if (e->name() == name)
      return e.get();
  return nullptr;
}

} // namespace aotc
