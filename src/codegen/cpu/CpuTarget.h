// The x86-64 target description: the variants an artifact carries, their vector widths and GEMM
// tiles, the GEMM dispatch policy, and the thresholds lowering asks for (kir::TargetInfo). Every
// machine fact of the CPU backend lives here; the numbers were measured on the 2-core Zen 4 and
// Intel machines aotc is benchmarked on.
#ifndef AOTC_CODEGEN_CPU_CPUTARGET_H
#define AOTC_CODEGEN_CPU_CPUTARGET_H

#include "kernel/Target.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace aotc::cpu {

/// The CPU variants an artifact carries; the values are AOTC_VARIANT_* of runtime/src/artifact.h.
enum class Variant : unsigned { X86_64_V3 = 0, X86_64_V4 = 1 };
llvm::StringRef variantName(Variant v); // "x86-64-v3", "x86-64-v4"

/// GEMM register tile and cache blocking of a variant.
struct GemmTiling {
  unsigned vecWidth; // f32 lanes of one vector register
  unsigned mr;       // rows of the register tile (broadcast operand A)
  unsigned nrVecs;   // vectors per row of the register tile (NR = nrVecs * vecWidth)
  unsigned kc, nc;   // k and n extents of one packed B block (k in words: bf16 pairs hold 2 kc)
  unsigned kcF32;    // k extent of the f32 kernels' blocks, at most kc
  constexpr unsigned nr() const { return nrVecs * vecWidth; }
  constexpr unsigned paddedNc() const { return (nc + nr() - 1) / nr() * nr(); } // whole NR panels
};
constexpr GemmTiling gemmTiling(Variant v) {
  // 12 x 32 on zmm: 24 accumulators, 2 B vectors and a broadcast fill the 32 registers; a KC x NC
  // B block (512 KiB: AVX-512 parts have L2s of 1 MiB and more) stays in L2 while A micro-panels
  // (12 KiB) stay in L1. The wider the block, the fewer times each A micro-panel is packed.
  // The f32 kernels' blocks are 128 deep, so that an A micro-panel (6 KiB) and the B micro-panel
  // it meets (16 KiB) fit in L1 together. On a Xeon (Emerald Rapids, two 512-bit FMA ports a
  // core), with the next block's B prefetched evenly over the calls: GPT-2 prefill at batch 1
  // 145-150 ms at 256 against 133 at 128, BERT-base 90-92 against 85; ResNet-18/50 and GPT-2 at
  // batch 8 the same within noise, the MLP at batch 512 2 % faster. Each block adds a pass over
  // the C tile: at 128, 48 vector loads and stores against 3072 FMAs. The bf16 kernels keep kc
  // pairs (AMX wants deep blocks).
  if (v == Variant::X86_64_V4)
    return {16, 12, 2, 256, 512, 128};
  return {8, 6, 2, 256, 256, 256};
}

static_assert(gemmTiling(Variant::X86_64_V3).kcF32 <= gemmTiling(Variant::X86_64_V3).kc &&
                  gemmTiling(Variant::X86_64_V4).kcF32 <= gemmTiling(Variant::X86_64_V4).kc,
              "the f32 blocks fit the B buffer");

/// The dot-product path's tile: rows x columns of dot products kept in vector accumulators.
struct DotTile {
  unsigned rows, cols;
};
DotTile dotTile(Variant v);

/// Rows of a constant A operand packed at compile time (kir::MatrixOperand::panelRows): one
/// layout for both variants of an artifact, so a multiple of each one's register tile rows.
inline constexpr int64_t PanelRows = 12;
static_assert(PanelRows % gemmTiling(Variant::X86_64_V3).mr == 0 &&
              PanelRows % gemmTiling(Variant::X86_64_V4).mr == 0);

/// Columns of a constant f32 B operand's panels (kir::MatrixOperand::panelCols, pack-weights):
/// x86-64-v4's NR, a multiple of x86-64-v3's, so that every register tile reads them in place.
inline constexpr int64_t PanelCols = 32;
static_assert(PanelCols == gemmTiling(Variant::X86_64_V4).nr() &&
              PanelCols % gemmTiling(Variant::X86_64_V3).nr() == 0);

/// Columns of a constant bf16 B operand's k-pair panels (kir::MatrixOperand::pairPanelCols,
/// bf16-weights): the bf16 kernels' panels (x86-64-v4's NR, AMX's two tiles side by side), which
/// they read in place; its word rows padded to 16, an AMX tile's depth. x86-64-v3's panels are
/// halves of them.
inline constexpr int64_t PairPanelCols = 32;
static_assert(PairPanelCols == gemmTiling(Variant::X86_64_V4).nr() &&
              PairPanelCols % gemmTiling(Variant::X86_64_V3).nr() == 0);

/// The GEMM dispatch policy, in one place: the generated code picks a path per call from the
/// run's sizes (Gemm.cpp), and pack-weights packs A at compile time exactly where that pick is
/// the blocked path, the only one that reads packed panels.
struct GemmPolicy {
  /// m up to this: a GEMV-like path streaming B in chunks of SmallNChunk columns (where they are
  /// few, as many as a multiple of the thread count, up to twice as wide), A in place.
  static constexpr int64_t SmallM = 8, SmallNChunk = 256;
  /// A and B both contiguous along k (nn.Linear's weight as B) and m up to DotMaxM: dot products
  /// over chunks of DotNChunk columns, nothing packed; packing B (a transpose, element by
  /// element) would cost a third or more of the product (GPT-2's vocabulary projection at
  /// batch x seq = 128: 33 ms blocked, 25 ms dot).
  static constexpr int64_t DotMaxM = 128, DotNChunk = 64;
  /// A program whose weights take at most this many bytes keeps them in the last-level cache
  /// between calls (the 32 MiB L3 of a Zen 4 core complex, the L3 share of a few Xeon cores).
  static constexpr uint64_t CacheResidentWeightBytes = 16ull << 20;
};
enum class GemmPath { Small, Dot, Blocked };
/// The path of a GEMM with m rows and k > 0; `dotShaped`: A and B both run contiguously along k
/// and B is not a convolution's window.
GemmPath gemmPath(int64_t m, bool dotShaped);

/// What lowering asks of the x86-64 backend (both variants: one kernel IR feeds them).
const kir::TargetInfo &loweringTarget();

} // namespace aotc::cpu

#endif
