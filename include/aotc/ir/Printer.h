// The deterministic text form of the graph IR (see docs/ir.md for the grammar).
#ifndef AOTC_IR_PRINTER_H
#define AOTC_IR_PRINTER_H

#include "aotc/ir/Graph.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace aotc {

void printGraph(const Graph &g, llvm::raw_ostream &os);

/// The numbers the printer gives the values of `entry` (`%0`, `%1`, ...): arguments first, then
/// each node's results followed by its regions' values; messages use them to point at the text.
llvm::DenseMap<const Value *, unsigned> numberValues(const Entry &entry);
std::string printGraph(const Graph &g);

} // namespace aotc

#endif
