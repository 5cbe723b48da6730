// The artifact descriptor (runtime/src/artifact.h) as LLVM constants: entries, inputs and outputs
// with their symbolic dims, weights, the embedded exported program, and a reference to the weight
// blob, which another object defines.
#ifndef AOTC_PACKAGE_DESCRIPTOR_H
#define AOTC_PACKAGE_DESCRIPTOR_H

#include "aotc/ir/ShapeEnv.h"
#include "codegen/cuda/CudaCodegen.h"
#include "kernel/Kernel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <string>

namespace aotc {

struct DescriptorContents {
  const kir::Program *program = nullptr;
  const ShapeEnv *shapes = nullptr;
  /// The hidden symbol of the embedded weight blob (program->weightBytes bytes, 64-byte aligned,
  /// defined in another object), or empty: no weights, or `weightsFile` set.
  std::string weightSymbol;
  std::string weightsFile;
  /// hashBlob() of the weight blob, embedded or in `weightsFile`.
  uint64_t weightsHash = 0;
  llvm::ArrayRef<uint8_t> programBlob;
  /// Which AOTC_VARIANT_* run functions the artifact's code defines.
  std::array<bool, 2> variants = {true, true};
  /// The CUDA images, kernels and uploads, or null: the entries then have no CUDA code.
  const cuda::CudaCode *cuda = nullptr;
};

/// Defines `aotc_artifact` (hidden) and the data it points to in `module`, declaring the run and
/// shapes functions the code generator defines. Fails when an entry has a root dim that no
/// input dim is equal to (the runtime binds dims from inputs).
llvm::Error emitDescriptor(const DescriptorContents &contents, llvm::Module &module);

/// The artifact format the descriptor is written in (AOTC_ARTIFACT_FORMAT); the runtime of an
/// artifact reads only its own format.
uint32_t artifactFormatVersion();

} // namespace aotc

#endif
