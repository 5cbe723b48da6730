// What lowering to the kernel IR asks of the target it lowers for. Each backend owns the values
// of its targets (codegen/cpu/CpuTarget.cpp for x86-64); src/kernel holds no machine fact.
#ifndef AOTC_KERNEL_TARGET_H
#define AOTC_KERNEL_TARGET_H

#include <cstdint>
#include <string>

namespace aotc::kir {

struct TargetInfo {
  /// The backend, as errors name it: "aten.cond is not supported by the CPU backend yet".
  std::string backend;

  /// A convolution (groups 1) becomes a GEMM over its input or an im2col view of it from this
  /// many output channels (the GEMM's m) and filter elements in all; smaller ones stay direct
  /// loops.
  int64_t convGemmMinChannels = 1, convGemmMinWeights = 1;
  /// A convolution whose im2col copy (3-d ones, which are not read through a view) would exceed
  /// this many elements at the largest sizes the dims allow stays direct loops.
  int64_t im2colMaxElements = int64_t(1) << 62;

  /// 3x3 stride-1 f32 convolutions as Winograd F(4x4, 3x3) from `winograd4MinInChannels` input
  /// channels, F(2x2, 3x3) from `winograd2MinInChannels`, both from `winogradMinOutChannels`
  /// output channels and on maps of at least `winogradMinTiles` tiles per image; the
  /// transformed input and the products each stay under `winogradMaxElements` elements at the
  /// largest sizes. winogradMinOutChannels 0: never Winograd. At --precision bf16 only F(2x2,
  /// 3x3), from `winogradBf16MinInChannels`: its products multiply bf16 transforms, and F(4x4)'s
  /// transforms amplify that rounding some sixfold.
  int64_t winogradMinOutChannels = 0;
  int64_t winograd4MinInChannels = 0, winograd2MinInChannels = 0, winogradBf16MinInChannels = 0;
  int64_t winogradMinTiles = 0;
  int64_t winogradMaxElements = 0;

  /// f32 scaled_dot_product_attention whose head sizes (query/key and value) are constants up to
  /// this becomes one AttentionCall, a library kernel that never writes the scores to memory;
  /// 0 (or larger heads, other dtypes): a GEMM, a softmax kernel and a GEMM.
  int64_t fusedAttentionMaxHeadDim = 0;

  /// Products of bf16 or fp16 tensors (matmul, linear, bmm, addmm of a model that computes in
  /// that dtype) are GEMMs accumulating in f32 and rounded once to the dtype, as torch does. With
  /// this, the GEMMs read the 16-bit operands as they are (multiplying them unrounded on tensor
  /// cores of that type) and their epilogue stores the 16-bit result; without, the operands are
  /// widened to f32 copies first and the rounding is a kernel of its own.
  bool gemmHalfOperands = false;
  /// Without gemmHalfOperands: a bf16 B of such a product is read as it is (an A and fp16
  /// operands are widened).
  bool gemmBf16B = false;
};

} // namespace aotc::kir

#endif
