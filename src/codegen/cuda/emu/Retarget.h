// The emulated device's view of an NVPTX module: the rewrite that makes it host code calling the
// emulator's runtime (BlockRunner.h) for what only a GPU has.
#ifndef AOTC_CODEGEN_CUDA_EMU_RETARGET_H
#define AOTC_CODEGEN_CUDA_EMU_RETARGET_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace aotc::cuda::emu {

struct RetargetInfo {
  llvm::SmallVector<std::string, 8> kernels; // each with a "<name>.launch" trampoline
  llvm::StringSet<> fiberKernels;            // those that reach a barrier or warp collective
  uint64_t staticShared = 0; // bytes of the module's static shared memory; dynamic follows
};

/// Rewrites `m` for the host: special registers, barriers (llvm.nvvm.barrier0, barrier.sync 0),
/// warp shuffles (shfl.sync.{up,down,bfly,idx}.{i32,f32}) and votes (vote.{all,any,uni,ballot}
/// .sync), the tensor cores' mma.sync (m16n8k8 tf32, m16n8k16 bf16 and f16, f32 accumulators)
/// and ldmatrix (x1, x2, x4, .trans), cp.async (ca/cg, 4/8/16 bytes, zero-filling; commit and
/// wait groups) and cvt.rna.tf32.f32 become calls of the emulator's runtime; every addrspace(3)
/// global (static shared memory, and an external one as dynamic shared memory) becomes an offset
/// into the block's shared memory; libdevice's `__nv_*` functions become the host libm's; NVPTX
/// metadata and attributes go, the host's triple and data layout come; each kernel gets a
/// trampoline taking cuLaunchKernel's array of parameter pointers. Anything NVPTX the emulator does
/// not know is a one-line error naming it.
llvm::Expected<RetargetInfo> retarget(llvm::Module &m, const llvm::DataLayout &hostLayout,
                                      const std::string &hostTriple);

} // namespace aotc::cuda::emu

#endif
