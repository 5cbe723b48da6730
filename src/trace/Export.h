// Tracing a model file's declaration (dims, entries) into a graph, filling its weights (from a
// safetensors file or by the modules' initializations) and writing the result.
#ifndef AOTC_TRACE_EXPORT_H
#define AOTC_TRACE_EXPORT_H

#include "aotc/Model.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace aotc {

/// The options `aotc export` and `aotc weights` pass to the compiled model program.
struct ExportOptions {
  std::vector<std::string> entries; // empty: all
  std::vector<std::string> dyn;     // NAME=LO..HI
  std::string weights;              // a .safetensors file
  bool allowMissing = false;
  bool allowUnexpected = false;
  std::string emit = "aotp"; // aotp | ir | weights
  std::string output = "-";
  bool report = false;
  uint64_t seed = 0;
};

/// A `--dyn NAME=LO..HI` argument.
struct DynSpec {
  std::string name;
  int64_t lo = 0, hi = 0;
};
llvm::Expected<DynSpec> parseDynSpec(llvm::StringRef text);

/// Runs the whole export for the model declared in the program; errors are one message, with
/// every problem on its own line in report mode.
llvm::Error runExport(const ModelDecl &decl, const ExportOptions &options);

/// The entry point of compiled model programs: parses `argv` into ExportOptions and runs the
/// export, printing errors to stderr. Returns the process exit code.
int modelMain(int argc, char **argv, ModelDecl (*define)());

} // namespace aotc

#endif
