// pack-weights against the GEMM dispatch policy: a constant A is packed exactly where the
// generated code takes the blocked path (the only one that reads panels), and the packed weight
// holds A's elements where kir::panelOffset says; Winograd transforms that the runtime derives at
// load are the ones pack-weights would compute; a constant B, either way round, is stored as the
// panels every path reads and holds the weight.
#include "codegen/cpu/PackWeights.h"
#include "aotc/tensor/HostTensor.h"
#include "codegen/cpu/CpuTarget.h"

#include "../../../runtime/src/internal.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

using namespace aotc;
using namespace aotc::cpu;

namespace {

struct Packed {
  kir::Program program;
  ExportedProgram exported;
};

// One entry computing y = a @ b, m x n x k, where one operand is the weight "w" of `shape`
// (element i is i; buffer 0), the other the input "x" (buffer 1).
std::unique_ptr<Packed> oneGemm(std::vector<int64_t> shape, int64_t m, int64_t n, int64_t k,
                                kir::MatrixOperand a, kir::MatrixOperand b) {
  auto p = std::make_unique<Packed>();
  kir::Weight w;
  w.name = "w";
  w.shape.assign(shape.begin(), shape.end());
  p->program.weights.push_back(w);
  auto data = std::make_shared<std::vector<float>>(w.numel());
  for (size_t i = 0; i < data->size(); ++i)
    (*data)[i] = static_cast<float>(i);
  llvm::ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t *>(data->data()),
                                data->size() * sizeof(float));
  p->exported.weights.emplace_back("w", DType::F32, shape, bytes, data);

  kir::EntryKernels &e = p->program.entries.emplace_back();
  e.name = "f";
  int64_t inputs = a.buffer == 1 ? m * k : k * n;
  e.buffers.push_back({kir::Buffer::Kind::Weight, DType::F32, 0, int64_t(w.numel()), {}, "w", {}});
  e.buffers.push_back({kir::Buffer::Kind::Input, DType::F32, 0, inputs, {}, "x", {}});
  e.buffers.push_back({kir::Buffer::Kind::Output, DType::F32, 0, m * n, {}, "y", {}});
  kir::GemmCall g;
  g.name = "gemm";
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a;
  g.b = b;
  g.out = 2;
  e.steps.push_back(g);
  if (llvm::Error err = packGemmWeights(p->program, p->exported)) {
    ADD_FAILURE() << llvm::toString(std::move(err));
    return nullptr;
  }
  return p;
}

// out[m, n] = w[m, k] @ x, x given as [n, k] (both contiguous along k: the dot path's shape) or
// as [k, n].
std::unique_ptr<Packed> packed(int64_t m, int64_t k, bool bAlongK) {
  const int64_t n = 5;
  return oneGemm({m, k}, m, n, k, {0, 0, 0, k, 1},
                 bAlongK ? kir::MatrixOperand{1, 0, 0, 1, k} : kir::MatrixOperand{1, 0, 0, n, 1});
}

const kir::GemmCall &gemmOf(const Packed &p) {
  return std::get<kir::GemmCall>(p.program.entries[0].steps[0]);
}

TEST(PackWeights, PacksWhereTheBlockedPathRuns) {
  for (bool alongK : {false, true})
    for (int64_t m : {1, 8, 9, 12, 16, 64, 65, 128, 129, 300}) {
      auto p = packed(m, 7, alongK);
      ASSERT_TRUE(p);
      bool blocked = gemmPath(m, alongK) == GemmPath::Blocked;
      EXPECT_EQ(gemmOf(*p).a.panelRows != 0, blocked) << "m " << m << " along k " << alongK;
      EXPECT_EQ(p->program.weights.size(), blocked ? 2u : 1u);
    }
}

TEST(PackWeights, PolicyBoundaries) {
  EXPECT_EQ(gemmPath(GemmPolicy::SmallM, false), GemmPath::Small);
  EXPECT_EQ(gemmPath(GemmPolicy::SmallM + 1, false), GemmPath::Blocked);
  EXPECT_EQ(gemmPath(1, true), GemmPath::Dot);
  EXPECT_EQ(gemmPath(GemmPolicy::DotMaxM, true), GemmPath::Dot);
  EXPECT_EQ(gemmPath(GemmPolicy::DotMaxM + 1, true), GemmPath::Blocked);
}

TEST(PackWeights, PanelsHoldTheWeightWherePanelOffsetSays) {
  const int64_t m = 30, k = 7;
  auto p = packed(m, k, false);
  ASSERT_TRUE(p);
  const kir::GemmCall &g = gemmOf(*p);
  ASSERT_EQ(g.a.panelRows, PanelRows);
  const Weight *w = p->exported.findWeight("w.panels");
  ASSERT_TRUE(w);
  // ceil(30 / 12) = 3 panels of 12 rows; rows 30..35 are zero.
  ASSERT_EQ(w->bytes().size(), sizeof(float) * 3 * PanelRows * k);
  const float *panels = reinterpret_cast<const float *>(w->bytes().data());
  for (int64_t r = 0; r < 3 * PanelRows; ++r)
    for (int64_t c = 0; c < k; ++c)
      EXPECT_EQ(panels[kir::panelOffset(r, c, k, PanelRows)], r < m ? float(r * k + c) : 0.0f)
          << r << ", " << c;
}

// out[m, n] = x[m, k] @ B with B a constant weight: nn.Linear's [n, k] (linear) or Conv1D's
// [k, n].
std::unique_ptr<Packed> packedB(int64_t k, int64_t n, bool linear) {
  const int64_t m = 3;
  return oneGemm(linear ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, m, n, k,
                 {1, 0, 0, k, 1},
                 linear ? kir::MatrixOperand{0, 0, 0, 1, k} : kir::MatrixOperand{0, 0, 0, n, 1});
}

// A constant B is stored as PanelCols-column panels, B's (r, c) at panelOffset(c, r, k,
// PanelCols) with the columns past n zero, whichever way the weight lies; the panels hold the
// weight (transposed for Conv1D's [k, n]: the panels are its transpose's rows), which
// unpackHeldWeight recovers exactly. B narrower than a panel stays.
TEST(PackWeights, BPanelsHoldLinearAndConv1DWeights) {
  const int64_t k = 7;
  for (bool linear : {true, false})
    for (int64_t n : {int64_t(PanelCols), int64_t(PanelCols) + 5, 3 * int64_t(PanelCols)}) {
      SCOPED_TRACE(testing::Message() << (linear ? "[n, k]" : "[k, n]") << " n " << n);
      auto p = packedB(k, n, linear);
      ASSERT_TRUE(p);
      const kir::GemmCall &g = gemmOf(*p);
      ASSERT_EQ(g.b.panelCols, PanelCols);
      ASSERT_EQ(p->program.weights.size(), 2u);
      const kir::Weight &source = p->program.weights[0];
      ASSERT_TRUE(source.heldBy);
      const kir::HeldWeight &held = *source.heldBy;
      EXPECT_EQ(held.holder, 1u);
      EXPECT_EQ(held.transposed, !linear);
      EXPECT_EQ(held.m, source.shape[0]);
      EXPECT_EQ(held.k, source.shape[1]);
      const Weight *w = p->exported.findWeight("w.panels");
      ASSERT_TRUE(w);
      int64_t panels = (n + PanelCols - 1) / PanelCols;
      ASSERT_EQ(w->bytes().size(), sizeof(float) * panels * PanelCols * k);
      ASSERT_EQ(held.componentStride(), panels * PanelCols * k);
      const float *holder = reinterpret_cast<const float *>(w->bytes().data());
      for (int64_t c = 0; c < panels * PanelCols; ++c)
        for (int64_t r = 0; r < k; ++r) {
          float want = c >= n ? 0.0f : linear ? float(c * k + r) : float(r * n + c);
          ASSERT_EQ(holder[kir::panelOffset(c, r, k, PanelCols)], want) << r << ", " << c;
        }
      std::vector<float> back(k * n);
      kir::unpackHeldWeight(held, holder, back.data());
      for (int64_t i = 0; i < k * n; ++i)
        ASSERT_EQ(back[i], float(i)) << "element " << i;
    }
  auto narrow = packedB(k, PanelCols - 1, false);
  ASSERT_TRUE(narrow);
  EXPECT_EQ(gemmOf(*narrow).b.panelCols, 0u);
  EXPECT_EQ(narrow->program.weights.size(), 1u);
}

} // namespace

// The runtime derives a Winograd filter's transforms at load (runtime/src/derive.c) bit for bit
// as kir::winogradFilter computes them, where kir::panelOffset puts them, with zero padding rows;
// every handle of one set of weights shares them. A bf16 filter (bf16-weights' copy at
// --precision bf16) gives a dense bf16 holder: the f32 transform of the widened filter, rounded
// to the nearest even as floatToBFloat16 rounds, which is what pack-weights would store.
TEST(PackWeights, WinogradFiltersDerivedAtLoadAreTheExportsTransforms) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const int64_t m = 13, k = 5;
  aotc_pool *pool = nullptr;
  ASSERT_EQ(aotc_pool_create(2, &pool), AOTC_OK);
  struct Case {
    int tile;
    unsigned panelRows;
    bool bf16;
  };
  std::vector<Case> cases;
  for (int tile : {2, 4}) {
    for (unsigned panelRows : {0u, 12u, 6u})
      cases.push_back({tile, panelRows, false});
    cases.push_back({tile, 0, true});
  }
  for (const Case &cs : cases) {
    SCOPED_TRACE(testing::Message() << "F(" << cs.tile << "), panels of " << cs.panelRows
                                    << (cs.bf16 ? ", bf16" : ", f32"));
    kir::HeldWeight held{1, m, k, cs.panelRows, cs.tile};
    const int64_t holderElements = held.components() * held.componentStride();
    const size_t size = cs.bf16 ? sizeof(uint16_t) : sizeof(float);
    // The filters as the blob stores them, and as the transform reads them.
    std::vector<float> filters(m * k * 9);
    std::vector<uint8_t> blob(filters.size() * size);
    for (size_t i = 0; i < filters.size(); ++i) {
      float x = dist(rng);
      if (cs.bf16) {
        uint16_t h = floatToBFloat16(x);
        std::memcpy(&blob[i * size], &h, size);
        x = bfloat16ToFloat(h);
      } else {
        std::memcpy(&blob[i * size], &x, size);
      }
      filters[i] = x;
    }
    const int64_t shape[4] = {m, k, 3, 3}, holderShape[1] = {holderElements};
    // The filter, stored at 0 of the blob, and the holder, at 64 of the derived weights.
    aotc_weight_desc weights[2] = {};
    for (aotc_weight_desc &w : weights) {
      w.dtype = cs.bf16 ? AOTC_DTYPE_BF16 : AOTC_DTYPE_F32;
      w.held_by = -1;
    }
    weights[0].name = "w";
    weights[0].rank = 4;
    weights[0].shape = shape;
    weights[0].nbytes = blob.size();
    weights[0].held_by = 1;
    weights[0].held_winograd_tile = cs.tile;
    weights[0].held_rows = m;
    weights[0].held_cols = k;
    weights[0].held_panel_rows = cs.panelRows;
    weights[1].name = "w.winograd";
    weights[1].rank = 1;
    weights[1].shape = holderShape;
    weights[1].offset = 64;
    weights[1].nbytes = holderElements * size;
    weights[1].derived = 1;
    aotc_artifact_desc desc = {};
    desc.num_weights = 2;
    desc.weights = weights;
    desc.derived_size = 64 + holderElements * size;
    const uint8_t *derived = nullptr, *again = nullptr;
    ASSERT_EQ(aotc_derived_acquire(&desc, blob.data(), 0, pool, 2, &derived), AOTC_OK);
    ASSERT_EQ(aotc_derived_acquire(&desc, blob.data(), 0, pool, 2, &again), AOTC_OK);
    EXPECT_EQ(derived, again);
    std::vector<float> want(holderElements, 0.0f);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < k; ++c) {
        float u[36];
        kir::winogradFilter(cs.tile, &filters[(r * k + c) * 9], u);
        for (int b = 0; b < held.components(); ++b)
          want[b * held.componentStride() + held.position(r, c)] = u[b];
      }
    for (int64_t i = 0; i < holderElements; ++i) {
      if (cs.bf16) {
        uint16_t got, rounded = floatToBFloat16(want[i]);
        std::memcpy(&got, derived + 64 + i * size, size);
        ASSERT_EQ(got, rounded) << "element " << i << " of " << want[i];
      } else {
        ASSERT_EQ(std::memcmp(derived + 64 + i * size, &want[i], size), 0)
            << "element " << i << " against " << want[i];
      }
    }
    aotc_derived_release(again);
    aotc_derived_release(derived);
  }
  aotc_pool_destroy(pool);
}
