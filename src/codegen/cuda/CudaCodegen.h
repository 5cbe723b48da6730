// The CUDA code generator: an entry's loop kernels -> one NVPTX LLVM module -> PTX (libdevice
// linked for math) -> cubins by ptxas, one per arch. The emulated device (emu/) runs the same
// module retargeted to the host, so the conventions below are what both rely on.
#ifndef AOTC_CODEGEN_CUDA_CUDACODEGEN_H
#define AOTC_CODEGEN_CUDA_CUDACODEGEN_H

#include "codegen/cuda/CudaTarget.h"
#include "kernel/Kernel.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace aotc::cuda {

/// One CUDA kernel of a loop kernel. Its parameters, in order (the runtime and the emulator launch
/// by this convention): the entry's root symbols as i64, in EntryKernels::symbols order; a pointer
/// (global memory, generic address space) per buffer of `buffers`; a pointer to the run's i32
/// index-check flag, into which the first failing CheckIndex's number is written (0 stays 0).
/// Launch it with any 1-d grid of 1-d blocks: threads take the points of the flattened parallel
/// outer loops (`points`) by a grid-stride loop, so the grid only has to be >= 1 block.
struct CudaKernel {
  std::string name;                        // the kernel's function in the module
  llvm::SmallVector<uint32_t, 8> buffers;  // entry buffers the kernel touches, ascending
  llvm::SmallVector<SymExpr, 4> points;    // extents whose product is the parallel points
  const kir::LoopKernel *source = nullptr; // into the EntryKernels it was emitted from
};

struct CudaModule {
  std::unique_ptr<llvm::Module> module; // nvptx64-nvidia-cuda, libdevice not linked yet
  std::vector<CudaKernel> kernels;      // in step order, cond branches after their cond
};

/// Emits every loop kernel of `entry` (those inside conds too) into one NVPTX module in `c`.
/// A GEMM step is an error for now: the GEMM library kernel is the next step of the backend.
llvm::Expected<CudaModule> emitEntryKernels(llvm::LLVMContext &c, const kir::EntryKernels &entry,
                                            llvm::StringRef moduleName);

/// The CUDA toolkit's directory: $CUDA_PATH, else /usr/local/cuda; an error saying what to
/// install when it holds no ptxas.
llvm::Expected<std::string> cudaToolkitDir();

/// Links what `m` uses of libdevice (<toolkit>/nvvm/libdevice/libdevice.10.bc) into a copy of
/// `m`, optimizes it for `arch` and returns the PTX text. `m` is left as it is.
llvm::Expected<std::string> compileToPtx(const llvm::Module &m, CudaArch arch);

/// Assembles PTX into a cubin for `arch` with the toolkit's ptxas (a subprocess, in a temporary
/// directory that is removed afterwards); ptxas's messages are the error when it rejects it.
llvm::Expected<std::vector<char>> assemblePtx(llvm::StringRef ptx, CudaArch arch);

} // namespace aotc::cuda

#endif
