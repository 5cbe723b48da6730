// The CUDA GEMM library kernel: one kir::GemmCall (a plain, batched or implicit-GEMM
// convolution) with its fused epilogue, tiled by the target's GemmTiles.
#ifndef AOTC_CODEGEN_CUDA_GEMM_H
#define AOTC_CODEGEN_CUDA_GEMM_H

#include "codegen/ExprEmitter.h"
#include "codegen/cuda/CudaCodegen.h"

namespace aotc::cuda {

/// Emits the GemmCall `step` of `entry` into `m` as one kernel of CudaCodegen.h's convention,
/// launched on one block of tiles.threads() threads per blockM x blockN output tile of each
/// batch element. An f32 GEMM only, with unpacked operands (panelRows and winogradTile 0: the
/// CUDA lowering target turns Winograd off and nothing packs weights for CUDA); anything else is
/// an error naming the GEMM.
llvm::Expected<CudaKernel> emitGemmKernel(llvm::Module &m, codegen::MathLibrary &math,
                                          const kir::EntryKernels &entry, const kir::Step &step,
                                          const llvm::StringMap<unsigned> &symIndex,
                                          const GemmTiles &tiles);

} // namespace aotc::cuda

#endif
