// The deterministic text form of the graph IR (see docs/ir.md for the grammar).
#ifndef AOTC_IR_PRINTER_H
#define AOTC_IR_PRINTER_H

#include "aotc/ir/Graph.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace aotc {

void printGraph(const Graph &g, llvm::raw_ostream &os);
std::string printGraph(const Graph &g);

} // namespace aotc

#endif
