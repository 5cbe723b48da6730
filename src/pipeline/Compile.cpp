// The ordered map of an export, after tracing: graph passes, the kernel IR, the CPU backend's
// layout passes and code generation, packaging and link. Every step is named here, in the order
// it runs, and `--print-after <step>` shows what it made.
#include "pipeline/Compile.h"
#include "aotc/ir/Printer.h"
#include "aotc/serialize/Archive.h"
#include "codegen/cpu/Bf16Weights.h"
#include "codegen/cpu/CpuTarget.h"
#include "codegen/cpu/PackWeights.h"
#include "codegen/cuda/CudaCodegen.h"
#include "codegen/cuda/HalfActivations.h"
#include "codegen/cuda/HalfWeights.h"
#include "codegen/cuda/SplitDecode.h"
#include "kernel/Lower.h"
#include "kernel/MemoryPlan.h"
#include "kernel/PlaceConcat.h"
#include "passes/FoldWeights.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <fmt/format.h>

namespace aotc {

namespace {

// The graph pass that runs first, with the export's options (the registered one has none).
constexpr llvm::StringLiteral DecomposePass = "decompose";
constexpr llvm::StringLiteral FoldWeightsStep = "fold-weights", LowerStep = "lower",
                              PlaceConcatStep = "place-concat", PlanMemoryStep = "plan-memory",
                              PackWeightsStep = "pack-weights", Bf16WeightsStep = "bf16-weights",
                              LowerCudaStep = "lower-cuda", HalfWeightsStep = "half-weights",
                              HalfActivationsStep = "half-activations",
                              SplitDecodeStep = "split-decode",
                              LayoutWeightsStep = "layout-weights", CodegenStep = "codegen-cpu",
                              CodegenCudaStep = "codegen-cuda", PackageStep = "package",
                              LinkStep = "link";
constexpr llvm::StringLiteral Steps[] = {
    FoldWeightsStep,   LowerStep,     PlaceConcatStep, PlanMemoryStep,      Bf16WeightsStep,
    PackWeightsStep,   LowerCudaStep, HalfWeightsStep, HalfActivationsStep, SplitDecodeStep,
    LayoutWeightsStep, CodegenStep,   CodegenCudaStep, PackageStep,         LinkStep};

llvm::Error error(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// --print-after for the steps of this file; the graph passes' names go to the pass manager.
class StepPrinter {
public:
  explicit StepPrinter(const CompileOptions &options)
      : Options(options.passes), OS(options.printStream ? *options.printStream : llvm::errs()) {}

  /// Splits --print-after between the pass manager and the steps; an unknown name is an error.
  llvm::Expected<PassManagerOptions> graphPassOptions() const {
    PassManagerOptions graph = Options;
    graph.printAfter.clear();
    for (const std::string &name : Options.printAfter) {
      if (llvm::is_contained(Steps, name))
        continue;
      if (auto pass = lookupPass(name); !pass) {
        // The message lists the steps as well as the passes.
        llvm::consumeError(pass.takeError());
        // In the order they run, then registered passes an export does not run.
        std::vector<std::string> valid = {DecomposePass.str()};
        for (llvm::StringRef p : defaultPipeline())
          valid.push_back(p.str());
        for (llvm::StringRef s : Steps)
          valid.push_back(s.str());
        for (const PassInfo &p : registeredPasses())
          if (!llvm::is_contained(valid, p.name))
            valid.push_back(p.name.str());
        return error(fmt::format("--print-after: unknown step '{}'; valid steps are: {}", name,
                                 llvm::join(valid, ", ")));
      }
      graph.printAfter.push_back(name);
    }
    return graph;
  }

  bool wants(llvm::StringRef step) const {
    return Options.printAfterAll || llvm::is_contained(Options.printAfter, step);
  }

  void after(llvm::StringRef step, llvm::function_ref<void(llvm::raw_ostream &)> print) {
    if (!wants(step))
      return;
    OS << "// -----// IR after " << step << " //----- //\n";
    print(OS);
    OS.flush();
  }

private:
  const PassManagerOptions &Options;
  llvm::raw_ostream &OS;
};

void progress(const CompileOptions &options, llvm::StringRef step) {
  if (options.progress)
    options.progress(step);
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

/// The kernel IR of each device the export targets. `blob` is the program whose weights the
/// artifact's blob holds: the CPU's (its packed panels and the weights CUDA reads), or the CUDA
/// one's in a CUDA-only export.
struct Lowered {
  std::optional<kir::Program> cpu, cuda;
  kir::Program &blob() { return cpu ? *cpu : *cuda; }
};

llvm::Expected<kir::Program> lowerFor(const kir::TargetInfo &target, ExportedProgram &exported,
                                      const CompileOptions &options,
                                      kir::Precision precision = kir::Precision::FP32) {
  LowerOptions lower;
  lower.fuse = options.fuse;
  lower.winograd = options.winograd;
  lower.precision = precision;
  return lowerToKernels(*exported.graph, target, lower);
}

/// Points the CUDA program's buffers at the blob's weights: each of its weights is found in the
/// CPU program by name (appended where the CPU's lowering does not read it), and its buffers
/// renumbered; runSteps gives it the CPU program's weights once they are laid out. The
/// descriptor describes both programs' entries once: their signatures must be the same.
llvm::Error shareWeights(kir::Program &cpu, kir::Program &cuda) {
  for (auto [a, b] : llvm::zip_equal(cpu.entries, cuda.entries))
    if (a.symbols != b.symbols || a.indexChecks != b.indexChecks ||
        a.inputs.size() != b.inputs.size() || a.outputs.size() != b.outputs.size() ||
        a.guards.size() != b.guards.size())
      return error(fmt::format("entry \"{}\": its CPU and CUDA lowerings disagree on the entry's "
                               "signature (a bug of aotc)",
                               a.name));
  std::vector<uint32_t> to;
  for (const kir::Weight &w : cuda.weights) {
    auto it = llvm::find_if(cpu.weights, [&](const kir::Weight &x) { return x.name == w.name; });
    if (it == cpu.weights.end()) {
      cpu.weights.push_back(w);
      it = std::prev(cpu.weights.end());
    }
    to.push_back(static_cast<uint32_t>(it - cpu.weights.begin()));
  }
  for (kir::EntryKernels &e : cuda.entries)
    for (kir::Buffer &b : e.buffers)
      if (b.kind == kir::Buffer::Kind::Weight || b.kind == kir::Buffer::Kind::State)
        b.index = to[b.index];
  return llvm::Error::success();
}

llvm::Expected<Lowered> runSteps(ExportedProgram &exported, const CompileOptions &options,
                                 StepPrinter &printer) {
  // Graph passes. Decompose first, so that the cleanup passes see the core ops it produces.
  auto graphOptions = printer.graphPassOptions();
  if (!graphOptions)
    return graphOptions.takeError();
  PassManager pm(*graphOptions, options.printStream);
  const DecomposeOptions &decompose = options.decompose;
  pm.addPass(
      PassInfo{DecomposePass, "", [&decompose](Graph &g) { return runDecompose(g, decompose); }});
  if (llvm::Error e = pm.addPipeline("default"))
    return e;
  if (llvm::Error e = pm.run(*exported.graph))
    return e;
  // After the cleanup, so that each weight-only computation is folded once; it may replace the
  // graph.
  if (llvm::Error e = foldWeights(exported))
    return e;
  printer.after(FoldWeightsStep, [&](llvm::raw_ostream &os) { printGraph(*exported.graph, os); });

  Lowered out;
  const SymbolFactsMap &facts = exported.graph->shapeEnv().facts();
  if (options.targetCpu) {
    // The kernel IR: fusion decides, node by node, what lowering realizes in buffers. The CPU
    // has no tf32 arithmetic, nor fp16 arithmetic on the x86-64 levels it targets: its GEMMs
    // compute in f32 at --precision tf32 and fp16 (a permission to round, not a demand; as
    // PyTorch's at tf32); at bf16 they read their constant operands in bf16 (bf16-weights).
    auto program = lowerFor(cpu::loweringTarget(), exported, options,
                            options.precision == kir::Precision::BF16 ? kir::Precision::BF16
                                                                      : kir::Precision::FP32);
    if (!program)
      return program.takeError();
    printer.after(LowerStep, [&](llvm::raw_ostream &os) { kir::print(*program, os); });
    kir::placeConcats(*program);
    printer.after(PlaceConcatStep, [&](llvm::raw_ostream &os) { kir::print(*program, os); });
    kir::planMemory(*program, facts);
    printer.after(PlanMemoryStep, [&](llvm::raw_ostream &os) { kir::print(*program, os); });
    // The CPU backend's layout passes: bf16 copies first, so that panels are packed of the f32
    // operands left.
    if (llvm::Error e =
            cpu::storeBf16Weights(*program, exported, options.precision, options.weightData))
      return e;
    printer.after(Bf16WeightsStep, [&](llvm::raw_ostream &os) { kir::print(*program, os); });
    if (llvm::Error e = cpu::packGemmWeights(*program, exported, options.weightData))
      return e;
    printer.after(PackWeightsStep, [&](llvm::raw_ostream &os) { kir::print(*program, os); });
    out.cpu = std::move(*program);
  }
  if (options.targetCuda) {
    auto program = lowerFor(cuda::loweringTarget(), exported, options, options.precision);
    if (!program)
      return program.takeError();
    kir::placeConcats(*program);
    printer.after(PlaceConcatStep, [&](llvm::raw_ostream &os) { kir::print(*program, os); });
    kir::planMemory(*program, facts);
    printer.after(LowerCudaStep, [&](llvm::raw_ostream &os) { kir::print(*program, os); });
    // The CUDA backend's layout pass: the tensor cores' weights in 16 bits.
    if (llvm::Error e = cuda::storeHalfWeights(*program, exported, out.cpu ? &*out.cpu : nullptr,
                                               options.weightData))
      return e;
    printer.after(HalfWeightsStep, [&](llvm::raw_ostream &os) { kir::print(*program, os); });
    cuda::storeHalfActivations(*program, facts);
    printer.after(HalfActivationsStep, [&](llvm::raw_ostream &os) { kir::print(*program, os); });
    // A decode step's keys over several blocks where a (batch x head) a block leaves SMs idle.
    cuda::splitDecodeSteps(*program, facts);
    printer.after(SplitDecodeStep, [&](llvm::raw_ostream &os) { kir::print(*program, os); });
    out.cuda = std::move(*program);
  }
  if (out.cpu && out.cuda)
    if (llvm::Error e = shareWeights(*out.cpu, *out.cuda))
      return e;
  // One layout of each weight: those that only the embedded graph names and a packed weight
  // holds stay out of the blob.
  llvm::SmallVector<const kir::Program *, 2> readers;
  for (std::optional<kir::Program> *p : {&out.cpu, &out.cuda})
    if (*p)
      readers.push_back(&**p);
  kir::elideHeldWeights(out.blob(), readers);
  kir::layoutWeights(out.blob());
  if (out.cpu && out.cuda) {
    out.cuda->weights = out.cpu->weights;
    out.cuda->weightBytes = out.cpu->weightBytes;
    out.cuda->stateOffset = out.cpu->stateOffset;
    out.cuda->stateBytes = out.cpu->stateBytes;
  }
  printer.after(LayoutWeightsStep, [&](llvm::raw_ostream &os) { kir::print(out.blob(), os); });
  return out;
}

} // namespace

llvm::ArrayRef<llvm::StringLiteral> compileSteps() { return Steps; }

llvm::Expected<kir::Program> lowerGraph(ExportedProgram &exported, const CompileOptions &options) {
  StepPrinter printer(options);
  CompileOptions cpuOnly = options;
  cpuOnly.targetCpu = true;
  cpuOnly.targetCuda = false;
  auto lowered = runSteps(exported, cpuOnly, printer);
  if (!lowered)
    return lowered.takeError();
  return std::move(*lowered->cpu);
}

llvm::Error compileToSharedLibrary(ExportedProgram &program, const CompileOptions &options,
                                   llvm::StringRef outPath) {
  StepPrinter printer(options);
  auto blob = programBlob(*program.graph);
  if (!blob)
    return blob.takeError();
  std::vector<std::string> exportedWeights;
  for (const Weight &w : program.weights)
    exportedWeights.push_back(w.name());
  if (!options.targetCpu && !options.targetCuda)
    return error("no target to generate code for");
  progress(options, "lower");
  auto lowered = runSteps(program, options, printer);
  if (!lowered)
    return lowered.takeError();
  kir::Program *kernels = &lowered->blob();
  // `aotc verify` looks the embedded graph's weights up by name in the artifact: once folding
  // removed one of them, only the folded graph names what the artifact holds. (A weight that a
  // layout pass made may have taken a folded one's name since.)
  if (llvm::any_of(exportedWeights,
                   [&](const std::string &name) { return !program.graph->findState(name); })) {
    blob = programBlob(*program.graph);
    if (!blob)
      return blob.takeError();
  }
  std::vector<llvm::ArrayRef<uint8_t>> weights;
  for (const kir::Weight &w : kernels->weights) {
    if (!w.stored) {
      weights.emplace_back();
      continue;
    }
    const Weight *data = program.findWeight(w.name);
    if (!data)
      return error(fmt::format("the program has no data for weight \"{}\"", w.name));
    weights.push_back(data->bytes());
  }

  std::vector<cpu::CodeObject> code;
  if (lowered->cpu) {
    progress(options, "codegen");
    auto objects = cpu::generateCode(*lowered->cpu, options.cpu, printer.wants(CodegenStep));
    if (!objects)
      return objects.takeError();
    code = std::move(*objects);
    printer.after(CodegenStep, [&](llvm::raw_ostream &os) {
      for (const cpu::CodeObject &c : code)
        os << c.ir;
    });
  }
  std::optional<cuda::CudaCode> cudaCode;
  if (lowered->cuda) {
    progress(options, "codegen-cuda");
    llvm::SmallVector<cuda::CudaArch, 5> archs =
        options.cudaArchs.empty() ? cuda::defaultCudaArchs() : options.cudaArchs;
    auto generated = cuda::generateCode(*lowered->cuda, archs, /*withShapes=*/!lowered->cpu,
                                        printer.wants(CodegenCudaStep));
    if (!generated)
      return generated.takeError();
    cudaCode = std::move(*generated);
    printer.after(CodegenCudaStep, [&](llvm::raw_ostream &os) {
      os << cudaCode->ir;
      for (const cuda::CudaImage &image : cudaCode->images)
        os << fmt::format("; image {} {}: {} bytes\n",
                          image.kind == cuda::ImageKind::Cubin ? "cubin"
                          : image.kind == cuda::ImageKind::Ptx ? "ptx"
                                                               : "llvm-bitcode",
                          cuda::archInfo(image.arch).name.str(), image.bytes.size());
    });
  }

  auto objects = ArtifactObjects::create();
  if (!objects)
    return objects.takeError();
  std::string descriptorIR;
  if (llvm::Error e =
          packageObjects(*kernels, program.graph->shapeEnv(), weights, *blob, code,
                         cudaCode ? &*cudaCode : nullptr, options.package, outPath, *objects,
                         printer.wants(PackageStep) ? &descriptorIR : nullptr))
    return e;
  printer.after(PackageStep, [&](llvm::raw_ostream &os) { os << descriptorIR; });

  progress(options, "link");
  if (llvm::Error e = linkArtifact(*objects, outPath))
    return e;
  printer.after(LinkStep, [&](llvm::raw_ostream &os) {
    uint64_t size = 0;
    llvm::sys::fs::file_size(outPath, size);
    os << fmt::format("{}: {} bytes from {} objects and the C runtime\n", outPath.str(), size,
                      objects->paths().size());
  });
  return llvm::Error::success();
}

} // namespace aotc
