// Kernels whose functions are equal, merged into the first of them.
#include "codegen/cuda/MergeKernels.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/StructuralHash.h"
#include "llvm/Transforms/Utils/FunctionComparator.h"

#include <algorithm>

namespace aotc::cuda {

using namespace llvm;

namespace {

bool sameBlock(const LaunchShape &x, const LaunchShape &y) {
  // The host launches each kernel with its own grid; the block and dynamic shared memory are
  // what a body may take for granted without reading them.
  return std::equal(std::begin(x.block), std::end(x.block), std::begin(y.block)) &&
         x.dynamicShared == y.dynamicShared;
}

} // namespace

unsigned mergeKernels(Module &m, ArrayRef<CudaKernel *> kernels) {
  GlobalNumberState globals;
  DenseMap<IRHash, SmallVector<const CudaKernel *, 2>> kept;
  SmallVector<Function *, 16> merged;
  SmallPtrSet<Function *, 16> mergedSet;
  for (CudaKernel *k : kernels) {
    Function *f = m.getFunction(k->name);
    assert(f && "a kernel's function is in the module");
    SmallVector<const CudaKernel *, 2> &same = kept[StructuralHash(*f, /*DetailedHash=*/true)];
    const CudaKernel *const *equal = llvm::find_if(same, [&](const CudaKernel *o) {
      Function *g = m.getFunction(o->name);
      return g != f && sameBlock(o->launch, k->launch) &&
             FunctionComparator(g, f, &globals).compare() == 0;
    });
    if (equal == same.end()) {
      same.push_back(k);
      continue;
    }
    k->name = (*equal)->name;
    if (mergedSet.insert(f).second)
      merged.push_back(f);
  }
  if (merged.empty())
    return 0;
  // The annotation names the function as a kernel; a null operand would be left behind.
  if (NamedMDNode *annotations = m.getNamedMetadata("nvvm.annotations")) {
    SmallVector<MDNode *, 16> rest;
    for (MDNode *op : annotations->operands())
      if (!mergedSet.contains(mdconst::dyn_extract_or_null<Function>(op->getOperand(0))))
        rest.push_back(op);
    annotations->clearOperands();
    for (MDNode *op : rest)
      annotations->addOperand(op);
  }
  for (Function *f : merged)
    f->eraseFromParent();
  return merged.size();
}

} // namespace aotc::cuda
