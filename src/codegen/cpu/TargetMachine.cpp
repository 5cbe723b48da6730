// The x86-64 target machines of the CPU variants, the O3 pipeline and object emission.
#include "codegen/cpu/CpuCodegen.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <mutex>

namespace aotc::cpu {

static void initializeX86() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
  });
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(Variant v, bool native) {
  initializeX86();
  llvm::Triple triple("x86_64-unknown-linux-gnu");
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple.str(), error);
  if (!target)
    return llvm::createStringError("x86-64 target unavailable: " + error);
  std::string cpu = variantName(v).str();
  std::string features;
  if (native) {
    cpu = llvm::sys::getHostCPUName().str();
    llvm::SmallVector<std::string, 64> list;
    for (const auto &f : llvm::sys::getHostCPUFeatures()) {
      std::string flag(1, f.second ? '+' : '-');
      flag.append(f.first().begin(), f.first().end());
      list.push_back(std::move(flag));
    }
    llvm::sort(list); // StringMap order is not deterministic across runs
    features = llvm::join(list, ",");
  }
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(triple.str(), cpu, features, options, llvm::Reloc::PIC_,
                                  llvm::CodeModel::Small, llvm::CodeGenOptLevel::Aggressive));
  if (!tm)
    return llvm::createStringError("cannot create an x86-64 target machine for " + cpu);
  return tm;
}

void optimizeModule(llvm::Module &module, llvm::TargetMachine &tm) {
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  pto.LoopUnrolling = true;
  llvm::PassBuilder pb(&tm, pto);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
}

llvm::Expected<llvm::SmallVector<char, 0>> optimizeAndEmitObject(llvm::Module &module,
                                                                 llvm::TargetMachine &tm) {
  std::string msg;
  llvm::raw_string_ostream err(msg);
  if (llvm::verifyModule(module, &err))
    return llvm::createStringError("generated LLVM IR is invalid: " + msg);
  optimizeModule(module, tm);
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the x86-64 target cannot emit object files");
  pm.run(module);
  return object;
}

} // namespace aotc::cpu
