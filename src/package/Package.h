// The last steps of an export: the package step writes a program's descriptor and weights as
// objects beside its code, and the link step links them and the C runtime with lld into one
// self-contained shared library.
#ifndef AOTC_PACKAGE_PACKAGE_H
#define AOTC_PACKAGE_PACKAGE_H

#include "aotc/ir/ShapeEnv.h"
#include "codegen/cpu/CpuCodegen.h"
#include "codegen/cuda/CudaCodegen.h"
#include "kernel/Kernel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace aotc {

struct PackageOptions {
  /// Writes the weights beside the .so (`model.so` -> `model.weights`), mmapped at load, instead
  /// of in the .so's read-only data (needed past 2 GiB).
  bool externalWeights = false;
};

/// The objects an artifact links, in link order, in a temporary directory that goes with them.
class ArtifactObjects {
public:
  static llvm::Expected<ArtifactObjects> create();
  ArtifactObjects(ArtifactObjects &&other);
  ArtifactObjects &operator=(ArtifactObjects &&) = delete;
  ~ArtifactObjects();

  /// Writes `bytes` as the next object, called `name` in the directory.
  llvm::Error add(llvm::StringRef name, llvm::ArrayRef<char> bytes);
  /// A path in the directory for an object another writer makes; addPath() appends it.
  std::string pathFor(llvm::StringRef name) const;
  void addPath(std::string path) { Paths.push_back(std::move(path)); }
  llvm::ArrayRef<std::string> paths() const { return Paths; }

private:
  explicit ArtifactObjects(std::string dir) : Dir(std::move(dir)) {}
  std::string Dir;
  std::vector<std::string> Paths;
};

/// The package step: appends to `objects` the code objects of `code`, then the descriptor's
/// object and the embedded weights' (or, with options.externalWeights, writes the weights file
/// beside `outPath` through a temporary file renamed into place). `weightData[i]` holds the bytes
/// of program.weights[i] (layoutWeights must have run); `programBlob` is the exported program
/// (graph without weights) that `aotc verify` and `aotc inspect` read back; `cuda`, when not null,
/// the CUDA images and host code (its host object is linked too). With `printIR`, the
/// descriptor's LLVM IR is appended to it. Equal inputs give byte-identical objects.
llvm::Error packageObjects(const kir::Program &program, const ShapeEnv &shapes,
                           llvm::ArrayRef<llvm::ArrayRef<uint8_t>> weightData,
                           llvm::ArrayRef<uint8_t> programBlob,
                           llvm::ArrayRef<cpu::CodeObject> code, const cuda::CudaCode *cuda,
                           const PackageOptions &options, llvm::StringRef outPath,
                           ArtifactObjects &objects, std::string *printIR = nullptr);

/// The link step: links `objects` and the C runtime with lld into `outPath`, through a
/// temporary file renamed into place, so that nothing is left behind on failure.
llvm::Error linkArtifact(const ArtifactObjects &objects, llvm::StringRef outPath);

/// The runtime's dtype number (AOTC_DTYPE_* of runtime.h) of a dtype.
int32_t runtimeDType(DType dtype);

} // namespace aotc

#endif
