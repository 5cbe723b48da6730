// The host side of the CUDA backend: x86-64 functions that compute an entry's buffer addresses,
// grids and parameters from its root symbols and launch its kernels through the runtime.
#ifndef AOTC_CODEGEN_CUDA_HOSTCODE_H
#define AOTC_CODEGEN_CUDA_HOSTCODE_H

#include "codegen/cuda/CudaCodegen.h"

#include "llvm/ADT/DenseMap.h"

namespace aotc::cuda {

/// An entry's kernels as the host code launches them: each with its index in CudaCode::kernels.
struct EntryLaunches {
  /// A step's kernels (a GEMM may have several, each launching for its own range of m) and
  /// their indices in the artifact's kernel table.
  llvm::DenseMap<const kir::Step *, llvm::SmallVector<std::pair<const CudaKernel *, int32_t>, 3>>
      byStep;
};

/// Emits into `m` (triple and data layout set) for every entry i of `program`:
///   int32_t aotc_e<i>_cuda_run(aotc_cuda_exec *, const uint64_t *inputs,
///                              const uint64_t *outputs, const int64_t *syms)
///   int64_t aotc_e<i>_cuda_arena(const int64_t *syms)
///   int32_t aotc_e<i>_shapes(const int64_t *syms, int64_t *out)   (only when withShapes)
/// `deviceOffset[w]` is weight w's place in the device's copy of the weights.
llvm::Error emitHostCode(llvm::Module &m, const kir::Program &program,
                         llvm::ArrayRef<EntryLaunches> launches,
                         const llvm::DenseMap<uint32_t, uint64_t> &deviceOffset, bool withShapes,
                         const std::function<void(llvm::Function *)> &setAttributes);

} // namespace aotc::cuda

#endif
