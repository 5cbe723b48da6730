// pack-weights: the CPU backend's kernel-IR layout pass that stores each GEMM's constant A
// operand (a convolution's weight) as cpu::PanelRows-row panels and its constant transposed B
// (nn.Linear's weight) as cpu::PanelCols-column panels at compile time, so that no run packs
// them again, and computes Winograd filter transforms.
#ifndef AOTC_CODEGEN_CPU_PACKWEIGHTS_H
#define AOTC_CODEGEN_CPU_PACKWEIGHTS_H

#include "aotc/ir/Program.h"
#include "kernel/Kernel.h"

#include "llvm/Support/Error.h"

namespace aotc::cpu {

/// For every f32 GEMM (in every entry, cond branches included) whose A is an immutable weight read
/// with constant addressing, no batch stride and a constant m for which gemmPath() is the blocked
/// path, adds a weight "<name>.panels" (one per weight and addressing; its data appended to
/// `exported`) and rewrites A to read it as panels. The original weights stay: the embedded graph
/// names them. A Winograd filter operand (kir::MatrixOperand::winograd) is always replaced: by a
/// weight
/// "<name>.winograd" holding its 16 transformed components, as panels (batch stride one
/// component's panels) where the blocked path reads A, else dense [16, m, k]; such an operand
/// must read an immutable f32 weight with constant addressing, or the pass fails. A bf16 filter
/// (bf16-weights' copy, for a GEMM of precision bf16) gets a dense bf16 transform, each
/// component the f32 one rounded (kir::winogradFilter of the widened taps, as derive.c).
/// An f32 GEMM of batch 1 whose B is an immutable f32 weight read at constant addressing, at
/// least PanelCols columns wide, whose rows do not run contiguously (nn.Linear's [n, k] weight;
/// a Conv1D's [k, n] is read in place) reads "<name>.panels" instead: PanelCols-column panels
/// (kir::MatrixOperand::panelCols) that hold the weight when B reads it whole; the loop kernels
/// that read such a weight (an embedding table tied to the LM head) then read the panels.
/// Run before kir::layoutWeights. Without `withData` the packed weights are only declared (for
/// printing the kernels of a program whose weights are elsewhere).
llvm::Error packGemmWeights(kir::Program &program, ExportedProgram &exported, bool withData = true);

} // namespace aotc::cpu

#endif
