// Pointwise loop kernels: broadcasting, every unary op against std:: in double, integer and float
// binary ops with Python semantics, f16/bf16 storage, and the shapes() function with a guard.
#include "CodegenTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace aotc;
using namespace aotc::cpu;
using namespace aotc::cpu::test;
using kir::BinaryOp;
using kir::UnaryOp;

namespace {

class VariantTest : public ::testing::TestWithParam<Variant> {
protected:
  void SetUp() override {
    if (!hostSupports(GetParam()))
      GTEST_SKIP() << "the host CPU cannot run " << variantName(GetParam()).str();
  }
  std::unique_ptr<Compiled> compile(const kir::Program &p) {
    auto c = Compiled::create(p, GetParam());
    if (!c) {
      ADD_FAILURE() << llvm::toString(c.takeError());
      return nullptr;
    }
    return std::move(*c);
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

// |got - want| <= tol * max(1, |want|); NaN never passes unless both are NaN and `nanOk`.
::testing::AssertionResult close(double got, double want, double tol, bool nanOk = false) {
  if (std::isnan(want) && std::isnan(got) && nanOk)
    return ::testing::AssertionSuccess();
  if (std::isnan(got) || std::isnan(want))
    return ::testing::AssertionFailure() << "got " << got << " want " << want;
  // A reference beyond f32's range: the f32 result is the overflowed value.
  if (std::isinf(static_cast<float>(want)) && got == static_cast<float>(want))
    return ::testing::AssertionSuccess();
  if (std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want)))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << got << " want " << want << " diff " << got - want;
}

double ulps(float got, double want) {
  float w = static_cast<float>(want);
  if (got == w)
    return 0;
  float ulp = std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
  return std::fabs(got - want) / ulp;
}

// out[i, j] = relu(x[i, j] + bias[j]) * scale with x [batch, 37], bias a weight [37].
TEST_P(VariantTest, BroadcastAddRelu) {
  kir::Program p;
  p.name = "add_relu";
  kir::Weight w;
  w.name = "bias";
  w.shape = {37};
  w.offset = 128;
  w.nbytes = 37 * 4;
  p.weights.push_back(w);
  p.weightBytes = 128 + 37 * 4;
  kir::EntryKernels e;
  e.name = "forward";
  e.symbols = {"batch"};
  SymExpr batch = SymExpr::symbol("batch");
  e.inputs.push_back({"x", DType::F32, {batch, 37}});
  e.outputs.push_back({"y", DType::F32, {batch, 37}});
  e.buffers = {makeBuffer(kir::Buffer::Kind::Input, 0, batch * 37),
               makeBuffer(kir::Buffer::Kind::Weight, 0, 37),
               makeBuffer(kir::Buffer::Kind::Output, 0, batch * 37)};
  e.arenaBytes = 0;
  ExprBuilder eb{e};
  kir::ExprId off = eb.linear({{0, 37}, {1, 1}});
  kir::ExprId sum = eb.binary(BinaryOp::Add, eb.load(0, off, DType::F32),
                              eb.load(1, eb.loopVar(1), DType::F32), DType::F32);
  kir::ExprId relu = eb.binary(BinaryOp::Max, sum, eb.cf(0), DType::F32);
  kir::LoopKernel k;
  k.name = "fused_add_relu";
  k.outer = {batch, 37};
  k.parallelLoops = 2;
  kir::Stage st;
  st.buffer = 2;
  st.offset = off;
  st.value = relu;
  k.stages.push_back(st);
  e.steps.push_back(k);
  p.entries.push_back(e);
  auto c = compile(p);
  ASSERT_TRUE(c);
  std::vector<uint8_t> blob(p.weightBytes);
  std::vector<float> bias = randomFloats(37, -1, 1, 7);
  std::memcpy(blob.data() + 128, bias.data(), 37 * 4);
  for (int threads : {1, 2}) {
    for (int64_t n : {1, 5, 3000}) {
      TestExec ex(threads, &blob);
      std::vector<float> x = randomFloats(n * 37, -2, 2, n), y(n * 37, NAN);
      const void *in[] = {x.data()};
      void *out[] = {y.data()};
      int64_t syms[] = {n};
      ASSERT_EQ(c->run(0)(&ex.exec, in, out, syms), 0);
      for (int64_t i = 0; i < n * 37; ++i)
        ASSERT_EQ(y[i], std::max(0.0f, x[i] + bias[i % 37])) << i;
      // Only the big case is worth threads: 3000 * 37 > 64K element-ops.
      EXPECT_EQ(ex.calls, n == 3000 ? 1 : 0);
    }
  }
}

struct UnaryCase {
  const char *name;
  UnaryOp op;
  double (*ref)(double);
  float lo, hi;
  double tol;
};

// One kernel per op: out[i] = op(x[i]) over f32, checked against the double reference.
TEST_P(VariantTest, EveryUnaryOp) {
  std::vector<UnaryCase> cases = {
      {"neg", UnaryOp::Neg, [](double x) { return -x; }, -10, 10, 0},
      {"abs", UnaryOp::Abs, [](double x) { return std::fabs(x); }, -10, 10, 0},
      {"exp", UnaryOp::Exp, [](double x) { return std::exp(x); }, -100, 88, 1e-6},
      {"log", UnaryOp::Log, [](double x) { return std::log(x); }, 1e-30f, 1e4, 1e-6},
      {"log1p", UnaryOp::Log1p, [](double x) { return std::log1p(x); }, -0.9f, 100, 1e-6},
      {"sqrt", UnaryOp::Sqrt, [](double x) { return std::sqrt(x); }, 0, 1e4, 1e-6},
      {"rsqrt", UnaryOp::Rsqrt, [](double x) { return 1 / std::sqrt(x); }, 1e-3f, 1e4, 1e-6},
      {"reciprocal", UnaryOp::Reciprocal, [](double x) { return 1 / x; }, 0.01f, 100, 1e-6},
      {"sin", UnaryOp::Sin, [](double x) { return std::sin(x); }, -20, 20, 1e-6},
      {"cos", UnaryOp::Cos, [](double x) { return std::cos(x); }, -20, 20, 1e-6},
      {"tanh", UnaryOp::Tanh, [](double x) { return std::tanh(x); }, -12, 12, 1e-6},
      {"erf", UnaryOp::Erf, [](double x) { return std::erf(x); }, -5, 5, 1e-6},
      {"sigmoid", UnaryOp::Sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, -100, 100,
       1e-6},
      {"floor", UnaryOp::Floor, [](double x) { return std::floor(x); }, -10, 10, 0},
      {"ceil", UnaryOp::Ceil, [](double x) { return std::ceil(x); }, -10, 10, 0},
      {"round", UnaryOp::Round, [](double x) { return std::nearbyint(x); }, -10, 10, 0},
  };
  constexpr int64_t N = 20011;
  for (const UnaryCase &uc : cases) {
    kir::Program p;
    p.name = "unary";
    kir::EntryKernels e;
    e.name = "f";
    e.inputs.push_back({"x", DType::F32, {N}});
    e.outputs.push_back({"y", DType::F32, {N}});
    e.buffers = {makeBuffer(kir::Buffer::Kind::Input, 0, N),
                 makeBuffer(kir::Buffer::Kind::Output, 0, N)};
    ExprBuilder eb{e};
    kir::ExprId i = eb.loopVar(0);
    kir::LoopKernel k;
    k.name = std::string("unary_") + uc.name;
    k.outer = {N};
    k.parallelLoops = 1;
    kir::Stage st;
    st.buffer = 1;
    st.offset = i;
    st.value = eb.unary(uc.op, eb.load(0, i, DType::F32), DType::F32);
    k.stages.push_back(st);
    e.steps.push_back(k);
    p.entries.push_back(e);
    auto c = compile(p);
    ASSERT_TRUE(c);
    std::vector<float> x = randomFloats(N, uc.lo, uc.hi, 11 + unsigned(uc.op)), y(N);
    // Special values at the front: the inline functions select them explicitly.
    // exp's subnormal results (-100), its last one (-103.9) and the zeros past it, which it
    // computes as exp(0) (-104.5, -1e30).
    float specials[] = {0.0f,   -0.0f, INFINITY, -INFINITY, NAN,     1.0f,
                        -1.0f,  0.5f,  2.5f,     -2.5f,     1e-40f,  88.5f,
                        -88.5f, 1e-8f, -100.0f,  -103.9f,   -104.5f, -1e30f};
    std::copy(std::begin(specials), std::end(specials), x.begin());
    TestExec ex(2);
    const void *in[] = {x.data()};
    void *out[] = {y.data()};
    ASSERT_EQ(c->run(0)(&ex.exec, in, out, nullptr), 0);
    double maxUlp = 0;
    for (int64_t j = 0; j < N; ++j) {
      double want = uc.ref(x[j]);
      if (std::isnan(x[j])) {
        EXPECT_TRUE(std::isnan(y[j])) << uc.name;
        continue;
      }
      if (std::isnan(want)) // log of a negative special value
        continue;
      ASSERT_TRUE(close(y[j], want, uc.tol)) << uc.name << "(" << x[j] << ")";
      if (std::isfinite(want) && std::fabs(want) > 1e-37)
        maxUlp = std::max(maxUlp, ulps(y[j], want));
    }
    RecordProperty(std::string("max_ulp_") + uc.name, std::to_string(maxUlp));
    std::printf("[ %s ] %-10s max error %.2f ulp\n", variantName(GetParam()).str().c_str(), uc.name,
                maxUlp);
    EXPECT_LE(maxUlp, 4.0) << uc.name;
  }
}

// Python floor division and modulo on i64 with negative operands, float mod, Min/Max with NaN,
// Pow, comparisons into bool, and casts.
TEST_P(VariantTest, BinaryOpsPythonSemantics) {
  kir::Program p;
  p.name = "binary";
  kir::EntryKernels e;
  e.name = "f";
  constexpr int64_t N = 1000;
  e.inputs = {{"a", DType::I64, {N}},
              {"b", DType::I64, {N}},
              {"x", DType::F32, {N}},
              {"y", DType::F32, {N}}};
  e.buffers = {makeBuffer(kir::Buffer::Kind::Input, 0, N, DType::I64),
               makeBuffer(kir::Buffer::Kind::Input, 1, N, DType::I64),
               makeBuffer(kir::Buffer::Kind::Input, 2, N),
               makeBuffer(kir::Buffer::Kind::Input, 3, N)};
  ExprBuilder eb{e};
  kir::ExprId i = eb.loopVar(0);
  kir::ExprId a = eb.load(0, i, DType::I64), b = eb.load(1, i, DType::I64);
  kir::ExprId x = eb.load(2, i, DType::F32), y = eb.load(3, i, DType::F32);
  struct Out {
    DType t;
    kir::ExprId v;
  };
  std::vector<Out> outs = {
      {DType::I64, eb.binary(BinaryOp::FloorDiv, a, b, DType::I64)},
      {DType::I64, eb.binary(BinaryOp::Mod, a, b, DType::I64)},
      {DType::I64, eb.binary(BinaryOp::Div, a, b, DType::I64)},
      {DType::F32, eb.binary(BinaryOp::Mod, x, y, DType::F32)},
      {DType::F32, eb.binary(BinaryOp::Max, x, y, DType::F32)},
      {DType::F32, eb.binary(BinaryOp::Min, x, y, DType::F32)},
      {DType::F32, eb.binary(BinaryOp::Pow, eb.unary(UnaryOp::Abs, x, DType::F32), y, DType::F32)},
      {DType::Bool, eb.binary(BinaryOp::Lt, x, y, DType::Bool)},
      {DType::I32, eb.cast(x, DType::I32)},
      {DType::F32, eb.select(eb.binary(BinaryOp::Ge, a, b, DType::Bool), x, y, DType::F32)},
      {DType::F32, eb.binary(BinaryOp::Pow, x, eb.cf(2.0), DType::F32)},
  };
  kir::LoopKernel k;
  k.name = "binary_ops";
  k.outer = {N};
  k.parallelLoops = 1;
  for (unsigned o = 0; o < outs.size(); ++o) {
    e.outputs.push_back({"o" + std::to_string(o), outs[o].t, {N}});
    e.buffers.push_back(makeBuffer(kir::Buffer::Kind::Output, o, N, outs[o].t));
    kir::Stage st;
    st.buffer = 4 + o;
    st.offset = i;
    st.value = outs[o].v;
    k.stages.push_back(st);
  }
  e.steps.push_back(k);
  p.entries.push_back(e);
  auto c = compile(p);
  ASSERT_TRUE(c);
  std::mt19937 g(5);
  std::uniform_int_distribution<int64_t> di(-50, 50);
  std::vector<int64_t> av(N), bv(N);
  for (int64_t j = 0; j < N; ++j) {
    av[j] = di(g);
    do
      bv[j] = di(g);
    while (bv[j] == 0);
  }
  std::vector<float> xv = randomFloats(N, -10, 10, 3), yv = randomFloats(N, -3, 3, 4);
  xv[0] = NAN;
  yv[1] = NAN;
  std::vector<int64_t> floordiv(N), mod(N), div(N);
  std::vector<float> fmodv(N), mx(N), mn(N), pw(N), sq(N), sel(N);
  std::vector<uint8_t> lt(N);
  std::vector<int32_t> ci(N);
  const void *in[] = {av.data(), bv.data(), xv.data(), yv.data()};
  void *out[] = {floordiv.data(), mod.data(), div.data(), fmodv.data(), mx.data(), mn.data(),
                 pw.data(),       lt.data(),  ci.data(),  sel.data(),   sq.data()};
  TestExec ex(1);
  ASSERT_EQ(c->run(0)(&ex.exec, in, out, nullptr), 0);
  for (int64_t j = 0; j < N; ++j) {
    int64_t q = av[j] / bv[j], r = av[j] % bv[j];
    if (r != 0 && ((r < 0) != (bv[j] < 0))) {
      q -= 1;
      r += bv[j];
    }
    ASSERT_EQ(floordiv[j], q) << av[j] << " // " << bv[j];
    ASSERT_EQ(mod[j], r) << av[j] << " % " << bv[j];
    ASSERT_EQ(div[j], av[j] / bv[j]);
    double fm = std::fmod(double(xv[j]), double(yv[j]));
    if (fm != 0 && ((fm < 0) != (yv[j] < 0)))
      fm += yv[j];
    bool anyNaN = std::isnan(xv[j]) || std::isnan(yv[j]);
    if (anyNaN) {
      EXPECT_TRUE(std::isnan(fmodv[j]) && std::isnan(mx[j]) && std::isnan(mn[j]));
      EXPECT_EQ(lt[j], 0);
      continue;
    }
    ASSERT_TRUE(close(fmodv[j], fm, 1e-5)) << xv[j] << " % " << yv[j];
    ASSERT_EQ(mx[j], std::max(xv[j], yv[j]));
    ASSERT_EQ(mn[j], std::min(xv[j], yv[j]));
    ASSERT_TRUE(close(pw[j], std::pow(std::fabs(double(xv[j])), double(yv[j])), 1e-5));
    ASSERT_EQ(lt[j], xv[j] < yv[j] ? 1 : 0);
    ASSERT_EQ(ci[j], static_cast<int32_t>(xv[j]));
    ASSERT_EQ(sel[j], av[j] >= bv[j] ? xv[j] : yv[j]);
    ASSERT_TRUE(close(sq[j], double(xv[j]) * xv[j], 1e-6));
  }
}

uint16_t bf16RoundNearestEven(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f))
    return uint16_t((bits | 0x00400000) >> 16);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

// f16 in -> f32 out and f32 in -> f16 and bf16 out, round-to-nearest-even both.
TEST_P(VariantTest, HalfAndBFloat16Storage) {
  constexpr int64_t N = 4099;
  kir::Program p;
  p.name = "halfs";
  kir::EntryKernels e;
  e.name = "f";
  e.inputs = {{"h", DType::F16, {N}}, {"x", DType::F32, {N}}, {"bf", DType::BF16, {N}}};
  e.outputs = {{"hx", DType::F32, {N}},
               {"xh", DType::F16, {N}},
               {"xb", DType::BF16, {N}},
               {"bx", DType::F32, {N}}};
  e.buffers = {makeBuffer(kir::Buffer::Kind::Input, 0, N, DType::F16),
               makeBuffer(kir::Buffer::Kind::Input, 1, N),
               makeBuffer(kir::Buffer::Kind::Input, 2, N, DType::BF16),
               makeBuffer(kir::Buffer::Kind::Output, 0, N),
               makeBuffer(kir::Buffer::Kind::Output, 1, N, DType::F16),
               makeBuffer(kir::Buffer::Kind::Output, 2, N, DType::BF16),
               makeBuffer(kir::Buffer::Kind::Output, 3, N)};
  ExprBuilder eb{e};
  kir::ExprId i = eb.loopVar(0);
  kir::LoopKernel k;
  k.name = "convert";
  k.outer = {N};
  k.parallelLoops = 1;
  auto store = [&](uint32_t buf, kir::ExprId v) {
    kir::Stage st;
    st.buffer = buf;
    st.offset = i;
    st.value = v;
    k.stages.push_back(st);
  };
  store(3, eb.cast(eb.load(0, i, DType::F16), DType::F32));
  store(4, eb.cast(eb.load(1, i, DType::F32), DType::F16));
  store(5, eb.cast(eb.load(1, i, DType::F32), DType::BF16));
  store(6, eb.cast(eb.load(2, i, DType::BF16), DType::F32));
  e.steps.push_back(k);
  p.entries.push_back(e);
  auto c = compile(p);
  ASSERT_TRUE(c);
  std::vector<float> x = randomFloats(N, -70000, 70000, 9);
  for (int64_t j = 0; j < N / 2; ++j)
    x[j] /= 65536.0f;
  x[0] = NAN;
  x[1] = INFINITY;
  x[2] = 1e-7f; // an f16 subnormal
  std::vector<_Float16> h(N);
  std::vector<uint16_t> bf(N);
  for (int64_t j = 0; j < N; ++j) {
    h[j] = static_cast<_Float16>(x[N - 1 - j] / 4);
    bf[j] = bf16RoundNearestEven(x[N - 1 - j]);
  }
  std::vector<float> hx(N), bx(N);
  std::vector<_Float16> xh(N);
  std::vector<uint16_t> xb(N);
  const void *in[] = {h.data(), x.data(), bf.data()};
  void *out[] = {hx.data(), xh.data(), xb.data(), bx.data()};
  TestExec ex(1);
  ASSERT_EQ(c->run(0)(&ex.exec, in, out, nullptr), 0);
  for (int64_t j = 0; j < N; ++j) {
    if (std::isnan(static_cast<float>(h[j]))) {
      EXPECT_TRUE(std::isnan(hx[j]));
    } else {
      ASSERT_EQ(hx[j], static_cast<float>(h[j])) << j;
    }
    _Float16 want = static_cast<_Float16>(x[j]);
    if (std::isnan(x[j])) {
      EXPECT_TRUE(std::isnan(static_cast<float>(xh[j])));
    } else {
      ASSERT_EQ(static_cast<float>(xh[j]), static_cast<float>(want)) << x[j];
    }
    ASSERT_EQ(xb[j], bf16RoundNearestEven(x[j])) << x[j];
    uint32_t bits = uint32_t(bf[j]) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bx[j]));
    } else {
      ASSERT_EQ(bx[j], f);
    }
  }
}

// shapes(): input dims, output dims, arena bytes; k + 1 for the first failing guard.
TEST_P(VariantTest, ShapesAndGuards) {
  kir::Program p;
  p.name = "shapes";
  kir::EntryKernels e;
  e.name = "f";
  e.symbols = {"batch", "seq"};
  SymExpr batch = SymExpr::symbol("batch"), seq = SymExpr::symbol("seq");
  e.inputs.push_back({"x", DType::F32, {batch, seq + 1, 7}});
  e.outputs.push_back(
      {"y", DType::F32, {SymExpr::floorDiv(batch * seq, 4), SymExpr::mod(seq - 10, 4)}});
  e.arenaBytes = SymExpr::max(batch, seq) * 64;
  e.guards.push_back({batch, GuardKind::LE, 16, {}});
  e.guards.push_back({SymExpr::mod(seq, 2), GuardKind::EQ, 0, {}});
  p.entries.push_back(e);
  auto c = compile(p);
  ASSERT_TRUE(c);
  int64_t out[6];
  int64_t ok[] = {3, 6};
  EXPECT_EQ(c->shapes(0)(ok, out), 0);
  EXPECT_EQ(out[0], 3);
  EXPECT_EQ(out[1], 7);
  EXPECT_EQ(out[2], 7);
  EXPECT_EQ(out[3], 4); // 18 // 4
  EXPECT_EQ(out[4], 0); // (6 - 10) mod 4, Python: 0
  EXPECT_EQ(out[5], 6 * 64);
  int64_t mod3[] = {3, 3};
  EXPECT_EQ(c->shapes(0)(mod3, out), 0 + 2);
  EXPECT_EQ(out[4], 1); // (3 - 10) mod 4 = 1 in Python
  int64_t big[] = {17, 3};
  EXPECT_EQ(c->shapes(0)(big, out), 1);
}

// The stack of three caches, each the concatenation of a past [batch, past, 20] and a new
// [batch, 20] along the positions (GPT-2's present): out[l, b, t, j] picks its input by selects
// on outer loops and on the symbol past, which the innermost loop j does not change, so the
// kernel branches on them before it (one copy of the loop per input). A second kernel chains 69
// such selects (out2[i, j] = x[i, j] + i over 70 rows), past the copies the code may make: the
// rest stay selects. Every element is checked, at 1 and 2 threads.
TEST_P(VariantTest, SelectsDecidedByOuterLoops) {
  constexpr int64_t J = 20, Rows = 70;
  kir::Program p;
  p.name = "stack_cat";
  kir::EntryKernels e;
  e.name = "f";
  e.symbols = {"batch", "past"};
  SymExpr batch = SymExpr::symbol("batch"), past = SymExpr::symbol("past");
  for (int l = 0; l < 3; ++l) {
    e.inputs.push_back({"past" + std::to_string(l), DType::F32, {batch, past, J}});
    e.buffers.push_back(makeBuffer(kir::Buffer::Kind::Input, 2 * l, batch * past * J));
    e.inputs.push_back({"new" + std::to_string(l), DType::F32, {batch, J}});
    e.buffers.push_back(makeBuffer(kir::Buffer::Kind::Input, 2 * l + 1, batch * J));
  }
  e.inputs.push_back({"x", DType::F32, {Rows, J}});
  e.buffers.push_back(makeBuffer(kir::Buffer::Kind::Input, 6, Rows * J));
  e.outputs.push_back({"out", DType::F32, {3, batch, past + 1, J}});
  e.buffers.push_back(makeBuffer(kir::Buffer::Kind::Output, 0, batch * (past + 1) * (3 * J)));
  e.outputs.push_back({"out2", DType::F32, {Rows, J}});
  e.buffers.push_back(makeBuffer(kir::Buffer::Kind::Output, 1, Rows * J));
  ExprBuilder eb{e};
  kir::ExprId l = eb.loopVar(0), b = eb.loopVar(1), t = eb.loopVar(2), j = eb.loopVar(3);
  kir::ExprId pastDim = eb.dim(past);
  auto add = [&](kir::ExprId x, kir::ExprId y) {
    return eb.binary(BinaryOp::Add, x, y, DType::I64);
  };
  auto mul = [&](kir::ExprId x, kir::ExprId y) {
    return eb.binary(BinaryOp::Mul, x, y, DType::I64);
  };
  // The past row is clamped, as lowering clamps a concatenation's arms.
  kir::ExprId row = eb.binary(BinaryOp::Min, t, add(pastDim, eb.ci(-1)), DType::I64);
  auto cat = [&](uint32_t layer) {
    kir::ExprId fromPast =
        eb.load(2 * layer, add(mul(add(mul(b, pastDim), row), eb.ci(J)), j), DType::F32);
    kir::ExprId fromNew = eb.load(2 * layer + 1, add(mul(b, eb.ci(J)), j), DType::F32);
    return eb.select(eb.binary(BinaryOp::Lt, t, pastDim, DType::Bool), fromPast, fromNew,
                     DType::F32);
  };
  kir::ExprId value = eb.select(
      eb.binary(BinaryOp::Lt, l, eb.ci(1), DType::Bool), cat(0),
      eb.select(eb.binary(BinaryOp::Lt, l, eb.ci(2), DType::Bool), cat(1), cat(2), DType::F32),
      DType::F32);
  kir::LoopKernel k;
  k.name = "stack_cat";
  k.outer = {3, batch, past + 1, J};
  k.parallelLoops = 4;
  k.independent = true;
  kir::Stage st;
  st.buffer = 7;
  st.offset =
      add(mul(add(mul(add(mul(l, eb.dim(batch)), b), add(pastDim, eb.ci(1))), t), eb.ci(J)), j);
  st.value = value;
  k.stages.push_back(st);
  e.steps.push_back(k);
  // out2[i, j] = x[i, j] + i as select(i < 1, x[0, j] + 0, select(i < 2, x[1, j] + 1, ...)).
  kir::ExprId i = eb.loopVar(0);
  kir::ExprId chain =
      eb.binary(BinaryOp::Add, eb.load(6, add(eb.ci((Rows - 1) * J), eb.loopVar(1)), DType::F32),
                eb.cf(Rows - 1), DType::F32);
  for (int64_t r = Rows - 2; r >= 0; --r)
    chain =
        eb.select(eb.binary(BinaryOp::Lt, i, eb.ci(r + 1), DType::Bool),
                  eb.binary(BinaryOp::Add, eb.load(6, add(eb.ci(r * J), eb.loopVar(1)), DType::F32),
                            eb.cf(r), DType::F32),
                  chain, DType::F32);
  kir::LoopKernel k2;
  k2.name = "chain";
  k2.outer = {Rows, J};
  k2.parallelLoops = 1;
  k2.independent = true;
  st.buffer = 8;
  st.offset = eb.linear({{0, J}, {1, 1}});
  st.value = chain;
  k2.stages = {st};
  e.steps.push_back(k2);
  p.entries.push_back(e);
  auto c = compile(p);
  ASSERT_TRUE(c);
  for (int threads : {1, 2})
    for (auto [nb, np] : {std::pair<int64_t, int64_t>{1, 1}, {3, 5}, {2, 40}}) {
      std::vector<std::vector<float>> ins;
      for (int layer = 0; layer < 3; ++layer) {
        ins.push_back(randomFloats(nb * np * J, -1, 1, 10 * layer + 1));
        ins.push_back(randomFloats(nb * J, -1, 1, 10 * layer + 2));
      }
      ins.push_back(randomFloats(Rows * J, -1, 1, 99));
      std::vector<float> out(3 * nb * (np + 1) * J, NAN), out2(Rows * J, NAN);
      const void *in[7];
      for (int a = 0; a < 7; ++a)
        in[a] = ins[a].data();
      void *outs[] = {out.data(), out2.data()};
      int64_t syms[] = {nb, np};
      TestExec ex(threads);
      ASSERT_EQ(c->run(0)(&ex.exec, in, outs, syms), 0);
      for (int64_t layer = 0; layer < 3; ++layer)
        for (int64_t bb = 0; bb < nb; ++bb)
          for (int64_t tt = 0; tt <= np; ++tt)
            for (int64_t jj = 0; jj < J; ++jj) {
              float want = tt < np ? ins[2 * layer][(bb * np + tt) * J + jj]
                                   : ins[2 * layer + 1][bb * J + jj];
              ASSERT_EQ(out[((layer * nb + bb) * (np + 1) + tt) * J + jj], want)
                  << "threads " << threads << " batch " << nb << " past " << np << " at " << layer
                  << "," << bb << "," << tt << "," << jj;
            }
      for (int64_t r = 0; r < Rows; ++r)
        for (int64_t jj = 0; jj < J; ++jj)
          ASSERT_EQ(out2[r * J + jj], ins[6][r * J + jj] + float(r)) << r << "," << jj;
    }
}

// Rows whose width is not a multiple of the vector run their whole vectors, then the last
// vector's worth of points again, where running a point twice changes nothing. Over rows of w
// (1, 15, 16, 17, 56 and 57; two threads cut rows apart): out[i, j] = 2 x[i, j] + j; third[i,
// j / 3] = x[i, j] (three points write each element: the last must win); and z = x,
// then z = z + 1 in place, a kernel that reads what it stores and so must run each point once.
TEST_P(VariantTest, LastVectorRunsAgain) {
  constexpr int64_t Rows = 3;
  kir::Program p;
  p.name = "last_vector";
  kir::EntryKernels e;
  e.name = "f";
  e.symbols = {"w"};
  SymExpr w = SymExpr::symbol("w");
  e.inputs.push_back({"x", DType::F32, {Rows, w}});
  e.buffers.push_back(makeBuffer(kir::Buffer::Kind::Input, 0, Rows * w));
  e.outputs.push_back({"out", DType::F32, {Rows, w}});
  e.buffers.push_back(makeBuffer(kir::Buffer::Kind::Output, 0, Rows * w));
  e.outputs.push_back({"third", DType::F32, {Rows, w}});
  e.buffers.push_back(makeBuffer(kir::Buffer::Kind::Output, 1, Rows * w));
  e.outputs.push_back({"z", DType::F32, {Rows, w}});
  e.buffers.push_back(makeBuffer(kir::Buffer::Kind::Output, 2, Rows * w));
  ExprBuilder eb{e};
  kir::ExprId i = eb.loopVar(0), j = eb.loopVar(1), wDim = eb.dim(w);
  kir::ExprId at =
      eb.binary(BinaryOp::Add, eb.binary(BinaryOp::Mul, i, wDim, DType::I64), j, DType::I64);
  kir::ExprId x = eb.load(0, at, DType::F32);
  auto kernel = [&](const char *name, uint32_t buffer, kir::ExprId offset, kir::ExprId value) {
    kir::LoopKernel k;
    k.name = name;
    k.outer = {Rows, w};
    k.parallelLoops = 2;
    kir::Stage st;
    st.buffer = buffer;
    st.offset = offset;
    st.value = value;
    k.stages.push_back(st);
    e.steps.push_back(k);
  };
  kernel("affine", 1, at,
         eb.binary(BinaryOp::Add, eb.binary(BinaryOp::Mul, eb.cf(2), x, DType::F32),
                   eb.cast(j, DType::F32), DType::F32));
  kernel("thirds", 2,
         eb.binary(BinaryOp::Add, eb.binary(BinaryOp::Mul, i, wDim, DType::I64),
                   eb.binary(BinaryOp::Div, j, eb.ci(3), DType::I64), DType::I64),
         x);
  kernel("copy", 3, at, x);
  kernel("in_place", 3, at,
         eb.binary(BinaryOp::Add, eb.load(3, at, DType::F32), eb.cf(1), DType::F32));
  p.entries.push_back(e);
  auto c = compile(p);
  ASSERT_TRUE(c);
  for (int threads : {1, 2})
    for (int64_t nw : {1, 15, 16, 17, 56, 57}) {
      std::vector<float> xs = randomFloats(Rows * nw, -1, 1, 7 + nw);
      std::vector<float> out(Rows * nw, NAN), third(Rows * nw, NAN), z(Rows * nw, NAN);
      const void *in[] = {xs.data()};
      void *outs[] = {out.data(), third.data(), z.data()};
      int64_t syms[] = {nw};
      TestExec ex(threads);
      ASSERT_EQ(c->run(0)(&ex.exec, in, outs, syms), 0);
      for (int64_t r = 0; r < Rows; ++r)
        for (int64_t jj = 0; jj < nw; ++jj) {
          float v = xs[r * nw + jj];
          ASSERT_EQ(out[r * nw + jj], 2 * v + float(jj)) << threads << " " << nw << " " << r;
          ASSERT_EQ(z[r * nw + jj], v + 1) << threads << " " << nw << " " << r << "," << jj;
          if (jj < (nw + 2) / 3) {
            ASSERT_EQ(third[r * nw + jj], xs[r * nw + std::min(3 * jj + 2, nw - 1)])
                << threads << " " << nw << " " << r << "," << jj;
          }
        }
    }
}

} // namespace

// A cond picks one branch by a bool buffer; each branch gathers table[ids[i]] through an index
// check. In-range ids run clean; an id outside 0..4 (or negative) makes run return the failing
// check's number, from a serial or a parallel task, with the read clamped into the table.
TEST_P(VariantTest, CondAndIndexChecks) {
  kir::Program p;
  p.name = "cond_checks";
  kir::EntryKernels e;
  e.name = "forward";
  e.symbols = {"n"};
  SymExpr n = SymExpr::symbol("n");
  e.inputs = {{"p", DType::Bool, {1}}, {"ids", DType::I64, {n}}, {"table", DType::F32, {5}}};
  e.outputs.push_back({"y", DType::F32, {n}});
  e.buffers = {makeBuffer(kir::Buffer::Kind::Input, 0, 1, DType::Bool),
               makeBuffer(kir::Buffer::Kind::Input, 1, n, DType::I64),
               makeBuffer(kir::Buffer::Kind::Input, 2, 5),
               makeBuffer(kir::Buffer::Kind::Output, 0, n)};
  e.arenaBytes = 0;
  e.indexChecks = {"then (t.cpp:1:1): ids", "else (t.cpp:2:1): ids"};
  ExprBuilder eb{e};
  kir::ExprId i = eb.loopVar(0);
  auto gather = [&](uint32_t check) {
    kir::Expr c;
    c.kind = kir::ExprKind::CheckIndex;
    c.type = DType::I64;
    c.index = check;
    c.sym = 5;
    c.operands = {eb.load(1, i, DType::I64)};
    return eb.load(2, eb.add(c), DType::F32);
  };
  auto kernel = [&](const char *name, kir::ExprId value) {
    kir::LoopKernel k;
    k.name = name;
    k.outer = {n};
    k.parallelLoops = 1;
    kir::Stage st;
    st.buffer = 3;
    st.offset = i;
    st.value = value;
    k.stages.push_back(st);
    return k;
  };
  kir::CondStep cond;
  cond.predicate = 0;
  cond.thenSteps.push_back(kernel("then_gather", gather(1)));
  cond.elseSteps.push_back(kernel("else_gather", eb.unary(UnaryOp::Neg, gather(2), DType::F32)));
  e.steps.push_back(std::move(cond));
  p.entries.push_back(e);
  auto c = compile(p);
  ASSERT_TRUE(c);
  std::vector<float> table = randomFloats(5, 1, 2, 11);
  std::mt19937 g(5);
  for (int threads : {1, 2}) {
    for (int64_t count : {1, 7, 200000}) {
      std::vector<int64_t> ids(count);
      for (int64_t &id : ids)
        id = std::uniform_int_distribution<int64_t>(0, 4)(g);
      for (uint8_t pred : {1, 0}) {
        TestExec ex(threads);
        std::vector<float> y(count, NAN);
        const void *in[] = {&pred, ids.data(), table.data()};
        void *out[] = {y.data()};
        int64_t syms[] = {count};
        ASSERT_EQ(c->run(0)(&ex.exec, in, out, syms), 0);
        for (int64_t k = 0; k < count; ++k)
          ASSERT_EQ(y[k], pred ? table[ids[k]] : -table[ids[k]]) << k;
        // One bad id anywhere fails the branch that ran, whatever thread read it.
        for (int64_t bad : {int64_t(5), int64_t(-1), int64_t(1) << 40}) {
          std::vector<int64_t> wrong = ids;
          wrong[count / 2] = bad;
          in[1] = wrong.data();
          EXPECT_EQ(c->run(0)(&ex.exec, in, out, syms), pred ? 1 : 2) << bad;
          in[1] = ids.data();
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, VariantTest,
                         ::testing::Values(Variant::X86_64_V3, Variant::X86_64_V4),
                         [](const auto &info) {
                           return info.param == Variant::X86_64_V4 ? "v4" : "v3";
                         });
