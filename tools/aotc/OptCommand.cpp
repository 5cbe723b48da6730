// `aotc opt`: reads a graph in the IR's text form, verifies it, runs passes by name and prints the
// result; the driver of the golden tests.
#include "Subcommand.h"

#include "aotc/ir/Parser.h"
#include "aotc/ir/Printer.h"
#include "aotc/ir/Verifier.h"
#include "pipeline/PassManager.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

namespace aotc::cli {
namespace {

/// Separates the cases of a test file under --split-input-file, and their outputs (MLIR's marker).
constexpr llvm::StringLiteral SplitMarker = "// -----";

struct OptOptions {
  std::string input;
  std::string passes;
  std::vector<std::string> printAfter;
  bool printAfterAll = false;
  bool verifyEach = false;
  bool splitInputFile = false;
  std::string output = "-";
};

llvm::Error makeError(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// One case of the input: its text, preceded by as many newlines as lines come before it in the
/// file, so that parse errors report the line of the file, not of the case.
std::vector<std::string> splitInput(llvm::StringRef text, bool split) {
  if (!split)
    return {text.str()};
  std::vector<std::string> chunks(1);
  unsigned line = 0;
  while (!text.empty()) {
    auto [current, rest] = text.split('\n');
    bool hadNewline = current.size() != text.size();
    text = rest;
    ++line;
    if (current.trim() == SplitMarker) {
      chunks.emplace_back(line, '\n');
      continue;
    }
    chunks.back() += current;
    if (hadNewline)
      chunks.back() += '\n';
  }
  return chunks;
}

/// Parses, verifies and transforms one graph; returns its printed form.
llvm::Expected<std::string> processGraph(llvm::StringRef text, llvm::StringRef fileName,
                                         PassManager &pm) {
  llvm::Expected<std::unique_ptr<Graph>> graph = parseGraph(text, fileName);
  if (!graph)
    return graph.takeError();
  // Passes assume a valid graph; checking the input first keeps their failures their own.
  if (llvm::Error err = verifyGraph(**graph))
    return makeError(fmt::format("{}: the input graph does not verify: {}", fileName.str(),
                                 llvm::toString(std::move(err))));
  if (llvm::Error err = pm.run(**graph))
    return err;
  // Without --verify-each the result is still checked once, so a broken pass never yields a
  // graph that only fails later, in another tool.
  if (!pm.options().verifyEach && !pm.passes().empty())
    if (llvm::Error err = verifyGraph(**graph))
      return makeError(fmt::format("the graph does not verify after the passes (--verify-each "
                                   "names the pass that broke it): {}",
                                   llvm::toString(std::move(err))));
  return printGraph(**graph);
}

int runOpt(const OptOptions &opts) {
  PassManagerOptions pmOptions;
  pmOptions.printAfter = opts.printAfter;
  pmOptions.printAfterAll = opts.printAfterAll;
  pmOptions.verifyEach = opts.verifyEach || VerifyEachPassByDefault;
  PassManager pm(pmOptions);
  if (llvm::Error err = pm.addPipeline(opts.passes))
    return reportError("opt", std::move(err));
  if (llvm::Error err = pm.checkOptions())
    return reportError("opt", std::move(err));

  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(opts.input, /*IsText=*/true);
  if (!buffer)
    return reportError("opt", makeError(fmt::format("cannot read '{}': {}", opts.input,
                                                    buffer.getError().message())));
  llvm::StringRef fileName = opts.input == "-" ? "<stdin>" : llvm::StringRef(opts.input);

  // Every case runs, so one test file reports all of its failures at once; a failed case leaves
  // an empty slot so that outputs stay aligned with the input's cases.
  bool toStdout = opts.output == "-";
  bool failed = false;
  std::string result;
  std::vector<std::string> chunks = splitInput((*buffer)->getBuffer(), opts.splitInputFile);
  auto emit = [&](llvm::StringRef text) {
    if (!toStdout) {
      result += text;
      return;
    }
    // Flushed at once, so that errors on stderr interleave with the cases they belong to.
    llvm::outs() << text;
    llvm::outs().flush();
  };
  for (size_t i = 0; i != chunks.size(); ++i) {
    // The marker goes out first, so that a case's error follows it like the case's output would.
    if (i != 0)
      emit(SplitMarker.str() + "\n");
    if (llvm::Expected<std::string> out = processGraph(chunks[i], fileName, pm)) {
      emit(*out);
    } else {
      reportError("opt", out.takeError());
      failed = true;
    }
  }
  if (failed)
    return 1;
  if (toStdout)
    return 0;

  // The result appears under its name only once complete: writeToOutput writes a temporary file
  // next to it and renames it, and removes it on failure.
  if (llvm::Error err = llvm::writeToOutput(opts.output, [&](llvm::raw_ostream &os) {
        os << result;
        return llvm::Error::success();
      }))
    return reportError("opt",
                       makeError(fmt::format("cannot write '{}': {}", opts.output,
                                             llvm::errorToErrorCode(std::move(err)).message())));
  return 0;
}

std::string passesHelp() {
  std::string help = "Comma-separated passes to run, in order (none by default: parse, verify and "
                     "print); `default` is the default pipeline:";
  for (const PassInfo &pass : registeredPasses())
    help += fmt::format("\n  {:<14}{}", pass.name.str(), pass.description.str());
  return help;
}

} // namespace

Subcommand addOptCommand(CLI::App &parent) {
  auto opts = std::make_shared<OptOptions>();
  CLI::App *app = parent.add_subcommand("opt", "Run graph passes on a graph in the IR's text form");
  app->add_option("input", opts->input, "IR text file, or - for stdin")->required();
  app->add_option("--passes", opts->passes, passesHelp());
  app->add_option("--print-after", opts->printAfter,
                  "Print the graph to stderr after this pass (repeatable)")
      ->allow_extra_args(false);
  app->add_flag("--print-after-all", opts->printAfterAll, "Print the graph after every pass");
  app->add_flag("--verify-each", opts->verifyEach,
                "Verify the graph after every pass (always on in builds with assertions)");
  app->add_flag("--split-input-file", opts->splitInputFile,
                "Process each `// -----`-separated case of the input on its own and join the "
                "outputs with the same marker");
  app->add_option("-o,--output", opts->output, "Output file, or - for stdout (default)");
  return {app, [opts] { return runOpt(*opts); }};
}

} // namespace aotc::cli
