// The CUDA GEMM library kernel: one kir::GemmCall (a plain, batched or implicit-GEMM
// convolution) with its fused epilogue, tiled by the target's GemmTiles.
#ifndef AOTC_CODEGEN_CUDA_GEMM_H
#define AOTC_CODEGEN_CUDA_GEMM_H

#include "codegen/ExprEmitter.h"
#include "codegen/cuda/CudaCodegen.h"

namespace aotc::cuda {

/// Emits the GemmCall `step` of `entry` into `m` as one kernel of CudaCodegen.h's convention
/// (named after the GEMM, then `suffix`),
/// launched on one block of tiles.threads() threads per blockM x blockN output tile of each
/// batch element. An f32 GEMM only, with unpacked operands (panelRows and winogradTile 0: the
/// CUDA lowering target turns Winograd off and nothing packs weights for CUDA); anything else is
/// an error naming the GEMM.
llvm::Expected<CudaKernel> emitGemmKernel(llvm::Module &m, codegen::MathLibrary &math,
                                          const kir::EntryKernels &entry, const kir::Step &step,
                                          const llvm::StringMap<unsigned> &symIndex,
                                          const GemmTiles &tiles, llvm::StringRef suffix = "");

/// The same GemmCall on the tensor cores (mma.sync, sm_80 and later) for a GEMM whose
/// precision is tf32, bf16 or fp16: one block of tiles.threads() threads per blockM x blockN
/// output tile, operands rounded to the precision (in shared memory or as fragments are loaded,
/// by tiles.elementBytes), accumulated in f32. The same errors as emitGemmKernel, one for fp32,
/// and one for tf32 in 16-bit buffers.
llvm::Expected<CudaKernel> emitMmaGemmKernel(llvm::Module &m, codegen::MathLibrary &math,
                                             const kir::EntryKernels &entry, const kir::Step &step,
                                             const llvm::StringMap<unsigned> &symIndex,
                                             const MmaGemmTiles &tiles,
                                             llvm::StringRef suffix = "");

/// Whether operand `op` of a GEMM lies in `type` (f32, or a 16-bit type) in rows of whole 16-byte
/// chunks along its contiguous dim (its rows where `alongRows`, else its columns): unit stride
/// there; offset and other strides multiples of a chunk's elements (the dims' declared divisors
/// count); a buffer that starts on a 16-byte boundary (not a caller's f32 tensor).
bool chunkedRows(const kir::EntryKernels &entry, const kir::MatrixOperand &op, bool alongRows,
                 DType type);

/// Whether both operands of `g` lie in its precision's 16-bit type in rows of whole 16-byte
/// chunks (chunkedRows; B's along k where it is read along k): the tiles with asyncCopies can
/// copy its k-tiles with cp.async.
bool asyncChunks(const kir::EntryKernels &entry, const kir::GemmCall &g);

/// The same GemmCall for at most tier.maxM rows (SmallGemm.cpp) on CUDA cores, in f32 whatever
/// the GEMM's precision allows: one block of SmallGemmThreads threads per group of output
/// columns of each batch element, k split among its threads. The same errors as emitGemmKernel.
llvm::Expected<CudaKernel> emitSmallGemmKernel(llvm::Module &m, codegen::MathLibrary &math,
                                               const kir::EntryKernels &entry,
                                               const kir::Step &step,
                                               const llvm::StringMap<unsigned> &symIndex,
                                               const SmallGemmTier &tier);

/// Why the CUDA GEMM kernels cannot run `g`, if they cannot: not f32 data, a packed operand.
llvm::Error checkGemm(const kir::EntryKernels &entry, const kir::GemmCall &g);

} // namespace aotc::cuda

#endif
