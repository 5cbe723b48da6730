// Compilation of an exported program to an artifact: the graph passes that prepare it for code
// generation, lowering to the kernel IR, memory planning, code generation and packaging.
#ifndef AOTC_PIPELINE_COMPILE_H
#define AOTC_PIPELINE_COMPILE_H

#include "aotc/serialize/Archive.h"
#include "kernel/Kernel.h"
#include "package/Package.h"
#include "passes/Passes.h"
#include "pipeline/PassManager.h"

#include "llvm/Support/Error.h"

namespace aotc {

struct CompileOptions {
  PassManagerOptions passes;
  DecomposeOptions decompose;
  PackageOptions package;
  /// Fuse pointwise chains, reductions and GEMM epilogues (off: one kernel per op, for debugging).
  bool fuse = true;
  bool winograd = true; // LowerOptions::winograd
  /// False where the program carries no weight data (`aotc inspect --kernels` re-lowering an
  /// artifact's graph): weights derived at compile time are laid out without data.
  bool weightData = true;
};

/// Graph passes (decompose, the default pipeline, then weight folding, which may replace
/// `program.graph` and change `program.weights`), lowering to the kernel IR, memory planning and
/// the weight layout, in that order (the list lives in Compile.cpp).
llvm::Expected<kir::Program> lowerGraph(ExportedProgram &program, const CompileOptions &options);

/// Compiles `program` (its graph is rewritten by the passes) into the shared library `outPath`.
/// The artifact embeds the exported graph as it was given, for `aotc verify` and `inspect`, or
/// the folded graph when folding removed weights that the exported one names.
llvm::Error compileToSharedLibrary(ExportedProgram &program, const CompileOptions &options,
                                   llvm::StringRef outPath);

} // namespace aotc

#endif
