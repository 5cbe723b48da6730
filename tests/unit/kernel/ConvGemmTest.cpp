// Convolution as GEMM: f32 convolutions with groups 1 lower to one batched GemmCall whose B is
// the input itself (1x1 stride-1 unpadded filters) or an im2col view of it (other 1-d and 2-d
// filters; no im2col buffer) and whose epilogue holds the bias and the pointwise ops after it; the
// results match the reference interpreter, fused and unfused.
#include "KernelTestUtil.h"

namespace aotc {
namespace {

using test::Dims;
using test::expectMatches;
using test::lower;
using test::prepare;
using test::printed;

const std::vector<Dims> Batches = {{{"batch", 1}}, {{"batch", 2}}, {{"batch", 5}}};

struct Counts {
  unsigned loops = 0, gemms = 0, im2col = 0, views = 0;
};

/// Steps of the fused lowering of `text`, with the loop kernels named im2col and the GEMMs reading
/// B through a conv window counted apart.
Counts counts(const std::string &text, std::string *program = nullptr) {
  Counts c;
  auto g = prepare(text);
  if (!g)
    return c;
  auto p = lower(*g);
  if (!p)
    return c;
  if (program)
    *program = printed(*p);
  for (const kir::Step &s : p->entries[0].steps) {
    if (const auto *k = std::get_if<kir::LoopKernel>(&s)) {
      ++c.loops;
      c.im2col += k->name.find("im2col") != std::string::npos;
    } else if (const auto *g = std::get_if<kir::GemmCall>(&s)) {
      ++c.gemms;
      c.views += g->b.conv.has_value();
    }
  }
  return c;
}

/// Expects the fused lowering of `text` to have `gemms` GEMMs, `views` of them reading B through a
/// conv window, and `loops` loop kernels.
void expectSteps(const std::string &text, unsigned gemms, unsigned views, unsigned loops) {
  std::string p;
  Counts c = counts(text, &p);
  EXPECT_EQ(c.gemms, gemms) << p;
  EXPECT_EQ(c.views, views) << p;
  EXPECT_EQ(c.loops, loops) << p;
}

// A 3x3 padded conv, bias, relu and a residual add: one GEMM gathering the input through its
// window, with everything else in its epilogue.
const char *const Conv3x3Residual = R"(graph @t opset 1.0
dim batch in 1..8
entry @f(%0 : f32[batch, 16, 10, 9] = input "x", %1 : f32[16, 16, 3, 3] = input "w", %2 : f32[16] = input "bias") {
  %3 = aten.convolution(%0, %1, %2) {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 16, 10, 9]
  %4 = aten.relu(%3) : f32[batch, 16, 10, 9]
  %5 = aten.add.Tensor(%4, %0) : f32[batch, 16, 10, 9]
  return %5 as output "y"
}
)";

TEST(ConvGemm, Conv3x3BiasReluResidual) {
  expectMatches(Conv3x3Residual, Batches, 1e-5);
  std::string p;
  Counts c = counts(Conv3x3Residual, &p);
  EXPECT_EQ(c.gemms, 1u) << p;
  EXPECT_EQ(c.views, 1u) << p;
  EXPECT_EQ(c.loops, 0u) << p; // relu and add live in the epilogue
  EXPECT_NE(p.find("im2col in 10x9 kernel 3x3 stride 1x1 pad 1x1 dilation 1x1 out width 9"),
            std::string::npos)
      << p;
}

// 1x1 stride 1 without padding: the input is B as it is, no im2col copy.
const char *const Conv1x1 = R"(graph @t opset 1.0
dim batch in 1..8
entry @f(%0 : f32[batch, 12, 7, 6] = input "x", %1 : f32[16, 12, 1, 1] = input "w", %2 : f32[16] = input "bias") {
  %3 = aten.convolution(%0, %1, %2) {stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 16, 7, 6]
  %4 = aten.relu(%3) : f32[batch, 16, 7, 6]
  return %4 as output "y"
}
)";

TEST(ConvGemm, Conv1x1UsesInputDirectly) {
  expectMatches(Conv1x1, Batches, 1e-5);
  expectSteps(Conv1x1, 1, 0, 0);
}

// The downsample of a residual block: 1x1 stride 2 (the window gathers), without bias.
TEST(ConvGemm, Conv1x1Stride2NoBias) {
  const char *text = R"(graph @t opset 1.0
dim batch in 1..8
entry @f(%0 : f32[batch, 8, 9, 8] = input "x", %1 : f32[16, 8, 1, 1] = input "w") {
  %2 = aten.convolution(%0, %1, none) {stride = [2, 2], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 16, 5, 4]
  return %2 as output "y"
}
)";
  expectMatches(text, Batches, 1e-5);
  expectSteps(text, 1, 1, 0);
}

// Stride, padding and dilation that differ per dim, a rectangular filter and a wide k.
TEST(ConvGemm, StridedDilatedRectangular) {
  const char *text = R"(graph @t opset 1.0
dim batch in 1..8
entry @f(%0 : f32[batch, 6, 13, 11] = input "x", %1 : f32[17, 6, 3, 2] = input "w", %2 : f32[17] = input "bias") {
  %3 = aten.convolution(%0, %1, %2) {stride = [2, 1], padding = [2, 1], dilation = [2, 3], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 17, 7, 10]
  %4 = aten.sigmoid(%3) : f32[batch, 17, 7, 10]
  return %4 as output "y", %3 as output "pre"
}
)";
  expectMatches(text, Batches, 1e-5);
  std::string p;
  Counts c = counts(text, &p);
  EXPECT_EQ(c.gemms, 1u) << p;
  EXPECT_EQ(c.views, 1u) << p;
}

// A 1-d convolution takes the same path.
TEST(ConvGemm, Conv1d) {
  const char *text = R"(graph @t opset 1.0
dim batch in 1..8
entry @f(%0 : f32[batch, 7, 20] = input "x", %1 : f32[16, 7, 5] = input "w", %2 : f32[16] = input "bias") {
  %3 = aten.convolution(%0, %1, %2) {stride = [3], padding = [2], dilation = [1], transposed = false, output_padding = [0], groups = 1} : f32[batch, 16, 7]
  return %3 as output "y"
}
)";
  expectMatches(text, Batches, 1e-5);
  expectSteps(text, 1, 1, 0);
}

std::string conv2d(int cin, int h, int w, int cout, int kh, int kw, int sh, int sw, int ph, int pw,
                   int dh, int dw, bool bias) {
  int oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1,
      ow = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
  return fmt::format(R"(graph @t opset 1.0
dim batch in 1..8
entry @f(%0 : f32[batch, {0}, {1}, {2}] = input "x", %1 : f32[{3}, {0}, {4}, {5}] = input "w"{14}) {{
  %3 = aten.convolution(%0, %1, {15}) {{stride = [{6}, {7}], padding = [{8}, {9}], dilation = [{10}, {11}], transposed = false, output_padding = [0, 0], groups = 1}} : f32[batch, {3}, {12}, {13}]
  return %3 as output "y"
}}
)",
                     cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow,
                     bias ? fmt::format(", %2 : f32[{}] = input \"bias\"", cout) : "",
                     bias ? "%2" : "none");
}

// The window's edges: padding wider than the filter's reach (whole rows and columns of zeros),
// strides past the filter (skipped input), an input smaller than the filter, odd sizes that
// leave partial register tiles and packing panels. k stays small: the evaluator sums in f32, so
// its error against the double interpreter grows with k (GemmTest covers long k).
TEST(ConvGemm, WindowEdges) {
  struct Case {
    int cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw;
  };
  const Case cases[] = {
      {3, 7, 5, 16, 3, 3, 1, 1, 3, 2, 1, 1},   {5, 9, 11, 19, 2, 2, 3, 3, 0, 0, 1, 1},
      {2, 2, 3, 16, 3, 3, 1, 1, 1, 1, 1, 1},   {4, 13, 6, 33, 3, 1, 2, 1, 1, 0, 3, 1},
      {1, 17, 15, 16, 7, 7, 2, 2, 3, 3, 1, 1}, {4, 6, 7, 21, 3, 3, 1, 2, 1, 1, 2, 1},
      {1, 1, 40, 16, 1, 5, 1, 4, 0, 2, 1, 2},
  };
  for (const Case &c : cases) {
    for (bool bias : {false, true}) {
      std::string text =
          conv2d(c.cin, c.h, c.w, c.cout, c.kh, c.kw, c.sh, c.sw, c.ph, c.pw, c.dh, c.dw, bias);
      SCOPED_TRACE(text);
      expectMatches(text, Batches, 1e-5);
      Counts n = counts(text);
      EXPECT_EQ(n.gemms, 1u);
      EXPECT_EQ(n.views, 1u);
    }
  }
}

// A convolution reading a strided view (a channel slice of a wider tensor, at an offset): the
// window takes the view's strides and offset, no copy.
TEST(ConvGemm, SlicedInput) {
  const char *text = R"(graph @t opset 1.0
dim batch in 1..8
entry @f(%0 : f32[batch, 9, 8, 7] = input "x", %1 : f32[16, 4, 3, 3] = input "w") {
  %2 = aten.slice.Tensor(%0) {dim = 1, start = 3, end = 7} : f32[batch, 4, 8, 7]
  %3 = aten.convolution(%2, %1, none) {stride = [2, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 16, 4, 7]
  return %3 as output "y"
}
)";
  expectMatches(text, Batches, 1e-5);
  expectSteps(text, 1, 1, 0);
}

// Grouped convolutions and those with few output channels keep the direct loops.
TEST(ConvGemm, GroupedAndTinyStayDirect) {
  const char *grouped = R"(graph @t opset 1.0
dim batch in 1..8
entry @f(%0 : f32[batch, 8, 6, 6] = input "x", %1 : f32[8, 1, 3, 3] = input "w") {
  %2 = aten.convolution(%0, %1, none) {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 8} : f32[batch, 8, 6, 6]
  return %2 as output "y"
}
)";
  expectMatches(grouped, Batches, 1e-5);
  EXPECT_EQ(counts(grouped).gemms, 0u);
  const char *tiny = R"(graph @t opset 1.0
dim batch in 1..8
entry @f(%0 : f32[batch, 1, 6, 6] = input "x", %1 : f32[2, 1, 2, 2] = input "w") {
  %2 = aten.convolution(%0, %1, none) {stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 2, 5, 5]
  return %2 as output "y"
}
)";
  expectMatches(tiny, Batches, 1e-5);
  EXPECT_EQ(counts(tiny).gemms, 0u);
}

// The smallest conv taking the GEMM path (16 output channels) and one short of it.
TEST(ConvGemm, ChannelThreshold) {
  auto text = [](int cout) {
    return fmt::format(R"(graph @t opset 1.0
dim batch in 1..8
entry @f(%0 : f32[batch, 4, 6, 6] = input "x", %1 : f32[{0}, 4, 3, 3] = input "w") {{
  %2 = aten.convolution(%0, %1, none) {{stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1}} : f32[batch, {0}, 4, 4]
  return %2 as output "y"
}}
)",
                       cout);
  };
  expectMatches(text(16), Batches, 1e-5);
  EXPECT_EQ(counts(text(16)).gemms, 1u);
  EXPECT_EQ(counts(text(15)).gemms, 0u);
}

// ResNet's stem at a large batch range: no im2col buffer, so the batch range does not matter.
TEST(ConvGemm, LargeBatchRangeStaysGemm) {
  const char *text = R"(graph @t opset 1.0
dim batch in 1..100000
entry @f(%0 : f32[batch, 3, 224, 224] = input "x", %1 : f32[64, 3, 7, 7] = input "w") {
  %2 = aten.convolution(%0, %1, none) {stride = [2, 2], padding = [3, 3], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 64, 112, 112]
  return %2 as output "y"
}
)";
  expectSteps(text, 1, 1, 0);
}

// A window whose 32-bit plane offsets cannot be proved (spatial dims up to 100000) falls back to
// an im2col copy; one that could outgrow the arena bound keeps the direct loops.
TEST(ConvGemm, UnprovableWindowStaysDirect) {
  const char *text = R"(graph @t opset 1.0
dim side in 3..100000
entry @f(%0 : f32[1, 8, side, side] = input "x", %1 : f32[16, 8, 3, 3] = input "w") {
  %2 = aten.convolution(%0, %1, none) {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[1, 16, side, side]
  return %2 as output "y"
}
)";
  std::string p;
  Counts c = counts(text, &p);
  EXPECT_EQ(c.gemms, 0u) << p;
  EXPECT_EQ(c.loops, 1u) << p;
}

} // namespace
} // namespace aotc
