// The CUDA attention library kernel: one kir::AttentionCall (scaled_dot_product_attention with
// its mask, causality and grouped-query heads) with the scores kept on chip, tiled by the
// target's AttentionTiles.
#ifndef AOTC_CODEGEN_CUDA_ATTENTION_H
#define AOTC_CODEGEN_CUDA_ATTENTION_H

#include "codegen/ExprEmitter.h"
#include "codegen/cuda/CudaCodegen.h"

namespace aotc::cuda {

/// Emits the AttentionCall `step` of `entry` into `m` as one kernel of CudaCodegen.h's
/// convention, launched on one block of tiles.threads threads per tiles.blockM query rows of
/// each query batch element. An f32 call whose head sizes fit the tiles' shared memory
/// (AttentionMaxHeadDim) only; anything else is an error naming the call.
llvm::Expected<CudaKernel> emitAttentionKernel(llvm::Module &m, codegen::MathLibrary &math,
                                               const kir::EntryKernels &entry,
                                               const kir::Step &step,
                                               const llvm::StringMap<unsigned> &symIndex,
                                               const AttentionTiles &tiles);

} // namespace aotc::cuda

#endif
