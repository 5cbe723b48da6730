// Compiling a model file into a model program (the file + the DSL library + a main) with the
// host C++ compiler, and running that program; shared by `aotc export` and `aotc weights`.
#ifndef AOTC_TOOLS_AOTC_MODELPROGRAM_H
#define AOTC_TOOLS_AOTC_MODELPROGRAM_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace aotc::cli {

/// Compiles `modelFile` (the compiler's diagnostics go to stderr as they are) and runs the
/// program with `args`; an error when either step fails. The program itself reports its errors
/// on stderr, so a failed run is an error with an empty message. A run longer than
/// `timeoutSeconds` (0: no limit) is stopped and is an error. With `compilerDepfile`, the
/// compiler writes there (-MD) the Makefile rule of every file it read: the model file and each
/// header it includes.
llvm::Error compileAndRunModel(llvm::StringRef modelFile, const std::vector<std::string> &args,
                               unsigned timeoutSeconds = 0,
                               llvm::StringRef compilerDepfile = "");

} // namespace aotc::cli

#endif
