// Parsing of the code generation flags and the compile step shared by export and compile.
#include "CompileFlags.h"

#include "aotc/serialize/Archive.h"
#include "codegen/cuda/CudaCodegen.h"

#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

namespace aotc::cli {

namespace {

llvm::Error error(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

void CompileFlags::addTo(CLI::App &app) {
  app.add_option("--target", target,
                 "Devices to generate code for: cpu, cuda or cpu,cuda (docs/cuda.md)");
  app.add_option("--cuda-arch", cudaArch,
                 "GPU archs of the cubins, e.g. sm_80,sm_90 (default sm_80,sm_86,sm_89,sm_90)");
  app.add_option("--precision", precision,
                 "What GEMMs and convolutions may round their operands to: fp32 (default), "
                 "tf32, bf16 or fp16, accumulating in f32 (docs/cuda.md)");
  app.add_option("--cpu", cpu,
                 "x86-64 code: portable (x86-64-v3 and x86-64-v4, chosen at load), x86-64-v3, "
                 "x86-64-v4 or native");
  app.add_option("--weights-file", weightsFile,
                 "embedded (in the .so) or external (MODEL.weights beside it, mmapped at load)");
  app.add_option("--keep", keep,
                 "Keep this op whole instead of decomposing it, e.g. aten.softmax.int "
                 "(repeatable)");
  app.add_flag("--no-fuse", noFuse, "One kernel per op (for debugging)");
  app.add_flag("--no-winograd", noWinograd,
               "3x3 convolutions as direct GEMMs only (no Winograd F(2x2, 3x3))");
  app.add_option("--print-after", printAfter,
                 "Print what a graph pass or export step made: the graph, the kernel IR, LLVM IR "
                 "(repeatable; docs/cli.md lists the steps)");
}

llvm::Expected<CompileOptions> CompileFlags::options() const {
  CompileOptions o;
  o.targetCpu = o.targetCuda = false;
  llvm::SmallVector<llvm::StringRef, 2> targets;
  llvm::StringRef(target).split(targets, ',');
  for (llvm::StringRef t : targets) {
    if (t == "cpu")
      o.targetCpu = true;
    else if (t == "cuda")
      o.targetCuda = true;
    else
      return error(fmt::format("--target {}: unknown device \"{}\"; expected cpu, cuda or cpu,cuda",
                               target, t.str()));
  }
  if (!cudaArch.empty()) {
    if (!o.targetCuda)
      return error(fmt::format("--cuda-arch {}: the export has no cuda target (add --target "
                               "cpu,cuda)",
                               cudaArch));
    auto archs = cuda::parseCudaArchs(cudaArch);
    if (!archs)
      return archs.takeError();
    o.cudaArchs = *archs;
  }
  // Asking for CUDA where the toolkit is missing fails before any work.
  if (o.targetCuda)
    if (auto dir = cuda::cudaToolkitDir(); !dir)
      return error(fmt::format("--target {}: {}", target, llvm::toString(dir.takeError())));
  auto precisionKind = kir::parsePrecision(precision);
  if (!precisionKind)
    return error(fmt::format("--precision: {}", llvm::toString(precisionKind.takeError())));
  o.precision = *precisionKind;
  auto cpuTarget = cpu::parseCpuTarget(cpu);
  if (!cpuTarget)
    return error(fmt::format("--cpu: {}", llvm::toString(cpuTarget.takeError())));
  o.cpu = *cpuTarget;
  if (weightsFile != "embedded" && weightsFile != "external")
    return error(fmt::format("--weights-file {}: expected embedded or external", weightsFile));
  o.package.externalWeights = weightsFile == "external";
  for (const std::string &name : keep) {
    auto kind = lookupOp(name);
    if (!kind)
      return error(fmt::format("--keep {}: no such op (ops are named as in the IR, e.g. "
                               "aten.softmax.int)",
                               name));
    o.decompose.keep.push_back(*kind);
  }
  o.fuse = !noFuse;
  o.winograd = !noWinograd;
  o.passes.printAfter = printAfter;
  if (llvm::sys::Process::StandardErrIsDisplayed())
    o.progress = [](llvm::StringRef stage) { llvm::errs() << "aotc: " << stage << "\n"; };
  return o;
}

llvm::Error compileArchive(llvm::StringRef aotpPath, const CompileFlags &flags,
                           llvm::StringRef outPath) {
  auto options = flags.options();
  if (!options)
    return options.takeError();
  auto program = readArchive(aotpPath);
  if (!program)
    return program.takeError();
  return compileToSharedLibrary(*program, *options, outPath);
}

} // namespace aotc::cli
