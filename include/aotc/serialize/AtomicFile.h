// Writing an output file so that it appears complete or not at all.
#ifndef AOTC_SERIALIZE_ATOMICFILE_H
#define AOTC_SERIALIZE_ATOMICFILE_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace aotc {

/// Streams `write`'s output into a temporary file next to `path` (same file system, removed on a
/// signal) and renames it into place; on any error the temporary file is removed, `path` is left
/// as it was, and the error reads `cannot write PATH: REASON`.
llvm::Error writeFileAtomically(llvm::StringRef path,
                                llvm::function_ref<void(llvm::raw_ostream &)> write);

} // namespace aotc

#endif
