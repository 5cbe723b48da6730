// half-weights: constant GEMM operands stored in bf16 or fp16 at --precision bf16|fp16 (see
// HalfWeights.h).
#include "codegen/cuda/HalfWeights.h"
#include "aotc/tensor/HostTensor.h"
#include "codegen/DerivedWeights.h"

#include "llvm/ADT/BitVector.h"

#include <map>
#include <utility>

namespace aotc::cuda {

namespace {

class HalfWeights {
public:
  HalfWeights(kir::Program &p, ExportedProgram &e, const kir::Program *cpu, bool withData)
      : P(p), Exported(e), Cpu(cpu), WithData(withData) {}

  llvm::Error run() {
    if (llvm::Error e = kir::forEachGemm(
            P, [&](kir::EntryKernels &entry, kir::GemmCall &g) { return gemm(entry, g); }))
      return e;
    // The loads of an original that no operand reads in f32 any more read its copy.
    llvm::BitVector readInF32 = codegen::operandWeights(P);
    codegen::readFromHolders(P, [&](uint32_t weight) {
      const kir::Weight &w = P.weights[weight];
      return w.dtype == DType::F32 && !w.mutableBuffer && w.heldBy && !readInF32.test(weight) &&
             P.weights[w.heldBy->holder].dtype != DType::F32;
    });
    return llvm::Error::success();
  }

private:
  llvm::Error gemm(kir::EntryKernels &entry, kir::GemmCall &g) {
    std::optional<DType> half = kir::sixteenBitType(g.precision);
    if (g.dtype != DType::F32 || !half)
      return llvm::Error::success();
    for (kir::MatrixOperand *op : {&g.a, &g.b}) {
      const kir::Buffer &buf = entry.buffers[op->buffer];
      if (buf.kind != kir::Buffer::Kind::Weight || buf.dtype != DType::F32 || op->conv ||
          P.weights[buf.index].mutableBuffer)
        continue;
      auto copy = copyOf(buf.index, *half);
      if (!copy)
        return copy.takeError();
      op->buffer = codegen::weightBuffer(entry, P, *copy);
    }
    return llvm::Error::success();
  }

  // The index of weight `source`'s copy in `half`, made on first use.
  llvm::Expected<uint32_t> copyOf(uint32_t source, DType half) {
    if (auto it = Made.find({source, half}); it != Made.end())
      return it->second;
    const kir::Weight &src = P.weights[source];
    std::string base = src.name + (half == DType::BF16 ? ".bf16" : ".fp16");
    // A copy the CPU made is declared here without data: both targets read that one.
    bool shared = madeByCpu(src.name, base, half, src.shape) &&
                  llvm::none_of(P.weights, [&](const kir::Weight &x) { return x.name == base; });
    std::string name = shared ? base : codegen::freshWeightName(P, Exported, base);
    auto made = codegen::addSixteenBitWeight(
        P, Exported, source, std::move(name), half, src.shape, WithData && !shared, "half-weights",
        [&](auto element, std::vector<uint16_t> &out) {
          for (size_t i = 0; i < out.size(); ++i)
            out[i] = half == DType::BF16 ? floatToBFloat16(element(i)) : floatToHalf(element(i));
        });
    if (!made)
      return made.takeError();
    Made[{source, half}] = *made;
    // The copy holds the original, rounded.
    codegen::holdByDenseCopy(P, source, *made);
    return *made;
  }

  // Whether the CPU program's bf16-weights made `base` as the dense copy of weight `source`, in
  // `half` and of `shape`: it holds that weight so. (A weight of the model that has the name,
  // folded or not, is not such a copy.)
  bool madeByCpu(const std::string &source, const std::string &base, DType half,
                 llvm::ArrayRef<int64_t> shape) const {
    if (!Cpu)
      return false;
    auto copy = llvm::find_if(Cpu->weights, [&](const kir::Weight &x) { return x.name == base; });
    if (copy == Cpu->weights.end() || copy->dtype != half || !llvm::equal(copy->shape, shape))
      return false;
    uint32_t index = copy - Cpu->weights.begin();
    return llvm::any_of(Cpu->weights, [&](const kir::Weight &x) {
      return x.name == source && x.heldBy && x.heldBy->holder == index && !x.heldBy->panelRows &&
             !x.heldBy->pairPanelCols && !x.heldBy->winogradTile;
    });
  }

  kir::Program &P;
  ExportedProgram &Exported;
  const kir::Program *Cpu;
  bool WithData;
  std::map<std::pair<uint32_t, DType>, uint32_t> Made;
};

} // namespace

llvm::Error storeHalfWeights(kir::Program &program, ExportedProgram &exported,
                             const kir::Program *cpu, bool withData) {
  return HalfWeights(program, exported, cpu, withData).run();
}

} // namespace aotc::cuda
