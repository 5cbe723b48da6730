// Lowering of a graph (after decompose and the default pipeline) to the kernel IR: pointwise
// chains, row reductions and GEMM epilogues fuse into one step each. Arena offsets are left to
// kir::planMemory (MemoryPlan.h).
#ifndef AOTC_KERNEL_LOWER_H
#define AOTC_KERNEL_LOWER_H

#include "aotc/ir/Graph.h"
#include "kernel/Kernel.h"
#include "kernel/Target.h"

#include "llvm/Support/Error.h"

namespace aotc {

struct LowerOptions {
  /// Off: every graph value is realized in its own kernel (a debugging aid and a test oracle).
  bool fuse = true;
  /// 3x3 stride-1 f32 convolutions as Winograd F(4x4, 3x3) or F(2x2, 3x3) where the shape suits
  /// it (TargetInfo; 4x or 2.25x fewer multiplications; the sums round differently from the
  /// direct GEMM's).
  bool winograd = true;
  /// What each f32 GEMM may round its operands to (GemmCall::precision).
  kir::Precision precision = kir::Precision::FP32;
};

/// Lowers every entry of `graph` (after decompose + canonicalize/cse/dce) for `target`, whose
/// thresholds choose among equivalent lowerings. Every state tensor becomes a Weight in order
/// (buffers that some entry mutates are mutableBuffer). An op the target's backend cannot run is
/// an error "<file>:<line>:<col>: aten.cond is not supported by the CPU backend yet".
llvm::Expected<kir::Program> lowerToKernels(const Graph &graph, const kir::TargetInfo &target,
                                            const LowerOptions &options);

} // namespace aotc

#endif
