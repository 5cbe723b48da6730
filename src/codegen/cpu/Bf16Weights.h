// bf16-weights: the CPU backend's kernel-IR layout pass that stores the constant operands of
// GEMMs exported at --precision bf16 (nn.Linear's, Conv1D's and convolutions' weights) in bf16,
// so that the GEMMs stream half the bytes of them and either widen each element to f32 as they
// read it or multiply in bf16 where the CPU can.
#ifndef AOTC_CODEGEN_CPU_BF16WEIGHTS_H
#define AOTC_CODEGEN_CPU_BF16WEIGHTS_H

#include "aotc/ir/Program.h"
#include "kernel/Kernel.h"

#include "llvm/Support/Error.h"

namespace aotc::cpu {

/// For every f32 GEMM of precision bf16 (in every entry, cond branches included) whose B is an
/// immutable f32 weight read in place (no conv window, no panels) and whose batch is 1, or else
/// whose A is one (no panels; a Winograd filter too, whose transform pack-weights then derives
/// from the copy) and B is not a weight, adds a bf16 weight
/// (every element rounded to nearest even, NaN kept; its data appended to `exported`) and points
/// the operand at it. A B of constant sizes and addressing gets "<name>.bf16pairs", its k-pair
/// panels (kir::MatrixOperand::pairPanelCols, PairPanelCols wide; one per weight and
/// addressing); any other operand "<name>.bf16", a dense copy read with the same addressing (one
/// per weight). The copy holds the original (kir::HeldWeight, rounded; panels where B reads the
/// whole weight as [k, n] or [n, k]). Where no GEMM or attention operand reads such an original
/// in f32 any more, the loop kernels and epilogues that read it (an embedding table tied to the
/// LM head) read its holder's elements instead (kir::HeldWeight::position, widened): the blob
/// then leaves the f32 out, unless CUDA's kernels read it; tools recover it widened from the
/// bf16. At `precision` bf16 (the export's), an f32 parameter of `exported`'s graph that the
/// kernels only gather rows of (an embedding table: every load's offset reads memory) gets a
/// dense bf16 copy that holds it, read the same way, so the blob stores it in bf16 too. Run
/// before pack-weights (which packs the f32 A operands left) and kir::layoutWeights. Without
/// `withData` the bf16 weights are only declared.
llvm::Error storeBf16Weights(kir::Program &program, ExportedProgram &exported,
                             kir::Precision precision, bool withData = true);

} // namespace aotc::cpu

#endif
