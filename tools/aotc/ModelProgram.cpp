// Builds and runs model programs: `$CXX` (or the compiler aotc was configured with) compiles the
// model file against the DSL headers and links the DSL library, in a temporary directory.
#include "ModelProgram.h"

#include "package/InstallLayout.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include <unistd.h>

namespace aotc::cli {

namespace {

llvm::Error error(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The model program's file: removed when the export is done, whatever happened, and by LLVM's
/// signal handler on SIGINT or SIGTERM (which removes regular files only, hence no directory).
struct TempProgram {
  llvm::SmallString<128> path;
  ~TempProgram() {
    if (!path.empty()) {
      llvm::sys::fs::remove(path);
      llvm::sys::DontRemoveFileOnSignal(path);
    }
  }
};

// Splits a flags string on spaces (the configured flags contain no quoted arguments).
void appendFlags(std::vector<std::string> &out, llvm::StringRef flags) {
  llvm::SmallVector<llvm::StringRef, 8> parts;
  flags.split(parts, ' ', -1, false);
  for (llvm::StringRef p : parts)
    out.push_back(p.str());
}

/// Runs `program` and waits at most `timeoutSeconds` (0: forever); past that it is sent SIGTERM
/// (its own handler then removes its temporary files) and, 5 s later, SIGKILL.
llvm::Error run(const std::string &program, const std::vector<std::string> &args,
                const std::string &what, unsigned timeoutSeconds = 0) {
  std::vector<llvm::StringRef> argv{program};
  for (const std::string &a : args)
    argv.push_back(a);
  std::string message;
  bool failed = false;
  llvm::sys::ProcessInfo child =
      llvm::sys::ExecuteNoWait(program, argv, std::nullopt, {}, 0, &message, &failed);
  if (failed)
    return error(fmt::format("{} could not run: {}", what, message));
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::seconds(timeoutSeconds);
  llvm::sys::ProcessInfo done;
  for (auto pause = std::chrono::milliseconds(1);;
       pause = std::min(pause * 2, std::chrono::milliseconds(50))) {
    done = llvm::sys::Wait(child, /*SecondsToWait=*/0, &message);
    if (done.Pid != 0 || (timeoutSeconds && Clock::now() >= deadline))
      break;
    std::this_thread::sleep_for(pause);
  }
  if (done.Pid == 0) {
    ::kill(child.Pid, SIGTERM);
    done = llvm::sys::Wait(child, /*SecondsToWait=*/5, &message);
    return error(fmt::format("{} did not finish within {} s (--timeout) and was stopped", what,
                             timeoutSeconds));
  }
  if (done.ReturnCode < 0)
    return error(fmt::format("{} failed: {}", what, message));
  if (done.ReturnCode > 0)
    return error("");
  return llvm::Error::success();
}

} // namespace

llvm::Error compileAndRunModel(llvm::StringRef modelFile, const std::vector<std::string> &args,
                               unsigned timeoutSeconds, llvm::StringRef compilerDepfile) {
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

  TempProgram program;
  if (auto ec = llvm::sys::fs::createTemporaryFile("aotc-model", "", program.path))
    return error(fmt::format("cannot create a temporary file: {}", ec.message()));
  llvm::sys::RemoveFileOnSignal(program.path);

  const InstallLayout &layout = installLayout();
  llvm::StringRef libDir = llvm::sys::path::parent_path(layout.dslLibrary);
  std::vector<std::string> compile{"-std=c++20", "-O0"};
  // An aotc installed into /usr needs no -I, and one would demote the system headers.
  if (layout.includeDir != "/usr/include")
    compile.insert(compile.end(), {"-I", layout.includeDir});
  appendFlags(compile, AOTC_MODEL_CXX_FLAGS);
  appendFlags(compile, linkFlags);
  if (!compilerDepfile.empty())
    compile.insert(compile.end(), {"-MD", "-MF", compilerDepfile.str()});
  compile.insert(compile.end(), {modelFile.str(), layout.modelMain, layout.dslLibrary,
                                 "-Wl,-rpath," + libDir.str(), "-o", program.path.str().str()});
  if (auto e = run(*cxxPath, compile, cxx)) {
    std::string message = llvm::toString(std::move(e));
    return error(message.empty() ? fmt::format("{}: the C++ compiler failed (diagnostics above)",
                                               modelFile.str())
                                 : message);
  }
  // The program dies with this process (see ModelMain.cpp), so that a killed export leaves no
  // model program running, nor one that writes its output after this process removed it.
  std::vector<std::string> programArgs = args;
  programArgs.insert(programArgs.end(), {"--parent-pid", std::to_string(::getpid())});
  return run(program.path.str().str(), programArgs, "the model program", timeoutSeconds);
}

} // namespace aotc::cli
