// One function for kernels that are emitted alike: a model's repeated layers run the same GEMMs,
// norms and attention over other buffers, which are the kernels' parameters, so their code is
// equal and needs compiling and assembling once.
#ifndef AOTC_CODEGEN_CUDA_MERGEKERNELS_H
#define AOTC_CODEGEN_CUDA_MERGEKERNELS_H

#include "codegen/cuda/CudaCodegen.h"

namespace aotc::cuda {

/// Each kernel of `kernels` (functions of `m`) that equals an earlier one (LLVM's
/// FunctionComparator: the same signature, attributes and instructions; shared arrays are the
/// module's, sharedArray) launched with the same block is launched as that one: its name becomes
/// the earlier one's, and its function and its nvvm.annotations entry leave `m`. The first of
/// equal kernels stays, so the result depends only on the order of `kernels`. Returns how many
/// functions left `m`.
unsigned mergeKernels(llvm::Module &m, llvm::ArrayRef<CudaKernel *> kernels);

} // namespace aotc::cuda

#endif
