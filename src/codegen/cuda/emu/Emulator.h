// The emulated CUDA device, first version: runs the NVPTX-bound LLVM IR the CUDA backend emits
// (before libdevice) on the host. The module is retargeted (special registers read from the
// emulated thread's context, libdevice's `__nv_*` functions mapped to the host's libm, NVPTX
// metadata and attributes dropped, the host's triple and data layout), JIT-compiled with ORC,
// and a launch runs every (block, thread) of the grid.
#ifndef AOTC_CODEGEN_CUDA_EMU_EMULATOR_H
#define AOTC_CODEGEN_CUDA_EMU_EMULATOR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>

namespace aotc::cuda::emu {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

/// What the special registers of one emulated thread read (%tid, %ntid, %ctaid, %nctaid).
struct ThreadContext {
  Dim3 tid, ntid, ctaid, nctaid;
};

/// A module of CUDA kernels loaded on the emulated device.
class EmulatedModule {
public:
  /// Retargets a copy of `nvptx` (left as it is) to the host and JIT-compiles it. An NVPTX
  /// intrinsic or libdevice function the emulator does not know yet is an error naming it.
  static llvm::Expected<std::unique_ptr<EmulatedModule>> load(const llvm::Module &nvptx);

  /// Runs `kernel` on grid x block threads, as cuLaunchKernel: `params` holds one pointer per
  /// kernel parameter, to its value. Threads run one after another, blocks in order, each to its
  /// end: right for kernels without barriers or warp collectives, which is all the backend emits
  /// so far. Those will run each thread of a block as a fiber (ucontext): the launch makes
  /// block.x*y*z fibers per block, switches the thread-local current context with each fiber
  /// switch, and a barrier or shuffle swaps back to the block's scheduler until every fiber of
  /// the block (or warp) has reached it; shared memory is then one allocation per block.
  llvm::Error launch(llvm::StringRef kernel, Dim3 grid, Dim3 block, llvm::ArrayRef<void *> params);

  bool hasKernel(llvm::StringRef kernel) const { return Params.count(kernel); }
  /// The number of parameters of `kernel` (0 for an unknown one).
  unsigned numParams(llvm::StringRef kernel) const { return Params.lookup(kernel); }

private:
  using Trampoline = void (*)(void *const *params);
  std::unique_ptr<llvm::orc::LLJIT> Jit;
  llvm::StringMap<Trampoline> Kernels;
  llvm::StringMap<unsigned> Params;
};

} // namespace aotc::cuda::emu

#endif
