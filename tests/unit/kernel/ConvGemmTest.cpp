// Convolution as GEMM: f32 convolutions with groups 1 lower to an im2col loop kernel (or none for
// 1x1 stride-1 unpadded filters) and a batched GemmCall whose epilogue holds the bias and the
// pointwise ops after it; the results match the reference interpreter, fused and unfused.
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
  unsigned loops = 0, gemms = 0, im2col = 0;
};

/// Steps of the fused lowering of `text`, with the loop kernels named im2col counted apart.
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
    } else {
      ++c.gemms;
    }
  }
  return c;
}

// A 3x3 padded conv, bias, relu and a residual add: im2col, then one GEMM with everything else
// in its epilogue.
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
  EXPECT_EQ(c.im2col, 1u) << p;
  EXPECT_EQ(c.loops, 1u) << p; // relu and add live in the epilogue
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
  std::string p;
  Counts c = counts(Conv1x1, &p);
  EXPECT_EQ(c.gemms, 1u) << p;
  EXPECT_EQ(c.loops, 0u) << p;
}

// The downsample of a residual block: 1x1 stride 2 (im2col gathers), without bias.
TEST(ConvGemm, Conv1x1Stride2NoBias) {
  const char *text = R"(graph @t opset 1.0
dim batch in 1..8
entry @f(%0 : f32[batch, 8, 9, 8] = input "x", %1 : f32[16, 8, 1, 1] = input "w") {
  %2 = aten.convolution(%0, %1, none) {stride = [2, 2], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 16, 5, 4]
  return %2 as output "y"
}
)";
  expectMatches(text, Batches, 1e-5);
  std::string p;
  Counts c = counts(text, &p);
  EXPECT_EQ(c.gemms, 1u) << p;
  EXPECT_EQ(c.im2col, 1u) << p;
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
  EXPECT_EQ(counts(text).gemms, 1u);
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

// An im2col buffer that could outgrow the arena bound at the top of the batch range keeps the
// direct loops.
TEST(ConvGemm, HugeIm2colStaysDirect) {
  const char *text = R"(graph @t opset 1.0
dim batch in 1..100000
entry @f(%0 : f32[batch, 8, 16, 16] = input "x", %1 : f32[16, 8, 3, 3] = input "w") {
  %2 = aten.convolution(%0, %1, none) {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 16, 16, 16]
  return %2 as output "y"
}
)";
  EXPECT_EQ(counts(text).gemms, 0u);
}

} // namespace
} // namespace aotc
