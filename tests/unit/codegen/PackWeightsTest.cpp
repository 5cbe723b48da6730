// pack-weights against the GEMM dispatch policy: a constant A is packed exactly where the
// generated code takes the blocked path (the only one that reads panels), and the packed weight
// holds A's elements where kir::panelOffset says; Winograd transforms that the runtime derives at
// load are the ones pack-weights would compute.
#include "codegen/cpu/PackWeights.h"
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
// every handle of one set of weights shares them.
TEST(PackWeights, WinogradFiltersDerivedAtLoadAreTheExportsTransforms) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const int64_t m = 13, k = 5;
  aotc_pool *pool = nullptr;
  ASSERT_EQ(aotc_pool_create(2, &pool), AOTC_OK);
  for (int tile : {2, 4})
    for (unsigned panelRows : {0u, 12u, 6u}) {
      SCOPED_TRACE(testing::Message() << "F(" << tile << "), panels of " << panelRows);
      kir::HeldWeight held{1, m, k, panelRows, tile};
      const int64_t holderFloats = held.components() * held.componentStride();
      std::vector<float> filters(m * k * 9);
      for (float &x : filters)
        x = dist(rng);
      const int64_t shape[4] = {m, k, 3, 3}, holderShape[1] = {holderFloats};
      // The filter, stored at 0 of the blob, and the holder, at 64 of the derived weights.
      aotc_weight_desc weights[2] = {};
      for (aotc_weight_desc &w : weights) {
        w.dtype = AOTC_DTYPE_F32;
        w.held_by = -1;
      }
      weights[0].name = "w";
      weights[0].rank = 4;
      weights[0].shape = shape;
      weights[0].nbytes = filters.size() * sizeof(float);
      weights[0].held_by = 1;
      weights[0].held_winograd_tile = tile;
      weights[0].held_rows = m;
      weights[0].held_cols = k;
      weights[0].held_panel_rows = panelRows;
      weights[1].name = "w.winograd";
      weights[1].rank = 1;
      weights[1].shape = holderShape;
      weights[1].offset = 64;
      weights[1].nbytes = holderFloats * sizeof(float);
      weights[1].derived = 1;
      aotc_artifact_desc desc = {};
      desc.num_weights = 2;
      desc.weights = weights;
      desc.derived_size = 64 + holderFloats * sizeof(float);
      const uint8_t *blob = reinterpret_cast<const uint8_t *>(filters.data());
      const uint8_t *derived = nullptr, *again = nullptr;
      ASSERT_EQ(aotc_derived_acquire(&desc, blob, 0, pool, 2, &derived), AOTC_OK);
      ASSERT_EQ(aotc_derived_acquire(&desc, blob, 0, pool, 2, &again), AOTC_OK);
      EXPECT_EQ(derived, again);
      const float *holder = reinterpret_cast<const float *>(derived + 64);
      std::vector<float> want(holderFloats, 0.0f);
      for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < k; ++c) {
          float u[36];
          kir::winogradFilter(tile, &filters[(r * k + c) * 9], u);
          for (int b = 0; b < held.components(); ++b)
            want[b * held.componentStride() + held.position(r, c)] = u[b];
        }
      for (int64_t i = 0; i < holderFloats; ++i)
        ASSERT_EQ(std::memcmp(&holder[i], &want[i], sizeof(float)), 0)
            << "element " << i << ": " << holder[i] << " against " << want[i];
      aotc_derived_release(again);
      aotc_derived_release(derived);
    }
  aotc_pool_destroy(pool);
}
