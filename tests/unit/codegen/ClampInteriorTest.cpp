// Clamped indices along a loop kernel's innermost loop (a pooling window's padding read as the
// nearest edge element): where clampInterior finds them the identity, and a max pool whose
// innermost loop runs without them there, on widths whose interior is empty, short or most of
// the row, with NaN.
#include "CodegenTestUtil.h"
#include "codegen/IndexAnalysis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

using namespace aotc;
using namespace aotc::cpu;
using namespace aotc::cpu::test;
using kir::BinaryOp;

namespace {

class ClampInteriorTest : public ::testing::Test {
protected:
  kir::ExprId clamp(kir::ExprId x, int64_t lo, int64_t hi, bool maxOutside = true) {
    if (maxOutside)
      return max(eb.binary(BinaryOp::Min, x, eb.ci(hi), DType::I64), lo);
    return eb.binary(BinaryOp::Min, max(x, lo), eb.ci(hi), DType::I64);
  }
  kir::ExprId max(kir::ExprId x, int64_t lo) {
    return eb.binary(BinaryOp::Max, x, eb.ci(lo), DType::I64);
  }
  // a * loopVar(v) + c + loopVar(w)
  kir::ExprId window(unsigned v, int64_t a, int64_t c, unsigned w) {
    kir::ExprId at = eb.binary(BinaryOp::Mul, eb.loopVar(v), eb.ci(a), DType::I64);
    at = eb.binary(BinaryOp::Add, at, eb.ci(c), DType::I64);
    return eb.binary(BinaryOp::Add, at, eb.loopVar(w), DType::I64);
  }
  std::optional<codegen::ClampInterior> interior(std::vector<kir::ExprId> roots, unsigned loop) {
    return codegen::clampInterior(e, roots, loop, [&](unsigned l) -> std::optional<int64_t> {
      if (auto it = extents.find(l); it != extents.end())
        return it->second;
      return std::nullopt;
    });
  }

  kir::EntryKernels e;
  ExprBuilder eb{e};
  std::map<unsigned, int64_t> extents;
};

TEST_F(ClampInteriorTest, StrideTwoWindow) {
  // A 3-wide window, stride 2, padding 1, over 112 inputs: ow in [1, 56) reads 2ow - 1 .. 2ow + 1.
  extents = {{1, 3}};
  kir::ExprId c = clamp(window(0, 2, -1, 1), 0, 111);
  auto r = interior({eb.load(0, c, DType::F32)}, 0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->begin, 1);
  EXPECT_EQ(r->end, 56);
  ASSERT_EQ(r->clamps.size(), 1u);
  EXPECT_EQ(r->clamps[0].first, c);
  EXPECT_EQ(r->clamps[0].second, e.expr(e.expr(c).operands[0]).operands[0]);
}

TEST_F(ClampInteriorTest, EitherNestingAndSeveralClamps) {
  // Stride 1, padding 1, over 7 inputs, min outside: [1, 6). A second clamp with padding 2
  // (a 5-wide window over its own loop) narrows it to [2, 5).
  extents = {{1, 3}, {2, 5}};
  kir::ExprId a = clamp(window(0, 1, -1, 1), 0, 6, false);
  auto r = interior({a}, 0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->begin, 1);
  EXPECT_EQ(r->end, 6);
  kir::ExprId b = clamp(window(0, 1, -2, 2), 0, 6);
  r = interior({eb.binary(BinaryOp::Add, a, b, DType::I64)}, 0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->begin, 2);
  EXPECT_EQ(r->end, 5);
  EXPECT_EQ(r->clamps.size(), 2u);
}

TEST_F(ClampInteriorTest, EmptyInterior) {
  // Two inputs and a 3-wide window with padding 1: every point reads past an edge.
  extents = {{1, 3}};
  auto r = interior({clamp(window(0, 1, -1, 1), 0, 1)}, 0);
  ASSERT_TRUE(r);
  EXPECT_GE(r->begin, r->end);
}

TEST_F(ClampInteriorTest, WhatItLeaves) {
  extents = {{1, 3}};
  // No clamp reads the loop: one along another loop only.
  EXPECT_FALSE(interior({clamp(window(2, 1, -1, 1), 0, 9)}, 0));
  EXPECT_FALSE(interior({eb.loopVar(0)}, 0));
  // A window loop of unknown extent: r has no known range.
  EXPECT_FALSE(interior({clamp(window(0, 1, -1, 3), 0, 9)}, 0));
  // A coefficient that is not positive.
  EXPECT_FALSE(interior({clamp(window(0, -1, 9, 1), 0, 9)}, 0));
  // A one-sided bound of the loop, or a clamp with lo > hi.
  EXPECT_FALSE(interior({max(eb.loopVar(0), 3)}, 0));
  EXPECT_FALSE(interior({clamp(window(0, 1, 0, 1), 5, 4)}, 0));
  // A product of two loops.
  EXPECT_FALSE(interior(
      {clamp(eb.binary(BinaryOp::Mul, eb.loopVar(0), eb.loopVar(1), DType::I64), 0, 9)}, 0));
}

// y[c, oh, ow] = max over (i, j) < 3 of x[c, clamp(oh*s - p + i), clamp(ow*s - p + j)], the
// clamps to [0, h) and [0, w): torch's max_pool2d as aotc lowers it.
class ClampedPoolTest : public ::testing::TestWithParam<Variant> {
protected:
  void SetUp() override {
    if (!hostSupports(GetParam()))
      GTEST_SKIP() << "the host CPU cannot run " << variantName(GetParam()).str();
  }
};

TEST_P(ClampedPoolTest, MaxPoolMatchesReference) {
  struct Case {
    int64_t h, w, stride, pad;
  };
  for (Case k : {Case{1, 1, 1, 1}, Case{2, 2, 2, 1}, Case{3, 5, 1, 1}, Case{4, 17, 2, 1},
                 Case{6, 40, 1, 1}, Case{9, 112, 2, 1}, Case{5, 33, 3, 0}}) {
    constexpr int64_t C = 3, K = 3;
    int64_t oh = (k.h + 2 * k.pad - K) / k.stride + 1, ow = (k.w + 2 * k.pad - K) / k.stride + 1;
    kir::Program p;
    p.name = "pool";
    kir::EntryKernels e;
    e.name = "f";
    e.inputs.push_back({"x", DType::F32, {C, k.h, k.w}});
    e.outputs.push_back({"y", DType::F32, {C, oh, ow}});
    e.buffers = {makeBuffer(kir::Buffer::Kind::Input, 0, C * k.h * k.w),
                 makeBuffer(kir::Buffer::Kind::Output, 0, C * oh * ow)};
    ExprBuilder eb{e};
    auto clamped = [&](unsigned out, unsigned tap, int64_t size) {
      kir::ExprId at = eb.binary(BinaryOp::Mul, eb.loopVar(out), eb.ci(k.stride), DType::I64);
      at = eb.binary(BinaryOp::Add, eb.binary(BinaryOp::Sub, at, eb.ci(k.pad), DType::I64),
                     eb.loopVar(tap), DType::I64);
      at = eb.binary(BinaryOp::Min, at, eb.ci(size - 1), DType::I64);
      return eb.binary(BinaryOp::Max, at, eb.ci(0), DType::I64);
    };
    kir::ExprId row = eb.binary(BinaryOp::Mul, clamped(1, 3, k.h), eb.ci(k.w), DType::I64);
    kir::ExprId at = eb.binary(
        BinaryOp::Add, eb.binary(BinaryOp::Mul, eb.loopVar(0), eb.ci(k.h * k.w), DType::I64),
        eb.binary(BinaryOp::Add, row, clamped(2, 4, k.w), DType::I64), DType::I64);
    kir::LoopKernel kernel;
    kernel.name = "max_pool";
    kernel.outer = {C, oh, ow};
    kernel.parallelLoops = 3;
    kir::Stage reduce;
    reduce.kind = kir::Stage::Kind::Reduce;
    reduce.inner = {K, K};
    reduce.reduce = kir::ReduceOp::Max;
    reduce.value = eb.load(0, at, DType::F32);
    kernel.stages.push_back(reduce);
    kir::Stage store;
    store.buffer = 1;
    store.offset = eb.linear({{0, oh * ow}, {1, ow}, {2, 1}});
    store.value = eb.reduceValue(0, DType::F32);
    kernel.stages.push_back(store);
    e.steps.push_back(kernel);
    p.entries.push_back(e);
    auto compiled = Compiled::create(p, GetParam());
    ASSERT_TRUE(!!compiled) << llvm::toString(compiled.takeError());
    std::mt19937 g(unsigned(k.w));
    std::normal_distribution<float> d;
    std::vector<float> x(C * k.h * k.w);
    for (float &v : x)
      v = d(g);
    // A NaN in the first channel's last column and the third's first: every window over it is
    // NaN.
    x[k.w - 1] = NAN;
    x[2 * k.h * k.w] = NAN;
    for (int threads : {1, 2}) {
      TestExec ex(threads);
      std::vector<float> y(C * oh * ow, -1.0f);
      const void *in[] = {x.data()};
      void *out[] = {y.data()};
      ASSERT_EQ((*compiled)->run(0)(&ex.exec, in, out, nullptr), 0);
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            float want = -INFINITY;
            for (int64_t a = 0; a < K; ++a)
              for (int64_t b = 0; b < K; ++b) {
                int64_t r = std::clamp(i * k.stride - k.pad + a, int64_t(0), k.h - 1);
                int64_t s = std::clamp(j * k.stride - k.pad + b, int64_t(0), k.w - 1);
                float v = x[(c * k.h + r) * k.w + s];
                want = std::isnan(v) || std::isnan(want) ? NAN : std::max(want, v);
              }
            float got = y[(c * oh + i) * ow + j];
            if (std::isnan(want))
              ASSERT_TRUE(std::isnan(got)) << k.w << ": " << c << "," << i << "," << j;
            else
              ASSERT_EQ(got, want) << k.w << ": " << c << "," << i << "," << j;
          }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, ClampedPoolTest,
                         ::testing::Values(Variant::X86_64_V3, Variant::X86_64_V4),
                         [](const auto &info) {
                           return info.param == Variant::X86_64_V4 ? "v4" : "v3";
                         });

} // namespace
