// Winograd F(4x4, 3x3) and F(2x2, 3x3): a 3x3 stride-1 padded f32 convolution with a constant
// filter, at least 64 output channels, maps of at least 25 tiles and 64 (4x4 tiles) or 128 (2x2)
// input channels lowers to the input transform kernels, one batched GEMM of 36 or 16 over the
// filter's transform, and the output transform holding the bias and the pointwise ops after it;
// the results match the reference interpreter (fused and unfused); other shapes keep the direct
// GEMM.
#include "KernelTestUtil.h"

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

namespace aotc {
namespace {

using test::Dims;
using test::expectMatches;
using test::lower;
using test::prepare;
using test::printed;

struct Steps {
  unsigned loops = 0, gemms = 0, winograd = 0;
  std::string program;
};

Steps steps(const std::string &text, LowerOptions options = {},
            const kir::TargetInfo &target = cpu::loweringTarget()) {
  Steps c;
  auto g = prepare(text);
  if (!g)
    return c;
  auto p = lowerToKernels(*g, target, options);
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return c;
  }
  kir::planMemory(*p, g->shapeEnv().facts());
  c.program = printed(*p);
  for (const kir::Step &s : p->entries[0].steps) {
    if (std::holds_alternative<kir::LoopKernel>(s)) {
      ++c.loops;
    } else if (const auto *g = std::get_if<kir::GemmCall>(&s)) {
      ++c.gemms;
      c.winograd += g->a.winogradTile != 0;
    }
  }
  return c;
}

/// A convolution of `x` [batch, cin, h, w] by the parameter "conv.weight" [cout, cin, 3, 3] with
/// `attrs`, then bias, relu and a residual add of the input "r".
std::string convGraph(int64_t cin, int64_t cout, const std::string &h, const std::string &w,
                      const std::string &oh, const std::string &ow, const std::string &attrs,
                      const std::string &dims = "dim batch in 1..3\ndim h in 2..10 divisible by 2\n") {
  return fmt::format(R"(graph @t opset 1.0
{0}
parameter "conv.weight" : f32[{2}, {1}, 3, 3]
parameter "conv.bias" : f32[{2}]
entry @f(%0 : f32[batch, {1}, {3}, {4}] = input "x", %1 : f32[batch, {2}, {5}, {6}] = input "r", %2 : f32[{2}, {1}, 3, 3] = parameter "conv.weight", %3 : f32[{2}] = parameter "conv.bias") {{
  %4 = aten.convolution(%0, %2, %3) {{{7}, dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1}} : f32[batch, {2}, {5}, {6}]
  %5 = aten.relu(%4) : f32[batch, {2}, {5}, {6}]
  %6 = aten.add.Tensor(%5, %1) : f32[batch, {2}, {5}, {6}]
  return %6 as output "y"
}}
)",
                     dims, cin, cout, h, w, oh, ow, attrs);
}

const std::string Padded = "stride = [1, 1], padding = [1, 1]";

// Each output sums 128 x 9 products of unit-variance values (magnitude ~30): fp32 rounding alone
// reaches 2e-5 there, the direct GEMM's as much as Winograd's (measured: 2.1e-5 and 2.4e-5).
constexpr double Tolerance = 1e-4;

// Maps of at least 25 tiles (10 x 10) take Winograd.
const std::string Dims10 = "dim batch in 1..3\ndim h in 10..16 divisible by 2\n";

TEST(Winograd, BiasReluResidualMatchTheInterpreter) {
  std::string text = convGraph(128, 64, "h", "10", "h", "10", Padded, Dims10);
  expectMatches(text, {{{"batch", 1}, {"h", 10}}, {{"batch", 3}, {"h", 12}}, {{"batch", 2}, {"h", 16}}},
                Tolerance);
  Steps s = steps(text);
  // The input transform's rows, padding and columns, the GEMM, the output transform with the
  // epilogue.
  EXPECT_EQ(s.gemms, 1u) << s.program;
  EXPECT_EQ(s.winograd, 1u) << s.program;
  EXPECT_EQ(s.loops, 4u) << s.program;
  EXPECT_NE(s.program.find("gemm winograd_gemm_"), std::string::npos) << s.program;
  EXPECT_NE(s.program.find("f32 batch 16 m 64 n 5*batch*floordiv(h, 2) k 128"), std::string::npos)
      << s.program;
  EXPECT_NE(s.program.find("kernel add_relu_conv_"), std::string::npos) << s.program;
}

TEST(Winograd, OddMapsMatchTheInterpreter) {
  // An odd width and a height of either parity: the last tiles overhang the map, their outputs
  // past it are dropped (the last tile column in a kernel of its own).
  std::string text = convGraph(128, 64, "h", "11", "h", "11", Padded,
                               "dim batch in 1..3\ndim h in 9..13\n");
  expectMatches(text, {{{"batch", 1}, {"h", 9}}, {{"batch", 2}, {"h", 10}}, {{"batch", 3}, {"h", 13}}},
                Tolerance);
  Steps s = steps(text);
  EXPECT_EQ(s.winograd, 1u) << s.program;
  EXPECT_EQ(s.loops, 5u) << s.program;
  EXPECT_NE(s.program.find("min(((i2 * 2) + 1), (h - 1))"), std::string::npos) << s.program;
}

TEST(Winograd, TwoTileColumns) {
  // w = 4: two tile columns, both next to the padding.
  std::string text = convGraph(128, 64, "26", "4", "26", "4", Padded, "dim batch in 1..3\n");
  expectMatches(text, {{{"batch", 1}}, {{"batch", 2}}}, Tolerance);
  EXPECT_EQ(steps(text).winograd, 1u);
}

// F(4x4, 3x3) rounds more than F(2x2, 3x3) (its transforms scale by up to 8 and 1/24): on these
// sums of 576 unit-variance products (magnitude ~24) it errs by up to 2.8e-4, about 1e-5 of their
// scale, where the direct GEMM errs by 2e-5.
constexpr double Tolerance4 = 5e-4;

TEST(Winograd, FourByFourTilesMatchTheInterpreter) {
  // 20 x 20 maps hold 25 tiles of 4 x 4: F(4x4, 3x3), 36 products; 64 input channels suffice.
  std::string text = convGraph(64, 64, "20", "20", "20", "20", Padded, "dim batch in 1..3\n");
  expectMatches(text, {{{"batch", 1}}, {{"batch", 2}}}, Tolerance4);
  Steps s = steps(text);
  EXPECT_EQ(s.winograd, 1u) << s.program;
  EXPECT_NE(s.program.find("f32 batch 36 m 64 n 25*batch k 64"), std::string::npos) << s.program;
  EXPECT_NE(s.program.find("winograd F(4x4, 3x3) of"), std::string::npos) << s.program;
  // 18 x 18 and 19 x 18: the last tiles overhang by 2 rows and columns, or 1 row and 2 columns.
  for (const char *h : {"18", "19"}) {
    std::string odd = convGraph(64, 64, h, "18", h, "18", Padded, "dim batch in 1..3\n");
    expectMatches(odd, {{{"batch", 2}}}, Tolerance4);
    Steps o = steps(odd);
    EXPECT_NE(o.program.find("f32 batch 36 m 64 n 25*batch k 64"), std::string::npos) << o.program;
  }
}

// The tile sizes and thresholds are the target's: lowering for a target without F(4x4, 3x3)
// keeps a 64-channel convolution direct (F(2x2, 3x3) needs 128 input channels on this one), and
// a target without Winograd keeps every convolution direct.
TEST(Winograd, TheTargetDecides) {
  std::string text = convGraph(64, 64, "20", "20", "20", "20", Padded, "dim batch in 1..3\n");
  kir::TargetInfo no4 = cpu::loweringTarget();
  no4.winograd4MinInChannels = int64_t(1) << 40;
  Steps s = steps(text, {}, no4);
  EXPECT_EQ(s.winograd, 0u) << s.program;
  EXPECT_EQ(s.gemms, 1u) << s.program;
  std::string wide = convGraph(128, 64, "20", "20", "20", "20", Padded, "dim batch in 1..3\n");
  s = steps(wide, {}, no4);
  EXPECT_NE(s.program.find("winograd F(2x2, 3x3) of"), std::string::npos) << s.program;
  kir::TargetInfo none = cpu::loweringTarget();
  none.winogradMinOutChannels = 0;
  EXPECT_EQ(steps(wide, {}, none).winograd, 0u);
}

TEST(Winograd, OptionOff) {
  LowerOptions off;
  off.winograd = false;
  Steps s = steps(convGraph(128, 64, "h", "10", "h", "10", Padded, Dims10), off);
  EXPECT_EQ(s.gemms, 1u) << s.program;
  EXPECT_EQ(s.winograd, 0u) << s.program;
  EXPECT_EQ(s.loops, 0u) << s.program;
}

TEST(Winograd, OtherShapesKeepTheDirectGemm) {
  struct Case {
    const char *why;
    std::string text;
  };
  std::vector<Case> cases = {
      {"few tiles (7 x 7: 16)", convGraph(128, 64, "7", "7", "7", "7", Padded, "dim batch in 1..3\n")},
      {"maybe few tiles", convGraph(128, 64, "h", "10", "h", "10", Padded)},
      {"odd and thin: a third of the tiles' area overhangs",
       convGraph(128, 64, "h", "3", "h", "3", Padded, "dim batch in 1..3\ndim h in 40..60\n")},
      {"stride 2", convGraph(128, 64, "20", "20", "10", "10", "stride = [2, 2], padding = [1, 1]",
                             "dim batch in 1..3\n")},
      {"no padding", convGraph(128, 64, "14", "14", "12", "12", "stride = [1, 1], padding = [0, 0]",
                               "dim batch in 1..3\n")},
      {"few input channels", convGraph(64, 64, "h", "10", "h", "10", Padded, Dims10)},
      {"few output channels", convGraph(128, 32, "h", "10", "h", "10", Padded, Dims10)},
  };
  for (const Case &c : cases) {
    Steps s = steps(c.text);
    EXPECT_EQ(s.winograd, 0u) << c.why << "\n" << s.program;
    EXPECT_EQ(s.gemms, 1u) << c.why << "\n" << s.program;
  }
}

TEST(Winograd, FilterFromAnInputKeepsTheDirectGemm) {
  // pack-weights computes the transform at compile time: a filter known only at run time cannot
  // have it.
  const char *text = R"(graph @t opset 1.0
dim batch in 1..3
entry @f(%0 : f32[batch, 128, 10, 10] = input "x", %1 : f32[64, 128, 3, 3] = input "w") {
  %2 = aten.convolution(%0, %1, none) {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 64, 10, 10]
  return %2 as output "y"
}
)";
  Steps s = steps(text);
  EXPECT_EQ(s.winograd, 0u) << s.program;
}

TEST(Winograd, FilterTransform) {
  // U = G g G^T against the definition, on a filter of distinct values, for both tile sizes.
  const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  const double G4[6][3] = {{1.0 / 4, 0, 0},          {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                           {-1.0 / 6, 1.0 / 6, -1.0 / 6}, {1.0 / 24, 1.0 / 12, 1.0 / 6},
                           {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
  float g[9], u[36];
  for (int i = 0; i < 9; ++i)
    g[i] = 0.25f * static_cast<float>(i * i) - 1.5f;
  for (int tile : {2, 4}) {
    int p = tile + 2;
    kir::winogradFilter(tile, g, u);
    for (int a = 0; a < p; ++a)
      for (int b = 0; b < p; ++b) {
        double want = 0;
        for (int r = 0; r < 3; ++r)
          for (int s = 0; s < 3; ++s)
            want += (tile == 2 ? G2[a][r] * G2[b][s] : G4[a][r] * G4[b][s]) * g[r * 3 + s];
        EXPECT_NEAR(u[a * p + b], want, 1e-6 * std::max(1.0, std::abs(want)))
            << tile << ": " << a << "," << b;
      }
  }
}

// A filter the artifact stores only as its transform (pack-weights' Winograd panels) comes back
// from it to within the transform's rounding, for `aotc verify`; panels and dense layouts come
// back exactly.
TEST(Winograd, HeldWeightsUnpack) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t m = 13, k = 5;
  for (int tile : {0, 2, 4})
    for (unsigned panelRows : {0u, 12u}) {
      int taps = tile ? 9 : 1;
      int components = tile ? (tile + 2) * (tile + 2) : 1;
      kir::HeldWeight held{0, m, k, panelRows, tile};
      std::vector<float> weight(m * k * taps);
      for (float &x : weight)
        x = dist(rng);
      // The holder as pack-weights lays it out; padding rows of panels stay zero.
      std::vector<float> holder(components * held.componentStride(), 0.0f);
      for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < k; ++c) {
          float u[36];
          if (tile)
            kir::winogradFilter(tile, &weight[(r * k + c) * 9], u);
          else
            u[0] = weight[r * k + c];
          int64_t pos = panelRows ? kir::panelOffset(r, c, k, panelRows) : r * k + c;
          for (int b = 0; b < components; ++b)
            holder[b * held.componentStride() + pos] = u[b];
        }
      std::vector<float> back(weight.size(), std::nanf(""));
      kir::unpackHeldWeight(held, holder.data(), back.data());
      for (size_t i = 0; i < weight.size(); ++i) {
        if (!tile)
          ASSERT_EQ(back[i], weight[i]) << panelRows << " " << i;
        else
          ASSERT_NEAR(back[i], weight[i], 4e-7) << tile << " " << panelRows << " " << i;
      }
    }
}

// bf16-weights' k-pair panels of a B operand K x N, as runtime.h documents them: ((n / C) * P +
// k / 2) * 2C + (n % C) * 2 + k % 2 with P = ceil(K / 2) rounded up to C / 2. Every element has
// a place of its own inside the holder, and a held weight finds its elements there read as
// [k, n] (Conv1D) or transposed (nn.Linear's [n, k]).
TEST(PairPanels, LayoutAndHeldWeights) {
  for (auto [kDim, nDim, cols] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 32},
                                  {7, 33, 32},
                                  {16, 32, 32},
                                  {33, 70, 32},
                                  {48, 16, 8}}) {
    int64_t wordRows = ((kDim + 1) / 2 + cols / 2 - 1) / (cols / 2) * (cols / 2);
    ASSERT_EQ(kir::pairPanelWordRows(kDim, cols), wordRows);
    int64_t size = kir::pairPanelElements(kDim, nDim, cols);
    ASSERT_EQ(size, (nDim + cols - 1) / cols * wordRows * cols * 2);
    std::vector<int> seen(size, 0);
    for (int64_t kk = 0; kk < kDim; ++kk)
      for (int64_t n = 0; n < nDim; ++n) {
        int64_t at = kir::pairPanelOffset(kk, n, kDim, cols);
        ASSERT_EQ(at, ((n / cols) * wordRows + kk / 2) * 2 * cols + (n % cols) * 2 + kk % 2);
        ASSERT_GE(at, 0);
        ASSERT_LT(at, size);
        ASSERT_EQ(seen[at]++, 0) << kk << "," << n;
        kir::HeldWeight plain{0, kDim, nDim, 0, 0, unsigned(cols), false};
        kir::HeldWeight transposed{0, nDim, kDim, 0, 0, unsigned(cols), true};
        ASSERT_EQ(plain.position(kk, n), at);
        ASSERT_EQ(transposed.position(n, kk), at);
        ASSERT_EQ(plain.componentStride(), size);
        ASSERT_EQ(transposed.componentStride(), size);
      }
  }
}

} // namespace
} // namespace aotc
