// aotc_print_nvptx GRAPH.aotc: prints the NVPTX LLVM IR the CUDA backend emits for entry 0's loop
// kernels (after decompose, the default pipeline, lowering for the CUDA target and the memory
// plan), for the FileCheck goldens under tests/golden/cuda. No CLI path emits NVPTX IR yet.
#include "aotc/ir/Parser.h"
#include "aotc/ir/Verifier.h"
#include "codegen/cuda/CudaCodegen.h"
#include "kernel/Lower.h"
#include "kernel/MemoryPlan.h"
#include "passes/Passes.h"
#include "pipeline/PassManager.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

static llvm::Error run(const char *path) {
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
  auto p = aotc::lowerToKernels(**g, aotc::cuda::loweringTarget(), aotc::LowerOptions{true});
  if (!p)
    return p.takeError();
  aotc::kir::planMemory(*p, (*g)->shapeEnv().facts());
  llvm::LLVMContext ctx;
  auto cm = aotc::cuda::emitEntryKernels(ctx, p->entries[0], p->entries[0].name);
  if (!cm)
    return cm.takeError();
  cm->module->print(llvm::outs(), nullptr);
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: aotc_print_nvptx GRAPH.aotc\n";
    return 2;
  }
  if (llvm::Error err = run(argv[1])) {
    llvm::errs() << "aotc_print_nvptx: " << llvm::toString(std::move(err)) << "\n";
    return 1;
  }
  return 0;
}
