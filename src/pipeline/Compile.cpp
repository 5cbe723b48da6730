// The ordered list of what turns an exported program into an artifact.
#include "pipeline/Compile.h"
#include "kernel/Lower.h"
#include "passes/FoldWeights.h"
#include "pipeline/PackWeights.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <fmt/format.h>

namespace aotc {

namespace {

llvm::Error error(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The exported graph without weights, as .aotp bytes.
llvm::Expected<std::vector<uint8_t>> programBlob(const Graph &graph) {
  llvm::SmallString<128> path;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("aotc-program", "aotp", path))
    return error(fmt::format("cannot create a temporary file: {}", ec.message()));
  auto remove = llvm::make_scope_exit([&] { llvm::sys::fs::remove(path); });
  if (llvm::Error e = writeArchive(graph, {}, path))
    return e;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return error(fmt::format("cannot read {}: {}", path.str(), buffer.getError().message()));
  llvm::StringRef bytes = (*buffer)->getBuffer();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

} // namespace

llvm::Expected<kir::Program> lowerGraph(ExportedProgram &exported, const CompileOptions &options) {
  Graph &graph = *exported.graph;
  // Decompose first so that the cleanup passes see the core ops it produces.
  if (llvm::Error e = runDecompose(graph, options.decompose))
    return e;
  PassManager pm(options.passes);
  if (llvm::Error e = pm.addPipeline("default"))
    return e;
  if (llvm::Error e = pm.run(graph))
    return e;
  // After the cleanup, so that each weight-only computation is folded once; it may replace the
  // graph.
  if (llvm::Error e = foldWeights(exported))
    return e;
  LowerOptions lower;
  lower.fuse = options.fuse;
  lower.winograd = options.winograd;
  auto program = lowerToKernels(*exported.graph, lower);
  if (!program)
    return program.takeError();
  if (llvm::Error e = packGemmWeights(*program, exported, options.weightData))
    return e;
  kir::layoutWeights(*program);
  return program;
}

llvm::Error compileToSharedLibrary(ExportedProgram &program, const CompileOptions &options,
                                   llvm::StringRef outPath) {
  auto blob = programBlob(*program.graph);
  if (!blob)
    return blob.takeError();
  std::vector<std::string> exportedWeights;
  for (const Weight &w : program.weights)
    exportedWeights.push_back(w.name());
  auto progress = [&](llvm::StringRef stage) {
    if (options.package.progress)
      options.package.progress(stage);
  };
  progress("lower");
  auto kernels = lowerGraph(program, options);
  if (!kernels)
    return kernels.takeError();
  // `aotc verify` looks the embedded graph's weights up by name in the artifact: once folding
  // removed one of them, only the folded graph names what the artifact holds.
  if (llvm::any_of(exportedWeights,
                   [&](const std::string &name) { return !program.findWeight(name); })) {
    blob = programBlob(*program.graph);
    if (!blob)
      return blob.takeError();
  }
  std::vector<llvm::ArrayRef<uint8_t>> weights;
  for (const kir::Weight &w : kernels->weights) {
    const Weight *data = program.findWeight(w.name);
    if (!data)
      return error(fmt::format("the program has no data for weight \"{}\"", w.name));
    weights.push_back(data->bytes());
  }
  return writeSharedLibrary(*kernels, program.graph->shapeEnv(), weights, *blob, options.package,
                            outPath);
}

} // namespace aotc
