// Memory planning of an entry's arena: liveness over the step order, greedy reuse of freed slots
// whose size is provably large enough, offsets as symbolic expressions of the root symbols.
#ifndef AOTC_KERNEL_MEMORYPLAN_H
#define AOTC_KERNEL_MEMORYPLAN_H

#include "kernel/Kernel.h"

namespace aotc::kir {

/// The buffers each step reads or writes (sorted, unique); a cond's are its predicate and those of
/// every step of both branches.
std::vector<uint32_t> buffersOfStep(const EntryKernels &entry, const Step &step);

/// buffersOfStep in the order the step first names them: a loop kernel's stages in order (the
/// value's loads depth first, operands in order, then the offset's, then the stored buffer), a
/// GEMM's A, B and output then its epilogue's loads, an attention's q, k, v, mask, partials and
/// output, a cond's predicate then its branches'. Steps alike over other buffers list them alike,
/// whatever the buffers' numbers (the CUDA kernels' parameters: MergeKernels).
std::vector<uint32_t> buffersInOrderOfUse(const EntryKernels &entry, const Step &step);

/// Assigns Buffer::arenaOffset of every Arena buffer of `entry` and entry.arenaBytes. `facts`
/// are the ranges and divisors of the root symbols, used to prove that a freed slot is large
/// enough for a new buffer.
void planMemory(EntryKernels &entry, const SymbolFactsMap &facts);
/// The plan-memory step: planMemory of every entry.
void planMemory(Program &program, const SymbolFactsMap &facts);

} // namespace aotc::kir

#endif
