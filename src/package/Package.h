// The last stage: links a lowered program's code for each CPU variant, its descriptor, its
// weights and the C runtime into one self-contained shared library.
#ifndef AOTC_PACKAGE_PACKAGE_H
#define AOTC_PACKAGE_PACKAGE_H

#include "aotc/ir/ShapeEnv.h"
#include "kernel/Kernel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <string>

namespace aotc {

/// Which x86-64 code the artifact carries. Portable: x86-64-v3 (AVX2) and x86-64-v4 (AVX-512),
/// picked at load by CPU detection; Native: only this machine's CPU.
enum class CpuTarget { Portable, X86_64_V3, X86_64_V4, Native };
llvm::Expected<CpuTarget>
parseCpuTarget(llvm::StringRef text); // x86-64-v3|x86-64-v4|native|portable

struct PackageOptions {
  CpuTarget cpu = CpuTarget::Portable;
  /// Writes the weights beside the .so (`model.so` -> `model.weights`), mmapped at load, instead
  /// of in the .so's read-only data (needed past 2 GiB).
  bool externalWeights = false;
  /// Called with the name of each stage as it starts (progress on a terminal).
  std::function<void(llvm::StringRef)> progress;
};

/// Writes the artifact to `outPath` through a temporary file renamed into place: nothing is left
/// behind on failure. `weightData[i]` holds the bytes of program.weights[i] (layoutWeights must
/// have run); `programBlob` is the exported program (graph without weights) that `aotc verify`
/// and `aotc inspect` read back. Equal inputs give a byte-identical file.
llvm::Error writeSharedLibrary(const kir::Program &program, const ShapeEnv &shapes,
                               llvm::ArrayRef<llvm::ArrayRef<uint8_t>> weightData,
                               llvm::ArrayRef<uint8_t> programBlob, const PackageOptions &options,
                               llvm::StringRef outPath);

/// The runtime's dtype number (AOTC_DTYPE_* of runtime.h) of a dtype.
int32_t runtimeDType(DType dtype);

} // namespace aotc

#endif
