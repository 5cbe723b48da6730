// The weight blob as an ELF relocatable object written directly, so that hundreds of megabytes of
// weights never become an LLVM constant nor pass through the object emitter.
#ifndef AOTC_PACKAGE_BLOBOBJECT_H
#define AOTC_PACKAGE_BLOBOBJECT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

namespace aotc {

/// Bytes placed at `offset` in a blob.
struct BlobPiece {
  uint64_t offset = 0;
  llvm::ArrayRef<uint8_t> bytes;
};

/// Streams the `size`-byte blob made of `pieces` (sorted by offset, not overlapping) with zeros
/// in between to `os`.
void writeBlob(llvm::raw_ostream &os, llvm::ArrayRef<BlobPiece> pieces, uint64_t size);

/// The hash (runtime/src/hash.h) of the very bytes writeBlob() writes, which the artifact
/// records so that the runtime and `aotc verify` can tell its weights from other bytes.
uint64_t hashBlob(llvm::ArrayRef<BlobPiece> pieces, uint64_t size);

/// Writes to `path` an x86-64 ELF relocatable object whose one section, read-only and 64-byte
/// aligned, holds the blob, defined as the hidden object symbol `symbol`.
llvm::Error writeBlobObject(llvm::StringRef path, llvm::StringRef symbol,
                            llvm::ArrayRef<BlobPiece> pieces, uint64_t size);

} // namespace aotc

#endif
