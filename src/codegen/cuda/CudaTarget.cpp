// The CUDA target description's values (CUDA C Programming Guide, "Compute Capabilities",
// tables 21 and 22; PTX ISA, "Release Notes", for the first PTX version of each target).
#include "codegen/cuda/CudaTarget.h"

#include "fmt/format.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>

namespace aotc::cuda {

namespace {
constexpr unsigned KiB = 1024;
constexpr ArchInfo Archs[] = {
    {CudaArch::SM80, "sm_80", 80, 32, 1024, 48 * KiB, 163 * KiB, 70},
    {CudaArch::SM86, "sm_86", 86, 32, 1024, 48 * KiB, 99 * KiB, 71},
    {CudaArch::SM89, "sm_89", 89, 32, 1024, 48 * KiB, 99 * KiB, 78},
    {CudaArch::SM90, "sm_90", 90, 32, 1024, 48 * KiB, 227 * KiB, 78},
    {CudaArch::SM90a, "sm_90a", 90, 32, 1024, 48 * KiB, 227 * KiB, 80},
};
} // namespace

llvm::ArrayRef<ArchInfo> cudaArchs() { return Archs; }

const ArchInfo &archInfo(CudaArch arch) { return Archs[unsigned(arch)]; }

llvm::SmallVector<CudaArch, 5> defaultCudaArchs() {
  return {CudaArch::SM80, CudaArch::SM86, CudaArch::SM89, CudaArch::SM90};
}

llvm::Expected<llvm::SmallVector<CudaArch, 5>> parseCudaArchs(llvm::StringRef list) {
  llvm::SmallVector<CudaArch, 5> out;
  llvm::SmallVector<llvm::StringRef, 5> names;
  list.split(names, ',');
  for (llvm::StringRef name : names) {
    name = name.trim();
    const ArchInfo *found = nullptr;
    for (const ArchInfo &a : Archs)
      if (a.name == name)
        found = &a;
    if (!found) {
      llvm::SmallVector<llvm::StringRef, 5> valid;
      for (const ArchInfo &a : Archs)
        valid.push_back(a.name);
      return llvm::createStringError(
          fmt::format("--cuda-arch: unknown CUDA architecture \"{}\"; valid: {}", name.str(),
                      llvm::join(valid, ", ")));
    }
    if (!llvm::is_contained(out, found->arch))
      out.push_back(found->arch);
  }
  llvm::sort(out);
  return out;
}

const kir::TargetInfo &loweringTarget() {
  static const kir::TargetInfo target = [] {
    kir::TargetInfo t;
    t.backend = "CUDA";
    // A direct convolution is a loop kernel with one thread per output and the window reduced
    // serially in the thread, with no reuse of inputs between threads; the GEMM library kernel
    // tiles through shared memory. Only convolutions too thin to fill its tiles (the GEMM's m
    // below a warp's rows, tiny filters) stay direct. The same values as the CPU's keep the two
    // targets' kernel IR alike, so what CI tests on one covers the other's structure.
    t.convGemmMinChannels = 16;
    t.convGemmMinWeights = 64;
    // An im2col copy costs a write and a read of the copy in device memory; past 16 M elements
    // (64 MiB of f32) that traffic outweighs what the GEMM gains.
    t.im2colMaxElements = int64_t(16) << 20;
    // Winograd off (winogradMinOutChannels 0): its transforms would be more loop kernels and
    // arena traffic before the GEMM kernel's tensor-core path exists to gain from it; a
    // correct-first GPU path runs every convolution as a direct loop or an implicit GEMM.
    t.winogradMinOutChannels = 0;
    // Attention as one kernel (Attention.cpp): the scores stay in registers and shared memory
    // instead of making a round trip through device memory between three kernels.
    t.fusedAttentionMaxHeadDim = AttentionMaxHeadDim;
    // The tensor cores multiply bf16 and fp16 operands exactly and every GEMM kernel loads and
    // stores 16-bit buffers (half-weights, half-activations).
    t.gemmHalfOperands = true;
    return t;
  }();
  return target;
}

} // namespace aotc::cuda
