// NVPTX module -> PTX (libdevice linked, only what is used) -> cubin by the toolkit's ptxas.
#include "codegen/cuda/CudaCodegen.h"

#include "fmt/format.h"

#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/GlobalDCE.h"
#include "llvm/Transforms/IPO/Internalize.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <cstdlib>
#include <mutex>

namespace aotc::cuda {

using namespace llvm;

static void initializeNVPTX() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

Expected<std::string> cudaToolkitDir() {
  const char *env = std::getenv("CUDA_PATH");
  std::string dir = env && *env ? env : "/usr/local/cuda";
  SmallString<256> ptxas(dir);
  sys::path::append(ptxas, "bin", "ptxas");
  if (!sys::fs::can_execute(ptxas))
    return createStringError(fmt::format(
        "CUDA code needs ptxas from the CUDA Toolkit (12.x or 13.x), not found at {}: install the "
        "toolkit's compiler package (cuda-nvcc) or set CUDA_PATH to the toolkit's directory",
        ptxas.str().str()));
  return dir;
}

static Expected<std::unique_ptr<TargetMachine>> createTargetMachine(CudaArch arch) {
  initializeNVPTX();
  std::string error;
  const Target *target = TargetRegistry::lookupTarget(NvptxTriple.str(), error);
  if (!target)
    return createStringError("the NVPTX target is missing from this LLVM: " + error);
  const ArchInfo &info = archInfo(arch);
  std::string features = fmt::format("+ptx{}", info.ptxVersion);
  std::unique_ptr<TargetMachine> tm(
      target->createTargetMachine(NvptxTriple.str(), info.name, features, TargetOptions(),
                                  std::nullopt, std::nullopt, CodeGenOptLevel::Aggressive));
  if (!tm)
    return createStringError("cannot create an NVPTX target machine for " + info.name.str());
  assert(tm->createDataLayout().getStringRepresentation() == NvptxDataLayout &&
         "NvptxDataLayout differs from LLVM's");
  return tm;
}

// Links what `m` calls of libdevice: LinkOnlyNeeded copies the called functions (and theirs),
// then everything but the kernels becomes internal and unused definitions go.
static Error linkLibdevice(Module &m) {
  Expected<std::string> dir = cudaToolkitDir();
  if (!dir)
    return dir.takeError();
  SmallString<256> path(*dir);
  sys::path::append(path, "nvvm", "libdevice", "libdevice.10.bc");
  ErrorOr<std::unique_ptr<MemoryBuffer>> buf = MemoryBuffer::getFile(path);
  if (!buf)
    return createStringError(
        fmt::format("cannot read libdevice at {}: {}", path.str().str(), buf.getError().message()));
  Expected<std::unique_ptr<Module>> lib = parseBitcodeFile(**buf, m.getContext());
  if (!lib)
    return lib.takeError();
  (*lib)->setTargetTriple(m.getTargetTriple());
  (*lib)->setDataLayout(m.getDataLayout());
  if (Linker::linkModules(m, std::move(*lib), Linker::LinkOnlyNeeded))
    return createStringError("linking libdevice failed");
  StringSet<> kernels;
  if (NamedMDNode *ann = m.getNamedMetadata("nvvm.annotations"))
    for (MDNode *op : ann->operands())
      if (auto *v = mdconst::dyn_extract_or_null<Function>(op->getOperand(0)))
        kernels.insert(v->getName());
  internalizeModule(m, [&](const GlobalValue &gv) { return kernels.contains(gv.getName()); });
  ModuleAnalysisManager mam;
  GlobalDCEPass().run(m, mam);
  return Error::success();
}

Expected<std::string> compileToPtx(const Module &source, CudaArch arch) {
  auto tm = createTargetMachine(arch);
  if (!tm)
    return tm.takeError();
  std::unique_ptr<Module> m = CloneModule(source);
  if (Error err = linkLibdevice(*m))
    return err;
  // libdevice asks __nvvm_reflect("__CUDA_FTZ"); 0 keeps denormals, as fp32 on the CPU does.
  m->addModuleFlag(Module::Override, "nvvm-reflect-ftz", uint32_t(0));
  std::string msg;
  raw_string_ostream err(msg);
  if (verifyModule(*m, &err))
    return createStringError("generated NVPTX IR is invalid: " + msg);
  PassBuilder pb(tm->get());
  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(OptimizationLevel::O3).run(*m, mam);
  SmallString<0> ptx;
  raw_svector_ostream os(ptx);
  legacy::PassManager pm;
  if ((*tm)->addPassesToEmitFile(pm, os, nullptr, CodeGenFileType::AssemblyFile))
    return createStringError("the NVPTX target cannot emit PTX");
  pm.run(*m);
  return std::string(ptx.str());
}

namespace {
// A directory removed with everything in it when the scope ends, whatever happened.
struct TempDir {
  SmallString<128> path;
  ~TempDir() {
    if (!path.empty())
      sys::fs::remove_directories(path);
  }
};
} // namespace

Expected<std::vector<char>> assemblePtx(StringRef ptx, CudaArch arch, std::string *usage) {
  Expected<std::string> dir = cudaToolkitDir();
  if (!dir)
    return dir.takeError();
  SmallString<256> ptxas(*dir);
  sys::path::append(ptxas, "bin", "ptxas");
  TempDir tmp;
  if (std::error_code ec = sys::fs::createUniqueDirectory("aotc-ptxas", tmp.path))
    return createStringError(ec, "cannot create a temporary directory for ptxas");
  SmallString<128> in(tmp.path), out(tmp.path), log(tmp.path);
  sys::path::append(in, "kernels.ptx");
  sys::path::append(out, "kernels.cubin");
  sys::path::append(log, "ptxas.log");
  {
    std::error_code ec;
    raw_fd_ostream os(in, ec);
    if (ec)
      return createStringError(ec, "cannot write " + in.str());
    os << ptx;
  }
  std::string gpu = archInfo(arch).name.str();
  SmallVector<StringRef, 8> args = {ptxas, "--gpu-name", gpu, "-O3", "--output-file", out, in};
  if (usage)
    args.push_back("-v");
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log), StringRef(log)};
  std::string execError;
  int rc = sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0, 0, &execError);
  if (rc != 0) {
    std::string messages;
    if (ErrorOr<std::unique_ptr<MemoryBuffer>> b = MemoryBuffer::getFile(log))
      messages = (*b)->getBuffer().trim().str();
    return createStringError(fmt::format("ptxas ({}) rejected the PTX: {}", gpu,
                                         messages.empty() ? execError : messages));
  }
  if (usage) {
    ErrorOr<std::unique_ptr<MemoryBuffer>> b = MemoryBuffer::getFile(log);
    *usage = b ? (*b)->getBuffer().str() : std::string();
  }
  ErrorOr<std::unique_ptr<MemoryBuffer>> cubin = MemoryBuffer::getFile(out);
  if (!cubin)
    return createStringError(cubin.getError(), "ptxas wrote no cubin");
  return std::vector<char>((*cubin)->getBufferStart(), (*cubin)->getBufferEnd());
}

} // namespace aotc::cuda
