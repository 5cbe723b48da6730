// `aotc export`: compiles a model file, traces its entries with symbolic shapes and compiles them
// into an artifact (.so), or writes the exported program (.aotp) or prints its IR.
#include "CompileFlags.h"
#include "ModelProgram.h"
#include "Subcommand.h"

#include "trace/Export.h"

#include "aotc/serialize/AtomicFile.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
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
  std::string depfile;
  bool random = true;
  unsigned timeout = 3600;
  CompileFlags flags;
};

llvm::Error error(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// A path as a Makefile rule writes it (the escapes make and ninja read back).
std::string makeEscaped(llvm::StringRef path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '#')
      out += '\\';
    else if (c == '$')
      out += '$';
    out += c;
  }
  return out;
}

/// Writes `depfile`: one Makefile rule, `output` depending on every file the compiler read (the
/// prerequisites of its -MD rule in `compilerDepfile`, already escaped) and on the weights.
llvm::Error writeDepfile(llvm::StringRef depfile, llvm::StringRef compilerDepfile,
                         llvm::StringRef output, llvm::StringRef weights) {
  auto buffer = llvm::MemoryBuffer::getFile(compilerDepfile);
  if (!buffer)
    return error(fmt::format("cannot read the compiler's dependencies {}: {}",
                             compilerDepfile.str(), buffer.getError().message()));
  // `TARGET: PREREQUISITES`; the target is the temporary model program, whose path has no colon.
  llvm::StringRef rule = (*buffer)->getBuffer();
  size_t colon = rule.find(':');
  if (colon == llvm::StringRef::npos)
    return error(fmt::format("the compiler's dependencies {} hold no rule", compilerDepfile.str()));
  llvm::StringRef prerequisites = rule.drop_front(colon + 1).rtrim();
  return writeFileAtomically(depfile, [&](llvm::raw_ostream &os) {
    os << makeEscaped(output) << ":" << prerequisites;
    if (!weights.empty())
      os << " \\\n " << makeEscaped(weights);
    os << "\n";
  });
}

llvm::Error runExportCommand(ExportArgs &a) {
  if (!a.depfile.empty() && a.output.empty())
    return error("--depfile needs an output file: -o MODEL.so");
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
  llvm::SmallString<128> compilerDepfile;
  auto removeCompilerDepfile = llvm::make_scope_exit([&] {
    if (!compilerDepfile.empty()) {
      llvm::sys::fs::remove(compilerDepfile);
      llvm::sys::DontRemoveFileOnSignal(compilerDepfile);
    }
  });
  if (!a.depfile.empty()) {
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile("aotc-deps", "d", compilerDepfile))
      return error(fmt::format("cannot create a temporary file: {}", ec.message()));
    llvm::sys::RemoveFileOnSignal(compilerDepfile);
  }
  if (llvm::Error e = compileAndRunModel(a.model, args, a.timeout, compilerDepfile))
    return e;
  if (emit == "so")
    if (llvm::Error e = compileArchive(aotpPath, a.flags, a.output))
      return e;
  // Last, so that a depfile exists only beside a complete output.
  if (!a.depfile.empty())
    return writeDepfile(a.depfile, compilerDepfile, a.output, a.options.weights);
  return llvm::Error::success();
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
  app->add_option("--depfile", args->depfile,
                  "Also write a Makefile rule: the output depends on the model file, every header "
                  "it includes and the weights (for build systems: CMake's DEPFILE, ninja, make)");
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
