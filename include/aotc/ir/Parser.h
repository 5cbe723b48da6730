// Reads the text form written by printGraph. Errors carry `file:line:col: message`.
#ifndef AOTC_IR_PARSER_H
#define AOTC_IR_PARSER_H

#include "aotc/ir/Graph.h"

#include "llvm/Support/Error.h"

#include <memory>

namespace aotc {

/// Parses a whole graph. Result types written in the text are taken as given; run verifyGraph to
/// check them against the meta functions.
llvm::Expected<std::unique_ptr<Graph>> parseGraph(llvm::StringRef text,
                                                  llvm::StringRef fileName = "<input>");

} // namespace aotc

#endif
