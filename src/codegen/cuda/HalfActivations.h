// half-activations: the CUDA backend's kernel-IR layout pass that stores, at --precision bf16 or
// fp16, the temporaries that only tensor-core products read (a layer norm's output before a
// projection, an MLP's hidden activations, a convolution's output before the next convolution,
// attention's query, key and value) in that 16-bit type, as torch.autocast keeps a matmul's
// inputs: the products round their operands to it anyway, so the producer rounds once as it
// stores instead, and both move half the bytes.
#ifndef AOTC_CODEGEN_CUDA_HALFACTIVATIONS_H
#define AOTC_CODEGEN_CUDA_HALFACTIVATIONS_H

#include "aotc/ir/ShapeEnv.h"
#include "kernel/Kernel.h"

namespace aotc::cuda {

/// For every entry of `program` (cond branches included): each f32 arena buffer that some f32
/// GEMM of precision bf16 or fp16 reads as an operand, or the tensor-core attention kernel as
/// its query, key or value, and that nothing else reads (no loop kernel, epilogue, other
/// attention, mask or cond predicate) becomes a buffer of that 16-bit type. The
/// kernels that write it round each element to nearest even as they store it (NaN stays NaN),
/// and the GEMMs load it as it is. The tensor-core kernels' results are the same bits as
/// before; the small-m kernel (f32 FMAs) now multiplies a rounded A, as the precision permits.
/// An entry whose buffers changed has its arena planned again (kir::planMemory with `facts`).
/// Run after lower-cuda.
void storeHalfActivations(kir::Program &program, const SymbolFactsMap &facts);

} // namespace aotc::cuda

#endif
