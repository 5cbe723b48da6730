// Common-subexpression elimination: within each block, a node identical to an earlier one (same
// op, operands, attributes and result types) is replaced by the earlier one.
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/SmallVector.h"

namespace aotc {
namespace {

/// Two nodes compute the same values. Attributes compare with Attribute's operator==, which is
/// bitwise for floats: `mul.Scalar(x, 0.0)` and `mul.Scalar(x, -0.0)` stay apart, NaNs merge.
bool isEquivalent(const Node &a, const Node &b) {
  if (a.kind() != b.kind() || a.numResults() != b.numResults())
    return false;
  if (!llvm::equal(a.operands(), b.operands()))
    return false;
  for (unsigned i = 0, e = a.numResults(); i != e; ++i)
    if (!(a.result(i)->type() == b.result(i)->type()))
      return false;
  return a.explicitAttrs() == b.explicitAttrs();
}

/// Consistent with isEquivalent: equal attributes print equally (floats print exactly), so the
/// text is a sound hash input. Operand pointers are only hashed, never iterated over, so the
/// result stays deterministic.
llvm::hash_code hashNode(const Node &node) {
  llvm::hash_code h = llvm::hash_combine(static_cast<unsigned>(node.kind()), node.numResults());
  for (const Value *operand : node.operands())
    h = llvm::hash_combine(h, operand);
  for (const auto &[name, attr] : node.explicitAttrs())
    h = llvm::hash_combine(h, name, attr.str());
  for (unsigned i = 0, e = node.numResults(); i != e; ++i)
    h = llvm::hash_combine(h, node.result(i)->type().str());
  return h;
}

/// Keys nodes by what they compute rather than by identity (MLIR's SimpleOperationInfo).
struct NodeInfo : llvm::DenseMapInfo<Node *> {
  static unsigned getHashValue(const Node *node) { return hashNode(*node); }
  static bool isEqual(const Node *a, const Node *b) {
    if (a == b)
      return true;
    if (a == getEmptyKey() || a == getTombstoneKey() || b == getEmptyKey() ||
        b == getTombstoneKey())
      return false;
    return isEquivalent(*a, *b);
  }
};

void eliminateCommonSubexpressions(Block &block) {
  // The first of several equal nodes is the one in the set, so it is the one kept, with its source
  // location.
  llvm::DenseSet<Node *, NodeInfo> seen;
  // Results of removed nodes and what replaces them. Regions are closed, so every use of a value
  // of this block is an operand of a later node of this block or one of its returns: rewriting
  // those while walking forward replaces all uses in one sweep, where Block::replaceAllUsesWith
  // per removed node would rescan the block each time.
  llvm::DenseMap<Value *, Value *> replacement;
  llvm::SmallVector<Block::iterator, 8> duplicates;
  auto remap = [&](Value *v) {
    auto it = replacement.find(v);
    return it == replacement.end() ? v : it->second;
  };

  for (auto it = block.begin(); it != block.end();) {
    Node &node = **it;
    for (unsigned i = 0, e = node.operands().size(); i != e; ++i)
      if (Value *v = node.operand(i))
        node.setOperand(i, remap(v));

    // Regions have their own scope: equal regions are not compared, so a cond is never merged,
    // but its regions are cleaned on their own.
    if (node.numRegions() != 0) {
      for (unsigned r = 0, e = node.numRegions(); r != e; ++r)
        eliminateCommonSubexpressions(node.region(r));
      ++it;
      continue;
    }

    auto [found, inserted] = seen.insert(&node);
    if (inserted) {
      ++it;
      continue;
    }
    Node *earlier = *found;
    for (unsigned i = 0, e = node.numResults(); i != e; ++i)
      replacement[node.result(i)] = earlier->result(i);
    duplicates.push_back(it++);
  }

  for (unsigned i = 0, e = block.returns().size(); i != e; ++i)
    block.setReturn(i, remap(block.returns()[i]));
  // Erased only now that no operand or return refers to them any more.
  for (auto it = duplicates.rbegin(), e = duplicates.rend(); it != e; ++it)
    block.erase(*it);
}

} // namespace

llvm::Error runCommonSubexpressionElimination(Graph &graph) {
  for (const auto &entry : graph.entries())
    eliminateCommonSubexpressions(entry->body());
  return llvm::Error::success();
}

} // namespace aotc
