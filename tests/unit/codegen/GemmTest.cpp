// GEMM library calls at odd sizes, batched, with transposed and strided operands, with and
// without a bias + relu epilogue, against a double reference. Tolerance per element:
// |got - want| <= 1e-5 * max(1, sum_k |a_ik * b_kj|) (the usual GEMM error bound, scaled).
#include "CodegenTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace aotc;
using namespace aotc::cpu;
using namespace aotc::cpu::test;

namespace {

struct GemmCase {
  int64_t batch, m, n, k;
  bool transposedB; // B stored [batch, n, k] (nn.Linear's weight), else [batch, k, n]
  bool transposedA; // A stored [batch, k, m], else [batch, m, k]
};

std::string name(const GemmCase &g) {
  return std::to_string(g.batch) + "x" + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
         std::to_string(g.k) + (g.transposedB ? "_bT" : "") + (g.transposedA ? "_aT" : "");
}

class GemmTest : public ::testing::TestWithParam<std::tuple<Variant, GemmCase, bool>> {
protected:
  void SetUp() override {
    if (!hostSupports(std::get<0>(GetParam())))
      GTEST_SKIP() << "the host CPU cannot run " << variantName(std::get<0>(GetParam())).str();
  }
};

kir::Buffer buffer(kir::Buffer::Kind kind, uint32_t index, SymExpr numel) {
  kir::Buffer b;
  b.kind = kind;
  b.index = index;
  b.numel = numel;
  return b;
}

// out = A @ B (+ bias[n], relu) with m a dynamic symbol "m"; the bias is a weight.
kir::Program gemmProgram(const GemmCase &g, bool epilogue) {
  kir::Program p;
  p.name = "gemm";
  kir::Weight w;
  w.name = "bias";
  w.shape = {g.n};
  w.offset = 64;
  w.nbytes = g.n * 4;
  p.weights.push_back(w);
  p.weightBytes = 64 + g.n * 4;
  kir::EntryKernels e;
  e.name = "f";
  e.symbols = {"m"};
  SymExpr m = SymExpr::symbol("m");
  e.inputs.push_back({"a", DType::F32, {g.batch, m, g.k}});
  e.inputs.push_back({"b", DType::F32, {g.batch, g.k, g.n}});
  e.outputs.push_back({"y", DType::F32, {g.batch, m, g.n}});
  e.buffers = {buffer(kir::Buffer::Kind::Input, 0, g.batch * m * g.k),
               buffer(kir::Buffer::Kind::Input, 1, g.batch * g.k * g.n),
               buffer(kir::Buffer::Kind::Output, 0, g.batch * m * g.n),
               buffer(kir::Buffer::Kind::Weight, 0, g.n)};
  kir::GemmCall c;
  c.name = "gemm_" + name(g);
  c.batch = g.batch;
  c.m = m;
  c.n = g.n;
  c.k = g.k;
  c.a.buffer = 0;
  c.a.batchStride = m * g.k;
  c.a.rowStride = g.transposedA ? SymExpr(1) : SymExpr(g.k);
  c.a.colStride = g.transposedA ? m : SymExpr(1);
  c.b.buffer = 1;
  c.b.batchStride = g.k * g.n;
  c.b.rowStride = g.transposedB ? 1 : g.n;
  c.b.colStride = g.transposedB ? g.k : 1;
  c.out = 2;
  if (epilogue) {
    ExprBuilder eb{e};
    kir::ExprId sum =
        eb.binary(kir::BinaryOp::Add, eb.acc(), eb.load(3, eb.loopVar(2), DType::F32), DType::F32);
    c.epilogue = eb.binary(kir::BinaryOp::Max, sum, eb.cf(0), DType::F32);
  }
  e.steps.push_back(c);
  p.entries.push_back(e);
  return p;
}

TEST_P(GemmTest, MatchesDoubleReference) {
  auto [variant, g, epilogue] = GetParam();
  kir::Program p = gemmProgram(g, epilogue);
  auto c = Compiled::create(p, variant);
  ASSERT_TRUE(!!c) << llvm::toString(c.takeError());
  std::mt19937 rng(unsigned(g.m * 31 + g.n * 7 + g.k));
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> a(g.batch * g.m * g.k), b(g.batch * g.k * g.n), bias(g.n);
  for (float &x : a)
    x = d(rng);
  for (float &x : b)
    x = d(rng);
  for (float &x : bias)
    x = d(rng);
  std::vector<uint8_t> blob(p.weightBytes);
  std::memcpy(blob.data() + 64, bias.data(), g.n * 4);
  auto A = [&](int64_t bi, int64_t i, int64_t kk) {
    return g.transposedA ? a[bi * g.m * g.k + kk * g.m + i] : a[bi * g.m * g.k + i * g.k + kk];
  };
  auto B = [&](int64_t bi, int64_t kk, int64_t j) {
    return g.transposedB ? b[bi * g.k * g.n + j * g.k + kk] : b[bi * g.k * g.n + kk * g.n + j];
  };
  for (int threads : {1, 2}) {
    std::vector<float> y(g.batch * g.m * g.n, NAN);
    TestExec ex(threads, &blob);
    const void *in[] = {a.data(), b.data()};
    void *out[] = {y.data()};
    int64_t syms[] = {g.m};
    ASSERT_EQ((*c)->run(0)(&ex.exec, in, out, syms), 0);
    for (int64_t bi = 0; bi < g.batch; ++bi)
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) {
          double s = 0, mag = 0;
          for (int64_t kk = 0; kk < g.k; ++kk) {
            double t = double(A(bi, i, kk)) * B(bi, kk, j);
            s += t;
            mag += std::fabs(t);
          }
          if (epilogue)
            s = std::max(0.0, s + bias[j]);
          float got = y[(bi * g.m + i) * g.n + j];
          ASSERT_FALSE(std::isnan(got)) << bi << "," << i << "," << j;
          ASSERT_LE(std::fabs(got - s), 1e-5 * std::max(1.0, mag))
              << "threads " << threads << " at " << bi << "," << i << "," << j << ": got " << got
              << " want " << s;
        }
  }
}

const GemmCase Cases[] = {
    {1, 1, 1, 1, false, false},      {1, 7, 13, 5, false, false},
    {1, 1, 1024, 784, true, false},  {1, 1, 1024, 784, false, false},
    {1, 65, 33, 129, false, false},  {1, 65, 33, 129, true, true},
    {3, 256, 256, 256, true, false}, {3, 256, 256, 256, false, false},
    {1, 9, 300, 600, true, false},   {2, 100, 515, 1000, false, true},
    {1, 1000, 17, 3, false, false},  {1, 8, 7, 0, false, false},
    {1, 37, 23, 0, true, false},
};

INSTANTIATE_TEST_SUITE_P(
    Cpu, GemmTest,
    ::testing::Combine(::testing::Values(Variant::X86_64_V3, Variant::X86_64_V4),
                       ::testing::ValuesIn(Cases), ::testing::Bool()),
    [](const auto &info) {
      return std::string(std::get<0>(info.param) == Variant::X86_64_V4 ? "v4_" : "v3_") +
             name(std::get<1>(info.param)) + (std::get<2>(info.param) ? "_epilogue" : "");
    });

} // namespace
