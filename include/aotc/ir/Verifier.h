// Structural and type checks of a graph: SSA order, operands against schemas, result types
// against the meta functions, signature consistency and declared symbols.
#ifndef AOTC_IR_VERIFIER_H
#define AOTC_IR_VERIFIER_H

#include "aotc/ir/Graph.h"

#include "llvm/Support/Error.h"

namespace aotc {

/// All problems found, one per line, each naming the entry, the value and the op.
llvm::Error verifyGraph(const Graph &g);

} // namespace aotc

#endif
