// `aotc archive`: a development tool that packs a graph in the IR's text form into an exported
// program (.aotp) with zero or random weights, so that tests of `aotc run` and of later stages can
// start from a hand-written graph instead of a traced model.
#include "Subcommand.h"

#include "aotc/interp/Interpreter.h"
#include "aotc/ir/Parser.h"
#include "aotc/ir/Verifier.h"
#include "aotc/serialize/Archive.h"

#include "llvm/Support/MemoryBuffer.h"

#include <fmt/format.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

namespace aotc::cli {
namespace {

struct ArchiveOptions {
  std::string input;
  std::string output;
  bool randomWeights = false;
  uint64_t seed = 0;
};

llvm::Error makeError(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error writeProgram(const ArchiveOptions &opts) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(opts.input, /*IsText=*/true);
  if (!buffer)
    return makeError(fmt::format("cannot read '{}': {}", opts.input, buffer.getError().message()));
  llvm::StringRef fileName = opts.input == "-" ? "<stdin>" : llvm::StringRef(opts.input);
  auto graph = parseGraph((*buffer)->getBuffer(), fileName);
  if (!graph)
    return graph.takeError();
  if (llvm::Error err = verifyGraph(**graph))
    return makeError(fmt::format("{}: the graph does not verify: {}", fileName.str(),
                                 llvm::toString(std::move(err))));

  // One generator for all weights, in the graph's order of state tensors.
  std::mt19937_64 rng(opts.seed);
  std::vector<HostTensor> tensors;
  std::vector<std::vector<int64_t>> shapes;
  for (const StateTensor &s : (**graph).state()) {
    std::vector<int64_t> shape;
    for (const SymExpr &d : s.type.shape()) {
      auto c = d.constant();
      if (!c)
        return makeError(fmt::format("{} \"{}\" has the symbolic shape {}; weights need static "
                                     "shapes",
                                     toString(s.kind).str(), s.name, s.type.str()));
      shape.push_back(*c);
    }
    auto zeros = HostTensor::create(s.type.dtype(), shape);
    if (!zeros)
      return makeError(fmt::format("{} \"{}\": {}", toString(s.kind).str(), s.name,
                                   llvm::toString(zeros.takeError())));
    tensors.push_back(opts.randomWeights ? randomTensor(s.type.dtype(), shape, rng)
                                         : std::move(*zeros));
    shapes.push_back(std::move(shape));
  }
  std::vector<WeightRef> weights;
  for (size_t i = 0; i < tensors.size(); ++i)
    weights.push_back(
        {(**graph).state()[i].name, tensors[i].dtype(), shapes[i], tensors[i].bytes()});
  return writeArchive(**graph, weights, opts.output);
}

} // namespace

Subcommand addArchiveCommand(CLI::App &parent) {
  auto opts = std::make_shared<ArchiveOptions>();
  CLI::App *app = parent.add_subcommand(
      "archive", "Pack a graph in the IR's text form into an exported program (.aotp) with zero "
                 "or random weights (a development tool for tests)");
  app->add_option("input", opts->input, "IR text file, or - for stdin")->required();
  app->add_option("-o,--output", opts->output, "Output .aotp (nothing is written on failure)")
      ->required();
  app->add_flag("--random-weights", opts->randomWeights,
                "Random weights as `aotc run` draws random inputs (default: zeros)");
  app->add_option("--seed", opts->seed, "Seed of the random weights (default 0)");
  return {app, [opts] {
            if (llvm::Error err = writeProgram(*opts))
              return reportError("archive", std::move(err));
            return 0;
          }};
}

} // namespace aotc::cli
