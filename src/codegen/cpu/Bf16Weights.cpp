// bf16-weights: constant GEMM B operands stored in bf16 at --precision bf16 (see Bf16Weights.h).
#include "codegen/cpu/Bf16Weights.h"
#include "aotc/tensor/HostTensor.h"
#include "codegen/DerivedWeights.h"
#include "codegen/cpu/CpuTarget.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/STLExtras.h"

#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <variant>

namespace aotc::cpu {

namespace {

class Rounder {
public:
  Rounder(kir::Program &p, ExportedProgram &e, kir::Precision precision, bool withData)
      : P(p), Exported(e), ExportPrecision(precision), WithData(withData) {}

  llvm::Error run() {
    if (llvm::Error e = kir::forEachGemm(
            P, [&](kir::EntryKernels &entry, kir::GemmCall &g) { return gemm(entry, g); }))
      return e;
    if (llvm::Error e = roundGatheredTables())
      return e;
    readHolders();
    return llvm::Error::success();
  }

private:
  llvm::Error gemm(kir::EntryKernels &entry, kir::GemmCall &g) {
    if (g.dtype != DType::F32 || g.precision != kir::Precision::BF16)
      return llvm::Error::success();
    // (Only A is ever a Winograd filter: its transform is derived from the bf16 copy.)
    auto isF32Weight = [&](const kir::MatrixOperand &o) {
      const kir::Buffer &src = entry.buffers[o.buffer];
      return src.kind == kir::Buffer::Kind::Weight && src.dtype == DType::F32 && !o.conv &&
             !o.panelRows;
    };
    // Batched GEMMs fold several images' columns into one packed block, which reads a bf16 B
    // nowhere.
    if (isF32Weight(g.b) && g.batch.constant() == 1) {
      if (auto at = pairAddressing(entry, g))
        return pairPanels(entry, g.b, *at);
      return round(entry, g.b);
    }
    // A weight as A (a convolution's filter) when B is not one. A Winograd filter too: its
    // transform, which the GEMM reads, is derived from the bf16 copy (pack-weights).
    if (isF32Weight(g.a) && entry.buffers[g.b.buffer].kind != kir::Buffer::Kind::Weight)
      return round(entry, g.a);
    return llvm::Error::success();
  }

  // A B weight read at constant addressing, k x n: the k-pair panels' source.
  struct PairAddressing {
    uint32_t weight;
    int64_t offset, rowStride, colStride, k, n;
    auto key() const { return std::tie(weight, offset, rowStride, colStride, k, n); }
    bool operator<(const PairAddressing &o) const { return key() < o.key(); }
  };

  std::optional<PairAddressing> pairAddressing(const kir::EntryKernels &entry,
                                               const kir::GemmCall &g) {
    auto k = g.k.constant(), n = g.n.constant(), off = g.b.offset.constant(),
         rs = g.b.rowStride.constant(), cs = g.b.colStride.constant();
    if (!k || !n || !off || !rs || !cs || *k < 1 || *n < 1 || *off < 0 || *rs < 0 || *cs < 0)
      return std::nullopt;
    return PairAddressing{entry.buffers[g.b.buffer].index, *off, *rs, *cs, *k, *n};
  }

  // Points `operand` at its weight's bf16 copy.
  llvm::Error round(kir::EntryKernels &entry, kir::MatrixOperand &operand) {
    auto weight = rounded(entry.buffers[operand.buffer].index);
    if (!weight)
      return weight.takeError();
    operand.buffer = codegen::weightBuffer(entry, P, *weight);
    return llvm::Error::success();
  }

  // Points B at its k-pair panels.
  llvm::Error pairPanels(kir::EntryKernels &entry, kir::MatrixOperand &operand,
                         const PairAddressing &at) {
    auto weight = paired(at);
    if (!weight)
      return weight.takeError();
    operand.buffer = codegen::weightBuffer(entry, P, *weight);
    operand.offset = 0;
    operand.rowStride = 0;
    operand.colStride = 0;
    operand.pairPanelCols = PairPanelCols;
    return llvm::Error::success();
  }

  // Adds a bf16 weight "<source's name><suffix>" of `shape` (codegen::addSixteenBitWeight);
  // returns its index.
  llvm::Expected<uint32_t> addCopy(
      uint32_t source, llvm::StringRef suffix, llvm::SmallVector<int64_t, 4> shape,
      llvm::function_ref<void(llvm::function_ref<float(int64_t)>, std::vector<uint16_t> &)> fill) {
    std::string name = codegen::freshWeightName(P, Exported, P.weights[source].name + suffix.str());
    return codegen::addSixteenBitWeight(P, Exported, source, std::move(name), DType::BF16,
                                        std::move(shape), WithData, "bf16-weights", fill);
  }

  // The index of the k-pair panels of `at`, made on first use.
  llvm::Expected<uint32_t> paired(const PairAddressing &at) {
    if (auto it = MadePairs.find(at); it != MadePairs.end())
      return it->second;
    const kir::Weight &src = P.weights[at.weight];
    int64_t last = at.offset + (at.k - 1) * at.rowStride + (at.n - 1) * at.colStride;
    if (last >= static_cast<int64_t>(src.numel()))
      return llvm::createStringError(fmt::format(
          "bf16-weights: a GEMM reads weight \"{}\" past its {} elements", src.name, src.numel()));
    auto made =
        addCopy(at.weight, ".bf16pairs", {kir::pairPanelElements(at.k, at.n, PairPanelCols)},
                [&](auto element, std::vector<uint16_t> &out) {
                  for (int64_t r = 0; r < at.k; ++r)
                    for (int64_t c = 0; c < at.n; ++c)
                      out[kir::pairPanelOffset(r, c, at.k, PairPanelCols)] =
                          floatToBFloat16(element(at.offset + r * at.rowStride + c * at.colStride));
                });
    if (!made)
      return made.takeError();
    uint32_t index = *made;
    MadePairs[at] = index;
    // The panels hold the original when B reads it whole, as [k, n] (Conv1D) or [n, k]
    // (nn.Linear).
    kir::Weight &original = P.weights[at.weight];
    bool whole = at.offset == 0 && static_cast<uint64_t>(at.k * at.n) == original.numel();
    if (!original.heldBy && whole && (at.colStride == 1 || at.rowStride == 1)) {
      bool transposed = at.rowStride == 1 && at.colStride == at.k;
      if (transposed || (at.colStride == 1 && at.rowStride == at.n))
        original.heldBy = kir::HeldWeight{
            index,     transposed ? at.n : at.k, transposed ? at.k : at.n, 0, 0, PairPanelCols,
            transposed};
    }
    return index;
  }

  // The index of weight `source`'s bf16 copy, made on first use.
  llvm::Expected<uint32_t> rounded(uint32_t source) {
    if (auto it = Made.find(source); it != Made.end())
      return it->second;
    auto made = addCopy(source, ".bf16", P.weights[source].shape,
                        [&](auto element, std::vector<uint16_t> &out) {
                          for (size_t i = 0; i < out.size(); ++i)
                            out[i] = floatToBFloat16(element(i));
                        });
    if (!made)
      return made.takeError();
    uint32_t index = *made;
    Made[source] = index;
    // The copy holds the original, rounded: where no kernel reads the f32 any more, the
    // artifact stores the bf16 only (pack-weights prefers an exact holder, panels, made later).
    codegen::holdByDenseCopy(P, source, index);
    return index;
  }

  // Rounds every f32 parameter that the CPU kernels only gather rows of (an embedding table, whose
  // every load's offset reads an index from memory), as torch.autocast's bf16 embeddings of a
  // half-precision model and OpenVINO's bf16 do: readHolders then points the gathers at the
  // copy, and the blob stores the table once, in bf16. Buffers stay f32 (tables that code
  // computes, such as rotary ones), as does a parameter read any other way (a position table
  // indexed by arange, a layer norm's weight).
  llvm::Error roundGatheredTables() {
    if (ExportPrecision != kir::Precision::BF16 || !Exported.graph)
      return llvm::Error::success();
    // GEMM and attention operands read their weights in place.
    llvm::BitVector gathered(P.weights.size()), readOtherwise = codegen::operandWeights(P);
    for (const kir::EntryKernels &entry : P.entries) {
      std::map<kir::ExprId, bool> readsMemory;
      std::function<bool(kir::ExprId)> loads = [&](kir::ExprId id) {
        if (auto it = readsMemory.find(id); it != readsMemory.end())
          return it->second;
        const kir::Expr &e = entry.exprs[id];
        bool any = e.kind == kir::ExprKind::Load || llvm::any_of(e.operands, loads);
        return readsMemory[id] = any;
      };
      auto weightOf = [&](uint32_t buffer) -> std::optional<uint32_t> {
        const kir::Buffer &b = entry.buffers[buffer];
        if (b.kind != kir::Buffer::Kind::Weight)
          return std::nullopt;
        return b.index;
      };
      // Marks the weights that the tree under `root` loads, gathered or not (each shared
      // subtree once).
      llvm::BitVector seen(entry.exprs.size());
      auto visit = [&](kir::ExprId root) {
        llvm::SmallVector<kir::ExprId, 16> work{root};
        while (!work.empty()) {
          kir::ExprId id = work.pop_back_val();
          if (seen.test(id))
            continue;
          seen.set(id);
          const kir::Expr &e = entry.exprs[id];
          if (e.kind == kir::ExprKind::Load)
            if (auto w = weightOf(e.index))
              (loads(e.operands[0]) ? gathered : readOtherwise).set(*w);
          work.append(e.operands.begin(), e.operands.end());
        }
      };
      kir::forEachStep(entry.steps, [&](const kir::Step &step) {
        if (const auto *k = std::get_if<kir::LoopKernel>(&step)) {
          for (const kir::Stage &stage : k->stages)
            for (kir::ExprId id : {stage.offset, stage.value})
              if (id != kir::NoExpr)
                visit(id);
        } else if (const auto *g = std::get_if<kir::GemmCall>(&step)) {
          if (g->epilogue != kir::NoExpr)
            visit(g->epilogue);
        } else if (const auto *c = std::get_if<kir::CondStep>(&step)) {
          if (auto w = weightOf(c->predicate))
            readOtherwise.set(*w);
        }
      });
    }
    for (uint32_t i = 0, n = P.weights.size(); i < n; ++i) {
      const kir::Weight &w = P.weights[i];
      const StateTensor *state = Exported.graph->findState(w.name);
      if (!gathered.test(i) || readOtherwise.test(i) || w.dtype != DType::F32 || w.mutableBuffer ||
          w.heldBy || !state || state->kind != InputKind::Parameter)
        continue;
      if (auto made = rounded(i); !made)
        return made.takeError();
    }
    return llvm::Error::success();
  }

  // Points the loads of every f32 weight that a bf16 copy holds and that no GEMM or attention
  // operand reads (an embedding table tied to the LM head) at the copy: the blob then stores the
  // weight once, in bf16.
  void readHolders() {
    llvm::BitVector readInF32 = codegen::operandWeights(P);
    codegen::readFromHolders(P, [&](uint32_t weight) {
      const kir::Weight &w = P.weights[weight];
      return w.dtype == DType::F32 && !w.mutableBuffer && w.heldBy && !readInF32.test(weight) &&
             P.weights[w.heldBy->holder].dtype == DType::BF16;
    });
  }

  kir::Program &P;
  ExportedProgram &Exported;
  kir::Precision ExportPrecision;
  bool WithData;
  std::map<uint32_t, uint32_t> Made;
  std::map<PairAddressing, uint32_t> MadePairs;
};

} // namespace

llvm::Error storeBf16Weights(kir::Program &program, ExportedProgram &exported,
                             kir::Precision precision, bool withData) {
  return Rounder(program, exported, precision, withData).run();
}

} // namespace aotc::cpu
