// Op kinds generated from Ops.def, their parsed ATen-style schemas and traits.
#ifndef AOTC_IR_OPSCHEMA_H
#define AOTC_IR_OPSCHEMA_H

#include "aotc/ir/Attribute.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace aotc {

enum class OpKind : unsigned short {
#define AOTC_OP(Enum, Name, Schema, Traits, Meta) Enum,
#include "aotc/ir/Ops.def"
};

/// Broad families of ops; passes and backends ask these instead of listing op kinds.
enum class OpTrait : unsigned short {
  Pointwise,
  Reduction,
  Normalization,
  Contraction,
  Pooling,
  Indexing,
  View,
  Layout,
  Creation,
  Scalars,
  ControlFlow,
};

enum class ArgType {
  Tensor,
  TensorList,
  Int,
  IntList,
  Float,
  Bool,
  Str,
  Scalar,
  ScalarType,
};

struct ArgSchema {
  std::string name;
  ArgType type = ArgType::Tensor;
  bool optional = false;    // `T?`: may be absent (None)
  unsigned fixedLength = 0; // `int[2]`: a single int broadcasts to this many
  bool kwargOnly = false;
  std::optional<Attribute> defaultValue; // absent optional args default to None
  bool hasDefault = false;
  bool isOperand() const { return type == ArgType::Tensor || type == ArgType::TensorList; }
};

enum class ResultType { Tensor, TensorList, SymInt, Scalar };

struct OpSchema {
  OpKind kind;
  std::string name; // `aten.add.Tensor`
  std::vector<ArgSchema> args;
  std::vector<ResultType> results;
  OpTrait trait;

  /// Index of the argument called `name`, or -1.
  int argIndex(llvm::StringRef name) const;
  bool hasTensorList() const;
  /// The fixed number of tensor operands (Tensor and Tensor? args), not counting a Tensor[].
  unsigned numFixedOperands() const;
  /// The position, among `numOperands` operands, of the Tensor or Tensor? argument `name`
  /// (a Tensor[] before it takes the operands the fixed ones leave); nullopt for other names.
  std::optional<unsigned> operandIndex(llvm::StringRef name, size_t numOperands) const;
};

const OpSchema &schemaOf(OpKind kind);
llvm::StringRef opName(OpKind kind);
std::optional<OpKind> lookupOp(llvm::StringRef name);
const std::vector<OpKind> &allOps();

} // namespace aotc

#endif
