// split-decode: a decode step's keys shared among several blocks (see SplitDecode.h).
#include "codegen/cuda/SplitDecode.h"
#include "codegen/cuda/Attention.h"
#include "codegen/cuda/CudaTarget.h"
#include "kernel/MemoryPlan.h"

namespace aotc::cuda {

SymExpr decodeSplits(const kir::AttentionCall &a) {
  SymExpr chunks = SymExpr::floorDiv(a.s + SymExpr(DecodeSplitKeys - 1), DecodeSplitKeys);
  SymExpr rows = a.batch * a.heads;
  SymExpr fill = SymExpr::floorDiv(SymExpr(GemmFewBlocks) + rows - SymExpr(1), rows);
  return SymExpr::max(SymExpr(1), SymExpr::min(chunks, fill));
}

namespace {

/// Splits the decode steps of `entry` that splitDecodeSteps takes; whether there was one.
bool split(kir::EntryKernels &entry, const SymbolFactsMap &facts) {
  bool changed = false;
  kir::forEachStep(entry.steps, [&](kir::Step &step) {
    auto *a = std::get_if<kir::AttentionCall>(&step);
    if (!a || !isDecodeStep(*a) || a->causal || a->partials)
      return;
    SymExpr splits = decodeSplits(*a);
    if (rangeOf(splits, facts).hi < 2)
      return;
    kir::Buffer partials;
    partials.kind = kir::Buffer::Kind::Arena;
    partials.dtype = DType::F32;
    partials.numel = a->batch * a->heads * splits * (a->ev + SymExpr(2));
    partials.name = a->name + ".partials";
    a->partials = uint32_t(entry.buffers.size());
    a->splits = splits;
    entry.buffers.push_back(std::move(partials));
    changed = true;
  });
  return changed;
}

} // namespace

void splitDecodeSteps(kir::Program &program, const SymbolFactsMap &facts) {
  for (kir::EntryKernels &entry : program.entries)
    if (split(entry, facts))
      kir::planMemory(entry, facts);
}

} // namespace aotc::cuda
