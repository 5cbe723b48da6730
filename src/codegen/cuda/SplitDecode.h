// split-decode: the CUDA backend's kernel-IR pass that shares a decode step's attention over a
// long cache among several blocks a (batch x head). The decode kernel gives each (batch x head)
// one block, whose 4 warps walk its keys: GPT-2 small at batch 1 has 12 such blocks for 132 SMs,
// and a cache of a few thousand keys keeps each warp at dozens of tiles in turn. Split, each block
// takes a part of the keys and writes its partial state (its maximum, its sum of exponentials, its
// unnormalized outputs) to a workspace, and a second kernel merges the parts in order, as the
// decode kernel merges its warps (FlashDecoding's split-KV, deterministic: nothing atomic).
#ifndef AOTC_CODEGEN_CUDA_SPLITDECODE_H
#define AOTC_CODEGEN_CUDA_SPLITDECODE_H

#include "aotc/ir/ShapeEnv.h"
#include "kernel/Kernel.h"

namespace aotc::cuda {

/// How many parts a decode call's keys take: min(ceil(s / DecodeSplitKeys),
/// ceil(GemmFewBlocks / (batch x heads))), 1 where that is 1 or less.
SymExpr decodeSplits(const kir::AttentionCall &a);

/// For every entry of `program` (cond branches included): each attention call that is a decode
/// step (L = 1, not causal: a causal one reads key 0 only) and whose decodeSplits reach 2 in the
/// dims' ranges gets its `splits` and a workspace of f32 partial states (kir::AttentionCall::
/// partials), an arena buffer named after the call; the entry's arena is planned again (kir::
/// planMemory with `facts`). The code generator launches the split kernels where the splits are
/// at least 2 and the decode kernel elsewhere. Run after lower-cuda.
void splitDecodeSteps(kir::Program &program, const SymbolFactsMap &facts);

} // namespace aotc::cuda

#endif
