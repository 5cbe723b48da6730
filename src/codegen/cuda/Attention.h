// The CUDA attention library kernel: one kir::AttentionCall (scaled_dot_product_attention with
// its mask, causality and grouped-query heads) with the scores kept on chip, tiled by the
// target's AttentionTiles.
#ifndef AOTC_CODEGEN_CUDA_ATTENTION_H
#define AOTC_CODEGEN_CUDA_ATTENTION_H

#include "codegen/ExprEmitter.h"
#include "codegen/cuda/CudaCodegen.h"

namespace aotc::cuda {

/// Whether `a` takes the tiled kernel on the tensor cores, rounding q, k, the probabilities and v
/// to its precision: at bf16 and fp16 (tf32 keeps f32, as torch's flash kernels have no tf32
/// either), never for a decode step (L = 1), which keeps the f32 decode kernel.
bool onTensorCores(const kir::AttentionCall &a);

/// A kernel an AttentionCall may take: its tiles, the suffix of its name, and the terms of its
/// gate (it serves where their minimum is positive; none: always).
struct AttentionVariant {
  AttentionTiles tiles;
  std::string suffix;
  llvm::SmallVector<SymExpr, 2> gate;
};

/// The kernels of `a`: on the CUDA cores `cudaCoreTiles`; on the tensor cores (bf16 and fp16,
/// not a decode step) the wide tiles past 64 head columns, else MmaAttentionTiles where the call
/// has at least GemmFewBlocks of their blocks and MmaAttentionFewTiles where it has fewer.
llvm::SmallVector<AttentionVariant, 2> attentionVariants(const kir::AttentionCall &a,
                                                         const AttentionTiles &cudaCoreTiles);

/// Emits the AttentionCall `step` of `entry` into `m` as one kernel of CudaCodegen.h's
/// convention, named the call's name and `suffix`, launched on one block of tiles.threads threads
/// per tiles.blockM query rows of each query batch element. Operands of f32, or of bf16 or fp16
/// (on the tensor cores: of the precision's type), head sizes that fit the tiles' shared memory
/// (AttentionMaxHeadDim); anything else is an error naming the call.
llvm::Expected<CudaKernel>
emitAttentionKernel(llvm::Module &m, codegen::MathLibrary &math, const kir::EntryKernels &entry,
                    const kir::Step &step, const llvm::StringMap<unsigned> &symIndex,
                    const AttentionTiles &tiles, llvm::StringRef suffix = "");

} // namespace aotc::cuda

#endif
