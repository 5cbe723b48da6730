// The x86-64 target description's values.
#include "codegen/cpu/CpuTarget.h"

namespace aotc::cpu {

llvm::StringRef variantName(Variant v) {
  return v == Variant::X86_64_V4 ? "x86-64-v4" : "x86-64-v3";
}

DotTile dotTile(Variant v) {
  // 24 of 32 zmm registers (the B vectors held, A's loaded one at a time: each A load from L2
  // feeds 6 FMAs), or 9 of 16 ymm registers.
  return v == Variant::X86_64_V4 ? DotTile{4, 6} : DotTile{3, 3};
}

GemmPath gemmPath(int64_t m, bool dotShaped) {
  if (dotShaped && m <= GemmPolicy::DotMaxM)
    return GemmPath::Dot;
  if (m <= GemmPolicy::SmallM)
    return GemmPath::Small;
  return GemmPath::Blocked;
}

const kir::TargetInfo &loweringTarget() {
  static const kir::TargetInfo target = [] {
    kir::TargetInfo t;
    t.backend = "CPU";
    // Direct loops beat packing for few output channels (the GEMM's m, below one register
    // tile) and tiny filters; past this many im2col elements the arena would grow too much.
    t.convGemmMinChannels = 16;
    t.convGemmMinWeights = 64;
    t.im2colMaxElements = int64_t(16) << 20;
    // Below 64 output channels the GEMMs are too thin to gain from the transforms; below this
    // many input channels (the GEMMs' k) the transformed tensors' traffic outweighs the saved
    // multiplications: 2x2 tiles read and write 4x the input and output, 4x4 ones 2.25x
    // (F(2x2, 3x3) on ResNet-18's 64-channel 56x56 layers, batch 8: 72 against 68.5 ms).
    t.winogradMinOutChannels = 64;
    t.winograd4MinInChannels = 64;
    t.winograd2MinInChannels = 128;
    // At bf16 the direct GEMM's im2col packing costs as much as the transforms (ResNet-18 b1 on a
    // Zen 4, vdpbf16ps: 11.9 ms direct, 11.0 with F(2x2) from 128 channels, 10.3 from 64).
    t.winogradBf16MinInChannels = 64;
    // Tiles per image at least; the tiles' area at most 5/4 of the map's (the overhang): ResNet's
    // 7x7 maps (16 tiles of 2x2 overhanging by 31 %) ran slower (ResNet-18 batch 1: 13.4
    // against 10.5 ms).
    t.winogradMinTiles = 25;
    // The transformed input and the products live in the arena at the largest sizes the dims
    // allow; past this many elements each the convolution stays a direct GEMM. F(2x2) on
    // ResNet's first 64-channel layer at its largest (batch 64 of 448 x 448 images) holds 51 M,
    // as many as the layer's activations.
    t.winogradMaxElements = int64_t(64) << 20;
    // The GEMM packs a bf16 B (a bf16 model's weight) into its f32 panels as it reads it, so the
    // weight is not copied to f32 at every call; a bf16 A and fp16 operands are widened first.
    t.gemmBf16B = true;
    return t;
  }();
  return target;
}

} // namespace aotc::cpu
