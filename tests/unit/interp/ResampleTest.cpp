// pad, interpolation and transposed convolution against hand-computed values: the three pad
// modes (negative constant padding crops), nearest and nearest-exact with and without a given
// scale, linear, bilinear and bicubic with align_corners both ways, size-1 inputs and outputs,
// and the one-line errors of bad modes, ranks, sizes and scales.
#include "InterpTestUtil.h"

using namespace aotc;
using namespace aotc::test;

namespace {

TEST(Resample, PadConstantWithValueAndCrop) {
  HostTensor x = iota(DType::F32, {1, 2, 3});
  expectTensor(runOp("aten.pad(%0) {pad = [1, 2], value = 0.5} : f32[1, 2, 6]", {x}), DType::F32,
               {1, 2, 6}, {0.5, 0, 1, 2, 0.5, 0.5, 0.5, 3, 4, 5, 0.5, 0.5});
  // A negative pad crops; the pairs count from the last dim, and ints are padded with zeros.
  HostTensor m = iota(DType::I64, {2, 3});
  expectTensor(runOp("aten.pad(%0) {pad = [-1, 1]} : i64[2, 3]", {m}), DType::I64, {2, 3},
               {1, 2, 0, 4, 5, 0});
  expectTensor(runOp("aten.pad(%0) {pad = [0, 0, 1, 0]} : i64[3, 3]", {m}), DType::I64, {3, 3},
               {0, 0, 0, 0, 1, 2, 3, 4, 5});
  // A size-1 dim padded to 3, and a dim cropped to nothing.
  HostTensor one = f32({1, 1}, {7});
  expectTensor(runOp("aten.pad(%0) {pad = [1, 1], value = -1.0} : f32[1, 3]", {one}), DType::F32,
               {1, 3}, {-1, 7, -1});
  expectTensor(runOp("aten.pad(%0) {pad = [-1, 0]} : f32[1, 0]", {one}), DType::F32, {1, 0}, {});
}

TEST(Resample, PadReflectAndReplicate) {
  HostTensor x = iota(DType::F32, {1, 1, 4});
  expectTensor(runOp("aten.pad(%0) {pad = [2, 3], mode = \"reflect\"} : f32[1, 1, 9]", {x}),
               DType::F32, {1, 1, 9}, {2, 1, 0, 1, 2, 3, 2, 1, 0});
  HostTensor m = iota(DType::F32, {1, 2, 3});
  expectTensor(runOp("aten.pad(%0) {pad = [1, 1, 1, 0], mode = \"reflect\"} : f32[1, 3, 5]", {m}),
               DType::F32, {1, 3, 5}, {4, 3, 4, 5, 4, 1, 0, 1, 2, 1, 4, 3, 4, 5, 4});
  HostTensor r = iota(DType::I64, {1, 3});
  expectTensor(runOp("aten.pad(%0) {pad = [2, 1], mode = \"replicate\"} : i64[1, 6]", {r}),
               DType::I64, {1, 6}, {0, 0, 0, 1, 2, 2});
  // Replicating a size-1 dim copies its one element.
  HostTensor one = f32({1, 1, 1}, {7});
  expectTensor(
      runOp("aten.pad(%0) {pad = [0, 0, 1, 1], mode = \"replicate\"} : f32[1, 3, 1]", {one}),
      DType::F32, {1, 3, 1}, {7, 7, 7});
}

TEST(Resample, PadErrors) {
  HostTensor x = iota(DType::F32, {1, 1, 3});
  EXPECT_EQ(
      metaError("aten.pad(%0) {pad = [3, 0], mode = \"reflect\"} : f32[1, 1, 6]", {x}),
      "aten.pad: reflect padding (3, 0) must be smaller than dim 2 (3) of input f32[1, 1, 3]");
  EXPECT_EQ(metaError("aten.pad(%0) {pad = [1, 1], mode = \"circular\"} : f32[1, 1, 5]", {x}),
            "aten.pad: mode must be 'constant', 'reflect' or 'replicate', got 'circular'");
  EXPECT_EQ(metaError("aten.pad(%0) {pad = [1, 1, 1]} : f32[1, 1, 5]", {x}),
            "aten.pad: pad needs (left, right) pairs, got 3 values");
  EXPECT_EQ(metaError("aten.pad(%0) {pad = [1, 1, 1, 1, 1, 1, 1, 1]} : f32[1, 1, 5]", {x}),
            "aten.pad: pad has 4 pairs for input f32[1, 1, 3] of 3 dims");
  EXPECT_EQ(metaError("aten.pad(%0) {pad = [1, 1], mode = \"replicate\"} : f32[5]",
                      {f32({3}, {0, 1, 2})}),
            "aten.pad: replicate padding of 1 dims needs a 2-d or 3-d input, got f32[3]");
  EXPECT_EQ(metaError("aten.pad(%0) {pad = [-1, 0], mode = \"reflect\"} : f32[1, 1, 2]", {x}),
            "aten.pad: reflect padding must be non-negative, got -1 and 0 for dim 2");
  EXPECT_EQ(metaError("aten.pad(%0) {pad = [-2, -2]} : f32[1, 1, 0]", {x}),
            "aten.pad: padding (-2, -2) leaves dim 2 of input f32[1, 1, 3] with a negative size");
  EXPECT_EQ(
      metaError("aten.pad(%0) {pad = [1, 1], mode = \"reflect\", value = 1.0} : f32[1, 1, 5]", {x}),
      "aten.pad: a value is only for constant padding, not reflect");
}

TEST(Resample, NearestAndNearestExact) {
  HostTensor x = iota(DType::F32, {1, 1, 3});
  // scale 3/5: floor(o * 0.6) and floor((o + 0.5) * 0.6).
  expectTensor(runOp("aten.upsample_nearest1d(%0) {output_size = [5]} : f32[1, 1, 5]", {x}),
               DType::F32, {1, 1, 5}, {0, 0, 1, 1, 2});
  expectTensor(runOp("aten._upsample_nearest_exact1d(%0) {output_size = [5]} : f32[1, 1, 5]", {x}),
               DType::F32, {1, 1, 5}, {0, 0, 1, 2, 2});
  // Downsampling 4 -> 2 picks 0, 2 (nearest) and 1, 3 (nearest-exact); i64 is copied exactly.
  HostTensor four = iota(DType::I64, {1, 1, 4});
  expectTensor(runOp("aten.upsample_nearest1d(%0) {output_size = [2]} : i64[1, 1, 2]", {four}),
               DType::I64, {1, 1, 2}, {0, 2});
  expectTensor(
      runOp("aten._upsample_nearest_exact1d(%0) {output_size = [2]} : i64[1, 1, 2]", {four}),
      DType::I64, {1, 1, 2}, {1, 3});
  // A given scale factor 1.7 maps with 1 / 1.7, not 4 / 6: sources 0, 0, 1, 1, 2, 2 instead of
  // 0, 0, 1, 2, 2, 3.
  expectTensor(
      runOp("aten.upsample_nearest1d(%0) {output_size = [6], scales = 1.7} : i64[1, 1, 6]", {four}),
      DType::I64, {1, 1, 6}, {0, 0, 1, 1, 2, 2});
  expectTensor(runOp("aten.upsample_nearest1d(%0) {output_size = [6]} : i64[1, 1, 6]", {four}),
               DType::I64, {1, 1, 6}, {0, 0, 1, 2, 2, 3});
  // Twice the size repeats each element, in both dims.
  HostTensor sq = iota(DType::F32, {1, 1, 2, 2});
  expectTensor(runOp("aten.upsample_nearest2d(%0) {output_size = [4, 4]} : f32[1, 1, 4, 4]", {sq}),
               DType::F32, {1, 1, 4, 4}, {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3});
  // A size-1 input fills the output; a size-1 output takes the first element.
  expectTensor(runOp("aten.upsample_nearest2d(%0) {output_size = [1, 3]} : f32[1, 1, 1, 3]", {sq}),
               DType::F32, {1, 1, 1, 3}, {0, 0, 1});
  expectTensor(runOp("aten.upsample_nearest1d(%0) {output_size = [3]} : f32[1, 1, 3]",
                     {f32({1, 1, 1}, {5})}),
               DType::F32, {1, 1, 3}, {5, 5, 5});
}

TEST(Resample, LinearAlignCornersBothWays) {
  HostTensor x = f32({1, 1, 2}, {0, 10});
  // align_corners = false: source (o + 0.5) / 2 - 0.5 clamped at 0: 0, 0.25, 0.75, 1.
  expectTensor(
      runOp("aten.upsample_linear1d(%0) {output_size = [4], align_corners = false} : f32[1, 1, 4]",
            {x}),
      DType::F32, {1, 1, 4}, {0, 2.5, 7.5, 10});
  // align_corners = true: source o / 3.
  expectTensor(
      runOp("aten.upsample_linear1d(%0) {output_size = [4], align_corners = true} : f32[1, 1, 4]",
            {x}),
      DType::F32, {1, 1, 4}, {0, 10.0 / 3, 20.0 / 3, 10}, 1e-5);
  // A given scale 1.6 maps with 1 / 1.6: sources 0, 0.4375, 1.0625 (clamped to the last).
  expectTensor(runOp("aten.upsample_linear1d(%0) {output_size = [3], align_corners = false, "
                     "scales = 1.6} : f32[1, 1, 3]",
                     {x}),
               DType::F32, {1, 1, 3}, {0, 4.375, 10});
  // Size-1 input and size-1 output.
  HostTensor one = f32({1, 1, 1}, {5});
  for (const char *align : {"false", "true"})
    expectTensor(runOp(fmt::format("aten.upsample_linear1d(%0) {{output_size = [3], align_corners "
                                   "= {}}} : f32[1, 1, 3]",
                                   align),
                       {one}),
                 DType::F32, {1, 1, 3}, {5, 5, 5});
  HostTensor four = iota(DType::F32, {1, 1, 4});
  expectTensor(
      runOp("aten.upsample_linear1d(%0) {output_size = [1], align_corners = true} : f32[1, 1, 1]",
            {four}),
      DType::F32, {1, 1, 1}, {0});
  expectTensor(
      runOp("aten.upsample_linear1d(%0) {output_size = [1], align_corners = false} : f32[1, 1, 1]",
            {four}),
      DType::F32, {1, 1, 1}, {1.5});
}

TEST(Resample, BilinearIsExactOnLinearData) {
  // x[r][c] = 2r + c: bilinear interpolation gives 2 * row source + column source.
  HostTensor x = f32({1, 1, 2, 2}, {0, 1, 2, 3});
  // Rows (align false, ratio 1/2): 0, 0.25, 0.75, 1; columns (ratio 2/3): 0, 0.5, 1.
  expectTensor(runOp("aten.upsample_bilinear2d(%0) {output_size = [4, 3], align_corners = false} "
                     ": f32[1, 1, 4, 3]",
                     {x}),
               DType::F32, {1, 1, 4, 3}, {0, 0.5, 1, 0.5, 1, 1.5, 1.5, 2, 2.5, 2, 2.5, 3}, 1e-6);
  // Rows (align true, ratio 1/3): 0, 1/3, 2/3, 1; columns (ratio 1/2): 0, 0.5, 1.
  expectTensor(runOp("aten.upsample_bilinear2d(%0) {output_size = [4, 3], align_corners = true} "
                     ": f32[1, 1, 4, 3]",
                     {x}),
               DType::F32, {1, 1, 4, 3},
               {0, 0.5, 1, 2.0 / 3, 2.0 / 3 + 0.5, 2.0 / 3 + 1, 4.0 / 3, 4.0 / 3 + 0.5, 4.0 / 3 + 1,
                2, 2.5, 3},
               1e-6);
}

TEST(Resample, Bicubic) {
  // Same size is the identity (coefficients 0, 1, 0, 0 at t = 0).
  HostTensor x = iota(DType::F32, {1, 1, 1, 4});
  expectTensor(runOp("aten.upsample_bicubic2d(%0) {output_size = [1, 4], align_corners = false} "
                     ": f32[1, 1, 1, 4]",
                     {x}),
               DType::F32, {1, 1, 1, 4}, {0, 1, 2, 3});
  // 4 -> 8 (align false, ratio 1/2): sources -0.25, 0.25, 0.75, 1.25, ...; with A = -0.75 the
  // coefficients at t = 0.25 are -0.10546875, 0.87890625, 0.26171875, -0.03515625 (and reversed
  // at t = 0.75); taps clamp at the borders. The result is symmetric: y[7 - o] = 3 - y[o].
  std::vector<double> want = {-0.10546875, 0.19140625, 0.66796875, 1.296875,
                              1.703125,    2.33203125, 2.80859375, 3.10546875};
  expectTensor(runOp("aten.upsample_bicubic2d(%0) {output_size = [1, 8], align_corners = false} "
                     ": f32[1, 1, 1, 8]",
                     {x}),
               DType::F32, {1, 1, 1, 8}, want, 1e-6);
  // The same along the height (the size-1 width stays).
  HostTensor column = iota(DType::F32, {1, 1, 4, 1});
  expectTensor(runOp("aten.upsample_bicubic2d(%0) {output_size = [8, 1], align_corners = false} "
                     ": f32[1, 1, 8, 1]",
                     {column}),
               DType::F32, {1, 1, 8, 1}, want, 1e-6);
  // align_corners = true, ratio 3/2: sources 0, 1.5, 3; at t = 0.5 the coefficients are
  // -0.09375, 0.59375, 0.59375, -0.09375.
  expectTensor(runOp("aten.upsample_bicubic2d(%0) {output_size = [1, 3], align_corners = true} "
                     ": f32[1, 1, 1, 3]",
                     {x}),
               DType::F32, {1, 1, 1, 3}, {0, 1.5, 3}, 1e-6);
}

TEST(Resample, UpsampleErrors) {
  HostTensor x = iota(DType::F32, {1, 2, 3});
  EXPECT_EQ(metaError("aten.upsample_bilinear2d(%0) {output_size = [2, 2], align_corners = false} "
                      ": f32[1, 2, 2, 2]",
                      {x}),
            "aten.upsample_bilinear2d: needs a 4-d input ([N, C, H, W]), got f32[1, 2, 3]");
  EXPECT_EQ(metaError("aten.upsample_linear1d(%0) {output_size = [4], align_corners = false} : "
                      "i64[1, 2, 4]",
                      {iota(DType::I64, {1, 2, 3})}),
            "aten.upsample_linear1d: needs a floating-point input, got i64[1, 2, 3]");
  EXPECT_EQ(metaError("aten.upsample_nearest1d(%0) {output_size = [4, 4]} : f32[1, 2, 4]", {x}),
            "test.aotc:4:37: aten.upsample_nearest1d: attribute 'output_size' must be a list of 1 "
            "ints, got [4, 4]");
  EXPECT_EQ(metaError("aten.upsample_nearest1d(%0) {output_size = [0]} : f32[1, 2, 0]", {x}),
            "aten.upsample_nearest1d: output_size must be positive, got 0");
  EXPECT_EQ(metaError("aten.upsample_nearest1d(%0) {output_size = [4], scales = -1.0} : "
                      "f32[1, 2, 4]",
                      {x}),
            "aten.upsample_nearest1d: scales must be positive, got -1.0");
  EXPECT_EQ(metaError("aten.upsample_nearest1d(%0) {output_size = [4]} : f32[1, 2, 4]",
                      {HostTensor(DType::F32, {1, 2, 0})}),
            "aten.upsample_nearest1d: input f32[1, 2, 0] has an empty spatial dim");
}

TEST(Resample, ConvTranspose1d) {
  HostTensor x = f32({1, 1, 2}, {1, 2}), w = f32({1, 1, 3}, {1, 1, 1});
  auto conv = [&](const std::string &attrs, const std::string &type) {
    return runOp("aten.convolution(%0, %1, none) {" + attrs + ", transposed = true} : " + type,
                 {x, w});
  };
  // Each input element adds the kernel at i * stride: [1, 1, 1] at 0 and [2, 2, 2] at 2.
  expectTensor(conv("stride = [2], padding = [0], dilation = [1], output_padding = [0], groups = 1",
                    "f32[1, 1, 5]"),
               DType::F32, {1, 1, 5}, {1, 1, 3, 2, 2});
  // Padding crops both ends; output_padding adds one position at the end.
  expectTensor(conv("stride = [2], padding = [1], dilation = [1], output_padding = [0], groups = 1",
                    "f32[1, 1, 3]"),
               DType::F32, {1, 1, 3}, {1, 3, 2});
  expectTensor(conv("stride = [2], padding = [1], dilation = [1], output_padding = [1], groups = 1",
                    "f32[1, 1, 4]"),
               DType::F32, {1, 1, 4}, {1, 3, 2, 2});
  // Dilation 2 spreads the kernel: taps at 0, 2, 4 and 1, 3, 5.
  expectTensor(conv("stride = [1], padding = [0], dilation = [2], output_padding = [0], groups = 1",
                    "f32[1, 1, 6]"),
               DType::F32, {1, 1, 6}, {1, 2, 1, 2, 1, 2});
  HostTensor bias = f32({1}, {0.5});
  expectTensor(runOp("aten.convolution(%0, %1, %2) {stride = [2], padding = [0], dilation = [1], "
                     "transposed = true, output_padding = [0], groups = 1} : f32[1, 1, 5]",
                     {x, w, bias}),
               DType::F32, {1, 1, 5}, {1.5, 1.5, 3.5, 2.5, 2.5});
}

TEST(Resample, ConvTranspose2dGroups) {
  // Two groups of one channel each: weight [in = 2, out / groups = 1, 2, 2].
  HostTensor x = f32({1, 2, 1, 1}, {1, 2});
  HostTensor w = f32({2, 1, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expectTensor(runOp("aten.convolution(%0, %1, none) {stride = [1, 1], padding = [0, 0], dilation "
                     "= [1, 1], transposed = true, output_padding = [0, 0], groups = 2} : "
                     "f32[1, 2, 2, 2]",
                     {x, w}),
               DType::F32, {1, 2, 2, 2}, {1, 2, 3, 4, 10, 12, 14, 16});
  EXPECT_EQ(metaError("aten.convolution(%0, %1, none) {stride = [2, 2], padding = [0, 0], "
                      "dilation = [1, 1], transposed = true, output_padding = [2, 0], groups = 2} "
                      ": f32[1, 2, 2, 2]",
                      {x, w}),
            "aten.convolution: output_padding 2 must be smaller than stride 2 or dilation 1");
  EXPECT_EQ(metaError("aten.convolution(%0, %1, none) {stride = [1, 1], padding = [0, 0], "
                      "dilation = [1, 1], transposed = true, output_padding = [0, 0], groups = 1} "
                      ": f32[1, 1, 2, 2]",
                      {f32({1, 3, 1, 1}, {1, 2, 3}), w}),
            "aten.convolution: input channels and weight dim 0 must match, got 3 and 2");
  EXPECT_EQ(metaError("aten.convolution(%0, %1, none) {stride = [1, 1], padding = [2, 2], "
                      "dilation = [1, 1], transposed = true, output_padding = [0, 0], groups = 2} "
                      ": f32[1, 2, 2, 2]",
                      {x, w}),
            "aten.convolution: the output size -2 of spatial dim 0 is not positive");
}

} // namespace
