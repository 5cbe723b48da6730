// half-weights: the CUDA backend's kernel-IR layout pass that stores the constant operands of
// GEMMs exported at --precision bf16 or fp16 (nn.Linear's, Conv1D's, a tied LM head's and
// convolutions' weights) in that 16-bit type in device memory, as torch.autocast's half-precision
// models keep them: the GEMMs round their operands to it anyway, so results stay the same while
// the weights take half the device memory and the GEMMs stream half the bytes of them.
#ifndef AOTC_CODEGEN_CUDA_HALFWEIGHTS_H
#define AOTC_CODEGEN_CUDA_HALFWEIGHTS_H

#include "aotc/ir/Program.h"
#include "kernel/Kernel.h"

#include "llvm/Support/Error.h"

namespace aotc::cuda {

/// For every f32 GEMM of precision bf16 or fp16 (in every entry, cond branches included), points
/// each operand that is an immutable f32 weight at a dense copy of the weight in the GEMM's
/// 16-bit type, "<name>.bf16" or "<name>.fp16" (every element rounded to nearest even, NaN kept;
/// one per weight and type), read with the same addressing; its data is appended to `exported`
/// unless `cpu`, the same export's CPU program, has that copy already (its bf16-weights made it:
/// both targets then share it; a weight of the model with the name gives the copy a fresh one,
/// "<name>.bf16.2"). The copy holds the original (kir::HeldWeight, dense,
/// rounded). Where no GEMM or attention operand reads such an original in f32 any more, the
/// loop kernels and epilogues that read it (an embedding table tied to the LM head) read the
/// copy's elements instead, widened: the blob of a CUDA-only export then leaves the f32 out, and
/// tools recover it widened. Run after lower-cuda's memory planning, before kir::layoutWeights.
/// Without `withData` the copies are only declared.
llvm::Error storeHalfWeights(kir::Program &program, ExportedProgram &exported,
                             const kir::Program *cpu = nullptr, bool withData = true);

} // namespace aotc::cuda

#endif
