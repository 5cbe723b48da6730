// The CUDA target description: the GPU architectures aotc emits cubins for, their facts (warp
// size, threads and shared memory per block, the PTX ISA version LLVM 19 emits for each), the
// default arch list, and the thresholds lowering asks for (kir::TargetInfo). Every machine fact
// of the CUDA backend lives here.
#ifndef AOTC_CODEGEN_CUDA_CUDATARGET_H
#define AOTC_CODEGEN_CUDA_CUDATARGET_H

#include "kernel/Target.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <cstdint>

namespace aotc::cuda {

enum class CudaArch : unsigned { SM80, SM86, SM89, SM90, SM90a };

struct ArchInfo {
  CudaArch arch;
  llvm::StringRef name;       // "sm_90a": --cuda-arch, ptxas --gpu-name, the NVPTX target CPU
  unsigned computeCapability; // 90 for sm_90 and sm_90a
  unsigned warpSize;
  unsigned maxThreadsPerBlock;
  /// Static shared memory a block may use without opting in, and the most a kernel may ask for
  /// with cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES), in bytes.
  unsigned sharedPerBlock, sharedPerBlockOptIn;
  /// The PTX ISA LLVM 19 is asked to emit (its "+ptxNN" feature): the lowest that has the arch,
  /// so that the PTX carried for forward compatibility JITs on the oldest drivers that know it.
  unsigned ptxVersion; // 70 = PTX ISA 7.0
};

/// Every arch aotc knows, in ascending order.
llvm::ArrayRef<ArchInfo> cudaArchs();
const ArchInfo &archInfo(CudaArch arch);
/// sm_80, sm_86, sm_89, sm_90: every data-center and workstation GPU since Ampere. sm_90a (wgmma,
/// TMA) runs only on Hopper and is asked for explicitly.
llvm::SmallVector<CudaArch, 5> defaultCudaArchs();
/// "sm_80,sm_90" -> the archs in ascending order, each once; an unknown or empty name is one line
/// listing the valid ones.
llvm::Expected<llvm::SmallVector<CudaArch, 5>> parseCudaArchs(llvm::StringRef list);

/// The NVPTX triple and data layout of the modules the CUDA backend emits (64-bit pointers,
/// generic address space).
inline constexpr llvm::StringLiteral NvptxTriple = "nvptx64-nvidia-cuda";
inline constexpr llvm::StringLiteral NvptxDataLayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64";

/// Threads per block of the loop kernels' launches: 8 warps, enough to hide memory latency per
/// SM with several blocks resident and below every arch's register limits for the serial
/// reduction loops.
inline constexpr unsigned LoopKernelBlock = 256;

/// The widest access of one thread to global memory in one instruction (ld.global.v4.b32,
/// st.global.v4.b32). A thread-per-point loop kernel whose innermost loop runs contiguously takes
/// this many bytes of consecutive points at a time (4 f32, 8 f16 or bf16), so that a warp moves
/// 512 contiguous bytes per instruction instead of 128.
inline constexpr unsigned VectorAccessBytes = 16;

/// A loop kernel with a reduction stage of at least this many inner points (or a symbolic count)
/// runs a block per point of its parallel loops, the block's threads splitting each stage's
/// inner points; fewer points are reduced by one thread per point, in no more serial steps than a
/// warp's shuffle tree and a barrier would take.
inline constexpr int64_t ReductionMinPoints = 32;

/// Threads of such a block: the stages' most inner points rounded up to whole warps, at most
/// this many (8 warps, as LoopKernelBlock); a symbolic count gets this many.
inline constexpr unsigned ReductionBlock = 256;

/// The tiles of the GEMM library kernel (Gemm.cpp), CUDA-core FMA through shared memory: a block
/// of threads() threads computes a blockM x blockN tile of one output matrix, stepping through k
/// blockK at a time through two stages of shared memory (an A tile and a B tile each, k-major,
/// rows padded by Pad); each thread keeps a threadM x threadN tile of accumulators in registers,
/// read from shared memory as 16-byte vectors of 4 rows (columns).
struct GemmTiles {
  unsigned blockM, blockN, blockK;
  unsigned threadM, threadN;
  static constexpr unsigned Pad = 4;
  constexpr unsigned threads() const { return blockM / threadM * (blockN / threadN); }
  constexpr unsigned aStageElements() const { return blockK * (blockM + Pad); }
  constexpr unsigned bStageElements() const { return blockK * (blockN + Pad); }
  constexpr unsigned sharedBytes() const { return 2 * 4 * (aStageElements() + bStageElements()); }
};

/// The CUDA-core tiles of plain and batched GEMMs, from the largest down; a GEMM takes the first
/// with at least GemmFewBlocks tiles, the last when none has (LoopKernel.cpp's emitGemmKernels).
/// On an H100 (fp32, CUDA graphs; docs/cuda.md):
/// - 128 x 128 x 8 with 8 x 8 per thread (256 threads): each A and B element loaded from shared
///   memory feeds 8 FMAs; 64 accumulators and 64 partial sums a thread take ptxas to about 235
///   registers, one block an SM. GEMM 4096^3: 5.07 ms, against 7.27 on the 64 x 64 tiles and
///   7.55 on 128 x 64 with 8 x 4 per thread (128 registers, two blocks an SM).
/// - 64 x 64 x 16 with 4 x 4, and 32 x 32 x 32 with 2 x 2 (256 threads): four and sixteen times
///   the blocks, for GEMMs of few rows (GPT-2's prefill at batch 1: 128 rows, 96 blocks of
///   32 x 32 for 132 SMs); the deeper k-tiles halve and quarter the k-steps each block runs one
///   after the other, each a barrier and a round trip to device memory.
inline constexpr GemmTiles CudaCoreGemmTiles[] = {
    {128, 128, 8, 8, 8}, {64, 64, 16, 4, 4}, {32, 32, 32, 2, 2}};
/// Convolutions (implicit GEMM) take 128 x 64 x 8 with 8 x 4 per thread first: two blocks an SM
/// hide the window's address arithmetic better. ResNet-50 at batch 32 on an H100: 14.1 ms with
/// 8-deep smaller tiles, against 16.1 on 128 x 128 first and 18.4 on the 64 x 64 x 8 tiles alone;
/// 15.0 with these smaller tiles (the 16- and 32-deep k-tiles may cost convolutions: not
/// separated yet).
inline constexpr GemmTiles CudaCoreConvTiles[] = {
    {128, 64, 8, 8, 4}, {64, 64, 16, 4, 4}, {32, 32, 32, 2, 2}};
/// One block for each SM of the largest GPUs (132 SMs): fewer tiles leave SMs idle. On an H200,
/// taking 32 x 32 tiles below 264 of 64 x 64 (two a SM) made ResNet-50 at batch 1 1.4 times
/// faster but batch 32 and GPT-2's seq-128 prefill at batch 8, whose GEMMs have 132 to 264
/// tiles, 7-8 % slower: between one and two waves the larger tiles win.
inline constexpr int64_t GemmFewBlocks = 132;

/// The tiles of the tensor-core GEMM (MmaGemm.cpp), mma.sync on sm_80 and later: a block of
/// warpsM x warpsN warps computes a blockM x blockN output tile, each warp a
/// (blockM / warpsM) x (blockN / warpsN) part of it in m16n8 accumulator fragments; A and B
/// stream through shared memory blockK columns (rows) at a time, in `stages` buffers, each
/// shared row padded by padA (padB) elements so that a warp's fragment loads hit 32 different
/// banks. With elementBytes 4 the buffers hold the f32 operands, copied by cp.async and rounded
/// to the precision as the fragments are loaded (any precision, tf32 included); with 2 they hold
/// the operands already rounded to bf16 or fp16 (loaded into registers one k-tile ahead,
/// converted, stored), and ldmatrix loads the fragments: half the shared memory and a quarter of
/// the shared loads a mma.
/// The shared memory every arch aotc emits for gives a block without opting in, and the most
/// that each gives one that opts in (sm_86's and sm_89's 99 KiB; ArchInfo has each arch's): a
/// library kernel whose tiles need more than the first takes them as dynamic shared memory, which
/// the runtime opts its function in to before the first launch that asks for it.
inline constexpr unsigned StaticSharedLimit = 48 * 1024;
inline constexpr unsigned OptInSharedLimit = 99 * 1024;

struct MmaGemmTiles {
  unsigned blockM, blockN, blockK;
  unsigned warpsM, warpsN;
  unsigned stages;
  unsigned padA, padB;
  unsigned elementBytes;
  /// 16-bit buffers only: cp.async copies 16 bytes (8 elements along an operand's contiguous dim)
  /// straight into the buffers, `stages` k-tiles in flight, for GEMMs whose operands are both
  /// stored in the precision's 16-bit type with 16-byte aligned rows (MmaGemm.cpp's
  /// asyncChunks); else each thread stages the next k-tile through registers, two stages.
  bool asyncCopies = false;
  constexpr unsigned threads() const { return warpsM * warpsN * 32; }
  constexpr unsigned warpM() const { return blockM / warpsM; }
  constexpr unsigned warpN() const { return blockN / warpsN; }
  /// A stage of A as blockM rows of blockK (+ padA) elements, of B as blockK rows of blockN
  /// (+ padB) or, for a 16-bit B read along k, blockN rows of blockK (+ padB): the same size.
  constexpr unsigned aStageElements() const { return blockM * (blockK + padA); }
  constexpr unsigned bStageElements() const {
    return elementBytes == 2 ? std::max(blockK * (blockN + padB), blockN * (blockK + padB))
                             : blockK * (blockN + padB);
  }
  constexpr unsigned sharedBytes() const {
    return stages * (aStageElements() + bStageElements()) * elementBytes;
  }
  /// Whether the stages take dynamic shared memory (past StaticSharedLimit).
  constexpr bool dynamicShared() const { return sharedBytes() > StaticSharedLimit; }
};

/// 128 x 64 x 16 on 4 warps (64 x 32 each: 4 x 4 mma tiles, 64 f32 accumulators a thread),
/// three cp.async stages of f32: 43.5 KiB of static shared memory, under the 48 KiB every arch
/// gives without opting in. One kernel serves tf32 (two k8 steps per tile), bf16 and fp16 (one
/// k16 step): tf32 GEMMs, and bf16 and fp16 GEMMs of few 128 x 128 tiles whose operands are f32
/// in memory (LoopKernel.cpp's halfGemmTiers), where it was up to 20 % faster than the 16-bit
/// buffers on an H200.
inline constexpr MmaGemmTiles TensorCoreGemmTiles = {128, 64, 16, 2, 2, 3, 4, 8, 4};
static_assert(TensorCoreGemmTiles.sharedBytes() <= StaticSharedLimit, "static shared memory");

/// bf16 and fp16 GEMMs of many tiles: 128 x 128 x 32 on 8 warps (64 x 32 each), two 16-bit
/// stages (40 KiB): every operand element read from memory once per 128 rows or columns, twice
/// the 128 x 64 tile's reuse; per 16 mma a warp issues six ldmatrix.x4 where the f32 buffers
/// take 48 shared loads and 24 conversions. 4096^3 in bf16 on an H200: 1.64 ms against 1.90 on
/// TensorCoreGemmTiles (and 1.75 with ptxas held to 128 registers for two blocks an SM).
inline constexpr MmaGemmTiles HalfTensorCoreGemmTiles = {128, 128, 32, 2, 4, 2, 8, 8, 2};
static_assert(HalfTensorCoreGemmTiles.sharedBytes() <= StaticSharedLimit, "static shared memory");

/// bf16 and fp16 GEMMs whose operands are both stored in 16 bits (half-weights and
/// half-activations: a transformer's projections) in rows of whole 16-byte chunks, their k-tiles
/// copied by cp.async: 128 x 128 x 32 on 8 warps in three stages (60 KiB of dynamic shared
/// memory: two k-tiles in flight while the warps multiply on a third, as CUTLASS's sm_80 kernels
/// keep at least; two blocks an SM on sm_80 and sm_90, as their registers allow anyway) where
/// the GEMM has GemmFewBlocks of those, else 128 x 64 x 32 on 4 warps in three (45 KiB, static).
/// Not yet timed on a GPU: the stages are the one number to try first.
inline constexpr MmaGemmTiles AsyncHalfGemmTiles = {128, 128, 32, 2, 4, 3, 8, 8, 2, true};
static_assert(AsyncHalfGemmTiles.sharedBytes() <= OptInSharedLimit, "dynamic shared memory");
inline constexpr MmaGemmTiles AsyncHalfFewGemmTiles = {128, 64, 32, 2, 2, 3, 8, 8, 2, true};
static_assert(AsyncHalfFewGemmTiles.sharedBytes() <= StaticSharedLimit, "static shared memory");

/// bf16 and fp16 convolutions (implicit GEMM): 128 x 64 x 32 on 4 warps, two 16-bit stages. On
/// an H200, ResNet-50 in bf16 ran 3.51 / 8.03 ms at batch 1 / 32 on these, against 3.87 / 8.93
/// on TensorCoreGemmTiles.
inline constexpr MmaGemmTiles ConvTensorCoreGemmTiles = {128, 64, 32, 2, 2, 2, 8, 8, 2};
static_assert(ConvTensorCoreGemmTiles.sharedBytes() <= StaticSharedLimit, "static shared memory");

/// The small-m GEMM kernels (SmallGemm.cpp): a GEMM whose m lies in a tier's [minM, maxM] runs
/// on one block of SmallGemmThreads threads per SmallGemmColumns output columns, each weight
/// element loaded once for all maxM rows, `unroll` k steps of loads in flight a thread; GEMMs with
/// more rows than the last tier take the tiled kernels. A GEMM whose m is symbolic gets every
/// kernel its range may need, and its run launches the one for the m it has (the others' grids are
/// empty). Decode steps (m = batch) and GEMVs (m = 1) were 30 to 100 times slower on the tiled
/// kernels, which compute 64 or 128 rows a block.
///
/// With `sharedRows`, the block stages A's rows in shared memory, SmallGemmChunkK values of k at
/// a time ([k][row], read 16 bytes a load), instead of 8 loads and registers per weight for A's
/// rows from device memory at m = 8. On an H100 that did not move the LM head of a decode step
/// at batch 8 (234 us before, 226 after, against 53 us for the GEMV at batch 1): the kernel
/// still holds too few weight loads in flight (54 registers, 4 blocks an SM).
struct SmallGemmTier {
  unsigned minM, maxM, unroll;
  bool sharedRows;
};
inline constexpr SmallGemmTier SmallGemmTiers[] = {{1, 1, 8, false}, {2, 8, 8, true}};
inline constexpr unsigned SmallGemmChunkK = 1024;
inline constexpr unsigned SmallGemmThreads = 256;
inline constexpr unsigned SmallGemmColumns = 8;
static_assert(SmallGemmThreads / 32 == SmallGemmColumns, "along k, one column a warp");
static_assert(4 * 8 * (SmallGemmThreads + SmallGemmChunkK) <= StaticSharedLimit,
              "static shared memory at m = 8: the shares and a chunk of A's rows");

/// The tiles of the attention library kernel (Attention.cpp), flash-attention style on CUDA
/// cores: a block of `threads` threads (whole warps) computes blockM query rows of one query
/// batch element (batch x head), each warp blockM / warps() of them, while the keys and values
/// stream through shared memory blockN rows at a time (whole warps of them: each lane scores
/// blockN / 32 keys against each of its warp's rows) with a running softmax, so that the scores
/// never reach device memory.
struct AttentionTiles {
  unsigned blockM, blockN, threads;
  constexpr unsigned warps() const { return threads / 32; }
  constexpr unsigned warpRows() const { return blockM / warps(); }
  /// Shared memory for head sizes e (query and key) and ev (value), in bytes: the block's
  /// queries, a tile of keys (rows padded to an odd stride, so that a warp's lanes reading 32
  /// keys hit 32 banks), a tile of values, and the tile's probabilities.
  constexpr unsigned sharedBytes(unsigned e, unsigned ev) const {
    return 4 * (blockM * e + blockN * (e | 1) + blockN * ev + blockM * blockN);
  }
};

/// 16 query rows a block of 4 warps (4 rows a warp), 32 keys a tile (one a lane): small blocks,
/// so that a prefill of a few hundred tokens still fills the SMs with batch x heads x L / 16
/// blocks. A decode step (L = 1) takes the decode kernel instead, a block of the same 4 warps
/// per batch x head, the warps splitting the keys 32 at a time (Attention.cpp).
inline constexpr AttentionTiles CudaCoreAttentionTiles = {16, 32, 128};
/// The attention kernel on the tensor cores (bf16 and fp16 precision): 4 warps of 32 query rows
/// (two mma tiles of rows each, which share every fragment of keys and values), 32 keys a tile
/// (4 mma tiles of scores, 2 k-steps of the values); where a call has fewer than GemmFewBlocks
/// blocks of 128 rows, 4 warps of 16 rows (MmaAttentionFewTiles), so that a short prefill still
/// fills the SMs. Past 64 head columns one mma tile of rows a warp and 16 keys a tile, so that the
/// query's fragments and the accumulators (32 and 64 registers a lane at 128) leave room without
/// spilling.
inline constexpr AttentionTiles MmaAttentionTiles = {128, 32, 128};
inline constexpr AttentionTiles MmaAttentionFewTiles = {64, 32, 128};
inline constexpr AttentionTiles MmaAttentionWideTiles = {64, 16, 128};
inline constexpr unsigned MmaAttentionWideHeads = 64;
static_assert(MmaAttentionTiles.warpRows() % 16 == 0 && MmaAttentionTiles.blockN % 16 == 0 &&
                  MmaAttentionFewTiles.warpRows() % 16 == 0 &&
                  MmaAttentionFewTiles.blockN == MmaAttentionTiles.blockN &&
                  MmaAttentionWideTiles.warpRows() % 16 == 0 &&
                  MmaAttentionWideTiles.blockN % 16 == 0,
              "whole mma tiles of rows a warp, whole k-steps of keys");
/// A decode step over a long cache (split-decode): each part of a (batch x head)'s keys at least
/// DecodeSplitKeys of them (2 tiles of 32 a warp of the decode kernel's 4), and no more parts than
/// take batch x heads x parts to GemmFewBlocks blocks (one an SM). Not timed yet: the number to
/// try first on a card.
inline constexpr int64_t DecodeSplitKeys = 256;
/// The largest head size (query and value) the attention kernel takes: 42 KiB of static shared
/// memory at 128, under the 48 KiB every arch gives without opting in. Larger heads keep the
/// GEMM -> softmax -> GEMM lowering.
inline constexpr unsigned AttentionMaxHeadDim = 128;
static_assert(CudaCoreAttentionTiles.sharedBytes(AttentionMaxHeadDim, AttentionMaxHeadDim) <=
                  StaticSharedLimit,
              "static shared memory");
static_assert(CudaCoreAttentionTiles.blockN % 32 == 0 &&
                  CudaCoreAttentionTiles.blockM % CudaCoreAttentionTiles.warps() == 0,
              "whole warps of keys and rows");

/// The most blocks in x a grid-stride kernel is launched with: 64 per SM on the largest GPUs
/// (132 SMs), plenty to fill them, few enough that no thread idles on a big tensor.
inline constexpr uint32_t MaxGridStrideBlocks = 8192;

/// What lowering asks of the CUDA backend.
const kir::TargetInfo &loweringTarget();

} // namespace aotc::cuda

#endif
