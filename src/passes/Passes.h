// Entry points of the graph passes listed in Passes.def. A pass is a function over a whole Graph
// (every entry); it returns an error only for a problem it cannot handle, never for a no-op.
#ifndef AOTC_PASSES_PASSES_H
#define AOTC_PASSES_PASSES_H

#include "aotc/ir/Graph.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

namespace aotc {

#define AOTC_PASS(Fn, Name, Description) llvm::Error Fn(Graph &graph);
#include "passes/Passes.def"

/// What the decompose pass leaves alone.
struct DecomposeOptions {
  /// Ops kept whole even though decompose knows how to expand them: a backend with its own
  /// kernel for, say, softmax wants to see the op, not its pieces.
  llvm::SmallVector<OpKind, 4> keep;
};

/// The decompose pass with options; runDecompose(graph) keeps nothing whole.
llvm::Error runDecompose(Graph &graph, const DecomposeOptions &options);

/// Removes the dead nodes of `block` and of the regions of its live nodes; the block's returns
/// and arguments are kept. Returns the number of nodes removed. Other passes call this to clean
/// up after themselves without running the whole dce pass.
unsigned eliminateDeadCode(Block &block);

} // namespace aotc

#endif
