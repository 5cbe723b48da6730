// GEMM library calls at odd sizes, batched, with transposed and strided operands and with B an
// im2col view of a convolution's input, with and without a bias + relu epilogue, against a double
// reference. Tolerance per element:
// |got - want| <= 1e-5 * max(1, sum_k |a_ik * b_kj|) (the usual GEMM error bound, scaled).
#include "../../../runtime/src/internal.h"
#include "CodegenTestUtil.h"
#include "aotc/tensor/HostTensor.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace aotc;
using namespace aotc::cpu;
using namespace aotc::cpu::test;

namespace {

struct GemmCase {
  int64_t batch, m, n, k;
  bool transposedB;     // B stored [batch, n, k] (nn.Linear's weight), else [batch, k, n]
  bool transposedA;     // A stored [batch, k, m], else [batch, m, k]
  bool sharedA = false; // one A for every batch element (batch stride 0, a convolution's weight)
};

std::string name(const GemmCase &g) {
  return std::to_string(g.batch) + "x" + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
         std::to_string(g.k) + (g.transposedB ? "_bT" : "") + (g.transposedA ? "_aT" : "") +
         (g.sharedA ? "_aShared" : "");
}

// (variant, case, epilogue, A a bf16 weight (bf16-weights: a convolution's weight at --precision
// bf16), read widened; where the host has bf16 arithmetic, the blocked path rounds B to bf16 too
// and multiplies k-pairs.)
class GemmTest : public ::testing::TestWithParam<std::tuple<Variant, GemmCase, bool, bool>> {
protected:
  void SetUp() override {
    if (!hostSupports(std::get<0>(GetParam())))
      GTEST_SKIP() << "the host CPU cannot run " << variantName(std::get<0>(GetParam())).str();
  }
};

// The cpu_features to run a v4 GEMM with a bf16 operand under: none (f32 arithmetic), and where
// the host has them, vdpbf16ps (forced) and AMX (where the runtime finds it and Linux grants it
// to this process).
std::vector<uint32_t> bf16FeatureSets(Variant variant) {
  std::vector<uint32_t> sets = {0};
  if (variant == Variant::X86_64_V4 && __builtin_cpu_supports("avx512bf16")) {
    sets.push_back(AOTC_CPU_FEATURE_BF16_DOT);
    uint32_t found = 0;
    if (aotc_cpu_features(AOTC_VARIANT_X86_64_V4, &found) == AOTC_OK &&
        (found & AOTC_CPU_FEATURE_AMX_BF16))
      sets.push_back(AOTC_CPU_FEATURE_AMX_BF16);
  }
  return sets;
}

float roundedToBf16(float x) { return bfloat16ToFloat(floatToBFloat16(x)); }

// The epilogue relu(acc + bias[n]), the bias f32 buffer `bias`.
kir::ExprId biasRelu(kir::EntryKernels &e, uint32_t bias) {
  ExprBuilder eb{e};
  kir::ExprId sum =
      eb.binary(kir::BinaryOp::Add, eb.acc(), eb.load(bias, eb.loopVar(2), DType::F32), DType::F32);
  return eb.binary(kir::BinaryOp::Max, sum, eb.cf(0), DType::F32);
}

// out = A @ B (+ bias[n], relu) with m a dynamic symbol "m"; the bias is a weight.
kir::Program gemmProgram(const GemmCase &g, bool epilogue, bool bf16A) {
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
  if (bf16A)
    e.inputs[0].dtype = DType::BF16;
  e.buffers = {
      makeBuffer(kir::Buffer::Kind::Input, 0, g.batch * m * g.k, bf16A ? DType::BF16 : DType::F32),
      makeBuffer(kir::Buffer::Kind::Input, 1, g.batch * g.k * g.n),
      makeBuffer(kir::Buffer::Kind::Output, 0, g.batch * m * g.n),
      makeBuffer(kir::Buffer::Kind::Weight, 0, g.n)};
  kir::GemmCall c;
  c.name = "gemm_" + name(g);
  if (bf16A)
    c.precision = kir::Precision::BF16;
  c.batch = g.batch;
  c.m = m;
  c.n = g.n;
  c.k = g.k;
  c.a.buffer = 0;
  c.a.batchStride = g.sharedA ? SymExpr(0) : m * g.k;
  c.a.rowStride = g.transposedA ? SymExpr(1) : SymExpr(g.k);
  c.a.colStride = g.transposedA ? m : SymExpr(1);
  c.b.buffer = 1;
  c.b.batchStride = g.k * g.n;
  c.b.rowStride = g.transposedB ? 1 : g.n;
  c.b.colStride = g.transposedB ? g.k : 1;
  c.out = 2;
  if (epilogue)
    c.epilogue = biasRelu(e, 3);
  e.steps.push_back(c);
  p.entries.push_back(e);
  return p;
}

TEST_P(GemmTest, MatchesDoubleReference) {
  auto [variant, g, epilogue, bf16A] = GetParam();
  kir::Program p = gemmProgram(g, epilogue, bf16A);
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
  std::vector<uint16_t> aBf16(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    aBf16[i] = floatToBFloat16(a[i]);
    if (bf16A)
      a[i] = bfloat16ToFloat(aBf16[i]);
  }
  std::vector<uint8_t> blob(p.weightBytes);
  std::memcpy(blob.data() + 64, bias.data(), g.n * 4);
  auto A = [&](int64_t bi, int64_t i, int64_t kk) {
    if (g.sharedA)
      bi = 0;
    return g.transposedA ? a[bi * g.m * g.k + kk * g.m + i] : a[bi * g.m * g.k + i * g.k + kk];
  };
  bool roundsB = false;
  auto B = [&](int64_t bi, int64_t kk, int64_t j) {
    float x = g.transposedB ? b[bi * g.k * g.n + j * g.k + kk] : b[bi * g.k * g.n + kk * g.n + j];
    return roundsB ? roundedToBf16(x) : x;
  };
  // The dot products (A and B along k, m <= DotMaxM) and the small path keep B in f32; AMX takes
  // the dot products' GEMMs.
  const bool dotShaped = g.transposedB && !g.transposedA && g.m <= GemmPolicy::DotMaxM;
  for (uint32_t features : bf16A ? bf16FeatureSets(variant) : std::vector<uint32_t>{0})
    for (int threads : {1, 2}) {
      roundsB = features != 0 && g.m > GemmPolicy::SmallM && g.k > 0 &&
                (features == AOTC_CPU_FEATURE_AMX_BF16 || !dotShaped);
      std::vector<float> y(g.batch * g.m * g.n, NAN);
      TestExec ex(threads, &blob);
      ex.exec.cpu_features = features;
      const void *in[] = {bf16A ? static_cast<const void *>(aBf16.data()) : a.data(), b.data()};
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
                << "threads " << threads << ", cpu features " << features << " at " << bi << ","
                << i << "," << j << ": got " << got << " want " << s;
          }
    }
}

const GemmCase Cases[] = {
    {1, 1, 1, 1, false, false},
    {1, 7, 13, 5, false, false},
    {1, 1, 1024, 784, true, false},
    {1, 1, 1024, 784, false, false},
    {1, 65, 33, 129, false, false},
    {1, 65, 33, 129, true, true},
    {3, 256, 256, 256, true, false},
    {3, 256, 256, 256, false, false},
    {1, 9, 300, 600, true, false},
    {2, 100, 515, 1000, false, true},
    // B along k past the dot path's m: whole 16 x 16 transposed blocks, edge panels, k tails.
    {1, 200, 70, 600, true, false},
    {1, 1000, 17, 3, false, false},
    // n = 49 (a 7x7 map): a whole panel, then one vector and a column (the kernel of columns,
    // summing in C across two k blocks), 4-row tiles at the bottom.
    {1, 52, 300, 49, false, false},
    {1, 8, 7, 0, false, false},
    {1, 37, 23, 0, true, false},
    // The small path's chunks where they are few: 600 columns as two of 320 (wider than
    // SmallNChunk) on two threads, three of 256 on one; 1000 as four, the last short.
    {1, 3, 600, 70, false, false},
    {1, 8, 1000, 33, false, false},
    // The dot path (A and B contiguous along k, m <= DotMaxM): MLP-sized, k tails, edge tiles.
    {1, 32, 1024, 784, true, false},
    {2, 5, 33, 17, true, false},
    {1, 3, 5, 1, true, false},
    {2, 64, 65, 23, true, false},
    // Row tiles of 1 and 2 (what is left past whole 4-row tiles, or all of m).
    {1, 2, 70, 40, true, false},
    {2, 6, 13, 100, true, false},
    // The dot path up to its largest m, both operands contiguous along k.
    {1, 128, 37, 70, true, false},
    // A shared by all batch elements and narrow n: a blocked task packs the group's columns one
    // after the other (tiles spanning two batch elements), several k blocks, edge rows.
    {6, 40, 45, 30, false, false, true},
    {5, 13, 33, 300, false, false, true},
    {3, 30, 20, 40, false, false, true},
};

// B as an im2col view of an NCHW input (kir::ConvWindow), read in place with padded strides
// and an offset: the blocked path's gathering B packing (and the small path for m <= 8).
struct ConvCase {
  int64_t batch, cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t oh() const { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
  int64_t k() const { return cin * kh * kw; }
  // The input's layout: channels and images further apart than dense, after an offset.
  int64_t cs() const { return h * w + 3; }
  int64_t bs() const { return cin * cs() + 5; }
  int64_t offset() const { return 7; }
};

std::string name(const ConvCase &c) {
  return fmt::format("{}x{}x{}x{}_o{}_k{}x{}_s{}x{}_p{}x{}_d{}x{}", c.batch, c.cin, c.h, c.w,
                     c.cout, c.kh, c.kw, c.sh, c.sw, c.ph, c.pw, c.dh, c.dw);
}

// What follows the sum: nothing, relu(s + bias[co]), or ResNet's relu((s + bias[co]) + r[b, co, p])
// with the residual r in rows of ResidualStride (the micro-kernel applies both in registers).
enum class ConvEpilogue { None, BiasRelu, BiasResidualRelu };
int64_t residualStride(int64_t n) { return n + 3; }
std::string name(ConvEpilogue e) {
  return e == ConvEpilogue::None       ? ""
         : e == ConvEpilogue::BiasRelu ? "_bias_relu"
                                       : "_bias_residual_relu";
}
constexpr int64_t ResidualOffset = 2;

// How the test stores A (the filter): dense f32, as panels (kir::MatrixOperand::panels, as
// pack-weights stores it), or dense bf16 (bf16-weights at --precision bf16: read widened; where
// the host has bf16 arithmetic, the blocked path rounds the im2col columns into k-pairs and
// multiplies with vdpbf16ps or AMX tiles).
enum class FilterForm { Dense, Panels, Bf16 };
std::string name(FilterForm f) {
  return f == FilterForm::Dense ? "" : f == FilterForm::Panels ? "_panels" : "_bf16";
}

// (variant, case, epilogue, filter form)
class ConvViewTest
    : public ::testing::TestWithParam<std::tuple<Variant, ConvCase, ConvEpilogue, FilterForm>> {
protected:
  void SetUp() override {
    if (!hostSupports(std::get<0>(GetParam())))
      GTEST_SKIP() << "the host CPU cannot run " << variantName(std::get<0>(GetParam())).str();
  }
};

// y[b, co, p] = epilogue(W[co, :] . cols[b, :, p]) with the batch a dynamic symbol.
int64_t panelElements(const ConvCase &c) {
  return (c.cout + PanelRows - 1) / PanelRows * PanelRows * c.k();
}

kir::Program convProgram(const ConvCase &c, ConvEpilogue epilogue, FilterForm form) {
  const bool panels = form == FilterForm::Panels, bf16 = form == FilterForm::Bf16;
  kir::Program p;
  p.name = "conv";
  kir::Weight wt;
  wt.name = "bias";
  wt.shape = {c.cout};
  wt.offset = 64;
  wt.nbytes = c.cout * 4;
  p.weights.push_back(wt);
  p.weightBytes = 64 + c.cout * 4;
  kir::EntryKernels e;
  e.name = "f";
  e.symbols = {"batch"};
  SymExpr batch = SymExpr::symbol("batch");
  int64_t n = c.oh() * c.ow();
  e.inputs.push_back({"x", DType::F32, {batch, c.bs()}});
  int64_t wNumel = panels ? panelElements(c) : c.cout * c.k();
  e.inputs.push_back({"w", bf16 ? DType::BF16 : DType::F32, {wNumel}});
  int64_t rNumel = ResidualOffset + c.batch * c.cout * residualStride(n);
  e.inputs.push_back({"r", DType::F32, {rNumel}});
  e.outputs.push_back({"y", DType::F32, {batch, c.cout, n}});
  e.buffers = {makeBuffer(kir::Buffer::Kind::Input, 0, batch * c.bs()),
               makeBuffer(kir::Buffer::Kind::Input, 1, wNumel, bf16 ? DType::BF16 : DType::F32),
               makeBuffer(kir::Buffer::Kind::Output, 0, batch * c.cout * n),
               makeBuffer(kir::Buffer::Kind::Weight, 0, c.cout),
               makeBuffer(kir::Buffer::Kind::Input, 2, rNumel)};
  kir::GemmCall g;
  g.name = "conv_" + name(c);
  if (bf16)
    g.precision = kir::Precision::BF16;
  g.batch = batch;
  g.m = c.cout;
  g.n = n;
  g.k = c.k();
  g.a.buffer = 1;
  g.a.batchStride = 0;
  g.a.rowStride = c.k();
  g.a.colStride = 1;
  g.a.panelRows = panels ? PanelRows : 0;
  g.b.buffer = 0;
  g.b.offset = c.offset();
  g.b.batchStride = c.bs();
  kir::ConvWindow w;
  w.channelStride = c.cs();
  w.heightStride = c.w;
  w.widthStride = 1;
  w.height = c.h;
  w.width = c.w;
  w.kernelH = c.kh;
  w.kernelW = c.kw;
  w.strideH = c.sh;
  w.strideW = c.sw;
  w.padH = c.ph;
  w.padW = c.pw;
  w.dilH = c.dh;
  w.dilW = c.dw;
  w.outWidth = c.ow();
  g.b.conv = w;
  g.out = 2;
  if (epilogue != ConvEpilogue::None) {
    ExprBuilder eb{e};
    kir::ExprId sum =
        eb.binary(kir::BinaryOp::Add, eb.acc(), eb.load(3, eb.loopVar(1), DType::F32), DType::F32);
    if (epilogue == ConvEpilogue::BiasResidualRelu) {
      int64_t rs = residualStride(n);
      kir::ExprId at = eb.binary(kir::BinaryOp::Add, eb.ci(ResidualOffset),
                                 eb.linear({{0, c.cout * rs}, {1, rs}, {2, 1}}), DType::I64);
      sum = eb.binary(kir::BinaryOp::Add, sum, eb.load(4, at, DType::F32), DType::F32);
    }
    g.epilogue = eb.binary(kir::BinaryOp::Max, sum, eb.cf(0), DType::F32);
  }
  e.steps.push_back(g);
  p.entries.push_back(e);
  return p;
}

TEST_P(ConvViewTest, MatchesDoubleReference) {
  auto [variant, c, epilogue, form] = GetParam();
  kir::Program p = convProgram(c, epilogue, form);
  auto compiled = Compiled::create(p, variant);
  ASSERT_TRUE(!!compiled) << llvm::toString(compiled.takeError());
  std::mt19937 rng(unsigned(c.cin * 131 + c.h * 17 + c.cout));
  std::uniform_real_distribution<float> d(-1, 1);
  int64_t n = c.oh() * c.ow(), k = c.k();
  // Elements outside the window (the gaps between channels and images) are NaN: reading one
  // poisons the result.
  std::vector<float> x(c.offset() + c.batch * c.bs() + 8, NAN), w(c.cout * k), bias(c.cout);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t ci = 0; ci < c.cin; ++ci)
      for (int64_t i = 0; i < c.h * c.w; ++i)
        x[c.offset() + b * c.bs() + ci * c.cs() + i] = d(rng);
  std::vector<uint16_t> wBf16(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = d(rng);
    wBf16[i] = floatToBFloat16(w[i]);
    if (form == FilterForm::Bf16)
      w[i] = bfloat16ToFloat(wBf16[i]);
  }
  for (float &v : bias)
    v = d(rng);
  std::vector<float> r(ResidualOffset + c.batch * c.cout * residualStride(n));
  for (float &v : r)
    v = d(rng);
  std::vector<uint8_t> blob(p.weightBytes);
  std::memcpy(blob.data() + 64, bias.data(), c.cout * 4);
  bool roundsX = false;
  auto X = [&](int64_t b, int64_t ci, int64_t ih, int64_t iw) -> double {
    if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w)
      return 0;
    float v = x[c.offset() + b * c.bs() + ci * c.cs() + ih * c.w + iw];
    return roundsX ? roundedToBf16(v) : v;
  };
  for (uint32_t features :
       form == FilterForm::Bf16 ? bf16FeatureSets(variant) : std::vector<uint32_t>{0})
    for (int threads : {1, 2}) {
      // The blocked path (m > SmallM) multiplies in bf16 where it can.
      roundsX = features != 0 && c.cout > GemmPolicy::SmallM;
      std::vector<float> y(c.batch * c.cout * n, NAN);
      TestExec ex(threads, &blob);
      ex.exec.cpu_features = features;
      // Panels: rows of 12 side by side per column, the last panel's missing rows NaN (the tile
      // multiplies them, but they must never reach the output).
      std::vector<float> wPanels(panelElements(c), NAN);
      for (int64_t co = 0; co < c.cout; ++co)
        for (int64_t kk = 0; kk < k; ++kk)
          wPanels[kir::panelOffset(co, kk, k, PanelRows)] = w[co * k + kk];
      const void *wData = form == FilterForm::Panels ? static_cast<const void *>(wPanels.data())
                          : form == FilterForm::Bf16 ? static_cast<const void *>(wBf16.data())
                                                     : w.data();
      const void *in[] = {x.data(), wData, r.data()};
      void *out[] = {y.data()};
      int64_t syms[] = {c.batch};
      ASSERT_EQ((*compiled)->run(0)(&ex.exec, in, out, syms), 0);
      for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t co = 0; co < c.cout; ++co)
          for (int64_t oh = 0; oh < c.oh(); ++oh)
            for (int64_t ow = 0; ow < c.ow(); ++ow) {
              double s = 0, mag = 0;
              for (int64_t ci = 0; ci < c.cin; ++ci)
                for (int64_t fh = 0; fh < c.kh; ++fh)
                  for (int64_t fw = 0; fw < c.kw; ++fw) {
                    double t = double(w[co * k + (ci * c.kh + fh) * c.kw + fw]) *
                               X(b, ci, oh * c.sh - c.ph + fh * c.dh, ow * c.sw - c.pw + fw * c.dw);
                    s += t;
                    mag += std::fabs(t);
                  }
              int64_t at = oh * c.ow() + ow;
              if (epilogue == ConvEpilogue::BiasRelu)
                s = std::max(0.0, s + bias[co]);
              if (epilogue == ConvEpilogue::BiasResidualRelu)
                s = std::max(0.0,
                             s + bias[co] +
                                 r[ResidualOffset + (b * c.cout + co) * residualStride(n) + at]);
              float got = y[(b * c.cout + co) * n + at];
              ASSERT_FALSE(std::isnan(got)) << b << "," << co << "," << oh << "," << ow;
              ASSERT_LE(std::fabs(got - s), 1e-5 * std::max(1.0, mag))
                  << "threads " << threads << ", cpu features " << features << " at " << b << ","
                  << co << "," << oh << "," << ow << ": got " << got << " want " << s;
            }
    }
}

const ConvCase ConvCases[] = {
    // ResNet-like 3x3 pad 1 with n over one NC block, m a multiple of neither MR.
    {2, 16, 20, 19, 40, 3, 3, 1, 1, 1, 1, 1, 1},
    // k = 288 (f32's two k blocks of 144; one AMX block, whose tiles read a bf16 filter in
    // place), m = 64.
    {1, 32, 10, 12, 64, 3, 3, 1, 1, 1, 1, 1, 1},
    // k = 1800: AMX's k blocks as deep as its B buffer holds for 4 panels, at most 1536 (two
    // blocks of 912 and 888).
    {1, 200, 10, 12, 64, 3, 3, 1, 1, 1, 1, 1, 1},
    // The stem: 7x7 stride 2 pad 3, k = 147 across one block, n over several blocks.
    {1, 3, 37, 41, 24, 7, 7, 2, 2, 3, 3, 1, 1},
    // 1x1 stride 2 (downsample), k over two k blocks.
    {3, 300, 9, 8, 17, 1, 1, 2, 2, 0, 0, 1, 1},
    // 3x3 stride 2 pad 1 onto 7 columns (ResNet's last stage): a vector spans up to four
    // output rows, each a run of every other input; onto 3 columns, more runs than a vector
    // loads (a gather).
    {2, 24, 14, 14, 20, 3, 3, 2, 2, 1, 1, 1, 1},
    {2, 8, 6, 6, 16, 3, 3, 2, 2, 1, 1, 1, 1},
    // Dilation, rectangular filter, padding past the filter's reach (zero rows and columns).
    {2, 5, 11, 13, 18, 3, 2, 1, 3, 4, 3, 2, 3},
    // A 1-d convolution (height 1), and the small-m path (m <= 8) through the same window.
    {2, 7, 1, 50, 12, 1, 5, 1, 2, 0, 2, 1, 1},
    {3, 6, 9, 10, 5, 3, 3, 2, 1, 1, 1, 1, 1},
    // An input smaller than the filter.
    {1, 4, 2, 2, 16, 3, 3, 1, 1, 1, 1, 1, 1},
    // Small images (n = 35, 12): one blocked task takes a group of images sharing A's packing,
    // the last group partial on both variants.
    {9, 20, 5, 7, 30, 3, 3, 1, 1, 1, 1, 1, 1},
    {19, 40, 3, 4, 24, 1, 1, 1, 1, 0, 0, 1, 1},
    // 1 to 4 columns past whole vectors (n = 49, 50, 51, 196; 3 alone): with the filter in
    // panels, the kernel of columns takes a group of row panels at once (8, 4, 3, 2 of them),
    // complete and partial groups, the last panel partial, three k blocks at n = 49.
    {1, 300, 7, 7, 200, 1, 1, 1, 1, 0, 0, 1, 1},
    {1, 40, 5, 10, 100, 1, 1, 1, 1, 0, 0, 1, 1},
    {2, 20, 3, 17, 61, 1, 1, 1, 1, 0, 0, 1, 1},
    {1, 16, 14, 14, 37, 1, 1, 1, 1, 0, 0, 1, 1},
    {1, 10, 1, 3, 100, 1, 1, 1, 1, 0, 0, 1, 1},
};

INSTANTIATE_TEST_SUITE_P(
    Cpu, ConvViewTest,
    ::testing::Combine(::testing::Values(Variant::X86_64_V3, Variant::X86_64_V4),
                       ::testing::ValuesIn(ConvCases),
                       ::testing::Values(ConvEpilogue::None, ConvEpilogue::BiasRelu,
                                         ConvEpilogue::BiasResidualRelu),
                       ::testing::Values(FilterForm::Dense, FilterForm::Panels, FilterForm::Bf16)),
    [](const auto &info) {
      return std::string(std::get<0>(info.param) == Variant::X86_64_V4 ? "v4_" : "v3_") +
             name(std::get<1>(info.param)) + name(std::get<2>(info.param)) +
             name(std::get<3>(info.param));
    });

std::string gemmTestName(const ::testing::TestParamInfo<GemmTest::ParamType> &info) {
  return std::string(std::get<0>(info.param) == Variant::X86_64_V4 ? "v4_" : "v3_") +
         name(std::get<1>(info.param)) + (std::get<2>(info.param) ? "_epilogue" : "") +
         (std::get<3>(info.param) ? "_bf16A" : "");
}

INSTANTIATE_TEST_SUITE_P(
    Cpu, GemmTest,
    ::testing::Combine(::testing::Values(Variant::X86_64_V3, Variant::X86_64_V4),
                       ::testing::ValuesIn(Cases), ::testing::Bool(), ::testing::Values(false)),
    gemmTestName);

// A bf16 A (shared: a 1x1 convolution's weight, or per batch element), B's activations rounded
// into k-pairs by the bf16 paths: folded images, several k blocks (an odd last one), edge rows
// and columns, the dot and small paths.
const GemmCase Bf16ACases[] = {
    {6, 40, 45, 30, false, false, true},  {5, 13, 33, 300, false, false, true},
    {3, 64, 49, 515, false, false, true}, {2, 100, 515, 1000, false, true},
    {1, 65, 33, 129, true, true},         {2, 64, 65, 23, true, false},
    {1, 7, 13, 5, false, false},          {1, 300, 100, 7, false, false},
};

INSTANTIATE_TEST_SUITE_P(
    Bf16A, GemmTest,
    ::testing::Combine(::testing::Values(Variant::X86_64_V3, Variant::X86_64_V4),
                       ::testing::ValuesIn(Bf16ACases), ::testing::Bool(), ::testing::Values(true)),
    gemmTestName);

// The GEMMs that read B from a weight: program "gemm" with entry "f" whose buffers are an input a
// (m x k elements, of shape `aShape`), the weight `w` (`wElems` elements of `wType`) at offset 64
// of the blob, the output y [m, n] and an f32 bias of n elements on the next 64-byte boundary
// (buffers 0 to 3; the test adds the call), and the blob from the weight's and the bias's data.
struct WeightBGemm {
  kir::Program p;
  kir::EntryKernels e;

  WeightBGemm(kir::Weight w, int64_t wElems, DType wType, llvm::SmallVector<SymExpr, 4> aShape,
              const SymExpr &m, int64_t k, int64_t n) {
    const int64_t elemBytes = wType == DType::F32 ? 4 : 2;
    w.dtype = wType;
    w.offset = 64;
    w.nbytes = wElems * elemBytes;
    kir::Weight bias;
    bias.name = "bias";
    bias.shape = {n};
    bias.offset = w.offset + (w.nbytes + 63) / 64 * 64;
    bias.nbytes = n * 4;
    p.name = "gemm";
    p.weights = {w, bias};
    p.weightBytes = bias.offset + bias.nbytes;
    e.name = "f";
    e.symbols = {"m"};
    e.inputs.push_back({"a", DType::F32, std::move(aShape)});
    e.outputs.push_back({"y", DType::F32, {m, n}});
    e.buffers = {makeBuffer(kir::Buffer::Kind::Input, 0, m * k),
                 makeBuffer(kir::Buffer::Kind::Weight, 0, wElems, wType),
                 makeBuffer(kir::Buffer::Kind::Output, 0, m * n),
                 makeBuffer(kir::Buffer::Kind::Weight, 1, n)};
  }

  std::vector<uint8_t> blob(const void *w, const std::vector<float> &bias) const {
    std::vector<uint8_t> b(p.weightBytes);
    std::memcpy(b.data() + p.weights[0].offset, w, p.weights[0].nbytes);
    std::memcpy(b.data() + p.weights[1].offset, bias.data(), p.weights[1].nbytes);
    return b;
  }
};

// B a bf16 weight (bf16-weights at --precision bf16): [k, n] (Conv1D) or [n, k] (nn.Linear),
// read widened to f32 on every path (small for m <= 8, dot products for a [n, k] B up to m 128,
// blocked packing past them or for a [k, n] B), the sums and the epilogue in f32. Or, as
// bf16-weights stores a B of constant addressing, the same values in k-pair panels
// (kir::pairPanelOffset): small and blocked paths only, the bf16 kinds reading them in place,
// f32's widening them. Where the CPU has AVX512_BF16 or AMX (exec.cpu_features), the blocked
// path of x86-64-v4 rounds A to bf16 as well and multiplies k-pairs with vdpbf16ps or AMX tiles;
// every way the host has is run. Against a double reference over the same bf16 values (and A
// rounded where it is), at the f32 bound.
struct Bf16Case {
  int64_t m, n, k;
  bool transposedB;
  bool transposedA = false; // A stored [k, m]: packed element by element
};

std::string name(const Bf16Case &g) {
  return fmt::format("{}x{}x{}{}{}", g.m, g.n, g.k, g.transposedB ? "_bT" : "",
                     g.transposedA ? "_aT" : "");
}

class Bf16WeightGemmTest : public ::testing::TestWithParam<std::tuple<Variant, Bf16Case, bool>> {
protected:
  void SetUp() override {
    if (!hostSupports(std::get<0>(GetParam())))
      GTEST_SKIP() << "the host CPU cannot run " << variantName(std::get<0>(GetParam())).str();
  }
};

TEST_P(Bf16WeightGemmTest, MatchesDoubleReference) {
  auto [variant, g, pairs] = GetParam();
  const int64_t wElems = pairs ? kir::pairPanelElements(g.k, g.n, PairPanelCols) : g.k * g.n;
  kir::Weight w;
  w.name = "w.bf16";
  if (pairs)
    w.shape = {wElems};
  else
    w.shape = {g.transposedB ? g.n : g.k, g.transposedB ? g.k : g.n};
  SymExpr m = SymExpr::symbol("m");
  WeightBGemm t(w, wElems, DType::BF16,
                {g.transposedA ? SymExpr(g.k) : m, g.transposedA ? m : SymExpr(g.k)}, m, g.k, g.n);
  kir::Program &p = t.p;
  kir::EntryKernels &e = t.e;
  kir::GemmCall c;
  c.name = "gemm_" + name(g);
  c.precision = kir::Precision::BF16;
  c.m = m;
  c.n = g.n;
  c.k = g.k;
  c.a.buffer = 0;
  c.a.batchStride = 0;
  c.a.rowStride = g.transposedA ? SymExpr(1) : SymExpr(g.k);
  c.a.colStride = g.transposedA ? m : SymExpr(1);
  c.b.buffer = 1;
  c.b.batchStride = 0;
  c.b.rowStride = g.transposedB ? 1 : g.n;
  c.b.colStride = g.transposedB ? g.k : 1;
  if (pairs) {
    c.b.rowStride = 0;
    c.b.colStride = 0;
    c.b.pairPanelCols = PairPanelCols;
  }
  c.out = 2;
  c.epilogue = biasRelu(e, 3);
  e.steps.push_back(c);
  p.entries.push_back(e);
  auto compiled = Compiled::create(p, variant);
  ASSERT_TRUE(!!compiled) << llvm::toString(compiled.takeError());

  std::mt19937 rng(unsigned(g.m * 31 + g.n * 7 + g.k));
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> a(g.m * g.k), biasData(g.n);
  std::vector<uint16_t> b(g.k * g.n);
  for (float &x : a)
    x = d(rng);
  for (uint16_t &x : b)
    x = floatToBFloat16(d(rng));
  for (float &x : biasData)
    x = d(rng);
  auto B = [&](int64_t kk, int64_t j) {
    return bfloat16ToFloat(g.transposedB ? b[j * g.k + kk] : b[kk * g.n + j]);
  };
  // The panels' padding is zero (the layout's), which AMX's tiles and an odd k's last pair read.
  std::vector<uint16_t> stored = b;
  if (pairs) {
    stored.assign(wElems, 0);
    for (int64_t kk = 0; kk < g.k; ++kk)
      for (int64_t j = 0; j < g.n; ++j)
        stored[kir::pairPanelOffset(kk, j, g.k, PairPanelCols)] =
            g.transposedB ? b[j * g.k + kk] : b[kk * g.n + j];
  }
  std::vector<uint8_t> blob = t.blob(stored.data(), biasData);
  // The dot products need A's rows along k.
  const bool blocked = g.m > GemmPolicy::SmallM &&
                       (pairs || !g.transposedB || g.transposedA || g.m > GemmPolicy::DotMaxM);
  // The reference (sum, sum of magnitudes) with A as it is [0] and rounded to bf16 [1].
  std::vector<std::pair<double, double>> want[2];
  auto reference = [&](bool roundsA) -> const std::vector<std::pair<double, double>> & {
    std::vector<std::pair<double, double>> &r = want[roundsA];
    if (!r.empty())
      return r;
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double s = 0, mag = 0;
        for (int64_t kk = 0; kk < g.k; ++kk) {
          float x = g.transposedA ? a[kk * g.m + i] : a[i * g.k + kk];
          if (roundsA)
            x = bfloat16ToFloat(floatToBFloat16(x));
          double t = double(x) * B(kk, j);
          s += t;
          mag += std::fabs(t);
        }
        r.push_back({std::max(0.0, s + biasData[j]), mag});
      }
    return r;
  };
  for (uint32_t features : bf16FeatureSets(variant))
    for (int threads : {1, 2}) {
      std::vector<float> y(g.m * g.n, NAN);
      TestExec ex(threads, &blob);
      ex.exec.cpu_features = features;
      const void *in[] = {a.data()};
      void *out[] = {y.data()};
      int64_t syms[] = {g.m};
      ASSERT_EQ((*compiled)->run(0)(&ex.exec, in, out, syms), 0);
      // AMX takes the dot-product path's GEMMs too.
      const bool roundsA = features == AOTC_CPU_FEATURE_AMX_BF16 ? g.m > GemmPolicy::SmallM
                                                                 : blocked && features != 0;
      const std::vector<std::pair<double, double>> &r = reference(roundsA);
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) {
          auto [s, mag] = r[i * g.n + j];
          float got = y[i * g.n + j];
          ASSERT_FALSE(std::isnan(got)) << i << "," << j;
          ASSERT_LE(std::fabs(got - s), 1e-5 * std::max(1.0, mag))
              << "threads " << threads << ", cpu features " << features << " at " << i << "," << j
              << ": got " << got << " want " << s;
        }
    }
}

const Bf16Case Bf16Cases[] = {
    // The small path: one row (a decode step) and 8, odd n and k.
    {1, 1024, 784, true},
    {1, 1000, 300, false},
    {8, 37, 29, false},
    {5, 33, 17, true},
    {4, 700, 45, false},
    // k-pair panels' groups of rows: 2, and 3 (a group's last row repeated).
    {2, 96, 31, true},
    {3, 70, 64, false},
    // The dot path: m up to 128, k tails.
    {32, 1024, 784, true},
    {128, 37, 70, true},
    // Blocked: B packed from bf16, partial panels, several k and n blocks.
    {129, 65, 300, true},
    {40, 515, 600, false},
    {200, 33, 129, false},
    // bf16 k-pairs: an odd last k block (515 = 172 + 172 + 171), a kernel of columns (n = 100),
    // one odd block (k = 33), rows short of a micro-panel.
    {300, 100, 515, true},
    {150, 70, 33, false},
    {131, 47, 7, true},
    // Over 1 MiB of C a task: AMX on k-pair panels takes k blocks up to 1536 deep (1600 = 800 +
    // 800).
    {1000, 300, 1600, true},
    // A's columns along k (packed element by element), B either way.
    {45, 40, 37, true, true},
    {20, 70, 300, false, true},
};

// An f32 B weight as pack-weights stores nn.Linear's [n, k]: PanelCols-column panels
// (kir::MatrixOperand::panelCols, element (k, n) at panelOffset(n, k, K, PanelCols), the columns
// past n zero), read in place by the small path (m <= 8, each panel streamed front to back) and
// by the blocked path's register tiles (edge tiles included: they read the zero columns), never
// packed, with a bias-relu epilogue; against a double reference at the f32 bound.
struct PanelCase {
  int64_t m, n, k;
};

class F32PanelGemmTest : public ::testing::TestWithParam<std::tuple<Variant, PanelCase>> {
protected:
  void SetUp() override {
    if (!hostSupports(std::get<0>(GetParam())))
      GTEST_SKIP() << "the host CPU cannot run " << variantName(std::get<0>(GetParam())).str();
  }
};

TEST_P(F32PanelGemmTest, MatchesDoubleReference) {
  auto [variant, g] = GetParam();
  const int64_t wElems = (g.n + PanelCols - 1) / PanelCols * PanelCols * g.k;
  kir::Weight w;
  w.name = "w.panels";
  w.shape = {wElems};
  SymExpr m = SymExpr::symbol("m");
  WeightBGemm t(w, wElems, DType::F32, {m, g.k}, m, g.k, g.n);
  kir::Program &p = t.p;
  kir::EntryKernels &e = t.e;
  kir::GemmCall c;
  c.name = fmt::format("gemm_{}x{}x{}", g.m, g.n, g.k);
  c.m = m;
  c.n = g.n;
  c.k = g.k;
  c.a = {0, 0, 0, g.k, 1};
  c.b = {1, 0, 0, 0, 0};
  c.b.panelCols = PanelCols;
  c.out = 2;
  c.epilogue = biasRelu(e, 3);
  e.steps.push_back(c);
  p.entries.push_back(e);
  auto compiled = Compiled::create(p, variant);
  ASSERT_TRUE(!!compiled) << llvm::toString(compiled.takeError());

  std::mt19937 rng(unsigned(g.m * 31 + g.n * 7 + g.k));
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> a(g.m * g.k), b(g.n * g.k), biasData(g.n), stored(wElems, 0.0f);
  for (std::vector<float> *v : {&a, &b, &biasData})
    for (float &x : *v)
      x = d(rng);
  // b is nn.Linear's [n, k]: B(kk, j) = b[j * k + kk].
  for (int64_t j = 0; j < g.n; ++j)
    for (int64_t kk = 0; kk < g.k; ++kk)
      stored[kir::panelOffset(j, kk, g.k, PanelCols)] = b[j * g.k + kk];
  std::vector<uint8_t> blob = t.blob(stored.data(), biasData);
  for (int threads : {1, 2}) {
    std::vector<float> y(g.m * g.n, NAN);
    TestExec ex(threads, &blob);
    const void *in[] = {a.data()};
    void *out[] = {y.data()};
    int64_t syms[] = {g.m};
    ASSERT_EQ((*compiled)->run(0)(&ex.exec, in, out, syms), 0);
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double s = 0, mag = 0;
        for (int64_t kk = 0; kk < g.k; ++kk) {
          double t = double(a[i * g.k + kk]) * b[j * g.k + kk];
          s += t;
          mag += std::fabs(t);
        }
        s = std::max(0.0, s + biasData[j]);
        float got = y[i * g.n + j];
        ASSERT_FALSE(std::isnan(got)) << i << "," << j;
        ASSERT_LE(std::fabs(got - s), 1e-5 * std::max(1.0, mag))
            << "threads " << threads << " at " << i << "," << j << ": got " << got << " want " << s;
      }
  }
}

const PanelCase PanelCases[] = {
    // The small path: groups of 1, 2, 4 and 8 rows (3 and 5: a group's last row repeated), a
    // last panel of 1 column, chunks of several panels.
    {1, 1024, 784},
    {3, 33, 17},
    {5, 700, 45},
    {8, 1000, 300},
    // Blocked: m up to the dot path's 128 and past it, edge tiles of rows and columns (n = 49:
    // a whole panel, a vector and a column of zeros past n), several k and n blocks.
    {9, 32, 5},
    {40, 49, 600},
    {128, 768, 768},
    {129, 65, 300},
    {300, 515, 515},
};

INSTANTIATE_TEST_SUITE_P(
    Cpu, F32PanelGemmTest,
    ::testing::Combine(::testing::Values(Variant::X86_64_V3, Variant::X86_64_V4),
                       ::testing::ValuesIn(PanelCases)),
    [](const auto &info) {
      const PanelCase &g = std::get<1>(info.param);
      return fmt::format("{}_{}x{}x{}", std::get<0>(info.param) == Variant::X86_64_V4 ? "v4" : "v3",
                         g.m, g.n, g.k);
    });

INSTANTIATE_TEST_SUITE_P(
    Cpu, Bf16WeightGemmTest,
    ::testing::Combine(::testing::Values(Variant::X86_64_V3, Variant::X86_64_V4),
                       ::testing::ValuesIn(Bf16Cases), ::testing::Bool()),
    [](const auto &info) {
      return std::string(std::get<0>(info.param) == Variant::X86_64_V4 ? "v4_" : "v3_") +
             name(std::get<1>(info.param)) + (std::get<2>(info.param) ? "_pairs" : "");
    });

} // namespace
