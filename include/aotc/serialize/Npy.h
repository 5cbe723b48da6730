// numpy's .npy format (versions 1.0-3.0, little-endian, C order) for inputs and outputs of
// `aotc run`.
#ifndef AOTC_SERIALIZE_NPY_H
#define AOTC_SERIALIZE_NPY_H

#include "aotc/tensor/HostTensor.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace aotc {

/// Parses a whole .npy file; `name` (the path) prefixes every error.
llvm::Expected<HostTensor> parseNpy(llvm::ArrayRef<uint8_t> bytes, llvm::StringRef name);
llvm::Expected<HostTensor> readNpy(llvm::StringRef path);

/// Version 1.0 with numpy's own descr strings (`<f4`, `<f2`, `|b1`, ...); bf16 has no numpy dtype
/// and is an error.
llvm::Expected<std::vector<uint8_t>> encodeNpy(const HostTensor &t);
/// Writes to a temporary file renamed into place.
llvm::Error writeNpy(const HostTensor &t, llvm::StringRef path);

} // namespace aotc

#endif
