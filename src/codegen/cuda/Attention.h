// The CUDA attention library kernel: one kir::AttentionCall (scaled_dot_product_attention with
// its mask, causality and grouped-query heads) with the scores kept on chip, tiled by the
// target's AttentionTiles.
#ifndef AOTC_CODEGEN_CUDA_ATTENTION_H
#define AOTC_CODEGEN_CUDA_ATTENTION_H

#include "codegen/ExprEmitter.h"
#include "codegen/cuda/CudaCodegen.h"

namespace aotc::cuda {

/// Whether `a` is a decode step (one query row a batch x head: L = 1 at export), which takes the
/// decode kernel, or the split decode kernels where it has partials (split-decode).
bool isDecodeStep(const kir::AttentionCall &a);

/// Whether `a` takes the tiled kernel on the tensor cores, rounding q, k, the probabilities and v
/// to its precision: at bf16 and fp16 (tf32 keeps f32, as torch's flash kernels have no tf32
/// either), never for a decode step (L = 1), which keeps the f32 decode kernel.
bool onTensorCores(const kir::AttentionCall &a);

/// What one kernel of an AttentionCall computes: the whole call, or (a decode step with partials)
/// each part of a (batch x head)'s keys on a block of its own, its partial state to the
/// workspace, or the merge of those parts, a block a (batch x head) and a thread an output
/// column.
enum class AttentionPart : uint8_t { Whole, SplitKeys, MergeSplits };

/// A kernel an AttentionCall may take: its tiles, the suffix of its name, and the terms of its
/// gate (it serves where their minimum is positive; none: always); what it computes.
struct AttentionVariant {
  AttentionTiles tiles;
  std::string suffix;
  llvm::SmallVector<SymExpr, 2> gate;
  AttentionPart part = AttentionPart::Whole;
};

/// The kernels of `a`: on the CUDA cores `cudaCoreTiles`; on the tensor cores (bf16 and fp16,
/// not a decode step) the wide tiles past 64 head columns, else MmaAttentionTiles where the call
/// has at least GemmFewBlocks of their blocks and MmaAttentionFewTiles where it has fewer. A
/// decode step with partials: the decode kernel where its splits are 1, else the split kernel
/// (`_split`) then the merge kernel (`_merge`), both launched.
llvm::SmallVector<AttentionVariant, 3> attentionVariants(const kir::AttentionCall &a,
                                                         const AttentionTiles &cudaCoreTiles);

/// Emits the AttentionCall `step` of `entry` into `m` as `v`'s kernel of CudaCodegen.h's
/// convention, named the call's name and v.suffix, launched on one block of v.tiles.threads
/// threads per v.tiles.blockM query rows of each query batch element (a decode step: per batch x
/// head, and per part of its keys for the split kernel; the merge kernel's blocks have a thread
/// per value column, rounded up to whole warps). Operands of f32, or of bf16 or fp16 (on the
/// tensor cores: of the precision's type), head sizes that fit the tiles' shared memory
/// (AttentionMaxHeadDim); anything else is an error naming the call.
llvm::Expected<CudaKernel> emitAttentionKernel(llvm::Module &m, codegen::MathLibrary &math,
                                               const kir::EntryKernels &entry,
                                               const kir::Step &step,
                                               const llvm::StringMap<unsigned> &symIndex,
                                               const AttentionVariant &v);

} // namespace aotc::cuda

#endif
