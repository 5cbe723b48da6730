// What every CUDA kernel the backend emits shares: libdevice for float functions, special
// registers, and the kernel function of CudaCodegen.h's parameter convention with the flush of
// its index checks into the run's flag.
#ifndef AOTC_CODEGEN_CUDA_KERNELBUILDER_H
#define AOTC_CODEGEN_CUDA_KERNELBUILDER_H

#include "codegen/ExprEmitter.h"
#include "codegen/cuda/CudaCodegen.h"

#include "llvm/IR/Intrinsics.h"

namespace aotc::cuda {

/// libdevice's functions (`__nv_*`, CUDA's libm): NVPTX has no instruction for these and LLVM's
/// intrinsics of them would become calls to symbols nothing defines. The emulator maps each name
/// to the host's libm.
class LibdeviceMath final : public codegen::MathLibrary {
public:
  explicit LibdeviceMath(llvm::Module &m) : M(m) {}
  llvm::Value *emit(codegen::Builder &b, codegen::MathFn fn,
                    llvm::ArrayRef<llvm::Value *> args) override;

private:
  llvm::Module &M;
};

/// A special register (%tid.x, ...) zero-extended to i64.
llvm::Value *specialRegister(codegen::Builder &b, llvm::Intrinsic::ID id);

/// A kernel function being emitted, with its parameters by role.
struct KernelFunction {
  llvm::Function *fn = nullptr;
  llvm::SmallVector<llvm::Value *, 8> syms;     // the entry's root symbols, i64
  llvm::SmallVector<llvm::Value *, 16> buffers; // by entry buffer; null where the kernel has none
  llvm::Value *flag = nullptr;                  // the run's i32 index-check flag
};

/// Declares kernel `name` for `out` (whose buffers are set) by the parameter convention, marks
/// it a kernel, and leaves `b` at the start of its body.
KernelFunction beginKernel(llvm::Module &m, const kir::EntryKernels &entry, llvm::StringRef name,
                           const CudaKernel &out, codegen::Builder &b);

/// Ends the kernel: the first failing check of the run wins, one compare-and-swap per thread that
/// saw one (`failedCheck`, an i32 local, 0 when none); then returns.
void endKernel(codegen::Builder &b, const KernelFunction &k, llvm::Value *failedCheck);

/// The frame of a library kernel (GEMM, attention) for `step` of `entry`: kernel `name` of the
/// parameter convention over the step's buffers, launched on `blocks` blocks of `threads`
/// threads, all in x (y and z stop at 65535, which tiles x batch x heads can pass over a dynamic
/// range; x goes to 2^31 - 1; the kernel splits its block index back), an ExprEmitter over its
/// parameters with the index-check local, and the kernel's end. `body` emits the kernel in
/// between.
CudaKernel emitLibraryKernel(
    llvm::Module &m, codegen::MathLibrary &math, const kir::EntryKernels &entry,
    const kir::Step &step, const llvm::StringMap<unsigned> &symIndex, const SymExpr &blocks,
    unsigned threads, llvm::StringRef name,
    llvm::function_ref<void(codegen::Builder &, codegen::ExprEmitter &, const KernelFunction &)>
        body);

/// A static shared memory array (addrspace(3)) of `count` elements of `elem`, for the kernel's
/// use `role` ("a_tile"): one per role, type and size in the module, which every kernel that asks
/// for it shares (each block of each kernel has its own copy, as of any __shared__ variable). A
/// kernel's shared arrays thus do not depend on its name, so kernels emitted alike are equal
/// functions (MergeKernels.h), and a kernel's roles must be distinct.
llvm::GlobalVariable *sharedArray(llvm::Module &m, llvm::Type *elem, uint64_t count,
                                  llvm::StringRef role);

/// The block's dynamic shared memory (CUDA's `extern __shared__ T name[]`) as an array of `elem`:
/// one declaration per type in the module, each starting where the launch's dynamic shared
/// memory starts (CudaKernel::Launch::dynamicShared says how many bytes a kernel launches with).
llvm::GlobalVariable *dynamicSharedArray(llvm::Module &m, llvm::Type *elem);

} // namespace aotc::cuda

#endif
