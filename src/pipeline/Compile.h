// Compilation of an exported program to an artifact: the ordered map of every step of an export
// after tracing (Compile.cpp lists them in the order they run).
#ifndef AOTC_PIPELINE_COMPILE_H
#define AOTC_PIPELINE_COMPILE_H

#include "aotc/ir/Program.h"
#include "codegen/cpu/CpuCodegen.h"
#include "kernel/Kernel.h"
#include "package/Package.h"
#include "passes/Passes.h"
#include "pipeline/PassManager.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>

namespace aotc {

struct CompileOptions {
  /// printAfter names graph passes and the steps of compileSteps(); the graph, the kernel IR,
  /// the LLVM IR or the objects (whichever the step makes) are printed after each one named.
  PassManagerOptions passes;
  DecomposeOptions decompose;
  /// The devices the artifact carries code for (at least one): --target cpu,cuda.
  bool targetCpu = true, targetCuda = false;
  cpu::CpuTarget cpu = cpu::CpuTarget::Portable;
  /// The archs of the CUDA cubins (--cuda-arch); cuda::defaultCudaArchs() when empty.
  llvm::SmallVector<cuda::CudaArch, 5> cudaArchs;
  PackageOptions package;
  /// Fuse pointwise chains, reductions and GEMM epilogues (off: one kernel per op, for debugging).
  bool fuse = true;
  bool winograd = true; // LowerOptions::winograd
  /// What GEMMs may round their f32 operands to (--precision; kir::Precision): the CUDA target
  /// runs tf32, bf16 and fp16 GEMMs on the tensor cores; the CPU computes tf32 ones in f32,
  /// stores bf16 ones' constant operands in bf16 (bf16-weights) and has no fp16 (an error).
  kir::Precision precision = kir::Precision::FP32;
  /// False where the program carries no weight data (`aotc inspect --kernels` re-lowering an
  /// artifact's graph): weights derived at compile time are laid out without data.
  bool weightData = true;
  /// Called with the name of each step as it starts (progress on a terminal).
  std::function<void(llvm::StringRef)> progress;
  /// Where --print-after output goes; stderr when null.
  llvm::raw_ostream *printStream = nullptr;
};

/// The steps of an export after the graph passes, in the order they run: fold-weights, lower
/// (fuse and lower to the kernel IR for the CPU), plan-memory, the CPU backend's layout pass
/// (bf16-weights, pack-weights), lower-cuda (fuse, lower and plan memory for CUDA), the CUDA
/// backend's layout passes (half-weights, half-activations), layout-weights (the blob of both),
/// codegen-cpu, codegen-cuda, package, link. The steps of a target the export does not ask for are
/// skipped.
llvm::ArrayRef<llvm::StringLiteral> compileSteps();

/// The graph steps (decompose, the default pipeline, fold-weights, which may replace
/// `program.graph` and change `program.weights`) and the kernel-IR steps up to the CPU
/// backend's layout passes: the program code generation takes.
llvm::Expected<kir::Program> lowerGraph(ExportedProgram &program, const CompileOptions &options);

/// Every step: compiles `program` (its graph is rewritten by the passes) into the shared library
/// `outPath`. The artifact embeds the exported graph as it was given, for `aotc verify` and
/// `inspect`, or the folded graph when folding removed weights that the exported one names.
llvm::Error compileToSharedLibrary(ExportedProgram &program, const CompileOptions &options,
                                   llvm::StringRef outPath);

} // namespace aotc

#endif
