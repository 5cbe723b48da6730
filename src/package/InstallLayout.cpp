// The files an export needs, relative to an installed aotc or in the build tree.
#include "package/InstallLayout.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace aotc {

namespace {

/// `dir` with as many trailing components removed as `relative` has (bin -> its parent).
llvm::SmallString<256> upBy(llvm::StringRef dir, llvm::StringRef relative) {
  llvm::SmallString<256> out(dir);
  for (auto it = llvm::sys::path::begin(relative), end = llvm::sys::path::end(relative); it != end;
       ++it)
    llvm::sys::path::remove_filename(out);
  return out;
}

std::string join(llvm::StringRef a, llvm::StringRef b, llvm::StringRef c = "") {
  llvm::SmallString<256> out(a);
  llvm::sys::path::append(out, b, c);
  return out.str().str();
}

InstallLayout computeLayout() {
  std::string exe = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  if (!exe.empty()) {
    llvm::SmallString<256> prefix = upBy(llvm::sys::path::parent_path(exe), AOTC_INSTALL_BINDIR);
    std::string runtime = join(prefix, AOTC_INSTALL_LIBDIR, "aotc/libaotc_runtime.a");
    if (!prefix.empty() && llvm::sys::fs::is_regular_file(runtime))
      return {join(prefix, AOTC_INSTALL_INCLUDEDIR),
              join(prefix, AOTC_INSTALL_LIBDIR, "libaotc_dsl.so"),
              join(prefix, AOTC_INSTALL_LIBDIR, "aotc/libaotc_model_main.a"), runtime,
              /*installed=*/true};
  }
  return {AOTC_BUILD_INCLUDE_DIR, AOTC_BUILD_DSL_LIBRARY, AOTC_BUILD_MODEL_MAIN,
          AOTC_BUILD_RUNTIME_ARCHIVE, /*installed=*/false};
}

} // namespace

const InstallLayout &installLayout() {
  static const InstallLayout layout = computeLayout();
  return layout;
}

} // namespace aotc
