// `aotc export`: compiles a model file, traces its entries with symbolic shapes and compiles them
// into an artifact (.so), or writes the exported program (.aotp) or prints its IR.
#include "CompileFlags.h"
#include "ModelProgram.h"
#include "Subcommand.h"

#include "trace/Export.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Signals.h"

#include <fmt/format.h>

#include <memory>

namespace aotc::cli {

namespace {

struct ExportArgs {
  std::string model;
  ExportOptions options;
  std::string emit;
  std::string output;
  bool random = true;
  unsigned timeout = 3600;
  CompileFlags flags;
};

llvm::Error error(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error runExportCommand(ExportArgs &a) {
  for (const std::string &d : a.options.dyn)
    if (auto spec = parseDynSpec(d); !spec)
      return spec.takeError();
  std::string emit = a.emit;
  llvm::StringRef extension = llvm::sys::path::extension(a.output);
  if (emit.empty())
    emit = extension == ".so" ? "so" : extension == ".aotp" ? "aotp" : "ir";
  if (emit != "ir" && a.output.empty())
    return error(fmt::format("--emit={} needs an output file: -o MODEL.{}", emit, emit));
  // A .so is compiled from an exported program written to a temporary file first.
  llvm::SmallString<128> aotpPath;
  auto removeAotp = llvm::make_scope_exit([&] {
    if (!aotpPath.empty()) {
      llvm::sys::fs::remove(aotpPath);
      llvm::sys::DontRemoveFileOnSignal(aotpPath);
    }
  });
  if (emit == "so") {
    if (auto options = a.flags.options(); !options)
      return options.takeError(); // bad flags fail before the model is compiled
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile("aotc-export", "aotp", aotpPath))
      return error(fmt::format("cannot create a temporary file: {}", ec.message()));
    llvm::sys::RemoveFileOnSignal(aotpPath);
    if (llvm::sys::Process::StandardErrIsDisplayed())
      llvm::errs() << "aotc: trace " << a.model << "\n";
  }
  std::string programOut = emit == "so" ? aotpPath.str().str() : a.output;
  std::vector<std::string> args{"--emit", emit == "so" ? "aotp" : emit, "-o",
                                programOut.empty() ? "-" : programOut};
  for (const std::string &e : a.options.entries)
    args.insert(args.end(), {"--entry", e});
  for (const std::string &d : a.options.dyn)
    args.insert(args.end(), {"--dyn", d});
  if (!a.options.weights.empty())
    args.insert(args.end(), {"--weights", a.options.weights});
  if (a.options.allowMissing)
    args.push_back("--allow-missing");
  if (a.options.allowUnexpected)
    args.push_back("--allow-unexpected");
  if (a.options.report)
    args.push_back("--report");
  args.insert(args.end(), {"--seed", std::to_string(a.options.seed)});
  if (llvm::Error e = compileAndRunModel(a.model, args, a.timeout))
    return e;
  if (emit != "so")
    return llvm::Error::success();
  return compileArchive(aotpPath, a.flags, a.output);
}

} // namespace

Subcommand addExportCommand(CLI::App &parent) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App *app = parent.add_subcommand(
      "export",
      "Trace a model file and compile it into a shared library (.so), or write its exported "
      "program (.aotp) or graph IR");
  app->add_option("model", args->model, "Model file (C++ with AOTC_MODEL)")->required();
  app->add_option("--entry", args->options.entries, "Export only this entry (repeatable)");
  app->add_option("--dyn", args->options.dyn,
                  "Range of a dynamic dim, NAME=LO..HI (repeatable; overrides the model's)");
  app->add_option("--weights", args->options.weights,
                  "Parameters and buffers by PyTorch name (.safetensors)");
  app->add_flag("--allow-missing", args->options.allowMissing,
                "Initialize parameters missing from --weights instead of failing");
  app->add_flag("--allow-unexpected", args->options.allowUnexpected,
                "Ignore tensors in --weights that the model does not have");
  app->add_option("--emit", args->emit,
                  "so, aotp or ir (default: so for a .so output, aotp for .aotp, else ir)")
      ->check(CLI::IsMember({"so", "aotp", "ir"}));
  app->add_flag("--report", args->options.report,
                "List every constraint violation and unsupported construct, then fail");
  app->add_option("--seed", args->options.seed, "Seed of the weights' initialization");
  app->add_option("-o,--output", args->output, "Output file (nothing is written on failure)");
  app->add_option("--timeout", args->timeout,
                  "Stop the model program (compiled model.cpp, tracing) after SECONDS; 0: never "
                  "(default 3600)");
  args->flags.addTo(*app);
  return {app, [args] {
            llvm::Error e = runExportCommand(*args);
            if (!e)
              return 0;
            std::string message = llvm::toString(std::move(e));
            if (message.empty())
              return 1; // the model program or the compiler said why
            return reportError("export",
                               llvm::createStringError(llvm::inconvertibleErrorCode(), message));
          }};
}

Subcommand addWeightsCommand(CLI::App &parent) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App *app = parent.add_subcommand(
      "weights", "Write a model's initialized parameters and buffers as .safetensors");
  app->add_option("model", args->model, "Model file (C++ with AOTC_MODEL)")->required();
  app->add_flag("--random", args->random,
                "Random initialization (the modules' PyTorch defaults; the default)");
  app->add_option("--seed", args->options.seed, "Seed of the initialization");
  app->add_option("-o,--output", args->output, "Output .safetensors file")->required();
  return {app, [args] {
            std::vector<std::string> argv{"--emit", "weights",
                                          "-o",     args->output,
                                          "--seed", std::to_string(args->options.seed)};
            llvm::Error e = compileAndRunModel(args->model, argv);
            if (!e)
              return 0;
            std::string message = llvm::toString(std::move(e));
            if (message.empty())
              return 1;
            return reportError("weights",
                               llvm::createStringError(llvm::inconvertibleErrorCode(), message));
          }};
}

} // namespace aotc::cli
