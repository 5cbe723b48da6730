// Builds and runs model programs: `$CXX` (or the compiler aotc was configured with) compiles the
// model file against the DSL headers and links the DSL library, in a temporary directory.
#include "ModelProgram.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <fmt/format.h>

#include <cstdlib>

namespace aotc::cli {

namespace {

llvm::Error error(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Removes the directory and its files when the export is done, whatever happened.
struct TempDir {
  llvm::SmallString<128> path;
  ~TempDir() {
    if (!path.empty())
      llvm::sys::fs::remove_directories(path);
  }
};

// Splits a flags string on spaces (the configured flags contain no quoted arguments).
void appendFlags(std::vector<std::string> &out, llvm::StringRef flags) {
  llvm::SmallVector<llvm::StringRef, 8> parts;
  flags.split(parts, ' ', -1, false);
  for (llvm::StringRef p : parts)
    out.push_back(p.str());
}

llvm::Error run(const std::string &program, const std::vector<std::string> &args,
                const std::string &what) {
  std::vector<llvm::StringRef> argv{program};
  for (const std::string &a : args)
    argv.push_back(a);
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(program, argv, std::nullopt, {}, 0, 0, &message);
  if (rc < 0)
    return error(fmt::format("{} could not run: {}", what, message));
  if (rc > 0)
    return error("");
  return llvm::Error::success();
}

} // namespace

llvm::Error compileAndRunModel(llvm::StringRef modelFile, const std::vector<std::string> &args) {
  if (!llvm::sys::fs::is_regular_file(modelFile))
    return error(fmt::format("{}: no such model file", modelFile.str()));
  std::string cxx = AOTC_HOST_CXX;
  // The link flags were checked with the configured compiler only, and on the machine that built
  // aotc.
  llvm::StringRef linkFlags = AOTC_MODEL_LINK_FLAGS;
  if (const char *env = std::getenv("CXX"); env && *env && cxx != env) {
    cxx = env;
    linkFlags = "";
  }
  if (linkFlags.contains("lld") && !llvm::sys::findProgramByName("ld.lld"))
    linkFlags = "";
  auto cxxPath = llvm::sys::findProgramByName(cxx);
  if (!cxxPath)
    return error(fmt::format("the C++ compiler '{}' was not found (set $CXX)", cxx));

  TempDir dir;
  if (auto ec = llvm::sys::fs::createUniqueDirectory("aotc-model", dir.path))
    return error(fmt::format("cannot create a temporary directory: {}", ec.message()));
  llvm::SmallString<128> program(dir.path);
  llvm::sys::path::append(program, "model");

  llvm::StringRef libDir = llvm::sys::path::parent_path(AOTC_DSL_LIBRARY);
  std::vector<std::string> compile{"-std=c++20", "-O0", "-I", AOTC_INCLUDE_DIR};
  appendFlags(compile, AOTC_MODEL_CXX_FLAGS);
  appendFlags(compile, linkFlags);
  compile.insert(compile.end(), {modelFile.str(), AOTC_MODEL_MAIN, AOTC_DSL_LIBRARY,
                                 "-Wl,-rpath," + libDir.str(), "-o", program.str().str()});
  if (auto e = run(*cxxPath, compile, cxx)) {
    std::string message = llvm::toString(std::move(e));
    return error(message.empty() ? fmt::format("{}: the C++ compiler failed (diagnostics above)",
                                               modelFile.str())
                                 : message);
  }
  return run(program.str().str(), args, "the model program");
}

} // namespace aotc::cli
