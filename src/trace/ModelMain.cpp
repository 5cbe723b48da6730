// The command line of compiled model programs (run by `aotc export` and `aotc weights`, which
// validate the user's flags first).
#include "Export.h"

#include "Tracer.h"

#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>

#include <csignal>

#include <sys/prctl.h>
#include <unistd.h>

namespace aotc {

int modelMain(int argc, char **argv, ModelDecl (*define)()) {
  CLI::App app("aotc model program: traces the model declared in this program");
  ExportOptions o;
  app.add_option("--entry", o.entries);
  app.add_option("--dyn", o.dyn);
  app.add_option("--weights", o.weights);
  app.add_flag("--allow-missing", o.allowMissing);
  app.add_flag("--allow-unexpected", o.allowUnexpected);
  app.add_option("--emit", o.emit)->check(CLI::IsMember({"aotp", "ir", "weights"}));
  app.add_option("-o,--output", o.output);
  app.add_flag("--report", o.report);
  app.add_option("--seed", o.seed);
  pid_t parent = 0;
  app.add_option("--parent-pid", parent);
  CLI11_PARSE(app, argc, argv);
  // Dies with the aotc that runs it (SIGTERM: LLVM's handler removes the output's temporary
  // file); a parent already gone before prctl took effect is seen by getppid.
  if (parent != 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
      return 1;
  }
  // The program runs on behalf of `aotc export` or `aotc weights`; errors speak for that command.
  const char *command = o.emit == "weights" ? "aotc weights" : "aotc export";
  try {
    ModelDecl decl = define();
    if (llvm::Error e = runExport(decl, o)) {
      llvm::errs() << command << ": error: " << llvm::toString(std::move(e)) << "\n";
      return 1;
    }
  } catch (const DslError &e) {
    llvm::errs() << command << ": error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

} // namespace aotc
