// pack-weights: constant GEMM A operands re-laid out as the register tile reads them, once, at
// compile time (see PackWeights.h).
#include "codegen/cpu/PackWeights.h"
#include "aotc/tensor/HostTensor.h"
#include "codegen/DerivedWeights.h"
#include "codegen/cpu/CpuTarget.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/STLExtras.h"

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <memory>
#include <tuple>

namespace aotc::cpu {

namespace {

struct Addressing {
  uint32_t weight;
  int64_t offset, rowStride, colStride, m, k;
  int winograd = 0; // F(t x t, 3x3): the filter's transform, else the operand as it is
  bool panels = true;
  bool bf16 = false; // a bf16 filter (bf16-weights) whose transform is stored dense in bf16
  auto key() const {
    return std::tie(weight, offset, rowStride, colStride, m, k, winograd, panels, bf16);
  }
  bool operator<(const Addressing &o) const { return key() < o.key(); }
  // The packed weight `holder`'s layout of the operand.
  kir::HeldWeight layout(uint32_t holder) const {
    return kir::HeldWeight{holder, m, k, panels ? unsigned(PanelRows) : 0u, winograd};
  }
  // Components: (t + 2)^2 for a Winograd filter.
  int64_t batch() const { return layout(0).components(); }
  int64_t panelCount() const { return (m + PanelRows - 1) / PanelRows; }
  // Elements per component in the packed weight.
  int64_t stride() const { return layout(0).componentStride(); }
};

// Whether the GEMM reads an A of m rows as panels (its blocked path) rather than in place; `aCs`
// is A's column stride as it is read now.
bool readsPanels(const kir::GemmCall &g, int64_t m, int64_t aCs) {
  bool dotShaped = !g.b.conv && g.b.rowStride.constant() == 1 && aCs == 1;
  return gemmPath(m, dotShaped) == GemmPath::Blocked;
}

class Packer {
public:
  Packer(kir::Program &p, ExportedProgram &e, bool withData)
      : P(p), Exported(e), WithData(withData) {}

  llvm::Error run() {
    if (llvm::Error e = kir::forEachGemm(P, [&](kir::EntryKernels &entry, kir::GemmCall &g) {
          if (llvm::Error e = gemm(entry, g))
            return e;
          return gemmB(entry, g);
        }))
      return e;
    // A Winograd transform that holds its whole filter is derived from it at load: the filter
    // is 9 / (t+2)^2 of its size. The others are packed here.
    llvm::BitVector derives(P.weights.size());
    for (const kir::Weight &w : P.weights)
      if (w.heldBy && w.heldBy->winogradTile)
        derives.set(w.heldBy->holder);
    std::vector<std::pair<uint32_t, Addressing>> made;
    for (const auto &[at, index] : Made)
      made.emplace_back(index, at);
    llvm::sort(made, llvm::less_first());
    for (const auto &[index, at] : made) {
      kir::Weight &w = P.weights[index];
      w.derived = derives.test(index);
      if (WithData && !w.derived)
        if (llvm::Error err = pack(at, P.weights[at.weight].name, w))
          return err;
    }
    if (WithData)
      for (const auto &[at, index] : MadeB)
        if (llvm::Error err = packB(at, P.weights[index]))
          return err;
    // The loop kernels that read a weight which f32 panels now hold (an embedding table tied to
    // the LM head) read the panels, so that the blob stores it once.
    llvm::BitVector operands = codegen::operandWeights(P);
    codegen::readFromHolders(P, [&](uint32_t weight) {
      const kir::Weight &w = P.weights[weight];
      return w.heldBy && w.heldBy->panelRows && !w.heldBy->winogradTile && !w.mutableBuffer &&
             !operands.test(weight) && P.weights[w.heldBy->holder].dtype == DType::F32 &&
             !P.weights[w.heldBy->holder].derived;
    });
    return llvm::Error::success();
  }

private:
  // The constant addressing of A; null (or an error for a Winograd filter, which has to be
  // computed here) when A is not an immutable f32 weight read at constant offsets.
  llvm::Expected<std::optional<Addressing>> packable(const kir::EntryKernels &entry,
                                                     const kir::GemmCall &g) {
    const kir::MatrixOperand &a = g.a;
    const kir::Buffer &buf = entry.buffers[a.buffer];
    auto m = g.m.constant(), k = g.k.constant(), off = a.offset.constant(),
         bs = a.batchStride.constant(), rs = a.rowStride.constant(), cs = a.colStride.constant();
    bool weight = g.dtype == DType::F32 && buf.kind == kir::Buffer::Kind::Weight && m && k && off &&
                  rs && cs && *m >= 1 && *k >= 1;
    bool constant = weight && buf.dtype == DType::F32, bf16 = buf.dtype == DType::BF16;
    if (a.winogradTile) {
      // bf16-weights rounded the filter of a bf16 GEMM: its transform is rounded too, dense, as
      // the bf16 kernels read A.
      bool filter = constant || (weight && bf16 && g.precision == kir::Precision::BF16);
      int64_t components = (a.winogradTile + 2) * (a.winogradTile + 2);
      if (!filter || g.batch.constant() != components)
        return llvm::createStringError(fmt::format(
            "pack-weights: GEMM {} reads a Winograd filter that is not a constant weight", g.name));
      return Addressing{
          buf.index, *off, *rs, *cs, *m, *k, a.winogradTile, !bf16 && readsPanels(g, *m, *cs),
          bf16};
    }
    if (!constant || a.conv || a.panelRows || !bs || *bs != 0 || !readsPanels(g, *m, *cs))
      return std::nullopt;
    return Addressing{buf.index, *off, *rs, *cs, *m, *k};
  }

  llvm::Error gemm(kir::EntryKernels &entry, kir::GemmCall &g) {
    auto at = packable(entry, g);
    if (!at)
      return at.takeError();
    if (!*at)
      return llvm::Error::success();
    kir::MatrixOperand a;
    a.buffer = codegen::addWeightBuffer(entry, P, packed(**at));
    a.offset = 0;
    a.batchStride = (*at)->winograd ? (*at)->stride() : 0;
    a.rowStride = (*at)->panels ? 0 : (*at)->k;
    a.colStride = (*at)->panels ? 0 : 1;
    a.panelRows = (*at)->panels ? PanelRows : 0;
    g.a = a;
    return llvm::Error::success();
  }

  // A B operand of constant addressing, k x n.
  struct BAddressing {
    uint32_t weight;
    int64_t offset, rowStride, colStride, k, n;
    auto key() const { return std::tie(weight, offset, rowStride, colStride, k, n); }
    bool operator<(const BAddressing &o) const { return key() < o.key(); }
    int64_t panels() const { return (n + PanelCols - 1) / PanelCols; }
  };

  // A B that is an immutable f32 weight read at constant addressing, at batch 1 and at least one
  // panel wide (nn.Linear's [n, k] weight, Conv1D's [k, n]): the blocked path would pack it into
  // panels at every call (transposing nn.Linear's), and the dot products read a transposed one
  // at a lower rate than the register tile, so it is stored as PanelCols-column panels, which
  // every path reads in place.
  llvm::Error gemmB(kir::EntryKernels &entry, kir::GemmCall &g) {
    kir::MatrixOperand &op = g.b;
    const kir::Buffer &buf = entry.buffers[op.buffer];
    auto k = g.k.constant(), n = g.n.constant(), off = op.offset.constant(),
         rs = op.rowStride.constant(), cs = op.colStride.constant();
    if (g.dtype != DType::F32 || buf.kind != kir::Buffer::Kind::Weight || buf.dtype != DType::F32 ||
        P.weights[buf.index].mutableBuffer || op.conv || op.panelRows || op.pairPanelCols ||
        op.panelCols || op.winogradTile || g.batch.constant() != 1 || !k || !n || !off || !rs ||
        !cs || *k < 1 || *n < PanelCols || *off < 0 || *rs < 0 || *cs < 0)
      return llvm::Error::success();
    BAddressing at{buf.index, *off, *rs, *cs, *k, *n};
    const kir::Weight &src = P.weights[at.weight];
    int64_t last = at.offset + (at.k - 1) * at.rowStride + (at.n - 1) * at.colStride;
    if (last >= static_cast<int64_t>(src.numel()))
      return llvm::createStringError(fmt::format(
          "pack-weights: a GEMM reads weight \"{}\" past its {} elements", src.name, src.numel()));
    kir::MatrixOperand b;
    b.buffer = codegen::addWeightBuffer(entry, P, packedB(at));
    b.offset = 0;
    b.batchStride = 0;
    b.rowStride = 0;
    b.colStride = 0;
    b.panelCols = PanelCols;
    op = b;
    return llvm::Error::success();
  }

  // The index of the B panels of `at`, made on first use (their data once all are made).
  uint32_t packedB(const BAddressing &at) {
    if (auto it = MadeB.find(at); it != MadeB.end())
      return it->second;
    const kir::Weight &src = P.weights[at.weight];
    kir::Weight w;
    w.name = codegen::freshWeightName(P, Exported, src.name + ".panels");
    w.shape = {at.panels(), at.k, PanelCols};
    P.weights.push_back(w);
    uint32_t index = P.weights.size() - 1;
    MadeB[at] = index;
    // The panels hold the source when B reads it whole, as nn.Linear's [n, k] (panels of its
    // rows) or as Conv1D's [k, n] (of its transpose's rows). (A bf16 copy holds nothing at
    // fp32; pack-weights runs after bf16-weights.)
    kir::Weight &source = P.weights[at.weight];
    bool whole = at.offset == 0 && static_cast<uint64_t>(at.n * at.k) == source.numel();
    if (!source.heldBy && whole && at.rowStride == 1 && at.colStride == at.k)
      source.heldBy = kir::HeldWeight{index, at.n, at.k, unsigned(PanelCols)};
    else if (!source.heldBy && whole && at.colStride == 1 && at.rowStride == at.n)
      source.heldBy = kir::HeldWeight{index, at.k, at.n, unsigned(PanelCols), 0, 0, true};
    return index;
  }

  // Appends the data of the B panels `packed`: element (r, c) of `at` at
  // panelOffset(c, r, k, PanelCols), the columns past n zero.
  llvm::Error packB(const BAddressing &at, const kir::Weight &packed) {
    const std::string &source = P.weights[at.weight].name;
    const Weight *data = Exported.findWeight(source);
    if (!data || data->bytes().size() != 4 * P.weights[at.weight].numel())
      return llvm::createStringError(
          fmt::format("pack-weights: the program has no f32 data for weight \"{}\"", source));
    auto out = std::make_shared<std::vector<float>>(packed.numel(), 0.0f);
    const uint8_t *bytes = data->bytes().data();
    for (int64_t c = 0; c < at.n; ++c)
      for (int64_t r = 0; r < at.k; ++r)
        std::memcpy(&(*out)[kir::panelOffset(c, r, at.k, PanelCols)],
                    bytes + sizeof(float) * (at.offset + r * at.rowStride + c * at.colStride),
                    sizeof(float));
    append(packed, std::move(out));
    return llvm::Error::success();
  }

  // The index of the packed weight for `at`, made on first use (its data once all are made).
  uint32_t packed(const Addressing &at) {
    if (auto it = Made.find(at); it != Made.end())
      return it->second;
    const kir::Weight &src = P.weights[at.weight];
    std::string suffix = at.winograd ? ".winograd" : ".panels";
    std::string name = codegen::freshWeightName(P, Exported, src.name + suffix);
    kir::Weight w;
    w.name = name;
    w.dtype = at.bf16 ? DType::BF16 : DType::F32;
    if (at.panels)
      w.shape = {at.panelCount(), at.k, PanelRows};
    else
      w.shape = {at.m, at.k};
    if (at.winograd)
      w.shape.insert(w.shape.begin(), at.batch());
    P.weights.push_back(w);
    uint32_t index = P.weights.size() - 1;
    Made[at] = index;
    // The packed weight holds all of the source when the operand reads it whole, row-major;
    // a copy as it is (panels) beats a transform, from which the source comes back rounded.
    kir::Weight &source = P.weights[at.weight];
    kir::HeldWeight held = at.layout(index);
    int64_t taps = held.taps();
    // A bf16 copy (bf16-weights) holds it rounded.
    bool better = !source.heldBy || (source.heldBy->winogradTile && !at.winograd) ||
                  P.weights[source.heldBy->holder].dtype == DType::BF16;
    if (better && at.offset == 0 && at.colStride == taps && at.rowStride == at.k * taps &&
        static_cast<uint64_t>(at.m * at.k * taps) == source.numel())
      source.heldBy = held;
    return index;
  }

  // Appends the data of `packed` to the exported program: `source` read at `at` (each 3x3 filter
  // transformed, for a Winograd operand), as panels or dense; a bf16 source's transform is
  // rounded to bf16 (from the f32 transform of the widened filter, as derive.c computes it).
  llvm::Error pack(const Addressing &at, const std::string &source, const kir::Weight &packed) {
    const Weight *data = Exported.findWeight(source);
    size_t elementBytes = at.bf16 ? sizeof(uint16_t) : sizeof(float);
    if (!data || data->dtype() != (at.bf16 ? DType::BF16 : DType::F32))
      return llvm::createStringError(
          fmt::format("pack-weights: the program has no data for weight \"{}\"", source));
    int64_t numel = static_cast<int64_t>(data->bytes().size() / elementBytes);
    int64_t taps = at.layout(0).taps();
    int64_t last = at.offset + (at.m - 1) * at.rowStride + (at.k - 1) * at.colStride + taps - 1;
    if (at.offset < 0 || at.rowStride < 0 || at.colStride < 0 || last >= numel)
      return llvm::createStringError(fmt::format(
          "pack-weights: a GEMM operand reads weight \"{}\" past its {} elements", source, numel));
    const uint8_t *bytes = data->bytes().data();
    auto element = [&](int64_t i) {
      if (!at.bf16) {
        float x;
        std::memcpy(&x, bytes + sizeof(float) * i, sizeof x);
        return x;
      }
      uint16_t x;
      std::memcpy(&x, bytes + sizeof(uint16_t) * i, sizeof x);
      return bfloat16ToFloat(x);
    };
    std::vector<float> out(packed.numel(), 0.0f);
    for (int64_t r = 0; r < at.m; ++r)
      for (int64_t c = 0; c < at.k; ++c) {
        float in[9], u[36];
        for (int64_t t = 0; t < taps; ++t)
          in[t] = element(at.offset + r * at.rowStride + c * at.colStride + t);
        if (at.winograd)
          kir::winogradFilter(at.winograd, in, u);
        else
          u[0] = in[0];
        int64_t pos = at.panels ? kir::panelOffset(r, c, at.k, PanelRows) : r * at.k + c;
        for (int64_t b = 0; b < at.batch(); ++b)
          out[b * at.stride() + pos] = u[b];
      }
    if (!at.bf16) {
      append(packed, std::make_shared<std::vector<float>>(std::move(out)));
      return llvm::Error::success();
    }
    auto rounded = std::make_shared<std::vector<uint16_t>>(out.size());
    llvm::transform(out, rounded->begin(), floatToBFloat16);
    append(packed, std::move(rounded));
    return llvm::Error::success();
  }

  // Appends `data` to the exported program as the weight `packed`'s.
  template <typename T>
  void append(const kir::Weight &packed, std::shared_ptr<std::vector<T>> data) {
    llvm::ArrayRef<uint8_t> view(reinterpret_cast<const uint8_t *>(data->data()),
                                 data->size() * sizeof(T));
    Exported.weights.emplace_back(packed.name, packed.dtype,
                                  std::vector<int64_t>(packed.shape.begin(), packed.shape.end()),
                                  view, std::move(data));
  }

  kir::Program &P;
  ExportedProgram &Exported;
  bool WithData;
  std::map<Addressing, uint32_t> Made;
  std::map<BAddressing, uint32_t> MadeB;
};

} // namespace

llvm::Error packGemmWeights(kir::Program &program, ExportedProgram &exported, bool withData) {
  return Packer(program, exported, withData).run();
}

} // namespace aotc::cpu
