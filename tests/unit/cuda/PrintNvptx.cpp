// aotc_print_nvptx [--ptx] [--precision P] GRAPH.aotc: prints the NVPTX LLVM IR the CUDA backend
// emits for entry 0's loop kernels (after decompose, the default pipeline, lowering for the CUDA
// target at precision P, fp32 by default, and the memory plan), or with --ptx the PTX LLVM
// compiles it to for sm_80 (libdevice linked; needs the CUDA toolkit), for the FileCheck goldens
// under tests/golden/cuda. No CLI path emits either.
#include "aotc/ir/Parser.h"
#include "aotc/ir/Verifier.h"
#include "codegen/cuda/CudaCodegen.h"
#include "kernel/Lower.h"
#include "kernel/MemoryPlan.h"
#include "passes/Passes.h"
#include "pipeline/PassManager.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

static llvm::Error run(const char *path, bool ptx, aotc::kir::Precision precision) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return llvm::createStringError(buf.getError(), std::string("cannot read ") + path);
  auto g = aotc::parseGraph((*buf)->getBuffer().str(), path);
  if (!g)
    return g.takeError();
  if (llvm::Error err = aotc::verifyGraph(**g))
    return err;
  if (llvm::Error err = aotc::runDecompose(**g, {}))
    return err;
  aotc::PassManager pm;
  if (llvm::Error err = pm.addPipeline("default"))
    return err;
  if (llvm::Error err = pm.run(**g))
    return err;
  aotc::LowerOptions options{true};
  options.precision = precision;
  auto p = aotc::lowerToKernels(**g, aotc::cuda::loweringTarget(), options);
  if (!p)
    return p.takeError();
  aotc::kir::planMemory(*p, (*g)->shapeEnv().facts());
  llvm::LLVMContext ctx;
  auto cm = aotc::cuda::emitEntryKernels(ctx, p->entries[0], p->entries[0].name);
  if (!cm)
    return cm.takeError();
  if (!ptx) {
    cm->module->print(llvm::outs(), nullptr);
    return llvm::Error::success();
  }
  auto text = aotc::cuda::compileToPtx(*cm->module, aotc::cuda::CudaArch::SM80);
  if (!text)
    return text.takeError();
  llvm::outs() << *text;
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  bool ptx = false;
  aotc::kir::Precision precision = aotc::kir::Precision::FP32;
  int i = 1;
  for (; i + 1 < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--ptx") {
      ptx = true;
    } else if (arg == "--precision" && i + 2 < argc) {
      auto p = aotc::kir::parsePrecision(argv[++i]);
      if (!p) {
        llvm::errs() << "aotc_print_nvptx: " << llvm::toString(p.takeError()) << "\n";
        return 2;
      }
      precision = *p;
    } else {
      break;
    }
  }
  if (i != argc - 1) {
    llvm::errs() << "usage: aotc_print_nvptx [--ptx] [--precision P] GRAPH.aotc\n";
    return 2;
  }
  if (llvm::Error err = run(argv[i], ptx, precision)) {
    llvm::errs() << "aotc_print_nvptx: " << llvm::toString(std::move(err)) << "\n";
    return 1;
  }
  return 0;
}
