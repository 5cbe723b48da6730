// Links object files into a shared library with lld, in process.
#ifndef AOTC_PACKAGE_LINK_H
#define AOTC_PACKAGE_LINK_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace aotc {

/// Links `objects` (ELF relocatable files on disk), the runtime archive and libc/libm into the
/// shared library `output`, exporting only the runtime's public functions. lld's diagnostics
/// become the error.
llvm::Error linkSharedLibrary(llvm::ArrayRef<std::string> objects, llvm::StringRef soname,
                              llvm::StringRef output);

} // namespace aotc

#endif
