// Input files read through one open descriptor: the type checked is the type read.
#include "aotc/serialize/InputFile.h"

#include "llvm/Support/FileSystem.h"

#include <fmt/format.h>

namespace aotc {

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> readInputFile(llvm::StringRef path,
                                                                  llvm::Align alignment) {
  auto fail = [&](const std::string &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   fmt::format("{}: {}", path.str(), why));
  };
  // Asked of the path first, since opening a FIFO waits for a writer; asked again of the
  // descriptor, since the path may name another file by the time it is opened.
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return fail(ec.message());
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return fail("not a regular file");
  llvm::Expected<llvm::sys::fs::file_t> fd = llvm::sys::fs::openNativeFileForRead(path);
  if (!fd)
    return fail(llvm::toString(fd.takeError()));
  if (std::error_code ec = llvm::sys::fs::status(*fd, status)) {
    llvm::sys::fs::closeFile(*fd);
    return fail(ec.message());
  }
  if (status.type() != llvm::sys::fs::file_type::regular_file) {
    llvm::sys::fs::closeFile(*fd);
    return fail("not a regular file");
  }
  auto buffer = llvm::MemoryBuffer::getOpenFile(*fd, path, status.getSize(),
                                                /*RequiresNullTerminator=*/false,
                                                /*IsVolatile=*/false, alignment);
  llvm::sys::fs::closeFile(*fd);
  if (!buffer)
    return fail(buffer.getError().message());
  return std::move(*buffer);
}

} // namespace aotc
