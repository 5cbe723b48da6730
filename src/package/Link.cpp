// Links an artifact with lld in process: the generated objects, the C runtime archive, and libc
// and libm as the only shared libraries it needs.
#include "package/Link.h"

#include "package/InstallLayout.h"

#include "lld/Common/Driver.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <mutex>
#include <vector>

LLD_HAS_DRIVER(elf)

namespace aotc {

namespace {

// Only the C ABI leaves the .so; everything generated stays local so that two artifacts loaded
// into one process never bind to each other's kernels.
constexpr llvm::StringLiteral ExportMap = R"({
  global:
    aotc_abi_version; aotc_dtype_name; aotc_last_error;
    aotc_artifact_*; aotc_model_*; aotc_run_options_*; aotc_tensor_*;
  local: *;
};
)";

llvm::Error error(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

llvm::Error linkSharedLibrary(llvm::ArrayRef<std::string> objects, llvm::StringRef soname,
                              llvm::StringRef output) {
  llvm::SmallString<128> mapPath;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("aotc-exports", "map", mapPath))
    return error(fmt::format("cannot create a temporary file: {}", ec.message()));
  auto removeMap = llvm::make_scope_exit([&] { llvm::sys::fs::remove(mapPath); });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(mapPath, ec);
    if (ec)
      return error(fmt::format("cannot write {}: {}", mapPath.str(), ec.message()));
    os << ExportMap;
  }

  std::string versionScript = "--version-script=" + mapPath.str().str();
  std::string sonameArg = "-soname=" + soname.str();
  std::string libDir = "-L" AOTC_LIBC_DIR;
  std::vector<const char *> args = {"ld.lld",
                                    "-shared",
                                    "-o",
                                    nullptr,
                                    sonameArg.c_str(),
                                    "--build-id=none",
                                    "--hash-style=gnu",
                                    "-z",
                                    "noexecstack",
                                    "-z",
                                    "relro",
                                    "-z",
                                    "now",
                                    "-z",
                                    "defs",
                                    "-Bsymbolic",
                                    "--strip-debug",
                                    "--as-needed",
                                    versionScript.c_str()};
  std::string out = output.str();
  args[3] = out.c_str();
  for (const std::string &o : objects)
    args.push_back(o.c_str());
  // Generated code calls none of the API, so the runtime is linked whole.
  args.push_back("--whole-archive");
  args.push_back(installLayout().runtimeArchive.c_str());
  args.push_back("--no-whole-archive");
  args.push_back(AOTC_LIBGCC_ARCHIVE);
  args.push_back(libDir.c_str());
  args.push_back("-lm");
  args.push_back("-lc");

  std::string diagnostics;
  llvm::raw_string_ostream errs(diagnostics);
  std::string ignored;
  llvm::raw_string_ostream outs(ignored);
  // lld keeps global state per link; one link at a time.
  static std::mutex linkMutex;
  std::lock_guard<std::mutex> lock(linkMutex);
  lld::Result result = lld::lldMain(args, outs, errs, {{lld::Gnu, &lld::elf::link}});
  if (result.retCode != 0) {
    llvm::sys::fs::remove(out);
    llvm::StringRef text = llvm::StringRef(diagnostics).trim();
    return error(fmt::format("linking {} failed: {}", soname.str(),
                             text.empty() ? "lld reported no reason" : text.str()));
  }
  return llvm::Error::success();
}

} // namespace aotc
