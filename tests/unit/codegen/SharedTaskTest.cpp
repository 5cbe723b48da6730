// Steps that compute the same thing on different buffers share one task function (TaskKey): two
// GEMMs and two loop kernels that differ only in their buffers get one task each, steps that
// differ in a constant do not, and every step still reads and writes its own buffers.
#include "CodegenTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace aotc;
using namespace aotc::cpu;
using namespace aotc::cpu::test;
using kir::BinaryOp;

namespace {

constexpr int64_t N = 40, K = 24;

class SharedTaskTest : public ::testing::TestWithParam<Variant> {
protected:
  void SetUp() override {
    if (!hostSupports(GetParam()))
      GTEST_SKIP() << "the host CPU cannot run " << variantName(GetParam()).str();
  }
};

// Buffers: 0 a0 [m, K], 1 a1 [m, K], 2 b [K, N], 3 bias0 [N], 4 bias1 [N], outputs 5 y0, 6 y1,
// 7 y2, 8 z0, 9 z1 (each [m, N]).
//   gemm_0: y0 = max(a0 @ b + bias0, 0)     gemm_1: y1 = max(a1 @ b + bias1, 0)  (gemm_0's key)
//   gemm_2: y2 = max(a0 @ b + bias0, 0.5)   (a constant apart: its own tasks)
//   sub_0:  z0 = y0 - y1                    sub_1:  z1 = y1 - y0  (sub_0's key, slots swapped)
kir::Program program() {
  kir::Program p;
  p.name = "shared";
  for (int i = 0; i < 2; ++i) {
    kir::Weight w;
    w.name = "bias" + std::to_string(i);
    w.shape = {N};
    w.offset = 64 + i * 256;
    w.nbytes = N * 4;
    p.weights.push_back(w);
  }
  p.weightBytes = 64 + 256 + N * 4;
  kir::EntryKernels e;
  e.name = "f";
  e.symbols = {"m"};
  SymExpr m = SymExpr::symbol("m");
  e.inputs = {{"a0", DType::F32, {m, K}}, {"a1", DType::F32, {m, K}}, {"b", DType::F32, {K, N}}};
  e.buffers = {makeBuffer(kir::Buffer::Kind::Input, 0, m * K),
               makeBuffer(kir::Buffer::Kind::Input, 1, m * K),
               makeBuffer(kir::Buffer::Kind::Input, 2, K * N),
               makeBuffer(kir::Buffer::Kind::Weight, 0, N),
               makeBuffer(kir::Buffer::Kind::Weight, 1, N)};
  for (uint32_t i = 0; i < 5; ++i) {
    e.outputs.push_back({"out" + std::to_string(i), DType::F32, {m, N}});
    e.buffers.push_back(makeBuffer(kir::Buffer::Kind::Output, i, m * N));
  }
  ExprBuilder eb{e};
  auto gemm = [&](int i, uint32_t a, uint32_t bias, double floor, uint32_t out) {
    kir::GemmCall c;
    c.name = "gemm_" + std::to_string(i);
    c.m = m;
    c.n = N;
    c.k = K;
    c.a.buffer = a;
    c.a.batchStride = m * K;
    c.a.rowStride = K;
    c.a.colStride = 1;
    c.b.buffer = 2;
    c.b.batchStride = K * N;
    c.b.rowStride = N;
    c.b.colStride = 1;
    c.out = out;
    kir::ExprId sum =
        eb.binary(BinaryOp::Add, eb.acc(), eb.load(bias, eb.loopVar(2), DType::F32), DType::F32);
    c.epilogue = eb.binary(BinaryOp::Max, sum, eb.cf(floor), DType::F32);
    e.steps.push_back(c);
  };
  gemm(0, 0, 3, 0.0, 5);
  gemm(1, 1, 4, 0.0, 6);
  gemm(2, 0, 3, 0.5, 7);
  auto sub = [&](int i, uint32_t x, uint32_t y, uint32_t out) {
    kir::ExprId off = eb.linear({{0, N}, {1, 1}});
    kir::LoopKernel k;
    k.name = "sub_" + std::to_string(i);
    k.outer = {m, N};
    k.parallelLoops = 1;
    kir::Stage st;
    st.buffer = out;
    st.offset = off;
    st.value = eb.binary(BinaryOp::Sub, eb.load(x, off, DType::F32), eb.load(y, off, DType::F32),
                         DType::F32);
    k.stages.push_back(st);
    e.steps.push_back(k);
  };
  sub(0, 5, 6, 8);
  sub(1, 6, 5, 9);
  e.arenaBytes = 0;
  p.entries.push_back(e);
  return p;
}

TEST_P(SharedTaskTest, OneTaskPerKey) {
  kir::Program p = program();
  auto tm = createTargetMachine(GetParam());
  ASSERT_TRUE(!!tm) << llvm::toString(tm.takeError());
  llvm::LLVMContext ctx;
  llvm::Module module("shared", ctx);
  ASSERT_FALSE(!!emitProgram(p, GetParam(), false, **tm, module));
  std::string prefix = GetParam() == Variant::X86_64_V4 ? "aotc_v4_" : "aotc_v3_";
  auto has = [&](const std::string &name) { return module.getFunction(prefix + name) != nullptr; };
  EXPECT_TRUE(has("gemm_0.blocked"));
  EXPECT_FALSE(has("gemm_1.blocked"));
  EXPECT_TRUE(has("gemm_2.blocked"));
  EXPECT_TRUE(has("sub_0"));
  EXPECT_FALSE(has("sub_1"));
}

TEST_P(SharedTaskTest, EveryStepUsesItsOwnBuffers) {
  kir::Program p = program();
  auto c = Compiled::create(p, GetParam());
  ASSERT_TRUE(!!c) << llvm::toString(c.takeError());
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(-1, 1);
  auto fill = [&](size_t n) {
    std::vector<float> v(n);
    for (float &x : v)
      x = d(rng);
    return v;
  };
  std::vector<float> b = fill(K * N), bias0 = fill(N), bias1 = fill(N);
  std::vector<uint8_t> blob(p.weightBytes);
  std::memcpy(blob.data() + 64, bias0.data(), N * 4);
  std::memcpy(blob.data() + 64 + 256, bias1.data(), N * 4);
  // m = 3 takes the small-m path, m = 37 the blocked one.
  for (int64_t m : {3, 37}) {
    std::vector<float> a0 = fill(m * K), a1 = fill(m * K);
    std::vector<std::vector<float>> outs(5, std::vector<float>(m * N, NAN));
    TestExec ex(2, &blob);
    const void *in[] = {a0.data(), a1.data(), b.data()};
    void *out[] = {outs[0].data(), outs[1].data(), outs[2].data(), outs[3].data(), outs[4].data()};
    int64_t syms[] = {m};
    ASSERT_EQ((*c)->run(0)(&ex.exec, in, out, syms), 0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s0 = 0, s1 = 0, mag = 0;
        for (int64_t kk = 0; kk < K; ++kk) {
          s0 += double(a0[i * K + kk]) * b[kk * N + j];
          s1 += double(a1[i * K + kk]) * b[kk * N + j];
          mag +=
              std::fabs(a0[i * K + kk] * b[kk * N + j]) + std::fabs(a1[i * K + kk] * b[kk * N + j]);
        }
        double tol = 1e-5 * std::max(1.0, mag);
        double y0 = std::max(0.0, s0 + bias0[j]), y1 = std::max(0.0, s1 + bias1[j]);
        double want[] = {y0, y1, std::max(0.5, s0 + bias0[j]), y0 - y1, y1 - y0};
        for (int o = 0; o < 5; ++o) {
          float got = outs[o][i * N + j];
          ASSERT_FALSE(std::isnan(got)) << "out" << o << " m " << m << " at " << i << "," << j;
          ASSERT_LE(std::fabs(got - want[o]), 2 * tol)
              << "out" << o << " m " << m << " at " << i << "," << j << ": got " << got << " want "
              << want[o];
        }
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, SharedTaskTest,
                         ::testing::Values(Variant::X86_64_V3, Variant::X86_64_V4),
                         [](const auto &info) {
                           return info.param == Variant::X86_64_V4 ? "v4" : "v3";
                         });

} // namespace
