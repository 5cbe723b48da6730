// The emulated CUDA device: retargeting NVPTX-bound IR to the host, JIT, and the launch loop.
#include "codegen/cuda/emu/Emulator.h"

#include "fmt/format.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"

#include <mutex>

namespace aotc::cuda::emu {

using namespace llvm;

namespace {

// The emulated thread running on this OS thread; a fiber scheduler will set it on each switch.
thread_local const ThreadContext *Current = nullptr;

// Special register `which`: tid.{x,y,z}, ntid.*, ctaid.*, nctaid.* in that order, 0..11.
uint32_t aotcEmuSreg(uint32_t which) {
  const Dim3 *d[] = {&Current->tid, &Current->ntid, &Current->ctaid, &Current->nctaid};
  const Dim3 &v = *d[which / 3];
  return which % 3 == 0 ? v.x : which % 3 == 1 ? v.y : v.z;
}

std::optional<unsigned> sregIndex(StringRef intrinsic) {
  if (!intrinsic.consume_front("llvm.nvvm.read.ptx.sreg."))
    return std::nullopt;
  static const char *regs[] = {"tid", "ntid", "ctaid", "nctaid"};
  for (unsigned r = 0; r < 4; ++r) {
    StringRef rest = intrinsic;
    if (!rest.consume_front(regs[r]) || !rest.consume_front("."))
      continue;
    if (rest == "x" || rest == "y" || rest == "z")
      return r * 3 + unsigned(rest[0] - 'x');
  }
  return std::nullopt;
}

// libdevice's name -> the host libm's. Every function the CUDA backend calls maps to the libm
// function of the same name and type; results may differ from libdevice's in the last ulps
// (libdevice documents its error bounds per function, glibc its own), well inside the 1e-5
// the tests allow.
std::optional<std::string> hostMathName(StringRef name) {
  static const char *known[] = {"exp", "log", "log1p", "sin", "cos", "tanh", "erf", "pow", "fmod"};
  if (!name.consume_front("__nv_"))
    return std::nullopt;
  StringRef base = name.ends_with("f") ? name.drop_back() : name;
  for (const char *k : known)
    if (base == k)
      return name.str();
  return std::nullopt;
}

Error retarget(Module &m, const DataLayout &hostLayout, const std::string &hostTriple,
               SmallVectorImpl<std::string> &kernels) {
  LLVMContext &c = m.getContext();
  if (NamedMDNode *ann = m.getNamedMetadata("nvvm.annotations")) {
    for (MDNode *op : ann->operands())
      if (auto *f = mdconst::dyn_extract_or_null<Function>(op->getOperand(0)))
        kernels.push_back(f->getName().str());
    m.eraseNamedMetadata(ann);
  }
  FunctionCallee sreg = m.getOrInsertFunction(
      "aotc_emu_sreg", FunctionType::get(Type::getInt32Ty(c), {Type::getInt32Ty(c)}, false));
  for (Function &f : make_early_inc_range(m)) {
    f.removeFnAttr("target-cpu");
    f.removeFnAttr("target-features");
    if (!f.isDeclaration() || f.getName() == "aotc_emu_sreg")
      continue;
    StringRef name = f.getName();
    if (std::optional<unsigned> r = sregIndex(name)) {
      for (User *u : make_early_inc_range(f.users())) {
        auto *call = cast<CallInst>(u);
        IRBuilder<> b(call);
        call->replaceAllUsesWith(b.CreateCall(sreg, {b.getInt32(*r)}));
        call->eraseFromParent();
      }
      f.eraseFromParent();
    } else if (std::optional<std::string> host = hostMathName(name)) {
      f.setName(*host);
    } else if (!f.isIntrinsic() || name.starts_with("llvm.nvvm.")) {
      return createStringError(
          fmt::format("the emulated CUDA device does not implement {} yet", name.str()));
    }
  }
  m.setTargetTriple(hostTriple);
  m.setDataLayout(hostLayout);
  // cuLaunchKernel's convention: one trampoline per kernel takes the array of pointers to the
  // parameters' values and calls the kernel with them.
  for (const std::string &name : kernels) {
    Function *k = m.getFunction(name);
    Function *t =
        Function::Create(FunctionType::get(Type::getVoidTy(c), {PointerType::getUnqual(c)}, false),
                         GlobalValue::ExternalLinkage, name + ".launch", m);
    IRBuilder<> b(BasicBlock::Create(c, "entry", t));
    SmallVector<Value *, 16> args;
    for (Argument &a : k->args()) {
      Value *slot = b.CreateConstInBoundsGEP1_32(b.getPtrTy(), t->getArg(0), a.getArgNo());
      args.push_back(b.CreateLoad(a.getType(), b.CreateLoad(b.getPtrTy(), slot)));
    }
    b.CreateCall(k, args);
    b.CreateRetVoid();
  }
  std::string msg;
  raw_string_ostream err(msg);
  if (verifyModule(m, &err))
    return createStringError("the retargeted module is invalid: " + msg);
  return Error::success();
}

} // namespace

Expected<std::unique_ptr<EmulatedModule>> EmulatedModule::load(const Module &nvptx) {
  static std::once_flag once;
  std::call_once(once, [] {
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
  });
  // Through bitcode into a context of its own: the JIT owns it, and the caller's module stays
  // exactly the one that goes to PTX.
  SmallVector<char, 0> bitcode;
  {
    raw_svector_ostream os(bitcode);
    WriteBitcodeToFile(nvptx, os);
  }
  auto ctx = std::make_unique<LLVMContext>();
  Expected<std::unique_ptr<Module>> m =
      parseBitcodeFile(MemoryBufferRef(StringRef(bitcode.data(), bitcode.size()), "nvptx"), *ctx);
  if (!m)
    return m.takeError();
  auto jtmb = orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb)
    return jtmb.takeError();
  auto layout = jtmb->getDefaultDataLayoutForTarget();
  if (!layout)
    return layout.takeError();
  SmallVector<std::string, 8> kernels;
  if (Error err = retarget(**m, *layout, jtmb->getTargetTriple().str(), kernels))
    return err;
  StringMap<unsigned> params;
  for (const std::string &k : kernels)
    params[k] = (*m)->getFunction(k)->arg_size();
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
  if (Error err = lib.define(orc::absoluteSymbols(
          {{mangle("aotc_emu_sreg"),
            {orc::ExecutorAddr::fromPtr(&aotcEmuSreg), JITSymbolFlags::Exported}}})))
    return err;
  if (Error err = (*jit)->addIRModule(orc::ThreadSafeModule(std::move(*m), std::move(ctx))))
    return err;
  auto out = std::unique_ptr<EmulatedModule>(new EmulatedModule);
  for (const std::string &k : kernels) {
    auto addr = (*jit)->lookup(k + ".launch");
    if (!addr)
      return addr.takeError();
    out->Kernels[k] = addr->toPtr<Trampoline>();
  }
  out->Jit = std::move(*jit);
  out->Params = std::move(params);
  return out;
}

Error EmulatedModule::launch(StringRef kernel, Dim3 grid, Dim3 block, ArrayRef<void *> params) {
  auto it = Kernels.find(kernel);
  if (it == Kernels.end())
    return createStringError(fmt::format("no kernel named {} in the module", kernel.str()));
  if (uint64_t(block.x) * block.y * block.z > 1024 || !block.x || !block.y || !block.z || !grid.x ||
      !grid.y || !grid.z)
    return createStringError(fmt::format("invalid launch of {}: grid {}x{}x{}, block {}x{}x{}",
                                         kernel.str(), grid.x, grid.y, grid.z, block.x, block.y,
                                         block.z));
  ThreadContext t;
  t.ntid = block;
  t.nctaid = grid;
  const ThreadContext *saved = Current;
  Current = &t;
  for (t.ctaid.z = 0; t.ctaid.z < grid.z; ++t.ctaid.z)
    for (t.ctaid.y = 0; t.ctaid.y < grid.y; ++t.ctaid.y)
      for (t.ctaid.x = 0; t.ctaid.x < grid.x; ++t.ctaid.x)
        for (t.tid.z = 0; t.tid.z < block.z; ++t.tid.z)
          for (t.tid.y = 0; t.tid.y < block.y; ++t.tid.y)
            for (t.tid.x = 0; t.tid.x < block.x; ++t.tid.x)
              it->second(params.data());
  Current = saved;
  return Error::success();
}

} // namespace aotc::cuda::emu
