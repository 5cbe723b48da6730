// Creating nodes with checked attributes and result types inferred by the ops' meta functions.
#ifndef AOTC_IR_BUILDER_H
#define AOTC_IR_BUILDER_H

#include "aotc/ir/Graph.h"

namespace aotc {

/// Result types of `node` from its operand types and attributes (the op's meta function).
/// Errors name the op and the mismatch: `aten.mm: self is f32[4, 3] but mat2 is f32[5, 2];
/// dim 1 of self (3) must equal dim 0 of mat2 (5)`.
llvm::Expected<llvm::SmallVector<Type, 1>> inferResultTypes(const Node &node, const ShapeEnv &env);

/// Inserts nodes into a block at an insertion point (the end by default).
class Builder {
public:
  Builder(const ShapeEnv &env, Block &block) : Env(env), B(&block), Pos(block.end()) {}
  void setInsertionPoint(Block &block, Block::iterator pos) { B = &block, Pos = pos; }
  Block &block() const { return *B; }

  /// Creates a node: checks operands against the schema, sets the attributes (names, types and
  /// list lengths checked; defaults dropped) and infers the result types. On error nothing is
  /// inserted.
  llvm::Expected<Node *> create(OpKind kind, llvm::ArrayRef<Value *> operands,
                                llvm::ArrayRef<NamedAttribute> attrs = {}, SourceLoc loc = {});
  /// create() for single-result ops.
  llvm::Expected<Value *> create1(OpKind kind, llvm::ArrayRef<Value *> operands,
                                  llvm::ArrayRef<NamedAttribute> attrs = {}, SourceLoc loc = {});

private:
  const ShapeEnv &Env;
  Block *B;
  Block::iterator Pos;
};

} // namespace aotc

#endif
