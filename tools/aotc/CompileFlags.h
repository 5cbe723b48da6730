// The code generation flags shared by `aotc export` (to a .so) and `aotc compile`.
#ifndef AOTC_TOOLS_AOTC_COMPILEFLAGS_H
#define AOTC_TOOLS_AOTC_COMPILEFLAGS_H

#include "pipeline/Compile.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace aotc::cli {

struct CompileFlags {
  std::string target = "cpu";
  std::string cudaArch;
  std::string cpu = "portable";
  std::string precision = "fp32";
  std::string weightsFile = "embedded";
  std::vector<std::string> keep;
  bool noFuse = false;
  bool noWinograd = false;
  std::vector<std::string> printAfter;

  void addTo(CLI::App &app);
  /// Checks the flags and builds the options; progress lines go to stderr when it is a terminal.
  llvm::Expected<CompileOptions> options() const;
};

/// Compiles an exported program from `aotpPath` into `outPath`.
llvm::Error compileArchive(llvm::StringRef aotpPath, const CompileFlags &flags,
                           llvm::StringRef outPath);

} // namespace aotc::cli

#endif
