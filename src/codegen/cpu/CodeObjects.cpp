// The CPU code generation step of an export: one ELF object per x86-64 variant the artifact
// carries, the variants compiled in parallel.
#include "codegen/cpu/CpuCodegen.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <fmt/format.h>

#include <thread>

namespace aotc::cpu {

namespace {

struct VariantBuild {
  Variant variant;
  bool native;
};

llvm::SmallVector<VariantBuild, 2> variantsFor(CpuTarget target) {
  switch (target) {
  case CpuTarget::Portable:
    return {{Variant::X86_64_V3, false}, {Variant::X86_64_V4, false}};
  case CpuTarget::X86_64_V3:
    return {{Variant::X86_64_V3, false}};
  case CpuTarget::X86_64_V4:
    return {{Variant::X86_64_V4, false}};
  case CpuTarget::Native: {
    // The host's code goes in the slot the runtime will pick on this machine.
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    bool avx512 = features.lookup("avx512f") && features.lookup("avx512bw") &&
                  features.lookup("avx512dq") && features.lookup("avx512vl");
    return {{avx512 ? Variant::X86_64_V4 : Variant::X86_64_V3, true}};
  }
  }
  return {};
}

/// Generates and optimizes the code of one variant into `out`.
llvm::Error buildVariant(const kir::Program &program, bool withShapes, bool printIR,
                         CodeObject &out) {
  auto tm = createTargetMachine(out.variant, out.native);
  if (!tm)
    return tm.takeError();
  llvm::LLVMContext context;
  llvm::Module module(fmt::format("aotc_code_v{}", unsigned(out.variant) + 3), context);
  module.setSourceFileName(module.getModuleIdentifier());
  if (llvm::Error e = emitProgram(program, out.variant, withShapes, **tm, module))
    return e;
  auto object = optimizeAndEmitObject(module, **tm);
  if (!object)
    return object.takeError();
  out.object = std::move(*object);
  if (printIR) {
    llvm::raw_string_ostream os(out.ir);
    module.print(os, nullptr);
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<CpuTarget> parseCpuTarget(llvm::StringRef text) {
  if (text == "portable")
    return CpuTarget::Portable;
  if (text == "x86-64-v3")
    return CpuTarget::X86_64_V3;
  if (text == "x86-64-v4")
    return CpuTarget::X86_64_V4;
  if (text == "native")
    return CpuTarget::Native;
  return llvm::createStringError(fmt::format(
      "unknown CPU target \"{}\"; expected portable, x86-64-v3, x86-64-v4 or native", text.str()));
}

llvm::Expected<std::vector<CodeObject>> generateCode(const kir::Program &program, CpuTarget target,
                                                     bool printIR) {
  std::vector<CodeObject> objects;
  for (const VariantBuild &build : variantsFor(target))
    objects.push_back({build.variant, build.native, {}, {}});
  // Each variant is compiled by its own thread with its own LLVMContext and TargetMachine, which
  // LLVM allows. The objects do not depend on the number of threads.
  std::vector<llvm::Error> errors;
  for (size_t i = 0; i < objects.size(); ++i)
    errors.push_back(llvm::Error::success());
  auto compile = [&](size_t i) {
    errors[i] = buildVariant(program, /*withShapes=*/i == 0, printIR, objects[i]);
  };
  bool parallel = llvm::heavyweight_hardware_concurrency().compute_thread_count() > 1;
  std::vector<std::thread> threads;
  for (size_t i = 0; i < objects.size(); ++i) {
    if (parallel)
      threads.emplace_back(compile, i);
    else
      compile(i);
  }
  for (std::thread &t : threads)
    t.join();
  // Errors in the order of a sequential build: a variant's error is usually the other's too.
  llvm::Error result = llvm::Error::success();
  for (llvm::Error &e : errors)
    result = llvm::joinErrors(std::move(result), std::move(e));
  if (result)
    return result;
  return objects;
}

} // namespace aotc::cpu
