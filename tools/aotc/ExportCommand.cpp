// `aotc export`: compiles a model file, traces its entries with symbolic shapes and writes the
// exported program (.aotp) or prints its IR.
#include "ModelProgram.h"
#include "Subcommand.h"

#include "trace/Export.h"

#include "llvm/Support/Path.h"

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
};

llvm::Error error(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error runExportCommand(ExportArgs &a) {
  for (const std::string &d : a.options.dyn)
    if (auto spec = parseDynSpec(d); !spec)
      return spec.takeError();
  std::string emit = a.emit;
  if (emit.empty())
    emit = llvm::sys::path::extension(a.output) == ".aotp" ? "aotp" : "ir";
  if (emit == "aotp" && a.output.empty())
    return error("--emit=aotp needs an output file: -o MODEL.aotp");
  std::vector<std::string> args{"--emit", emit, "-o", a.output.empty() ? "-" : a.output};
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
  return compileAndRunModel(a.model, args);
}

} // namespace

Subcommand addExportCommand(CLI::App &parent) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App *app = parent.add_subcommand(
      "export", "Trace a model file into an exported program (.aotp) or print its graph IR");
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
  app->add_option("--emit", args->emit, "aotp or ir (default: aotp for a .aotp output, else ir)")
      ->check(CLI::IsMember({"aotp", "ir"}));
  app->add_flag("--report", args->options.report,
                "List every constraint violation and unsupported construct, then fail");
  app->add_option("--seed", args->options.seed, "Seed of the weights' initialization");
  app->add_option("-o,--output", args->output, "Output file (nothing is written on failure)");
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
