// An entry's shapes function (runtime/src/artifact.h, aotc_shapes_fn): host code every artifact
// carries, whichever devices its kernels run on.
#ifndef AOTC_CODEGEN_ENTRYSHAPES_H
#define AOTC_CODEGEN_ENTRYSHAPES_H

#include "kernel/Kernel.h"

#include "llvm/IR/Function.h"

namespace aotc::codegen {

/// Emits the body of `f`, declared `i32 (ptr syms, ptr out)`: from the root symbols, every input
/// dim, every output dim and `entry.arenaBytes` into out[], then 0, or k + 1 for the first guard
/// k that does not hold.
void emitShapes(llvm::Function *f, const kir::EntryKernels &entry);

} // namespace aotc::codegen

#endif
