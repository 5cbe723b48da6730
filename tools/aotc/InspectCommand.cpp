// `aotc inspect`: what an artifact (.so) or exported program (.aotp) holds: its entries with
// their inputs and outputs (symbolic shapes, dim ranges), op counts, kernels and weight sizes;
// `--graph` prints the IR, `--kernels` the kernel IR.
#include "Artifact.h"
#include "Subcommand.h"

#include "pipeline/Compile.h"

#include "aotc/ir/Parser.h"
#include "aotc/ir/Printer.h"
#include "aotc/serialize/Archive.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <set>

namespace aotc::cli {

namespace {

struct InspectOptions {
  std::string model;
  bool graph = false;
  bool kernels = false;
};

std::string ranges(const Graph &g) {
  std::string out;
  for (const SymbolDecl &s : g.shapeEnv().symbols()) {
    out += fmt::format("  {} in {}..{}", s.name, s.lo, s.hi);
    if (s.divisor != 1)
      out += fmt::format(", a multiple of {}", s.divisor);
    out += "\n";
  }
  for (const DerivedDim &d : g.shapeEnv().derived())
    out += fmt::format("  {} = {}\n", d.name, d.expr.str());
  return out;
}

/// Entries, dims, ops; `kernels[i]` >= 0 adds the kernel count of entry i.
void printEntries(const Graph &g, llvm::ArrayRef<int> kernels, llvm::raw_ostream &os) {
  std::string dims = ranges(g);
  os << "dims:\n" << (dims.empty() ? "  (all static)\n" : dims);
  for (const auto &e : g.entries()) {
    os << fmt::format("entry {}:\n", e->name());
    for (size_t i = 0; i < e->inputs().size(); ++i)
      if (e->inputs()[i].kind == InputKind::User)
        os << fmt::format("  input  {} : {}\n", e->inputs()[i].name,
                          e->body().argument(i)->type().str());
    for (size_t i = 0; i < e->outputs().size(); ++i)
      os << fmt::format("  {} {} : {}\n",
                        e->outputs()[i].kind == OutputKind::User ? "output" : "mutates",
                        e->outputs()[i].name, e->body().returns()[i]->type().str());
    std::map<std::string, unsigned> ops;
    unsigned state = 0;
    e->body().walk([&](const Node &n) { ++ops[n.name().str()]; });
    for (const InputSpec &in : e->inputs())
      state += in.kind != InputKind::User;
    std::string opList;
    for (const auto &[name, count] : ops)
      opList += fmt::format("{}{} x{}", opList.empty() ? "" : ", ", name, count);
    os << fmt::format("  {} state tensors; ops: {}\n", state, opList.empty() ? "none" : opList);
    size_t index = &e - &g.entries()[0];
    if (index < kernels.size() && kernels[index] >= 0)
      os << fmt::format("  {} kernels and library calls per run\n", kernels[index]);
  }
}

llvm::Error inspectArtifact(const InspectOptions &o) {
  auto artifact = Artifact::open(o.model, 1);
  if (!artifact) {
    // A GPU-only artifact has no CPU model to introspect; the emulated device has one anywhere.
    std::string why = llvm::toString(artifact.takeError());
    if (why.find("has no CPU code") == std::string::npos)
      return llvm::createStringError(why);
    artifact = Artifact::open(o.model, 1, Device{true, 0, true});
    if (!artifact)
      return artifact.takeError();
  }
  const Graph &g = (*artifact)->graph();
  llvm::raw_ostream &os = llvm::outs();
  if (o.graph) {
    printGraph(g, os);
    return llvm::Error::success();
  }
  if (o.kernels) {
    // The artifact keeps the exported graph; lowering it again with the default options gives
    // the kernels it was compiled to (lowering is deterministic).
    auto copy = parseGraph(printGraph(g), o.model);
    if (!copy)
      return copy.takeError();
    ExportedProgram exported; // the weights stay in the .so: nothing is folded
    exported.graph = std::move(*copy);
    CompileOptions options;
    options.weightData = false;
    options.precision = cantFail(kir::parsePrecision((*artifact)->info().cpuPrecision));
    auto program = lowerGraph(exported, options);
    if (!program)
      return program.takeError();
    kir::print(*program, os);
    return llvm::Error::success();
  }
  const ArtifactInfo &info = (*artifact)->info();
  std::vector<std::string> targets;
  if (!info.variants.empty())
    targets.push_back(llvm::join(info.variants, ", ") +
                      (info.cpuPrecision == "fp32" ? "" : " (GEMMs at " + info.cpuPrecision + ")"));
  std::set<std::string> archs;
  for (const ArtifactInfo::CudaImage &im : info.cudaImages)
    if (im.kind == "cubin")
      archs.insert(im.arch);
  if (!archs.empty())
    targets.push_back(fmt::format("CUDA {}", llvm::join(archs, ", ")));
  std::string here =
      info.variants.empty() ? "the emulated CUDA device (no CPU code)" : info.cpuVariant;
  os << fmt::format("{}: artifact of model {}, opset {}.{}; code for {}; runs here as {}\n",
                    o.model, g.name(), g.opsetMajor(), g.opsetMinor(), llvm::join(targets, "; "),
                    here);
  if (!info.cudaImages.empty()) {
    os << fmt::format(
        "CUDA: {} kernels{}; images:", info.cudaKernels,
        info.cudaPrecision == "fp32" ? "" : fmt::format(", GEMMs at {}", info.cudaPrecision));
    for (const ArtifactInfo::CudaImage &im : info.cudaImages)
      os << fmt::format(" {} {} ({} bytes)", im.kind, im.arch, im.bytes);
    os << "\n";
  }
  printEntries(g, info.kernelsPerEntry, os);
  os << fmt::format("weights: {} tensors, {} bytes\n", info.numWeights, info.weightBytes);
  return llvm::Error::success();
}

llvm::Error inspect(const InspectOptions &o) {
  if (isArtifactPath(o.model))
    return inspectArtifact(o);
  auto program = readArchive(o.model);
  if (!program)
    return program.takeError();
  const Graph &g = *program->graph;
  llvm::raw_ostream &os = llvm::outs();
  if (o.graph) {
    printGraph(g, os);
    return llvm::Error::success();
  }
  if (o.kernels) {
    auto program2 = lowerGraph(*program, CompileOptions{});
    if (!program2)
      return program2.takeError();
    kir::print(*program2, os);
    return llvm::Error::success();
  }
  os << fmt::format("{}: model {}, written by aotc {}, format {}.{}, opset {}.{}\n", o.model,
                    g.name(), program->producer, program->formatMajor, program->formatMinor,
                    g.opsetMajor(), g.opsetMinor());
  printEntries(g, {}, os);
  uint64_t bytes = 0;
  for (const Weight &w : program->weights)
    bytes += w.bytes().size();
  os << fmt::format("weights: {} tensors, {} bytes\n", program->weights.size(), bytes);
  return llvm::Error::success();
}

} // namespace

Subcommand addInspectCommand(CLI::App &parent) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App *app = parent.add_subcommand(
      "inspect",
      "Show the entries, inputs (symbolic shapes, dim ranges), kernels and weights of a .so or "
      ".aotp");
  app->add_option("model", o->model, "Artifact (.so) or exported program (.aotp)")->required();
  app->add_flag("--graph", o->graph, "Print the graph in the IR's text form");
  app->add_flag("--kernels", o->kernels, "Print the kernel IR it compiles to");
  return {app, [o] {
            if (llvm::Error e = inspect(*o))
              return reportError("inspect", std::move(e));
            return 0;
          }};
}

} // namespace aotc::cli
