// `aotc compile`: the stages after export, from a saved exported program (.aotp) to an artifact
// (.so), or to the kernel IR for inspection.
#include "CompileFlags.h"
#include "Subcommand.h"

#include "aotc/serialize/Archive.h"

#include "llvm/Support/raw_ostream.h"

#include <memory>

namespace aotc::cli {

namespace {

struct CompileArgs {
  std::string input;
  std::string output;
  std::string emit = "so";
  CompileFlags flags;
};

llvm::Error runCompile(const CompileArgs &a) {
  if (a.emit == "so") {
    if (a.output.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--emit=so needs an output file: -o MODEL.so");
    return compileArchive(a.input, a.flags, a.output);
  }
  // --emit=kernels: the kernel IR on stdout (golden tests, debugging).
  auto options = a.flags.options();
  if (!options)
    return options.takeError();
  auto program = readArchive(a.input);
  if (!program)
    return program.takeError();
  auto kernels = lowerGraph(*program, *options);
  if (!kernels)
    return kernels.takeError();
  kir::print(*kernels, llvm::outs());
  return llvm::Error::success();
}

} // namespace

Subcommand addCompileCommand(CLI::App &parent) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App *app = parent.add_subcommand(
      "compile", "Compile an exported program (.aotp) into a self-contained shared library");
  app->add_option("program", args->input, "Exported program (.aotp)")->required();
  app->add_option("-o,--output", args->output, "Output .so (nothing is written on failure)");
  app->add_option("--emit", args->emit, "so (default) or kernels (the kernel IR, on stdout)")
      ->check(CLI::IsMember({"so", "kernels"}));
  args->flags.addTo(*app);
  return {app, [args] {
            if (llvm::Error e = runCompile(*args))
              return reportError("compile", std::move(e));
            return 0;
          }};
}

} // namespace aotc::cli
