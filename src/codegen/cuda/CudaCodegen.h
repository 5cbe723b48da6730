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

/// How the host launches a kernel: grid extents over the entry's root symbols, evaluated at run
/// time (no recompile for a new shape); a launch with any extent 0 is skipped. A grid-stride
/// kernel loops over its points, so the host may launch fewer blocks in x than `grid` asks
/// (MaxGridStrideBlocks of CudaTarget.h); any other kernel gets exactly `grid`. `block` is
/// launched as given: kernels that combine values across a block (reductions, GEMM tiles) are
/// emitted for whole warps.
struct LaunchShape {
  llvm::SmallVector<SymExpr, 3> grid; // x, y, z; missing ones are 1
  uint32_t block[3] = {1, 1, 1};
  uint32_t dynamicShared = 0; // bytes of dynamic shared memory (static shared is the kernel's)
  bool gridStride = false;
};

/// One CUDA kernel: a loop kernel or a library kernel (GEMM, attention). Its parameters, in order
/// (the runtime, the host launch code and the emulator launch by this convention): the entry's root
/// symbols as i64, in EntryKernels::symbols order; a pointer (global memory, generic address
/// space) per buffer of `buffers`; a pointer to the run's i32 index-check flag, into which the
/// first failing CheckIndex's number is written (0 stays 0).
struct CudaKernel {
  std::string name;                       // the kernel's function in the module
  /// The entry buffers the kernel touches, its parameters after the symbols: in the order its
  /// step first uses them (kir::buffersInOrderOfUse), so that kernels emitted alike over other
  /// buffers have equal functions.
  llvm::SmallVector<uint32_t, 8> buffers;
  LaunchShape launch;
  const kir::Step *step = nullptr; // into the EntryKernels it was emitted from
};

struct CudaModule {
  std::unique_ptr<llvm::Module> module; // nvptx64-nvidia-cuda, libdevice not linked yet
  std::vector<CudaKernel> kernels;      // in step order, cond branches after their cond
};

/// Emits every step of `entry` (those inside conds too) into `m`, an NVPTX module: loop kernels
/// (LoopKernel.cpp), GEMMs (the library kernels of Gemm.cpp, SmallGemm.cpp and MmaGemm.cpp) and
/// attention (Attention.cpp), with the tiles of CudaTarget.h. The kernels are in step order, cond
/// branches after their cond.
llvm::Expected<std::vector<CudaKernel>> emitEntryKernels(llvm::Module &m,
                                                         const kir::EntryKernels &entry);

/// The same into a module of its own in `c`.
llvm::Expected<CudaModule> emitEntryKernels(llvm::LLVMContext &c, const kir::EntryKernels &entry,
                                            llvm::StringRef moduleName);

/// The images an artifact carries for its CUDA kernels (AOTC_CUDA_IMAGE_* of the runtime).
enum class ImageKind { Cubin, Ptx, LlvmBitcode };
struct CudaImage {
  ImageKind kind;
  CudaArch arch;
  std::vector<char> bytes; // PTX: the text and a NUL
};

/// A weight the CUDA code reads: its range of the artifact's weight blob and its place in the
/// device's copy, which holds only what the CUDA code reads (not the CPU's packed panels).
struct WeightUpload {
  uint64_t srcOffset, dstOffset, nbytes;
};

/// What the codegen-cuda step makes for the package step.
struct CudaCode {
  /// One cubin per arch asked for (ascending), the PTX of the newest arch that is not
  /// arch-specific (for GPUs newer than every cubin), and the NVPTX module as LLVM bitcode before
  /// libdevice, which the emulated device runs.
  std::vector<CudaImage> images;
  std::vector<std::string> kernels; // function names; the host code launches them by index
  std::vector<WeightUpload> uploads;
  uint64_t deviceWeightBytes = 0;
  /// What its GEMMs and attention round their operands to (every GEMM of a program has the same
  /// precision; fp32 when nothing rounds): the artifact's AOTC_PRECISION_*, in the same order.
  kir::Precision precision = kir::Precision::FP32;
  /// x86-64 host code: per entry i, aotc_e<i>_cuda_run and aotc_e<i>_cuda_arena (and
  /// aotc_e<i>_shapes when asked for), with the contracts of runtime/src/artifact.h.
  llvm::SmallVector<char, 0> hostObject;
  std::string ir; // the NVPTX module and the host code's LLVM IR, when asked for
};

/// The codegen-cuda step: every entry's kernels into one NVPTX module (kernels renamed
/// aotc_e<i>_<name>), its PTX and cubins for `archs`, and the host code that launches them.
/// `program`'s weights carry their offsets in the artifact's weight blob (layoutWeights of the
/// program the blob is laid out for). `withShapes`: the artifact has no CPU code, whose object
/// defines the shapes functions otherwise.
llvm::Expected<CudaCode> generateCode(const kir::Program &program, llvm::ArrayRef<CudaArch> archs,
                                      bool withShapes, bool printIR = false);

/// The CUDA toolkit's directory: $CUDA_PATH, else /usr/local/cuda; an error saying what to
/// install when it holds no ptxas.
llvm::Expected<std::string> cudaToolkitDir();

/// Links what `m` uses of libdevice (<toolkit>/nvvm/libdevice/libdevice.10.bc) into a copy of
/// `m`, optimizes it for `arch` and returns the PTX text. `m` is left as it is.
llvm::Expected<std::string> compileToPtx(const llvm::Module &m, CudaArch arch);

/// Assembles PTX into a cubin for `arch` with the toolkit's ptxas (a subprocess, in a temporary
/// directory that is removed afterwards); ptxas's messages are the error when it rejects it.
/// With `usage`, ptxas runs with -v and its report (registers, spills, shared memory per
/// kernel) is stored there.
llvm::Expected<std::vector<char>> assemblePtx(llvm::StringRef ptx, CudaArch arch,
                                              std::string *usage = nullptr);

} // namespace aotc::cuda

#endif
