// Reductions across the threads of a block: each thread's partial result combined within its
// warp by shuffles, then across warps through shared memory, every thread getting the result.
#ifndef AOTC_CODEGEN_CUDA_BLOCKREDUCE_H
#define AOTC_CODEGEN_CUDA_BLOCKREDUCE_H

#include "codegen/ExprEmitter.h"

#include "llvm/IR/GlobalVariable.h"

namespace aotc::cuda {

/// The value `v` (at most 64 bits) holds in lane (lane ^ laneMask) of the warp: one 32-bit
/// butterfly shuffle, or two for 64-bit values. Every lane of the warp must reach it.
llvm::Value *warpShuffleXor(codegen::Builder &b, llvm::Value *v, unsigned laneMask);

/// A partial reduction: the value in the accumulator type's value type, and for ArgMax/ArgMin
/// the linear inner index (i64) of the extreme it holds.
struct Partial {
  llvm::Value *value = nullptr;
  llvm::Value *index = nullptr;
};

/// The reduction of both partials' ranges. Ordered like the serial reduction whatever the ranges
/// are: ArgMax/ArgMin keep the smaller index among equal extremes (and the first NaN).
Partial combinePartials(codegen::Builder &b, kir::ReduceOp op, DType t, Partial x, Partial y);

/// Shared memory for one partial per warp (values as bits, indices), 32 warps at most.
struct BlockScratch {
  llvm::GlobalVariable *values = nullptr, *indices = nullptr;
};
BlockScratch blockScratch(llvm::Module &m);

/// Combines `mine` over the threads of the block; every thread gets the result. Every thread of
/// the block must reach it (it holds two barriers), and the block must be whole warps (a
/// multiple of 32 threads). `tid` and `ntid` are %tid.x and %ntid.x as i64.
Partial blockReduce(codegen::Builder &b, kir::ReduceOp op, DType t, Partial mine,
                    const BlockScratch &scratch, llvm::Value *tid, llvm::Value *ntid);

} // namespace aotc::cuda

#endif
