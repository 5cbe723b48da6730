// The graph IR: a Graph holds the shape environment, the state tensors (parameters, buffers,
// constants) and one or more entries; an entry is a functional block of nodes with a signature
// in torch.export's terms (user inputs, parameters, buffers, constants; user outputs, buffer
// mutations).
#ifndef AOTC_IR_GRAPH_H
#define AOTC_IR_GRAPH_H

#include "aotc/ir/Attribute.h"
#include "aotc/ir/OpSchema.h"
#include "aotc/ir/ShapeEnv.h"
#include "aotc/ir/SourceLoc.h"
#include "aotc/ir/Type.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace aotc {

class Block;
class Node;

/// An SSA value: a node's result or a block argument.
class Value {
public:
  const Type &type() const { return Ty; }
  void setType(Type t) { Ty = std::move(t); }
  /// The node producing this value; null for block arguments.
  Node *definingNode() const { return Def; }
  /// The block this value is an argument of; null for node results.
  Block *argumentOf() const { return ArgOf; }
  /// Result number or argument number.
  unsigned index() const { return Index; }

private:
  friend class Node;
  friend class Block;
  Value(Type t, Node *def, Block *argOf, unsigned index)
      : Ty(std::move(t)), Def(def), ArgOf(argOf), Index(index) {}
  Type Ty;
  Node *Def;
  Block *ArgOf;
  unsigned Index;
};

using NamedAttribute = std::pair<std::string, Attribute>;

class Node {
public:
  OpKind kind() const { return Kind; }
  const OpSchema &schema() const { return schemaOf(Kind); }
  llvm::StringRef name() const { return opName(Kind); }

  /// Operands in schema order; an absent optional tensor is null.
  llvm::ArrayRef<Value *> operands() const { return Operands; }
  Value *operand(unsigned i) const { return Operands[i]; }
  void setOperand(unsigned i, Value *v) { Operands[i] = v; }
  void setOperands(llvm::ArrayRef<Value *> values) {
    Operands.assign(values.begin(), values.end());
  }
  /// The operand bound to the schema argument `name` (a Tensor or Tensor? arg), or null.
  Value *operand(llvm::StringRef argName) const;
  /// The operands bound to the schema's Tensor[] argument.
  llvm::ArrayRef<Value *> tensorListOperands() const;

  unsigned numResults() const { return Results.size(); }
  Value *result(unsigned i = 0) const { return Results[i].get(); }
  llvm::SmallVector<Value *, 1> results() const;
  /// Appends a result (nodes built before their types are known, e.g. by Builder and cond).
  Value *addResult(Type t);

  /// The attribute set on the node, else the schema default; null when absent (None).
  const Attribute *attr(llvm::StringRef name) const;
  /// Attributes set explicitly (values equal to the schema default are not stored), schema order.
  std::vector<NamedAttribute> explicitAttrs() const;
  /// Checks the name, type and list length against the schema. Values equal to the default are
  /// dropped so that equal nodes look equal.
  llvm::Error setAttr(llvm::StringRef name, Attribute value);
  void clearAttr(llvm::StringRef name);

  const SourceLoc &loc() const { return Loc; }
  void setLoc(SourceLoc loc) { Loc = std::move(loc); }

  /// Subgraphs (the then/else branches of cond).
  unsigned numRegions() const { return Regions.size(); }
  Block &region(unsigned i) const { return *Regions[i]; }
  Block &addRegion();

  Block *parentBlock() const { return Parent; }

private:
  friend class Block;
  Node(OpKind kind, Block *parent);
  OpKind Kind;
  Block *Parent;
  llvm::SmallVector<Value *, 3> Operands;
  llvm::SmallVector<std::unique_ptr<Value>, 1> Results;
  std::vector<std::optional<Attribute>> Attrs; // indexed by schema argument
  SourceLoc Loc;
  std::vector<std::unique_ptr<Block>> Regions;
};

/// A straight-line list of nodes with arguments and returned values.
class Block {
public:
  using NodeList = std::list<std::unique_ptr<Node>>;
  using iterator = NodeList::iterator;

  explicit Block(Node *parentNode = nullptr) : ParentNode(parentNode) {}
  Block(const Block &) = delete;
  Block &operator=(const Block &) = delete;

  Value *addArgument(Type t);
  unsigned numArguments() const { return Args.size(); }
  Value *argument(unsigned i) const { return Args[i].get(); }

  NodeList &nodes() { return Nodes; }
  const NodeList &nodes() const { return Nodes; }
  iterator begin() { return Nodes.begin(); }
  iterator end() { return Nodes.end(); }

  /// Creates a node before `pos` with the given result types; attributes are not checked here
  /// (use Builder for a checked, type-inferred creation).
  Node *insert(iterator pos, OpKind kind, llvm::ArrayRef<Value *> operands,
               llvm::ArrayRef<Type> resultTypes, SourceLoc loc = {});
  Node *append(OpKind kind, llvm::ArrayRef<Value *> operands, llvm::ArrayRef<Type> resultTypes,
               SourceLoc loc = {}) {
    return insert(Nodes.end(), kind, operands, resultTypes, std::move(loc));
  }
  /// Erases a node whose results have no uses.
  iterator erase(iterator pos);
  iterator find(const Node *node);

  llvm::ArrayRef<Value *> returns() const { return Returns; }
  void setReturns(llvm::ArrayRef<Value *> values) { Returns.assign(values.begin(), values.end()); }
  void setReturn(unsigned i, Value *v) { Returns[i] = v; }

  /// Replaces every use of `from` in this block, its nested regions and its returns.
  void replaceAllUsesWith(Value *from, Value *to);
  /// Calls `fn` on every node in program order, entering nested regions after their node.
  void walk(const std::function<void(Node &)> &fn);
  void walk(const std::function<void(const Node &)> &fn) const;

  Node *parentNode() const { return ParentNode; }

private:
  Node *ParentNode;
  std::vector<std::unique_ptr<Value>> Args;
  NodeList Nodes;
  std::vector<Value *> Returns;
};

/// Where an entry input comes from. Parameters, buffers and constants are state tensors of the
/// Graph, shared by every entry that takes them.
enum class InputKind { User, Parameter, Buffer, Constant };
enum class OutputKind { User, BufferMutation };
llvm::StringRef toString(InputKind kind);  // input, parameter, buffer, constant
llvm::StringRef toString(OutputKind kind); // output, mutates

struct InputSpec {
  InputKind kind = InputKind::User;
  std::string name; // the user input's name, or the state tensor's name
  friend bool operator==(const InputSpec &, const InputSpec &) = default;
};

struct OutputSpec {
  OutputKind kind = OutputKind::User;
  std::string name; // the user output's name, or the buffer written back
  friend bool operator==(const OutputSpec &, const OutputSpec &) = default;
};

/// One function of the model: body arguments match `inputs`, body returns match `outputs`.
class Entry {
public:
  explicit Entry(std::string name) : Name(std::move(name)) {}
  const std::string &name() const { return Name; }
  Block &body() { return Body; }
  const Block &body() const { return Body; }
  std::vector<InputSpec> &inputs() { return Inputs; }
  const std::vector<InputSpec> &inputs() const { return Inputs; }
  std::vector<OutputSpec> &outputs() { return Outputs; }
  const std::vector<OutputSpec> &outputs() const { return Outputs; }

  Value *addInput(InputSpec spec, Type t);
  void addOutput(OutputSpec spec, Value *v);

private:
  std::string Name;
  Block Body;
  std::vector<InputSpec> Inputs;
  std::vector<OutputSpec> Outputs;
};

/// A parameter, buffer or constant tensor of the model.
struct StateTensor {
  InputKind kind = InputKind::Parameter;
  std::string name; // PyTorch's hierarchical name: `layer1.0.conv1.weight`
  Type type = Type::tensor(DType::F32, {});
  friend bool operator==(const StateTensor &, const StateTensor &) = default;
};

/// Version of the op set (Ops.def); a reader accepts graphs of its major version.
inline constexpr unsigned OpsetMajor = 1;
inline constexpr unsigned OpsetMinor = 0;

class Graph {
public:
  explicit Graph(std::string name = "model") : Name(std::move(name)) {}
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  const std::string &name() const { return Name; }
  void setName(std::string n) { Name = std::move(n); }
  ShapeEnv &shapeEnv() { return Env; }
  const ShapeEnv &shapeEnv() const { return Env; }

  llvm::Error addState(StateTensor t);
  const StateTensor *findState(llvm::StringRef name) const;
  const std::vector<StateTensor> &state() const { return State; }

  Entry &addEntry(std::string name);
  Entry *findEntry(llvm::StringRef name);
  const std::vector<std::unique_ptr<Entry>> &entries() const { return Entries; }

  unsigned opsetMajor() const { return OpMajor; }
  unsigned opsetMinor() const { return OpMinor; }
  void setOpset(unsigned major, unsigned minor) { OpMajor = major, OpMinor = minor; }

private:
  std::string Name;
  unsigned OpMajor = OpsetMajor;
  unsigned OpMinor = OpsetMinor;
  ShapeEnv Env;
  std::vector<StateTensor> State;
  std::vector<std::unique_ptr<Entry>> Entries;
};

} // namespace aotc

#endif
