// The tensor cores' mma.sync (sm_80 and later) as the CUDA library kernels use it: m16n8 tiles,
// k = 8 for tf32 and 16 for the 16-bit types, f32 accumulators; the fragment registers' types and
// the rounding into them. Fragment layouts are PTX ISA's ("Matrix Fragments for mma.m16n8k8" and
// "mma.m16n8k16"): with group = lane / 4 and inGroup = lane % 4, accumulator i of a tile holds
// row group + 8 (i >> 1), column 2 inGroup + (i & 1).
#ifndef AOTC_CODEGEN_CUDA_MMA_H
#define AOTC_CODEGEN_CUDA_MMA_H

#include "codegen/ExprEmitter.h"
#include "kernel/Kernel.h"

namespace aotc::cuda::mma {

inline constexpr unsigned TileM = 16, TileN = 8;

/// The mma's k of a precision: 8 for tf32, 16 for bf16 and fp16.
inline unsigned tileK(kir::Precision p) { return p == kir::Precision::TF32 ? 8 : 16; }

/// A register of two 16-bit values as the mma takes it: i32 for bf16, <2 x half> for fp16.
llvm::Type *pairType(codegen::Builder &b, kir::Precision p);

/// One fragment register from f32 elements rounded to the precision: a tf32 (`lo` alone), or two
/// 16-bit values with `lo` in the low half (the lower k or column).
llvm::Value *fragment(codegen::Builder &b, kir::Precision p, llvm::Value *lo, llvm::Value *hi);

/// ldmatrix.x4 (.trans where `trans`) at `row`, this lane's row address in shared memory (lanes
/// 8i..8i+7 give the 16-byte rows of 8x8 matrix i of 16-bit values): the four registers, as the
/// mma takes them. For tf32, matrices of 8 rows of 4 f32 (not .trans): each register is the f32
/// element (row lane / 4, column lane % 4) of its matrix, not yet rounded (fragment).
llvm::SmallVector<llvm::Value *, 4> loadMatrices(codegen::Builder &b, kir::Precision p,
                                                 llvm::Value *row, bool trans);

/// The row that `lane` (0..31) gives ldmatrix.x4 and its matrix: {lane % 8, lane / 8}.
std::pair<llvm::Value *, llvm::Value *> matrixLane(codegen::Builder &b, llvm::Value *lane);

/// acc[0..3] += a x b for one m16n8 tile: a's 4 registers, b's 2, acc's 4 f32.
void multiplyAdd(llvm::Module &m, codegen::Builder &b, kir::Precision p,
                 llvm::ArrayRef<llvm::Value *> a, llvm::ArrayRef<llvm::Value *> bRegs,
                 llvm::MutableArrayRef<llvm::Value *> acc);

} // namespace aotc::cuda::mma

#endif
