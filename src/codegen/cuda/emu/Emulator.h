// The emulated CUDA device: runs the NVPTX-bound LLVM IR the CUDA backend emits (before
// libdevice) on the host. The module is retargeted (Retarget.cpp: special registers, barriers,
// warp collectives and shared memory become calls into the emulator's runtime, libdevice's
// `__nv_*` functions the host's libm), JIT-compiled with ORC, and a launch runs every block of
// the grid, the threads of a block as fibers (BlockRunner.cpp) where the kernel synchronizes.
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

/// One emulated thread: what its special registers read (%tid, %ntid, %ctaid, %nctaid; %laneid
/// is the linear thread index mod 32), its block's shared memory, and the fiber it runs on (null
/// when the block's threads run one after another).
struct ThreadContext {
  Dim3 tid, ntid, ctaid, nctaid;
  uint8_t *shared = nullptr;
  void *fiber = nullptr;
};

/// A module of CUDA kernels loaded on the emulated device.
class EmulatedModule {
public:
  /// Retargets a copy of `nvptx` (left as it is) to the host and JIT-compiles it. An NVPTX
  /// intrinsic or libdevice function the emulator does not know yet is an error naming it.
  static llvm::Expected<std::unique_ptr<EmulatedModule>> load(const llvm::Module &nvptx);
  /// The same for the module as LLVM bitcode (an artifact's AOTC_CUDA_IMAGE_LLVM_BC image).
  static llvm::Expected<std::unique_ptr<EmulatedModule>> loadBitcode(llvm::StringRef bitcode);

  /// Runs `kernel` on grid x block threads, as cuLaunchKernel: `params` holds one pointer per
  /// kernel parameter, to its value; `dynamicShared` bytes of dynamic shared memory per block.
  /// Blocks run in order on the calling thread, each with its own shared memory (filled with
  /// 0xff bytes, NaN as floats, so that a read before a write shows). A kernel that reaches no
  /// barrier or warp collective runs its threads one after another, each to its end; any other
  /// runs each thread of a block as a fiber that yields at barriers and warp collectives
  /// (BlockRunner.h). A deadlock there (a barrier some threads exit without reaching) is an
  /// error naming the kernel, the block and the threads, as is an invalid launch.
  llvm::Error launch(llvm::StringRef kernel, Dim3 grid, Dim3 block, llvm::ArrayRef<void *> params,
                     uint32_t dynamicShared = 0);

  bool hasKernel(llvm::StringRef kernel) const { return Kernels.count(kernel); }
  /// The number of parameters of `kernel` (0 for an unknown one).
  unsigned numParams(llvm::StringRef kernel) const { return Kernels.lookup(kernel).params; }

private:
  using Trampoline = void (*)(void *const *params);
  struct Kernel {
    Trampoline entry = nullptr;
    bool usesFibers = false; // reaches a barrier or a warp collective
    unsigned params = 0;
  };
  std::unique_ptr<llvm::orc::LLJIT> Jit;
  llvm::StringMap<Kernel> Kernels;
  uint64_t StaticShared = 0; // bytes of every addrspace(3) global of the module, laid out
};

} // namespace aotc::cuda::emu

#endif
