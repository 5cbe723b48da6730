// Output files written through a temporary file and a rename.
#include "aotc/serialize/AtomicFile.h"

#include "llvm/Support/FileSystem.h"

#include <fmt/format.h>

namespace aotc {

llvm::Error writeFileAtomically(llvm::StringRef path,
                                llvm::function_ref<void(llvm::raw_ostream &)> write) {
  auto fail = [&](std::string msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   fmt::format("cannot write {}: {}", path.str(), msg));
  };
  auto tmp = llvm::sys::fs::TempFile::create(path + ".tmp.%%%%%%");
  if (!tmp)
    return fail(fmt::format("cannot create a temporary file: {}", llvm::toString(tmp.takeError())));
  {
    llvm::raw_fd_ostream os(tmp->FD, /*shouldClose=*/false);
    write(os);
    os.flush();
    if (std::error_code ec = os.error()) {
      os.clear_error();
      llvm::consumeError(tmp->discard());
      return fail(ec.message());
    }
  }
  // keep() renames, and removes the temporary file itself when that fails.
  if (llvm::Error err = tmp->keep(path))
    return fail(llvm::toString(std::move(err)));
  return llvm::Error::success();
}

} // namespace aotc
