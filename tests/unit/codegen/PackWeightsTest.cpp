// pack-weights against the GEMM dispatch policy: a constant A is packed exactly where the
// generated code takes the blocked path (the only one that reads panels), and the packed weight
// holds A's elements where kir::panelOffset says; Winograd transforms that the runtime derives at
// load are the ones pack-weights would compute.
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

// One entry computing out[m, n] = w[m, k] @ x, x given as [n, k] (both contiguous along k: the
// dot path's shape) or as [k, n].
std::unique_ptr<Packed> packed(int64_t m, int64_t k, bool bAlongK) {
  const int64_t n = 5;
  auto p = std::make_unique<Packed>();
  kir::Weight w;
  w.name = "w";
  w.shape = {m, k};
  p->program.weights.push_back(w);
  auto data = std::make_shared<std::vector<float>>(m * k);
  for (int64_t i = 0; i < m * k; ++i)
    (*data)[i] = static_cast<float>(i);
  llvm::ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t *>(data->data()),
                                data->size() * sizeof(float));
  p->exported.weights.emplace_back("w", DType::F32, std::vector<int64_t>{m, k}, bytes, data);

  kir::EntryKernels &e = p->program.entries.emplace_back();
  e.name = "f";
  e.buffers.push_back({kir::Buffer::Kind::Weight, DType::F32, 0, m * k, {}, "w"});
  e.buffers.push_back({kir::Buffer::Kind::Input, DType::F32, 0, n * k, {}, "x"});
  e.buffers.push_back({kir::Buffer::Kind::Output, DType::F32, 0, m * n, {}, "y"});
  kir::GemmCall g;
  g.name = "gemm";
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = {0, 0, 0, k, 1};
  g.b = bAlongK ? kir::MatrixOperand{1, 0, 0, 1, k} : kir::MatrixOperand{1, 0, 0, n, 1};
  g.out = 2;
  e.steps.push_back(g);
  if (llvm::Error err = packGemmWeights(p->program, p->exported)) {
    ADD_FAILURE() << llvm::toString(std::move(err));
    return nullptr;
  }
  return p;
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
