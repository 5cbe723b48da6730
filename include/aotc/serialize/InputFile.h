// Reading an input file (.npy, .safetensors, .aotp) whole, regular files only.
#ifndef AOTC_SERIALIZE_INPUTFILE_H
#define AOTC_SERIALIZE_INPUTFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Alignment.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>

namespace aotc {

/// The contents of `path` (mapped when large enough), `alignment`-aligned. Anything but a regular
/// file is refused before a byte is read: a FIFO would block forever and /dev/zero never ends.
/// Errors read `PATH: REASON`.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> readInputFile(llvm::StringRef path,
                                                                  llvm::Align alignment);

} // namespace aotc

#endif
