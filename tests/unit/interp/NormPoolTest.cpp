// Pooling, normalization and attention kernels against hand-computed values: padding, ceil
// mode, count_include_pad and divisor_override as torch defines them, biased variance, and
// scaled_dot_product_attention's scale, causal and boolean/additive masks and grouped heads.
#include "InterpTestUtil.h"

#include <cmath>
#include <limits>

using namespace aotc;
using namespace aotc::test;

namespace {

const double NaN = std::numeric_limits<double>::quiet_NaN();

TEST(Pooling, MaxPool2d) {
  HostTensor x = iota(DType::F32, {1, 1, 4, 4});
  expectTensor(runOp("aten.max_pool2d(%0) {kernel_size = [2, 2]} : f32[1, 1, 2, 2]", {x}),
               DType::F32, {1, 1, 2, 2}, {5, 7, 13, 15});
  // Ceil mode keeps a last, partial window that starts inside the input.
  HostTensor y = iota(DType::F32, {1, 5, 5});
  expectTensor(runOp("aten.max_pool2d(%0) {kernel_size = [2, 2], stride = [2, 2], ceil_mode = "
                     "true} : f32[1, 3, 3]",
                     {y}),
               DType::F32, {1, 3, 3}, {6, 8, 9, 16, 18, 19, 21, 23, 24});
  // Padding never wins (it is -inf), and NaN does.
  HostTensor z = f32({1, 1, 2, 2}, {-5, -6, NaN, -8});
  expectTensor(runOp("aten.max_pool2d(%0) {kernel_size = [2, 2], stride = [1, 1], padding = [1, "
                     "1]} : f32[1, 1, 3, 3]",
                     {z}),
               DType::F32, {1, 1, 3, 3}, {-5, -5, -6, NaN, NaN, -6, NaN, NaN, -8});
  // Dilation 2 picks every other element.
  expectTensor(runOp("aten.max_pool2d(%0) {kernel_size = [2, 2], stride = [1, 1], dilation = [2, "
                     "2]} : f32[1, 1, 2, 2]",
                     {x}),
               DType::F32, {1, 1, 2, 2}, {10, 11, 14, 15});
}

TEST(Pooling, AvgPool2d) {
  HostTensor x = iota(DType::F32, {1, 1, 4, 4});
  expectTensor(runOp("aten.avg_pool2d(%0) {kernel_size = [2, 2]} : f32[1, 1, 2, 2]", {x}),
               DType::F32, {1, 1, 2, 2}, {2.5, 4.5, 10.5, 12.5});
  HostTensor y = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const char *padded = "aten.avg_pool2d(%0) {{kernel_size = [2, 2], stride = [2, 2], padding = "
                       "[1, 1]{}}} : f32[1, 1, 2, 2]";
  expectTensor(runOp(fmt::format(fmt::runtime(padded), ""), {y}), DType::F32, {1, 1, 2, 2},
               {0.25, 0.5, 0.75, 1});
  expectTensor(runOp(fmt::format(fmt::runtime(padded), ", count_include_pad = false"), {y}),
               DType::F32, {1, 1, 2, 2}, {1, 2, 3, 4});
  expectTensor(runOp(fmt::format(fmt::runtime(padded), ", divisor_override = 1"), {y}), DType::F32,
               {1, 1, 2, 2}, {1, 2, 3, 4});
  // In ceil mode the partial windows at the right and bottom divide by their clipped size.
  HostTensor z = iota(DType::F32, {1, 1, 3, 3});
  expectTensor(runOp("aten.avg_pool2d(%0) {kernel_size = [2, 2], stride = [2, 2], ceil_mode = "
                     "true} : f32[1, 1, 2, 2]",
                     {z}),
               DType::F32, {1, 1, 2, 2}, {2, 3.5, 6.5, 8});
}

TEST(Pooling, AdaptiveAvgPool2d) {
  HostTensor x = iota(DType::F32, {1, 3, 3});
  // Windows [floor(i * 3 / 2), ceil((i + 1) * 3 / 2)): rows 0-1 and 1-2, overlapping.
  expectTensor(runOp("aten.adaptive_avg_pool2d(%0) {output_size = [2, 2]} : f32[1, 2, 2]", {x}),
               DType::F32, {1, 2, 2}, {2, 3, 5, 6});
  expectTensor(runOp("aten.adaptive_avg_pool2d(%0) {output_size = [1, 1]} : f32[1, 1, 1]", {x}),
               DType::F32, {1, 1, 1}, {4});
  expectTensor(runOp("aten.adaptive_avg_pool2d(%0) {output_size = [1, 3]} : f32[1, 1, 3]", {x}),
               DType::F32, {1, 1, 3}, {3, 4, 5});
}

TEST(Normalization, BatchNorm) {
  HostTensor x = f32({2, 2}, {1, 2, 3, 4});
  HostTensor w = f32({2}, {2, 1}), b = f32({2}, {0, 1}), mean = f32({2}, {1, 2});
  HostTensor var = f32({2}, {4, 16});
  const char *attrs = "{training = false, momentum = 0.1, eps = 0.0, cudnn_enabled = false}";
  expectTensor(runOp(fmt::format("aten.batch_norm(%0, %1, %2, %3, %4) {} : f32[2, 2]", attrs),
                     {x, w, b, mean, var}),
               DType::F32, {2, 2}, {0, 1, 2, 1.5});
  // Without affine parameters, over a spatial dim.
  HostTensor y = f32({1, 2, 2}, {1, 3, 2, 10});
  expectTensor(
      runOp(fmt::format("aten.batch_norm(%0, none, none, %1, %2) {} : f32[1, 2, 2]", attrs),
            {y, mean, var}),
      DType::F32, {1, 2, 2}, {0, 1, 0, 2});
}

TEST(Normalization, LayerNorm) {
  HostTensor x = f32({2, 2}, {1, 3, 2, 6});
  expectTensor(runOp("aten.layer_norm(%0, none, none) {normalized_shape = [2], eps = 0.0} : "
                     "f32[2, 2]",
                     {x}),
               DType::F32, {2, 2}, {-1, 1, -1, 1});
  expectTensor(runOp("aten.layer_norm(%0, %1, %2) {normalized_shape = [2], eps = 0.0} : f32[2, 2]",
                     {x, f32({2}, {2, 3}), f32({2}, {1, 0})}),
               DType::F32, {2, 2}, {-1, 3, -1, 3});
  // Over the two trailing dims, with the default eps: variance 1.25 + 1e-5.
  HostTensor y = f32({1, 2, 2}, {1, 2, 3, 4});
  double s = 1 / std::sqrt(1.25 + 1e-5);
  expectTensor(
      runOp("aten.layer_norm(%0, none, none) {normalized_shape = [2, 2]} : f32[1, 2, 2]", {y}),
      DType::F32, {1, 2, 2}, {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s}, 1e-6);
}

TEST(Normalization, GroupNorm) {
  HostTensor x = f32({1, 4, 1}, {1, 3, 10, 20});
  expectTensor(runOp("aten.group_norm(%0, %1, none) {num_groups = 2, eps = 0.0} : f32[1, 4, 1]",
                     {x, f32({4}, {1, 2, 3, 4})}),
               DType::F32, {1, 4, 1}, {-1, 2, -3, 4});
  expectTensor(runOp("aten.group_norm(%0, none, %1) {num_groups = 1, eps = 0.0} : f32[2, 2]",
                     {f32({2, 2}, {1, 3, 7, 5}), f32({2}, {10, 20})}),
               DType::F32, {2, 2}, {9, 21, 11, 19});
}

// q = k = identity rows, v = [[1, 2], [3, 4]]: with scale 1 the scores are the identity, so each
// row puts e / (e + 1) on its own value row.
const double P = std::exp(1.0) / (std::exp(1.0) + 1), Q = 1 - P;

TEST(Attention, ScoresSoftmaxAndScale) {
  HostTensor q = f32({1, 2, 2}, {1, 0, 0, 1}), v = f32({1, 2, 2}, {1, 2, 3, 4});
  expectTensor(
      runOp("aten.scaled_dot_product_attention(%0, %1, %2, none) {scale = 1.0} : f32[1, 2, 2]",
            {q, q, v}),
      DType::F32, {1, 2, 2}, {P + 3 * Q, 2 * P + 4 * Q, Q + 3 * P, 2 * Q + 4 * P}, 1e-6);
  // The default scale is 1 / sqrt(E): scores of 1 / sqrt(2) on the diagonal.
  double e = std::exp(1 / std::sqrt(2.0)), p = e / (e + 1), r = 1 - p;
  expectTensor(
      runOp("aten.scaled_dot_product_attention(%0, %1, %2, none) : f32[1, 2, 2]", {q, q, v}),
      DType::F32, {1, 2, 2}, {p + 3 * r, 2 * p + 4 * r, r + 3 * p, 2 * r + 4 * p}, 1e-6);
}

TEST(Attention, Masks) {
  HostTensor q = f32({2, 2}, {1, 0, 0, 1}), v = f32({2, 2}, {1, 2, 3, 4});
  // Causal: row 0 sees only key 0 (top-left aligned lower triangle).
  expectTensor(
      runOp("aten.scaled_dot_product_attention(%0, %1, %2, none) {is_causal = true, scale = "
            "1.0} : f32[2, 2]",
            {q, q, v}),
      DType::F32, {2, 2}, {1, 2, Q + 3 * P, 2 * Q + 4 * P}, 1e-6);
  // A bool mask keeps where true; a row with nothing kept gives zeros.
  expectTensor(runOp("aten.scaled_dot_product_attention(%0, %1, %2, %3) {scale = 1.0} : f32[2, 2]",
                     {q, q, v, boolean({2, 2}, {0, 1, 0, 0})}),
               DType::F32, {2, 2}, {3, 4, 0, 0}, 1e-6);
  // A float mask is added to the scores and broadcasts: -inf on key 1 for every query.
  expectTensor(runOp("aten.scaled_dot_product_attention(%0, %1, %2, %3) {scale = 1.0} : f32[2, 2]",
                     {q, q, v, f32({2}, {0, -INFINITY})}),
               DType::F32, {2, 2}, {1, 2, 1, 2}, 1e-6);
}

TEST(Attention, GroupedQueryHeadsShareKeyValueHeads) {
  // Four query heads, two key/value heads: heads 0 and 1 use kv head 0, heads 2 and 3 kv head 1.
  HostTensor q = f32({1, 4, 1, 1}, {1, 1, 1, 1}), k = f32({1, 2, 1, 1}, {1, 1});
  HostTensor v = f32({1, 2, 1, 1}, {10, 20});
  expectTensor(runOp("aten.scaled_dot_product_attention(%0, %1, %2, none) {enable_gqa = true} : "
                     "f32[1, 4, 1, 1]",
                     {q, k, v}),
               DType::F32, {1, 4, 1, 1}, {10, 10, 20, 20});
}

} // namespace

namespace {

TEST(NormPool, RmsNormWithAndWithoutWeightAndEps) {
  // Rows [3, 4] and [0, 0]: mean squares 12.5 and 0.
  HostTensor x = tensor(DType::F64, {2, 2}, {3, 4, 0, 0}), w = tensor(DType::F64, {2}, {1, 2});
  double s = 1 / std::sqrt(12.5 + 0.5);
  expectTensor(
      runOp("aten.rms_norm(%0, %1) {normalized_shape = [2], eps = 0.5} : f64[2, 2]", {x, w}),
      DType::F64, {2, 2}, {3 * s, 8 * s, 0, 0}, 1e-12);
  // Without eps: finfo(f64).eps = 2^-52; over both dims (mean square 6.25).
  expectTensor(runOp("aten.rms_norm(%0, none) {normalized_shape = [2, 2]} : f64[2, 2]", {x}),
               DType::F64, {2, 2}, {1.2, 1.6, 0, 0}, 1e-12);
  EXPECT_EQ(metaError("aten.rms_norm(%0, %1) {normalized_shape = [3]} : f64[2, 2]", {x, w}),
            "aten.rms_norm: normalized_shape [3] does not match the trailing dims of f64[2, 2]");
  EXPECT_EQ(metaError("aten.rms_norm(%0, none) {normalized_shape = [2]} : i64[2, 2]",
                      {i64({2, 2}, {1, 2, 3, 4})}),
            "aten.rms_norm: needs a floating-point input, got i64[2, 2]");
}

} // namespace
