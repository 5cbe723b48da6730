// Contraction kernels against hand-computed values: mm, bmm, torch.matmul's 1-d and broadcast
// rules, addmm, linear, and convolution with stride, padding, dilation, groups and bias.
#include "InterpTestUtil.h"

#include <cmath>
#include <limits>

using namespace aotc;
using namespace aotc::test;

namespace {

const double NaN = std::numeric_limits<double>::quiet_NaN();

HostTensor matA() { return f32({2, 3}, {1, 2, 3, 4, 5, 6}); }
HostTensor matB() { return f32({3, 2}, {7, 8, 9, 10, 11, 12}); }

TEST(Linalg, Mm) {
  expectTensor(runOp("aten.mm(%0, %1) : f32[2, 2]", {matA(), matB()}), DType::F32, {2, 2},
               {58, 64, 139, 154});
  expectTensor(runOp("aten.mm(%0, %1) : i64[2, 2]",
                     {i64({2, 3}, {1, 2, 3, 4, 5, 6}), i64({3, 2}, {7, 8, 9, 10, 11, 12})}),
               DType::I64, {2, 2}, {58, 64, 139, 154});
  // A zero-size contracted dim gives zeros; a zero-size outer dim an empty result.
  expectTensor(runOp("aten.mm(%0, %1) : f32[2, 2]",
                     {HostTensor(DType::F32, {2, 0}), HostTensor(DType::F32, {0, 2})}),
               DType::F32, {2, 2}, {0, 0, 0, 0});
  expectTensor(runOp("aten.mm(%0, %1) : f32[0, 2]", {HostTensor(DType::F32, {0, 3}), matB()}),
               DType::F32, {0, 2}, {});
}

TEST(Linalg, MatmulAccumulatesInDouble) {
  // f32 accumulation would lose the 1 next to 1e8.
  expectTensor(
      runOp("aten.matmul(%0, %1) : f32[]", {f32({3}, {1e8, 1, -1e8}), f32({3}, {1, 1, 1})}),
      DType::F32, {}, {1});
}

TEST(Linalg, MatmulFollowsTorchRules) {
  HostTensor v = f32({3}, {1, 2, 3});
  expectTensor(runOp("aten.matmul(%0, %1) : f32[]", {v, f32({3}, {4, 5, 6})}), DType::F32, {},
               {32});
  expectTensor(runOp("aten.matmul(%0, %1) : f32[2]", {v, matB()}), DType::F32, {2}, {58, 64});
  expectTensor(runOp("aten.matmul(%0, %1) : f32[2]", {matA(), f32({3}, {1, 1, 1})}), DType::F32,
               {2}, {6, 15});
  // Batch dims broadcast: [2, 1, 2] x [2, 1] multiplies each batch by the same matrix.
  HostTensor a = f32({2, 1, 2}, {1, 2, 3, 4}), b = f32({2, 1}, {5, 6});
  expectTensor(runOp("aten.matmul(%0, %1) : f32[2, 1, 1]", {a, b}), DType::F32, {2, 1, 1},
               {17, 39});
  // [1, 2, 2] x [3, 2, 1]: the left batch of one is reused for three right batches.
  HostTensor l = f32({1, 2, 2}, {1, 0, 0, 2}), r = f32({3, 2, 1}, {1, 1, 2, 2, 3, 3});
  expectTensor(runOp("aten.matmul(%0, %1) : f32[3, 2, 1]", {l, r}), DType::F32, {3, 2, 1},
               {1, 2, 2, 4, 3, 6});
  // A 1-d left operand against a batch of matrices.
  expectTensor(runOp("aten.matmul(%0, %1) : f32[3, 1]", {f32({2}, {1, 1}), r}), DType::F32, {3, 1},
               {2, 4, 6});
}

TEST(Linalg, Bmm) {
  HostTensor a = f32({2, 1, 2}, {1, 2, 3, 4}), b = f32({2, 2, 1}, {1, 1, 2, 0});
  expectTensor(runOp("aten.bmm(%0, %1) : f32[2, 1, 1]", {a, b}), DType::F32, {2, 1, 1}, {3, 6});
}

TEST(Linalg, Addmm) {
  HostTensor bias = f32({2}, {1, -1});
  expectTensor(
      runOp("aten.addmm(%0, %1, %2) {beta = 2, alpha = 3} : f32[2, 2]", {bias, matA(), matB()}),
      DType::F32, {2, 2}, {176, 190, 419, 460});
  // beta = 0 ignores the bias, NaN included.
  expectTensor(
      runOp("aten.addmm(%0, %1, %2) {beta = 0} : f32[2, 2]", {f32({1, 1}, {NaN}), matA(), matB()}),
      DType::F32, {2, 2}, {58, 64, 139, 154});
}

TEST(Linalg, Linear) {
  HostTensor x = matA(), w = f32({2, 3}, {1, 0, 1, 0, 1, 0}), b = f32({2}, {0.5, -1});
  expectTensor(runOp("aten.linear(%0, %1, %2) : f32[2, 2]", {x, w, b}), DType::F32, {2, 2},
               {4.5, 1, 10.5, 4});
  expectTensor(runOp("aten.linear(%0, %1, none) : f32[2, 2]", {x, w}), DType::F32, {2, 2},
               {4, 2, 10, 5});
  // A 1-d weight contracts the last dim away; leading dims pass through.
  expectTensor(runOp("aten.linear(%0, %1, none) : f32[1, 2]",
                     {f32({1, 2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {1, 1, 1})}),
               DType::F32, {1, 2}, {6, 15});
}

const char *Conv2dAttrs = "transposed = false, output_padding = [0, 0]";

TEST(Linalg, Convolution2d) {
  HostTensor x = tensor(DType::F32, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  HostTensor ones = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  expectTensor(runOp(fmt::format("aten.convolution(%0, %1, none) {{stride = [1, 1], padding = "
                                 "[0, 0], dilation = [1, 1], {}, groups = 1}} : f32[1, 1, 2, 2]",
                                 Conv2dAttrs),
                     {x, ones}),
               DType::F32, {1, 1, 2, 2}, {12, 16, 24, 28});
  // Padding 1 and stride 2: the windows start at -1 and 1 in both dims.
  expectTensor(runOp(fmt::format("aten.convolution(%0, %1, %2) {{stride = [2, 2], padding = "
                                 "[1, 1], dilation = [1, 1], {}, groups = 1}} : f32[1, 1, 2, 2]",
                                 Conv2dAttrs),
                     {x, ones, f32({1}, {0.5})}),
               DType::F32, {1, 1, 2, 2}, {1.5, 5.5, 11.5, 28.5});
  // Dilation 2 takes the four corners.
  expectTensor(runOp(fmt::format("aten.convolution(%0, %1, none) {{stride = [1, 1], padding = "
                                 "[0, 0], dilation = [2, 2], {}, groups = 1}} : f32[1, 1, 1, 1]",
                                 Conv2dAttrs),
                     {x, ones}),
               DType::F32, {1, 1, 1, 1}, {20});
  // Two groups: each output channel sees only its own input channel.
  expectTensor(runOp(fmt::format("aten.convolution(%0, %1, none) {{stride = [1, 1], padding = "
                                 "[0, 0], dilation = [1, 1], {}, groups = 2}} : f32[1, 2, 1, 1]",
                                 Conv2dAttrs),
                     {f32({1, 2, 1, 1}, {1, 2}), f32({2, 1, 1, 1}, {3, 4})}),
               DType::F32, {1, 2, 1, 1}, {3, 8});
}

TEST(Linalg, Convolution1dAndBatches) {
  HostTensor x = f32({2, 1, 5}, {1, 2, 3, 4, 5, 5, 4, 3, 2, 1});
  HostTensor w = f32({2, 1, 3}, {1, 0, -1, 1, 1, 1});
  expectTensor(runOp("aten.convolution(%0, %1, none) {stride = [1], padding = [1], dilation = "
                     "[1], transposed = false, output_padding = [0], groups = 1} : f32[2, 2, 5]",
                     {x, w}),
               DType::F32, {2, 2, 5},
               {-2, -2, -2, -2, 4, 3, 6, 9, 12, 9, -4, 2, 2, 2, 2, 9, 12, 9, 6, 3});
  EXPECT_EQ(opError("aten.convolution(%0, %1, none) {stride = [1], padding = [1], dilation = "
                    "[1], transposed = false, output_padding = [0], groups = 1} : i64[1, 1, 5]",
                    {i64({1, 1, 3}, {1, 2, 3}), i64({1, 1, 1}, {1})}),
            "needs floating-point tensors, got i64");
}

TEST(Linalg, Convolution3d) {
  HostTensor x = iota(DType::F32, {1, 1, 2, 2, 2});
  const char *attrs = "transposed = false, output_padding = [0, 0, 0], groups = 1";
  expectTensor(runOp(fmt::format("aten.convolution(%0, %1, none) {{stride = [1, 1, 1], padding = "
                                 "[0, 0, 0], dilation = [1, 1, 1], {}}} : f32[1, 1, 1, 1, 1]",
                                 attrs),
                     {x, f32({1, 1, 2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1})}),
               DType::F32, {1, 1, 1, 1, 1}, {28});
  // Kernels along the width only, the depth padded by 1 on both sides: sums and differences of
  // neighbours, zero in the padding planes.
  expectTensor(runOp(fmt::format("aten.convolution(%0, %1, none) {{stride = [1, 1, 1], padding = "
                                 "[1, 0, 0], dilation = [1, 1, 1], {}}} : f32[1, 2, 4, 2, 1]",
                                 attrs),
                     {x, f32({2, 1, 1, 1, 2}, {1, 1, 1, -1})}),
               DType::F32, {1, 2, 4, 2, 1}, {0, 0, 1, 5, 9, 13, 0, 0, 0, 0, -1, -1, -1, -1, 0, 0});
}

} // namespace
