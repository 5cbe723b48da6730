// half-weights: constant GEMM operands stored in bf16 or fp16 at --precision bf16|fp16 (see
// HalfWeights.h).
#include "codegen/cuda/HalfWeights.h"
#include "aotc/tensor/HostTensor.h"
#include "codegen/DerivedWeights.h"

#include "llvm/ADT/BitVector.h"

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <memory>
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
    if (g.dtype != DType::F32 ||
        (g.precision != kir::Precision::BF16 && g.precision != kir::Precision::FP16))
      return llvm::Error::success();
    DType half = g.precision == kir::Precision::BF16 ? DType::BF16 : DType::F16;
    for (kir::MatrixOperand *op : {&g.a, &g.b}) {
      const kir::Buffer &buf = entry.buffers[op->buffer];
      if (buf.kind != kir::Buffer::Kind::Weight || buf.dtype != DType::F32 || op->conv ||
          P.weights[buf.index].mutableBuffer)
        continue;
      auto copy = copyOf(buf.index, half);
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
    kir::Weight w;
    w.dtype = half;
    w.shape = src.shape;
    std::string base = src.name + (half == DType::BF16 ? ".bf16" : ".fp16");
    bool shared = madeByCpu(src.name, base, half, w.shape) &&
                  llvm::none_of(P.weights, [&](const kir::Weight &x) { return x.name == base; });
    w.name = shared ? base : codegen::freshWeightName(P, Exported, base);
    if (WithData && !shared) {
      const Weight *data = Exported.findWeight(src.name);
      if (!data || data->dtype() != DType::F32 || data->bytes().size() != 4 * src.numel())
        return llvm::createStringError(
            fmt::format("half-weights: the program has no f32 data for weight \"{}\"", src.name));
      const uint8_t *bytes = data->bytes().data();
      auto out = std::make_shared<std::vector<uint16_t>>(src.numel());
      for (size_t i = 0; i < out->size(); ++i) {
        float x;
        std::memcpy(&x, bytes + 4 * i, 4);
        (*out)[i] = half == DType::BF16 ? floatToBFloat16(x) : floatToHalf(x);
      }
      llvm::ArrayRef<uint8_t> view(reinterpret_cast<const uint8_t *>(out->data()),
                                   out->size() * sizeof(uint16_t));
      Exported.weights.emplace_back(
          w.name, half, std::vector<int64_t>(w.shape.begin(), w.shape.end()), view, std::move(out));
    }
    P.weights.push_back(w);
    uint32_t index = P.weights.size() - 1;
    Made[{source, half}] = index;
    // The copy holds the original, rounded.
    kir::Weight &original = P.weights[source];
    int64_t rows = original.shape.empty() ? 1 : original.shape[0];
    if (!original.heldBy && original.numel() > 0 && rows > 0)
      original.heldBy =
          kir::HeldWeight{index, rows, static_cast<int64_t>(original.numel()) / rows, 0, 0};
    return index;
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
