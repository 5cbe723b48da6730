// The `aotc` command-line driver: declares the subcommands, parses the command line and runs the
// chosen subcommand.
#include "Subcommand.h"

#include "package/Descriptor.h"

#include "aotc/runtime.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/PrettyStackTrace.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <csignal>
#include <vector>

namespace aotc::cli {

int reportError(llvm::StringRef command, llvm::Error err) {
  // Results already written to stdout come first, so that `2>&1` keeps the order of events.
  llvm::outs().flush();
  llvm::errs() << "aotc " << command << ": error: " << llvm::toString(std::move(err)) << "\n";
  return 1;
}

} // namespace aotc::cli

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::setBugReportMsg("PLEASE report this aotc crash with the command line and its input.\n");
  // A write past `ulimit -f` then fails with EFBIG, an error with one line like any failed write,
  // instead of SIGXFSZ and a crash report; model programs inherit the disposition.
  std::signal(SIGXFSZ, SIG_IGN);
  // For compiler developers: LLVM's own options (e.g. -pass-remarks-missed=loop-vectorize).
  const char *llvmArgv[] = {"aotc"};
  std::string llvmErrors;
  llvm::raw_string_ostream llvmErrorStream(llvmErrors);
  if (!llvm::cl::ParseCommandLineOptions(1, llvmArgv, "", &llvmErrorStream, "AOTC_LLVM_OPTIONS")) {
    // LLVM's text names `aotc` and suggests `aotc --help`, which lists aotc's options, not LLVM's.
    llvm::StringRef first = llvm::StringRef(llvmErrors).split('\n').first;
    first.consume_front("aotc: ");
    llvm::errs() << "aotc: error: AOTC_LLVM_OPTIONS: " << first.split(".  Try:").first << "\n";
    return 1;
  }
  using namespace aotc::cli;

  CLI::App app{"aotc: ahead-of-time model compiler for C++", "aotc"};
  app.require_subcommand(1);
  // Three versions, each semantic in its own right: aotc's (MAJOR.MINOR.PATCH), the artifact
  // format the runtime reads and the C ABI of runtime.h (each a major version: any change to them
  // is incompatible, and additions to the ABI are new functions).
  app.set_version_flag("--version", fmt::format("aotc {}\nartifact format {}\nC ABI {}",
                                                AOTC_VERSION, aotc::artifactFormatVersion(),
                                                AOTC_ABI_VERSION));

  // A new subcommand is one file and one line here.
  using AddFn = Subcommand (*)(CLI::App &);
  static constexpr AddFn AddSubcommands[] = {addExportCommand, addCompileCommand, addRunCommand,
                                             addVerifyCommand, addInspectCommand, addWeightsCommand,
                                             addOptCommand,    addArchiveCommand};

  std::vector<Subcommand> subcommands;
  for (AddFn add : AddSubcommands)
    subcommands.push_back(add(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }

  for (const Subcommand &sub : subcommands)
    if (sub.app->parsed())
      return sub.run();
  return 1;
}
