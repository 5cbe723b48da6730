// The emulated device's threads: the runtime functions retargeted kernels call (special
// registers, shared memory, barriers, warp shuffles and votes), and the runner that executes the
// threads of one block, either one after another or each as a fiber (its own stack) that yields to
// the block's scheduler at barriers and warp collectives.
#ifndef AOTC_CODEGEN_CUDA_EMU_BLOCKRUNNER_H
#define AOTC_CODEGEN_CUDA_EMU_BLOCKRUNNER_H

#include "codegen/cuda/emu/Emulator.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace aotc::cuda::emu {

/// The emulator's runtime functions by the names Retarget.cpp calls them.
struct RuntimeSymbol {
  const char *name;
  void *address;
};
llvm::ArrayRef<RuntimeSymbol> runtimeSymbols();

/// Indices of aotc_emu_sreg: tid.{x,y,z}, ntid.*, ctaid.*, nctaid.* are 0..11 in that order.
inline constexpr uint32_t SregLaneId = 12, SregWarpSize = 13;

/// The operations aotc_emu_shfl (0..3, PTX's shfl.sync modes) and aotc_emu_vote (4..7) perform,
/// and the matrix collectives of the tensor cores: aotc_emu_mma (mma.sync.aligned) and
/// aotc_emu_ldmatrix (ldmatrix.sync.aligned), which every lane of a full warp must reach.
enum class WarpOp : uint32_t {
  ShflUp,
  ShflDown,
  ShflBfly,
  ShflIdx,
  All,
  Any,
  Uni,
  Ballot,
  Mma,
  Ldmatrix
};

/// The shapes and types of aotc_emu_mma: row.col, f32 accumulators (PTX ISA "Matrix Fragments
/// for mma.m16n8k8" and "mma.m16n8k16").
enum class MmaKind : uint32_t { M16N8K8Tf32, M16N8K16Bf16, M16N8K16F16 };

/// One lane's operands of aotc_emu_mma as the registers hold them: A in 4 and B in 2 32-bit
/// registers (a tf32 each, or two bf16/f16 with the lower column or row in the low half), the
/// accumulators C, and the results D it receives.
struct MmaFragment {
  uint32_t a[4], b[2];
  float c[4], d[4];
};

/// aotc_emu_ldmatrix's mode: the number of 8x8 matrices (1, 2 or 4) in the low byte, and
/// LdmatrixTrans for .trans.
inline constexpr uint32_t LdmatrixTrans = 0x100;

using Trampoline = void (*)(void *const *params);

/// Runs every thread of the block `block` describes (ntid, ctaid, nctaid, shared) one after
/// another on the calling thread, each to its end.
void runSequential(Trampoline entry, void *const *params, const ThreadContext &block);

/// Runs the threads of blocks of one shape as fibers. One runner serves one OS thread: blocks
/// run one after another and reuse its stacks (one allocation, a guard page below each).
///
/// Scheduling: every ready fiber runs until it finishes or reaches a barrier or a warp
/// collective; then a barrier that every thread of the block waits at releases them all, and a
/// warp collective releases the lanes of its mask once each of them waits in it (lanes that
/// have exited or lie past the block's end, in a partial last warp, do not take part). What
/// nothing can release is a deadlock, reported as an error: a barrier that some threads exit
/// without reaching (on a GPU, undefined behaviour), lanes of one mask waiting at different
/// places, lanes of a collective that disagree on its operation or mask.
///
/// Warp collectives follow PTX's shfl.sync and vote.sync. A shuffle whose source lane takes no
/// part (outside the mask, exited, past the block's end) reads the caller's own value, as an
/// out-of-range source lane does; a vote counts only the lanes that take part.
class BlockRunner {
public:
  static llvm::Expected<std::unique_ptr<BlockRunner>> create(unsigned threads);
  ~BlockRunner();

  /// Runs block `block` (ntid, ctaid, nctaid, shared) of `kernel` to its end or to a deadlock.
  llvm::Error run(llvm::StringRef kernel, Trampoline entry, void *const *params,
                  const ThreadContext &block);

  struct Fiber;

private:
  BlockRunner() = default;
  bool releaseBarrier();
  llvm::Expected<bool> releaseWarps(llvm::StringRef kernel);
  /// Performs the matrix collective every lane of the warp from thread `base` waits in.
  void matrixRelease(WarpOp op, uint32_t value, unsigned base);
  llvm::Error deadlock(llvm::StringRef kernel) const;
  void enter(Fiber &f);
  /// Sets every fiber to start its loop over blocks afresh (at creation, after a deadlock).
  void restart();

  std::unique_ptr<Fiber[]> Fibers;
  unsigned Threads = 0;
  char *Stacks = nullptr;
  size_t StackBytes = 0, MappedBytes = 0;
  bool Abandoned = false; // a deadlock left fibers mid-frame on their stacks
  friend struct FiberAccess;
};

} // namespace aotc::cuda::emu

#endif
