// bf16-weights: constant GEMM B operands stored in bf16 at --precision bf16 (see Bf16Weights.h).
#include "codegen/cpu/Bf16Weights.h"
#include "aotc/tensor/HostTensor.h"
#include "codegen/cpu/DerivedWeights.h"

#include "llvm/ADT/STLExtras.h"

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <memory>

namespace aotc::cpu {

namespace {

class Rounder {
public:
  Rounder(kir::Program &p, ExportedProgram &e, bool withData)
      : P(p), Exported(e), WithData(withData) {}

  llvm::Error run() {
    return kir::forEachGemm(
        P, [&](kir::EntryKernels &entry, kir::GemmCall &g) { return gemm(entry, g); });
  }

private:
  llvm::Error gemm(kir::EntryKernels &entry, kir::GemmCall &g) {
    if (g.dtype != DType::F32 || g.precision != kir::Precision::BF16)
      return llvm::Error::success();
    auto isF32Weight = [&](const kir::MatrixOperand &o) {
      const kir::Buffer &src = entry.buffers[o.buffer];
      return src.kind == kir::Buffer::Kind::Weight && src.dtype == DType::F32 && !o.conv &&
             !o.panelRows && !o.winogradTile;
    };
    // Batched GEMMs fold several images' columns into one packed block, which reads a bf16 B
    // nowhere.
    if (isF32Weight(g.b) && g.batch.constant() == 1)
      return round(entry, g.b);
    // A weight as A (a convolution's filter) when B is not one.
    if (isF32Weight(g.a) && entry.buffers[g.b.buffer].kind != kir::Buffer::Kind::Weight)
      return round(entry, g.a);
    return llvm::Error::success();
  }

  // Points `operand` at its weight's bf16 copy.
  llvm::Error round(kir::EntryKernels &entry, kir::MatrixOperand &operand) {
    auto weight = rounded(entry.buffers[operand.buffer].index);
    if (!weight)
      return weight.takeError();
    // One buffer per entry and weight.
    auto it = llvm::find_if(entry.buffers, [&](const kir::Buffer &b) {
      return b.kind == kir::Buffer::Kind::Weight && b.index == *weight;
    });
    operand.buffer =
        it != entry.buffers.end() ? it - entry.buffers.begin() : addWeightBuffer(entry, P, *weight);
    return llvm::Error::success();
  }

  // The index of weight `source`'s bf16 copy, made on first use.
  llvm::Expected<uint32_t> rounded(uint32_t source) {
    if (auto it = Made.find(source); it != Made.end())
      return it->second;
    const kir::Weight &src = P.weights[source];
    std::string name = freshWeightName(P, Exported, src.name + ".bf16");
    kir::Weight w;
    w.name = name;
    w.dtype = DType::BF16;
    w.shape = src.shape;
    if (WithData) {
      const Weight *data = Exported.findWeight(src.name);
      if (!data || data->dtype() != DType::F32 || data->bytes().size() != 4 * src.numel())
        return llvm::createStringError(fmt::format(
            "bf16-weights: the program has no f32 data of {} elements for weight \"{}\"",
            src.numel(), src.name));
      auto out = std::make_shared<std::vector<uint16_t>>(src.numel());
      const uint8_t *bytes = data->bytes().data();
      for (size_t i = 0; i < out->size(); ++i) {
        float x;
        std::memcpy(&x, bytes + 4 * i, 4);
        (*out)[i] = floatToBFloat16(x);
      }
      llvm::ArrayRef<uint8_t> view(reinterpret_cast<const uint8_t *>(out->data()),
                                   out->size() * sizeof(uint16_t));
      Exported.weights.emplace_back(
          name, DType::BF16, std::vector<int64_t>(w.shape.begin(), w.shape.end()), view, out);
    }
    P.weights.push_back(w);
    uint32_t index = P.weights.size() - 1;
    Made[source] = index;
    // The copy holds the original, rounded: where no kernel reads the f32 any more, the
    // artifact stores the bf16 only (pack-weights prefers an exact holder, panels, made later).
    kir::Weight &original = P.weights[source];
    if (!original.heldBy && original.numel() > 0) {
      int64_t rows = original.shape.empty() ? 1 : original.shape[0];
      if (rows > 0)
        original.heldBy =
            kir::HeldWeight{index, rows, static_cast<int64_t>(original.numel()) / rows, 0, 0};
    }
    return index;
  }

  kir::Program &P;
  ExportedProgram &Exported;
  bool WithData;
  std::map<uint32_t, uint32_t> Made;
};

} // namespace

llvm::Error storeBf16Weights(kir::Program &program, ExportedProgram &exported, bool withData) {
  return Rounder(program, exported, withData).run();
}

} // namespace aotc::cpu
