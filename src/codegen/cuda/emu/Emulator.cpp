// The emulated CUDA device: JIT of the retargeted module, and the launch loop over blocks.
#include "codegen/cuda/emu/Emulator.h"
#include "codegen/cuda/emu/BlockRunner.h"
#include "codegen/cuda/emu/Retarget.h"

#include "fmt/format.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"

#include <cstring>
#include <mutex>
#include <vector>

namespace aotc::cuda::emu {

using namespace llvm;

Expected<std::unique_ptr<EmulatedModule>> EmulatedModule::load(const Module &nvptx) {
  // Through bitcode into a context of its own: the JIT owns it, and the caller's module stays
  // exactly the one that goes to PTX.
  SmallVector<char, 0> bitcode;
  raw_svector_ostream os(bitcode);
  WriteBitcodeToFile(nvptx, os);
  return loadBitcode(StringRef(bitcode.data(), bitcode.size()));
}

Expected<std::unique_ptr<EmulatedModule>> EmulatedModule::loadBitcode(StringRef bitcode) {
  static std::once_flag once;
  std::call_once(once, [] {
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
  });
  auto ctx = std::make_unique<LLVMContext>();
  Expected<std::unique_ptr<Module>> m = parseBitcodeFile(MemoryBufferRef(bitcode, "nvptx"), *ctx);
  if (!m)
    return m.takeError();
  auto jtmb = orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb)
    return jtmb.takeError();
  auto layout = jtmb->getDefaultDataLayoutForTarget();
  if (!layout)
    return layout.takeError();
  Expected<RetargetInfo> info = retarget(**m, *layout, jtmb->getTargetTriple().str());
  if (!info)
    return info.takeError();
  StringMap<unsigned> params;
  for (const std::string &k : info->kernels)
    params[k] = (*m)->getFunction(k)->arg_size(); // before the JIT takes the module
  auto jit = orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!jit)
    return jit.takeError();
  orc::JITDylib &lib = (*jit)->getMainJITDylib();
  auto host = orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!host)
    return host.takeError();
  lib.addGenerator(std::move(*host));
  orc::MangleAndInterner mangle((*jit)->getExecutionSession(), (*jit)->getDataLayout());
  orc::SymbolMap runtime;
  for (const RuntimeSymbol &s : runtimeSymbols())
    runtime[mangle(s.name)] = {orc::ExecutorAddr::fromPtr(s.address), JITSymbolFlags::Exported};
  if (Error err = lib.define(orc::absoluteSymbols(std::move(runtime))))
    return err;
  if (Error err = (*jit)->addIRModule(orc::ThreadSafeModule(std::move(*m), std::move(ctx))))
    return err;
  auto out = std::unique_ptr<EmulatedModule>(new EmulatedModule);
  for (const std::string &k : info->kernels) {
    auto addr = (*jit)->lookup(k + ".launch");
    if (!addr)
      return addr.takeError();
    out->Kernels[k] = {addr->toPtr<Trampoline>(), info->fiberKernels.contains(k), params[k]};
  }
  out->StaticShared = info->staticShared;
  out->Jit = std::move(*jit);
  return out;
}

Error EmulatedModule::launch(StringRef kernel, Dim3 grid, Dim3 block, ArrayRef<void *> params,
                             uint32_t dynamicShared) {
  auto it = Kernels.find(kernel);
  if (it == Kernels.end())
    return createStringError(fmt::format("no kernel named {} in the module", kernel.str()));
  if (uint64_t(block.x) * block.y * block.z > 1024 || !block.x || !block.y || !block.z || !grid.x ||
      !grid.y || !grid.z || grid.y > 65535 || grid.z > 65535)
    return createStringError(fmt::format("invalid launch of {}: grid {}x{}x{}, block {}x{}x{}",
                                         kernel.str(), grid.x, grid.y, grid.z, block.x, block.y,
                                         block.z));
  const Kernel &k = it->second;
  std::unique_ptr<BlockRunner> fibers;
  if (k.usesFibers) {
    auto r = BlockRunner::create(block.x * block.y * block.z);
    if (!r)
      return r.takeError();
    fibers = std::move(*r);
  }
  // One block's shared memory, refilled for each block: CUDA leaves it uninitialized.
  std::vector<uint8_t> shared(StaticShared + dynamicShared + 16);
  ThreadContext t;
  t.ntid = block;
  t.nctaid = grid;
  t.shared = shared.data();
  for (t.ctaid.z = 0; t.ctaid.z < grid.z; ++t.ctaid.z)
    for (t.ctaid.y = 0; t.ctaid.y < grid.y; ++t.ctaid.y)
      for (t.ctaid.x = 0; t.ctaid.x < grid.x; ++t.ctaid.x) {
        std::memset(shared.data(), 0xff, shared.size());
        if (!fibers) {
          runSequential(k.entry, params.data(), t);
          continue;
        }
        if (Error err = fibers->run(kernel, k.entry, params.data(), t))
          return err;
      }
  return Error::success();
}

} // namespace aotc::cuda::emu
