// The codegen-cuda step of an export: the entries' kernels in one NVPTX module, its images (a
// cubin per arch, PTX, the emulator's bitcode), the device's weight layout and the host code.
#include "codegen/cpu/CpuCodegen.h"
#include "codegen/cuda/Attention.h"
#include "codegen/cuda/CudaCodegen.h"
#include "codegen/cuda/HostCode.h"
#include "codegen/cuda/MergeKernels.h"

#include "fmt/format.h"

#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <map>
#include <thread>

namespace aotc::cuda {

using namespace llvm;

namespace {

/// Device weights are 256-byte aligned, as cudaMalloc's are: every vector access stays aligned.
constexpr uint64_t DeviceWeightAlign = 256;

/// The weights the CUDA code reads (not the mutable ones, which live in the model's state), laid
/// out back to back in the order of the blob.
void layoutDeviceWeights(const kir::Program &program, CudaCode &code,
                         DenseMap<uint32_t, uint64_t> &deviceOffset) {
  std::set<uint32_t> used;
  for (const kir::EntryKernels &e : program.entries)
    for (const kir::Buffer &b : e.buffers)
      if (b.kind == kir::Buffer::Kind::Weight)
        used.insert(b.index);
  std::vector<uint32_t> order(used.begin(), used.end());
  llvm::sort(order, [&](uint32_t x, uint32_t y) {
    return program.weights[x].offset < program.weights[y].offset;
  });
  uint64_t at = 0;
  for (uint32_t w : order) {
    const kir::Weight &weight = program.weights[w];
    assert(!weight.derived && "CUDA kernels read only weights the blob stores");
    deviceOffset[w] = at;
    code.uploads.push_back({weight.offset, at, weight.nbytes});
    at = alignTo(at + weight.nbytes, DeviceWeightAlign);
  }
  code.deviceWeightBytes = at;
}

/// Every entry's kernels, renamed aotc_e<i>_<name>, in one module, kernels that are equal merged
/// (across entries too: prefill and forward share most of theirs).
Expected<std::unique_ptr<Module>> emitKernels(LLVMContext &c, const kir::Program &program,
                                              CudaCode &code,
                                              std::vector<std::vector<CudaKernel>> &kernels,
                                              std::vector<EntryLaunches> &launches) {
  auto all = std::make_unique<Module>("aotc_cuda", c);
  all->setTargetTriple(NvptxTriple);
  all->setDataLayout(NvptxDataLayout);
  std::vector<CudaKernel *> order;
  for (auto [i, entry] : enumerate(program.entries)) {
    Expected<std::vector<CudaKernel>> emitted = emitEntryKernels(*all, entry);
    if (!emitted)
      return emitted.takeError();
    for (CudaKernel &k : *emitted) {
      // Renamed before the next entry's kernels, whose names are the same kir names.
      Function *f = all->getFunction(k.name);
      f->setName(fmt::format("aotc_e{}_{}", i, k.name));
      k.name = f->getName().str();
    }
    kernels.push_back(std::move(*emitted));
  }
  for (std::vector<CudaKernel> &entryKernels : kernels)
    for (CudaKernel &k : entryKernels)
      order.push_back(&k);
  mergeKernels(*all, order);
  StringMap<int32_t> index;
  for (std::vector<CudaKernel> &entryKernels : kernels) {
    EntryLaunches &l = launches.emplace_back();
    for (CudaKernel &k : entryKernels) {
      auto [at, added] = index.try_emplace(k.name, static_cast<int32_t>(code.kernels.size()));
      if (added)
        code.kernels.push_back(k.name);
      l.byStep[k.step].push_back({&k, at->second});
    }
  }
  return all;
}

/// The arch a cubin's PTX is compiled for: the lowest of the list for every arch that is not
/// arch-specific (ptxas assembles sm_80 PTX for sm_86, sm_89 and sm_90 alike, and the kernels use
/// nothing newer), so LLVM compiles the module once; an arch-specific one (sm_90a: wgmma, TMA)
/// gets its own.
CudaArch ptxArchFor(CudaArch arch, ArrayRef<CudaArch> archs) {
  if (arch == CudaArch::SM90a)
    return arch;
  for (CudaArch a : archs)
    if (a != CudaArch::SM90a)
      return a;
  return arch;
}

Error emitImages(const Module &kernels, ArrayRef<CudaArch> archs, CudaCode &code) {
  std::map<CudaArch, std::string> ptx;
  for (CudaArch arch : archs) {
    CudaArch target = ptxArchFor(arch, archs);
    if (ptx.count(target))
      continue;
    Expected<std::string> text = compileToPtx(kernels, target);
    if (!text)
      return text.takeError();
    ptx[target] = std::move(*text);
  }
  // ptxas runs as a subprocess per arch: all at once, bounded by the machine's cores.
  std::vector<Expected<std::vector<char>>> cubins;
  for (size_t i = 0; i < archs.size(); ++i)
    cubins.emplace_back(std::vector<char>());
  unsigned workers = std::max(1u, llvm::heavyweight_hardware_concurrency().compute_thread_count());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < archs.size();)
      cubins[i] = assemblePtx(ptx[ptxArchFor(archs[i], archs)], archs[i]);
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < std::min<size_t>(workers, archs.size()); ++t)
    threads.emplace_back(work);
  work();
  for (std::thread &t : threads)
    t.join();
  Error err = Error::success();
  for (auto [i, cubin] : enumerate(cubins)) {
    if (!cubin) {
      err = joinErrors(std::move(err), cubin.takeError());
      continue;
    }
    code.images.push_back({ImageKind::Cubin, archs[i], std::move(*cubin)});
  }
  if (err)
    return err;
  // The PTX that newer GPUs compile at load: the one the cubins that are not arch-specific share
  // (archs ascend, so only a list of sm_90a alone starts with an arch-specific one).
  CudaArch shared = ptxArchFor(archs.front(), archs);
  const std::string &text = ptx[shared];
  std::vector<char> bytes(text.begin(), text.end());
  bytes.push_back('\0');
  code.images.push_back({ImageKind::Ptx, shared, std::move(bytes)});
  SmallVector<char, 0> bitcode;
  raw_svector_ostream os(bitcode);
  WriteBitcodeToFile(kernels, os);
  code.images.push_back(
      {ImageKind::LlvmBitcode, archs.front(), std::vector<char>(bitcode.begin(), bitcode.end())});
  return Error::success();
}

Error emitHostObject(const kir::Program &program, ArrayRef<EntryLaunches> launches,
                     const DenseMap<uint32_t, uint64_t> &deviceOffset, bool withShapes,
                     bool printIR, CudaCode &code) {
  // The baseline variant: the host code only computes addresses and calls the runtime.
  auto tm = cpu::createTargetMachine(cpu::Variant::X86_64_V3);
  if (!tm)
    return tm.takeError();
  LLVMContext c;
  Module m("aotc_cuda_host", c);
  m.setSourceFileName(m.getModuleIdentifier());
  m.setDataLayout((*tm)->createDataLayout());
  m.setTargetTriple((*tm)->getTargetTriple().str());
  TargetMachine &machine = **tm;
  auto attributes = [&](Function *f) {
    f->addFnAttr("target-cpu", machine.getTargetCPU());
    if (!machine.getTargetFeatureString().empty())
      f->addFnAttr("target-features", machine.getTargetFeatureString());
  };
  if (Error e = emitHostCode(m, program, launches, deviceOffset, withShapes, attributes))
    return e;
  auto object = cpu::optimizeAndEmitObject(m, machine);
  if (!object)
    return object.takeError();
  code.hostObject = std::move(*object);
  if (printIR) {
    raw_string_ostream os(code.ir);
    m.print(os, nullptr);
  }
  return Error::success();
}

} // namespace

Expected<CudaCode> generateCode(const kir::Program &program, ArrayRef<CudaArch> archs,
                                bool withShapes, bool printIR) {
  if (archs.empty())
    return createStringError("no CUDA arch to generate code for");
  CudaCode code;
  DenseMap<uint32_t, uint64_t> deviceOffset;
  layoutDeviceWeights(program, code, deviceOffset);
  for (const kir::EntryKernels &e : program.entries)
    kir::forEachStep(e.steps, [&](const kir::Step &s) {
      if (const auto *g = std::get_if<kir::GemmCall>(&s))
        code.precision = std::max(code.precision, g->precision);
      // Attention rounds only on the tensor cores (at tf32 and in a decode step it is f32).
      if (const auto *a = std::get_if<kir::AttentionCall>(&s); a && onTensorCores(*a))
        code.precision = std::max(code.precision, a->precision);
    });
  LLVMContext c;
  std::vector<std::vector<CudaKernel>> entryKernels;
  std::vector<EntryLaunches> launches;
  auto kernels = emitKernels(c, program, code, entryKernels, launches);
  if (!kernels)
    return kernels.takeError();
  if (Error e = emitImages(**kernels, archs, code))
    return e;
  std::string kernelIR;
  if (printIR) {
    raw_string_ostream os(kernelIR);
    (*kernels)->print(os, nullptr);
  }
  if (Error e = emitHostObject(program, launches, deviceOffset, withShapes, printIR, code))
    return e;
  code.ir = kernelIR + code.ir;
  return code;
}

} // namespace aotc::cuda
