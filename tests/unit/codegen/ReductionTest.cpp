// Loop kernels with reduce stages: a softmax (max, sum of exp, normalize), Sum/Prod/Max/Min and
// ArgMax/ArgMin over several inner loops, with NaN, and integer sums.
#include "CodegenTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace aotc;
using namespace aotc::cpu;
using namespace aotc::cpu::test;
using kir::BinaryOp;
using kir::ReduceOp;
using kir::UnaryOp;

namespace {

class ReductionTest : public ::testing::TestWithParam<Variant> {
protected:
  void SetUp() override {
    if (!hostSupports(GetParam()))
      GTEST_SKIP() << "the host CPU cannot run " << variantName(GetParam()).str();
  }
};

std::vector<float> randomFloats(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(g);
  return v;
}

// y[r, c] = exp(x[r, c] - max_c x) / sum_c exp(x[r, c] - max) over dynamic rows and cols; the
// exponentials go through an arena buffer, written by one kernel and read by the next.
TEST_P(ReductionTest, Softmax) {
  kir::Program p;
  p.name = "softmax";
  kir::EntryKernels e;
  e.name = "f";
  e.symbols = {"rows", "cols"};
  SymExpr rows = SymExpr::symbol("rows"), cols = SymExpr::symbol("cols");
  e.inputs.push_back({"x", DType::F32, {rows, cols}});
  e.outputs.push_back({"y", DType::F32, {rows, cols}});
  e.buffers = {makeBuffer(kir::Buffer::Kind::Input, 0, rows * cols),
               makeBuffer(kir::Buffer::Kind::Output, 0, rows * cols),
               makeBuffer(kir::Buffer::Kind::Arena, 0, rows * cols)};
  e.buffers[2].arenaOffset = 64;
  e.arenaBytes = rows * cols * 4 + 64;
  ExprBuilder eb{e};
  // Kernel 1: arena[r, c] = exp(x[r, c] - max_c x[r, :]).
  kir::LoopKernel k1;
  k1.name = "softmax_exp";
  k1.outer = {rows};
  k1.parallelLoops = 1;
  kir::ExprId off = eb.linear({{0, cols}, {1, 1}});
  kir::ExprId x = eb.load(0, off, DType::F32);
  kir::Stage mx;
  mx.kind = kir::Stage::Kind::Reduce;
  mx.inner = {cols};
  mx.reduce = ReduceOp::Max;
  mx.value = x;
  k1.stages.push_back(mx);
  kir::Stage ex1;
  ex1.inner = {cols};
  ex1.buffer = 2;
  ex1.offset = off;
  ex1.value =
      eb.unary(UnaryOp::Exp, eb.binary(BinaryOp::Sub, x, eb.reduceValue(0, DType::F32), DType::F32),
               DType::F32);
  k1.stages.push_back(ex1);
  e.steps.push_back(k1);
  // Kernel 2: y = arena / sum(arena).
  kir::LoopKernel k2;
  k2.name = "softmax_norm";
  k2.outer = {rows};
  k2.parallelLoops = 1;
  kir::ExprId a = eb.load(2, off, DType::F32);
  kir::Stage sum;
  sum.kind = kir::Stage::Kind::Reduce;
  sum.inner = {cols};
  sum.reduce = ReduceOp::Sum;
  sum.value = a;
  k2.stages.push_back(sum);
  kir::Stage norm;
  norm.inner = {cols};
  norm.buffer = 1;
  norm.offset = off;
  norm.value = eb.binary(BinaryOp::Div, a, eb.reduceValue(0, DType::F32), DType::F32);
  k2.stages.push_back(norm);
  e.steps.push_back(k2);
  p.entries.push_back(e);
  auto c = Compiled::create(p, GetParam());
  ASSERT_TRUE(!!c) << llvm::toString(c.takeError());
  for (int threads : {1, 2}) {
    for (auto [r, cl] : {std::pair<int64_t, int64_t>{1, 1}, {3, 1000}, {257, 129}}) {
      TestExec ex(threads, nullptr, r * cl * 4 + 64);
      std::vector<float> xv = randomFloats(r * cl, -20, 20, r), y(r * cl, NAN);
      const void *in[] = {xv.data()};
      void *out[] = {y.data()};
      int64_t syms[] = {r, cl};
      ASSERT_EQ((*c)->run(0)(&ex.exec, in, out, syms), 0);
      for (int64_t i = 0; i < r; ++i) {
        double m = -INFINITY, s = 0;
        for (int64_t j = 0; j < cl; ++j)
          m = std::max(m, double(xv[i * cl + j]));
        for (int64_t j = 0; j < cl; ++j)
          s += std::exp(xv[i * cl + j] - m);
        for (int64_t j = 0; j < cl; ++j) {
          double want = std::exp(xv[i * cl + j] - m) / s;
          ASSERT_NEAR(y[i * cl + j], want, 1e-5 * std::max(1.0, want)) << i << "," << j;
        }
      }
    }
  }
}

// out[o] = reduce over (a, b) of x[o, a, b] for each op; outer [O], inner [A, B].
TEST_P(ReductionTest, ReduceOpsWithNaN) {
  constexpr int64_t O = 40, A = 7, B = 33;
  const std::vector<ReduceOp> ops = {ReduceOp::Sum, ReduceOp::Prod,   ReduceOp::Max,
                                     ReduceOp::Min, ReduceOp::ArgMax, ReduceOp::ArgMin};
  kir::Program p;
  p.name = "reduce";
  kir::EntryKernels e;
  e.name = "f";
  e.inputs.push_back({"x", DType::F32, {O, A, B}});
  e.inputs.push_back({"n", DType::I32, {O, A, B}});
  e.buffers = {makeBuffer(kir::Buffer::Kind::Input, 0, O * A * B),
               makeBuffer(kir::Buffer::Kind::Input, 1, O * A * B, DType::I32)};
  ExprBuilder eb{e};
  kir::ExprId off = eb.linear({{0, A * B}, {1, B}, {2, 1}});
  kir::ExprId x = eb.load(0, off, DType::F32);
  kir::LoopKernel k;
  k.name = "reductions";
  k.outer = {O};
  k.parallelLoops = 1;
  for (unsigned i = 0; i < ops.size(); ++i) {
    bool arg = ops[i] == ReduceOp::ArgMax || ops[i] == ReduceOp::ArgMin;
    DType outType = arg ? DType::I64 : DType::F32;
    e.outputs.push_back({"o" + std::to_string(i), outType, {O}});
    e.buffers.push_back(makeBuffer(kir::Buffer::Kind::Output, i, O, outType));
    kir::Stage r;
    r.kind = kir::Stage::Kind::Reduce;
    r.inner = {A, B};
    r.reduce = ops[i];
    // Prod of values near 1 stays finite; Sum accumulates in f64.
    r.value = ops[i] == ReduceOp::Prod
                  ? eb.binary(BinaryOp::Add, eb.cf(1.0),
                              eb.binary(BinaryOp::Mul, x, eb.cf(0.01), DType::F32), DType::F32)
                  : x;
    r.accType = ops[i] == ReduceOp::Sum ? DType::F64 : DType::F32;
    k.stages.push_back(r);
    kir::Stage s;
    s.buffer = 2 + i;
    s.offset = eb.loopVar(0);
    s.value = eb.reduceValue(2 * i, outType);
    k.stages.push_back(s);
  }
  // An integer sum in i64 of i32 values.
  e.outputs.push_back({"isum", DType::I64, {O}});
  e.buffers.push_back(makeBuffer(kir::Buffer::Kind::Output, ops.size(), O, DType::I64));
  kir::Stage r;
  r.kind = kir::Stage::Kind::Reduce;
  r.inner = {A, B};
  r.reduce = ReduceOp::Sum;
  r.accType = DType::I64;
  r.value = eb.load(1, off, DType::I32);
  k.stages.push_back(r);
  kir::Stage s;
  s.buffer = 2 + ops.size();
  s.offset = eb.loopVar(0);
  s.value = eb.reduceValue(2 * ops.size(), DType::I64);
  k.stages.push_back(s);
  e.steps.push_back(k);
  p.entries.push_back(e);
  auto c = Compiled::create(p, GetParam());
  ASSERT_TRUE(!!c) << llvm::toString(c.takeError());

  std::vector<float> xv = randomFloats(O * A * B, -3, 3, 17);
  // Row 1: one NaN; row 2: two NaNs (the first wins ArgMax/ArgMin); row 3: a tie of maxima.
  xv[1 * A * B + 100] = NAN;
  xv[2 * A * B + 5] = NAN;
  xv[2 * A * B + 50] = NAN;
  xv[3 * A * B + 10] = 100;
  xv[3 * A * B + 20] = 100;
  std::vector<int32_t> nv(O * A * B);
  std::mt19937 g(3);
  for (int32_t &v : nv)
    v = std::uniform_int_distribution<int32_t>(-1000000, 1000000)(g);
  std::vector<std::vector<float>> fo(4, std::vector<float>(O));
  std::vector<std::vector<int64_t>> io(3, std::vector<int64_t>(O));
  const void *in[] = {xv.data(), nv.data()};
  void *out[] = {fo[0].data(), fo[1].data(), fo[2].data(), fo[3].data(),
                 io[0].data(), io[1].data(), io[2].data()};
  TestExec ex(2);
  ASSERT_EQ((*c)->run(0)(&ex.exec, in, out, nullptr), 0);
  for (int64_t o = 0; o < O; ++o) {
    double sum = 0, prod = 1, mx = -INFINITY, mn = INFINITY;
    int64_t amax = -1, amin = -1, isum = 0;
    bool nan = false;
    for (int64_t j = 0; j < A * B; ++j) {
      float v = xv[o * A * B + j];
      isum += nv[o * A * B + j];
      sum += v;
      prod *= 1.0f + v * 0.01f;
      if (std::isnan(v)) {
        if (!nan)
          amax = amin = j;
        nan = true;
        continue;
      }
      if (!nan && (amax < 0 || v > mx)) {
        mx = v;
        amax = j;
      }
      if (!nan && (amin < 0 || v < mn)) {
        mn = v;
        amin = j;
      }
    }
    if (nan) {
      EXPECT_TRUE(std::isnan(fo[0][o]) && std::isnan(fo[1][o]) && std::isnan(fo[2][o]) &&
                  std::isnan(fo[3][o]))
          << o;
    } else {
      EXPECT_NEAR(fo[0][o], sum, 1e-5 * std::max(1.0, std::fabs(sum))) << o;
      EXPECT_NEAR(fo[1][o], prod, 1e-5 * std::max(1.0, std::fabs(prod))) << o;
      EXPECT_EQ(fo[2][o], mx) << o;
      EXPECT_EQ(fo[3][o], mn) << o;
    }
    EXPECT_EQ(io[0][o], amax) << o;
    EXPECT_EQ(io[1][o], amin) << o;
    EXPECT_EQ(io[2][o], isum) << o;
  }
}

} // namespace

INSTANTIATE_TEST_SUITE_P(Cpu, ReductionTest,
                         ::testing::Values(Variant::X86_64_V3, Variant::X86_64_V4),
                         [](const auto &info) {
                           return info.param == Variant::X86_64_V4 ? "v4" : "v3";
                         });
