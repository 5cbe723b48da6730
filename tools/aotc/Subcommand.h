// How a subcommand of the `aotc` CLI plugs in: each lives in its own file and exposes one
// function that declares it on the top-level app; main.cpp lists those functions.
#ifndef AOTC_TOOLS_AOTC_SUBCOMMAND_H
#define AOTC_TOOLS_AOTC_SUBCOMMAND_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <CLI/CLI.hpp>

#include <functional>

namespace aotc::cli {

/// A declared subcommand and what runs when the command line chose it.
struct Subcommand {
  CLI::App *app = nullptr;
  /// Runs after parsing; returns the process exit code.
  std::function<int()> run;
};

/// `aotc opt`: reads IR text, runs passes, prints the result (OptCommand.cpp).
Subcommand addOptCommand(CLI::App &parent);

/// `aotc export`: compiles and traces a model file (ExportCommand.cpp).
Subcommand addExportCommand(CLI::App &parent);
/// `aotc weights`: writes a model's initialized weights as .safetensors (ExportCommand.cpp).
Subcommand addWeightsCommand(CLI::App &parent);

/// `aotc run`: runs an entry of a .aotp in the reference interpreter (RunCommand.cpp).
Subcommand addRunCommand(CLI::App &parent);
/// `aotc archive`: packs IR text and zero or random weights into a .aotp (ArchiveCommand.cpp).
Subcommand addArchiveCommand(CLI::App &parent);

/// `aotc compile`: compiles a .aotp into a .so, or prints its kernel IR (CompileCommand.cpp).
Subcommand addCompileCommand(CLI::App &parent);
/// `aotc verify`: compares an artifact with the reference interpreter (VerifyCommand.cpp).
Subcommand addVerifyCommand(CLI::App &parent);

/// `aotc inspect`: entries, inputs, dims and weights of an exported program (InspectCommand.cpp).
Subcommand addInspectCommand(CLI::App &parent);

/// Prints `aotc <command>: error: <message>` on stderr and returns the exit code for failure.
int reportError(llvm::StringRef command, llvm::Error err);

} // namespace aotc::cli

#endif
