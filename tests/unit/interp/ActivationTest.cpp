// Activation kernels (hardtanh, hardswish, hardsigmoid, leaky_relu, elu, mish, softplus, prelu)
// against hand-computed values: parameters and their defaults, empty and size-1 dims, NaN, and
// the errors of non-floating inputs and mismatched PReLU slopes.
#include "InterpTestUtil.h"

#include <cmath>
#include <limits>

using namespace aotc;
using namespace aotc::test;

namespace {

const double NaN = std::numeric_limits<double>::quiet_NaN();

TEST(Activation, HardtanhClampsAndPropagatesNaN) {
  HostTensor x = f32({5}, {-7, -0.5, 0.25, 6.5, NaN});
  expectTensor(runOp("aten.hardtanh(%0) : f32[5]", {x}), DType::F32, {5}, {-1, -0.5, 0.25, 1, NaN});
  // ReLU6 is hardtanh(0, 6).
  expectTensor(runOp("aten.hardtanh(%0) {min_val = 0, max_val = 6} : f32[5]", {x}), DType::F32, {5},
               {0, 0, 0.25, 6, NaN});
  HostTensor empty(DType::F32, {0, 2});
  expectTensor(runOp("aten.hardtanh(%0) : f32[0, 2]", {empty}), DType::F32, {0, 2}, {});
}

TEST(Activation, HardswishAndHardsigmoid) {
  // x * relu6(x + 3) / 6: zero below -3, x above 3, a parabola between.
  HostTensor x = f32({1, 5}, {-4, -3, -1.5, 1, 3});
  expectTensor(runOp("aten.hardswish(%0) : f32[1, 5]", {x}), DType::F32, {1, 5},
               {0, 0, -0.375, 1.0 * 4 / 6, 3});
  expectTensor(runOp("aten.hardsigmoid(%0) : f32[1, 5]", {x}), DType::F32, {1, 5},
               {0, 0, 0.25, 4.0 / 6, 1});
}

TEST(Activation, LeakyReluAndElu) {
  HostTensor x = tensor(DType::F64, {4}, {-2, -0.5, 0, 3});
  expectTensor(runOp("aten.leaky_relu(%0) : f64[4]", {x}), DType::F64, {4}, {-0.02, -0.005, 0, 3});
  expectTensor(runOp("aten.leaky_relu(%0) {negative_slope = 0.2} : f64[4]", {x}), DType::F64, {4},
               {-0.4, -0.1, 0, 3});
  expectTensor(runOp("aten.elu(%0) : f64[4]", {x}), DType::F64, {4},
               {std::expm1(-2.0), std::expm1(-0.5), 0, 3});
  expectTensor(runOp("aten.elu(%0) {alpha = 0.5} : f64[4]", {x}), DType::F64, {4},
               {0.5 * std::expm1(-2.0), 0.5 * std::expm1(-0.5), 0, 3});
}

TEST(Activation, SoftplusAndMish) {
  HostTensor x = tensor(DType::F64, {4}, {-1, 0, 2, 30});
  auto sp = [](double v) { return std::log1p(std::exp(v)); };
  // Above the threshold (20) softplus is x itself.
  expectTensor(runOp("aten.softplus(%0) : f64[4]", {x}), DType::F64, {4},
               {sp(-1), std::log(2.0), sp(2), 30});
  // beta = 2: log1p(exp(2x)) / 2; threshold 3 cuts at 2x > 3.
  expectTensor(runOp("aten.softplus(%0) {beta = 2, threshold = 3} : f64[4]", {x}), DType::F64, {4},
               {sp(-2) / 2, std::log(2.0) / 2, 2, 30});
  expectTensor(runOp("aten.mish(%0) : f64[4]", {x}), DType::F64, {4},
               {-std::tanh(sp(-1)), 0, 2 * std::tanh(sp(2)), 30});
}

TEST(Activation, PreluPerChannelAndSingle) {
  // [N=1, C=2, 2]: channel 0 slope 0.5, channel 1 slope 2.
  HostTensor x = f32({1, 2, 2}, {-2, 4, -1, -3}), w = f32({2}, {0.5, 2});
  expectTensor(runOp("aten.prelu(%0, %1) : f32[1, 2, 2]", {x, w}), DType::F32, {1, 2, 2},
               {-1, 4, -2, -6});
  // One slope for every element, as a [1] or a 0-d weight; a 1-d input has one channel.
  HostTensor one = f32({1}, {0.25}), scalar = f32({}, {0.25}), v = f32({3}, {-4, 0, 1});
  expectTensor(runOp("aten.prelu(%0, %1) : f32[3]", {v, one}), DType::F32, {3}, {-1, 0, 1});
  expectTensor(runOp("aten.prelu(%0, %1) : f32[3]", {v, scalar}), DType::F32, {3}, {-1, 0, 1});
  // [N, C] input: the channels are the last dim.
  HostTensor m = f32({2, 2}, {-1, -1, 1, -2});
  expectTensor(runOp("aten.prelu(%0, %1) : f32[2, 2]", {m, w}), DType::F32, {2, 2},
               {-0.5, -2, 1, -4});
}

TEST(Activation, BadInputsAreErrors) {
  HostTensor ints = i64({3}, {1, 2, 3});
  EXPECT_EQ(metaError("aten.hardswish(%0) : i64[3]", {ints}),
            "aten.hardswish: needs a floating-point input, got i64[3]");
  HostTensor x = f32({1, 3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(metaError("aten.prelu(%0, %1) : f32[1, 3, 2]", {x, f32({2}, {1, 2})}),
            "aten.prelu: weight has 2 slopes for 3 channels of input f32[1, 3, 2]");
  EXPECT_EQ(metaError("aten.prelu(%0, %1) : f32[1, 3, 2]", {x, f32({3, 1}, {1, 2, 3})}),
            "aten.prelu: weight must be a scalar or 1-d tensor, got f32[3, 1]");
}

} // namespace
