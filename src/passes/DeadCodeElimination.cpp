// Dead-code elimination: removes nodes whose results are never used, transitively, in every entry
// and inside the regions of cond nodes.
#include "passes/Passes.h"

#include "llvm/ADT/DenseSet.h"

namespace aotc {

// Every op is pure (the graph is functional: buffer writes are entry outputs, not nodes), so a
// node is live exactly when one of its results reaches the block's returns. One backward sweep
// suffices: a node's users always come after it.
unsigned eliminateDeadCode(Block &block) {
  llvm::DenseSet<const Value *> live;
  for (const Value *v : block.returns())
    live.insert(v);

  unsigned removed = 0;
  for (auto it = block.end(); it != block.begin();) {
    --it;
    Node &node = **it;
    bool isLive = false;
    for (unsigned i = 0, e = node.numResults(); i != e && !isLive; ++i)
      isLive = live.contains(node.result(i));
    if (!isLive) {
      // Nested nodes go with their region; count them so the statistic stays honest.
      for (unsigned r = 0, e = node.numRegions(); r != e; ++r)
        node.region(r).walk([&](Node &) { ++removed; });
      it = block.erase(it);
      ++removed;
      continue;
    }
    for (const Value *operand : node.operands())
      if (operand)
        live.insert(operand);
    // Regions are closed: their values never escape except through their returns, so each one
    // is cleaned on its own. Region arguments stay, since they mirror the cond's operands.
    for (unsigned r = 0, e = node.numRegions(); r != e; ++r)
      removed += eliminateDeadCode(node.region(r));
  }
  return removed;
}

// Entry arguments are never removed, even unused ones: they are the entry's signature, and
// parameters and buffers are shared with the other entries and with the weights file.
llvm::Error runDeadCodeElimination(Graph &graph) {
  for (const auto &entry : graph.entries())
    eliminateDeadCode(entry->body());
  return llvm::Error::success();
}

} // namespace aotc
