// bf16-weights' reads through holders: when k-pair panels hold an f32 weight that no GEMM reads in
// f32 any more, the loop kernels that read it (an embedding table tied to the LM head) read the
// panels, so the artifact stores the weight once. Each element must come back as the weight's own,
// rounded to bf16, whatever form the load's offset takes: row * cols + col with col a loop
// variable (a gather), or a flat index (quotient and remainder); checked on the reference
// evaluator and on the generated code of both variants. A weight that a GEMM still reads in f32
// keeps its f32 loads.
#include "codegen/cpu/Bf16Weights.h"
#include "CodegenTestUtil.h"
#include "kernel/Evaluate.h"
#include "kernel/MemoryPlan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

using namespace aotc;
using namespace aotc::cpu;
using namespace aotc::cpu::test;

namespace {

constexpr int64_t N = 40, K = 24, Rows = 3; // w: B of a GEMM with n 40 and k 24

// The rows of w that the gather reads: its last, its first and one between.
std::vector<int64_t> idsOf(bool transposed) { return {(transposed ? N : K) - 1, 0, 17}; }

// A program whose entry computes y = x @ B with B the weight w ([N, K], nn.Linear's, when
// `transposed`; else [K, N], Conv1D's) at bf16, rows[r, c] = w[ids[r] * cols + c] and
// flat[i] = w[i] and spill[r, c] = w[r * cols + c] for c up to cols (into the next row); with
// `f32Gemm` a second GEMM reads w at fp32.
struct Built {
  kir::Program program;
  ExportedProgram exported;
  std::vector<float> w;
};

std::unique_ptr<Built> build(bool transposed, bool f32Gemm) {
  auto p = std::make_unique<Built>();
  const int64_t cols = transposed ? K : N;
  std::mt19937 rng(transposed * 2 + f32Gemm);
  std::uniform_real_distribution<float> d(-1, 1);
  p->w.resize(N * K);
  for (float &x : p->w)
    x = d(rng);
  kir::Weight w;
  w.name = "w";
  w.shape = {transposed ? N : K, cols};
  p->program.weights.push_back(w);
  auto data = std::make_shared<std::vector<float>>(p->w);
  llvm::ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t *>(data->data()), N * K * 4);
  p->exported.weights.emplace_back(
      "w", DType::F32, std::vector<int64_t>(w.shape.begin(), w.shape.end()), bytes, data);

  kir::EntryKernels &e = p->program.entries.emplace_back();
  e.name = "f";
  e.inputs = {{"x", DType::F32, {2, K}}, {"ids", DType::I64, {Rows}}};
  e.outputs = {{"y", DType::F32, {2, N}},
               {"rows", DType::F32, {Rows, cols}},
               {"flat", DType::F32, {N * K}},
               {"spill", DType::F32, {2, cols + 1}},
               {"y32", DType::F32, {2, N}}};
  e.buffers = {makeBuffer(kir::Buffer::Kind::Input, 0, 2 * K),
               makeBuffer(kir::Buffer::Kind::Input, 1, Rows, DType::I64),
               makeBuffer(kir::Buffer::Kind::Weight, 0, N * K),
               makeBuffer(kir::Buffer::Kind::Output, 0, 2 * N),
               makeBuffer(kir::Buffer::Kind::Output, 1, Rows * cols),
               makeBuffer(kir::Buffer::Kind::Output, 2, N * K),
               makeBuffer(kir::Buffer::Kind::Output, 3, 2 * (cols + 1)),
               makeBuffer(kir::Buffer::Kind::Output, 4, 2 * N)};
  auto gemm = [&](kir::Precision precision, uint32_t out) {
    kir::GemmCall g;
    g.name = "gemm";
    g.precision = precision;
    g.m = 2;
    g.n = N;
    g.k = K;
    g.a = {0, 0, 0, K, 1};
    g.b = transposed ? kir::MatrixOperand{2, 0, 0, 1, K} : kir::MatrixOperand{2, 0, 0, N, 1};
    g.out = out;
    return g;
  };
  e.steps.push_back(gemm(kir::Precision::BF16, 3));
  ExprBuilder x{e};
  kir::LoopKernel rows;
  rows.name = "gather";
  rows.outer = {Rows, cols};
  kir::Stage s;
  s.buffer = 4;
  s.offset = x.linear({{0, cols}, {1, 1}});
  kir::ExprId id = x.load(1, x.loopVar(0), DType::I64);
  s.value =
      x.load(2,
             x.binary(kir::BinaryOp::Add, x.binary(kir::BinaryOp::Mul, id, x.ci(cols), DType::I64),
                      x.loopVar(1), DType::I64),
             DType::F32);
  rows.stages = {s};
  e.steps.push_back(rows);
  kir::LoopKernel flat;
  flat.name = "flat";
  flat.outer = {N * K};
  s.buffer = 5;
  s.offset = x.loopVar(0);
  s.value = x.load(2, x.loopVar(0), DType::F32);
  flat.stages = {s};
  e.steps.push_back(flat);
  kir::LoopKernel spill;
  spill.name = "spill";
  spill.outer = {2, cols + 1};
  s.buffer = 6;
  s.offset = x.linear({{0, cols + 1}, {1, 1}});
  s.value = x.load(2,
                   x.binary(kir::BinaryOp::Add,
                            x.binary(kir::BinaryOp::Mul, x.loopVar(0), x.ci(cols), DType::I64),
                            x.loopVar(1), DType::I64),
                   DType::F32);
  spill.stages = {s};
  e.steps.push_back(spill);
  if (f32Gemm)
    e.steps.push_back(gemm(kir::Precision::FP32, 7));
  if (llvm::Error err = storeBf16Weights(p->program, p->exported, kir::Precision::BF16)) {
    ADD_FAILURE() << llvm::toString(std::move(err));
    return nullptr;
  }
  return p;
}

float roundedToBf16(float x) { return bfloat16ToFloat(floatToBFloat16(x)); }

class Bf16HeldReadsTest : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(Bf16HeldReadsTest, LoopKernelsReadTheHolder) {
  auto [transposed, f32Gemm] = GetParam();
  auto p = build(transposed, f32Gemm);
  ASSERT_TRUE(p);
  kir::Program &program = p->program;
  const kir::EntryKernels &e = program.entries[0];
  ASSERT_TRUE(program.weights[0].heldBy);
  EXPECT_EQ(program.weights[0].heldBy->pairPanelCols, PairPanelCols);
  EXPECT_EQ(program.weights[0].heldBy->transposed, transposed);
  // The f32 weight's buffer is read by the loop kernels only where a GEMM reads it in f32 too.
  for (size_t i : {1, 2, 3}) {
    bool readsF32 = llvm::is_contained(kir::buffersOfStep(e, e.steps[i]), 2u);
    EXPECT_EQ(readsF32, f32Gemm) << e.steps.size() << " steps, step " << i;
  }
  kir::elideHeldWeights(program, {&program});
  EXPECT_EQ(program.weights[0].stored, f32Gemm);
  kir::layoutWeights(program);

  const int64_t cols = transposed ? K : N;
  const std::vector<int64_t> ids = idsOf(transposed);
  auto want = [&](int64_t i) { return f32Gemm ? p->w[i] : roundedToBf16(p->w[i]); };
  auto check = [&](const float *rows, const float *flat, const float *spill,
                   const std::string &where) {
    for (int64_t r = 0; r < Rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        ASSERT_EQ(rows[r * cols + c], want(ids[r] * cols + c))
            << where << ": rows[" << r << ", " << c << "]";
    for (int64_t i = 0; i < N * K; ++i)
      ASSERT_EQ(flat[i], want(i)) << where << ": flat[" << i << "]";
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t c = 0; c <= cols; ++c)
        ASSERT_EQ(spill[r * (cols + 1) + c], want(r * cols + c))
            << where << ": spill[" << r << ", " << c << "]";
  };

  std::vector<float> xData(2 * K);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1, 1);
  for (float &v : xData)
    v = d(rng);
  // The reference evaluator, weights by index.
  HostTensor xT(DType::F32, {2, K}), idsT(DType::I64, {Rows});
  std::memcpy(xT.mutableData(), xData.data(), xData.size() * 4);
  std::memcpy(idsT.mutableData(), ids.data(), Rows * 8);
  std::vector<HostTensor> weights;
  for (const kir::Weight &w : program.weights) {
    const Weight *data = p->exported.findWeight(w.name);
    ASSERT_TRUE(data) << w.name;
    auto t = HostTensor::view(w.dtype, llvm::ArrayRef<int64_t>(w.shape), data->bytes(), nullptr);
    ASSERT_TRUE(!!t) << llvm::toString(t.takeError());
    weights.push_back(std::move(*t));
  }
  auto evaluated = kir::evaluate(program, 0, {xT, idsT}, weights);
  ASSERT_TRUE(!!evaluated) << llvm::toString(evaluated.takeError());
  check(reinterpret_cast<const float *>((*evaluated)[1].data()),
        reinterpret_cast<const float *>((*evaluated)[2].data()),
        reinterpret_cast<const float *>((*evaluated)[3].data()), "evaluate");

  // The generated code, from the blob of the weights stored.
  std::vector<uint8_t> blob(program.weightBytes);
  for (const kir::Weight &w : program.weights)
    if (w.stored)
      std::memcpy(blob.data() + w.offset, p->exported.findWeight(w.name)->bytes().data(), w.nbytes);
  for (Variant v : {Variant::X86_64_V3, Variant::X86_64_V4}) {
    if (!hostSupports(v))
      continue;
    auto compiled = Compiled::create(program, v);
    ASSERT_TRUE(!!compiled) << llvm::toString(compiled.takeError());
    std::vector<float> y(2 * N, NAN), rows(Rows * cols, NAN), flat(N * K, NAN),
        spill(2 * (cols + 1), NAN), y32(2 * N, NAN);
    TestExec ex(1, &blob);
    const void *in[] = {xData.data(), ids.data()};
    void *out[] = {y.data(), rows.data(), flat.data(), spill.data(), y32.data()};
    ASSERT_EQ((*compiled)->run(0)(&ex.exec, in, out, nullptr), 0);
    check(rows.data(), flat.data(), spill.data(), variantName(v).str());
    // The GEMM still reads the panels: B's rounded elements.
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0, mag = 0;
        for (int64_t kk = 0; kk < K; ++kk) {
          double t =
              double(xData[i * K + kk]) * roundedToBf16(p->w[transposed ? j * K + kk : kk * N + j]);
          s += t;
          mag += std::fabs(t);
        }
        ASSERT_LE(std::fabs(y[i * N + j] - s), 1e-5 * std::max(1.0, mag)) << i << "," << j;
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, Bf16HeldReadsTest,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto &info) {
                           return std::string(std::get<0>(info.param) ? "nk" : "kn") +
                                  (std::get<1>(info.param) ? "_f32gemm" : "");
                         });

// At --precision bf16 a parameter that the kernels only gather rows of (an embedding table) is
// stored in bf16 and read widened; a parameter read at an affine offset (a position table), a
// buffer, and anything at fp32 keep their f32 loads.
TEST(Bf16GatheredTablesTest, OnlyGatheredParametersAreRounded) {
  constexpr int64_t Ids = 4, Cols = 8, TableRows = 6;
  const std::vector<int64_t> ids = {5, 0, 3, 5};
  for (kir::Precision precision : {kir::Precision::BF16, kir::Precision::FP32}) {
    SCOPED_TRACE(precision == kir::Precision::BF16 ? "bf16" : "fp32");
    kir::Program program;
    ExportedProgram exported;
    exported.graph = std::make_unique<Graph>();
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> d(-2, 2);
    std::vector<std::vector<float>> data;
    for (auto [name, kind] :
         {std::pair{"table", InputKind::Parameter}, std::pair{"pos", InputKind::Parameter},
          std::pair{"rot", InputKind::Buffer}}) {
      kir::Weight w;
      w.name = name;
      w.shape = {TableRows, Cols};
      program.weights.push_back(w);
      ASSERT_FALSE(
          !!exported.graph->addState({kind, name, Type::tensor(DType::F32, {TableRows, Cols})}));
      auto values = std::make_shared<std::vector<float>>(TableRows * Cols);
      for (float &x : *values)
        x = d(rng);
      data.push_back(*values);
      llvm::ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t *>(values->data()),
                                    values->size() * 4);
      exported.weights.emplace_back(name, DType::F32, std::vector<int64_t>{TableRows, Cols}, bytes,
                                    values);
    }
    kir::EntryKernels &e = program.entries.emplace_back();
    e.name = "f";
    e.inputs = {{"ids", DType::I64, {Ids}}};
    e.outputs = {{"y", DType::F32, {Ids, Cols}}};
    e.buffers = {makeBuffer(kir::Buffer::Kind::Input, 0, Ids, DType::I64),
                 makeBuffer(kir::Buffer::Kind::Weight, 0, TableRows * Cols),
                 makeBuffer(kir::Buffer::Kind::Weight, 1, TableRows * Cols),
                 makeBuffer(kir::Buffer::Kind::Weight, 2, TableRows * Cols),
                 makeBuffer(kir::Buffer::Kind::Output, 0, Ids * Cols)};
    ExprBuilder x{e};
    // y[r, c] = table[ids[r], c] + pos[r, c] + rot[ids[r], c]
    kir::ExprId gathered = x.binary(
        kir::BinaryOp::Add,
        x.binary(kir::BinaryOp::Mul, x.load(0, x.loopVar(0), DType::I64), x.ci(Cols), DType::I64),
        x.loopVar(1), DType::I64);
    kir::LoopKernel k;
    k.name = "embed";
    k.outer = {Ids, Cols};
    kir::Stage s;
    s.buffer = 4;
    s.offset = x.linear({{0, Cols}, {1, 1}});
    s.value = x.binary(kir::BinaryOp::Add,
                       x.binary(kir::BinaryOp::Add, x.load(1, gathered, DType::F32),
                                x.load(2, x.linear({{0, Cols}, {1, 1}}), DType::F32), DType::F32),
                       x.load(3, gathered, DType::F32), DType::F32);
    k.stages = {s};
    e.steps.push_back(k);
    ASSERT_FALSE(!!storeBf16Weights(program, exported, precision));
    bool bf16 = precision == kir::Precision::BF16;
    ASSERT_EQ(program.weights.size(), bf16 ? 4u : 3u);
    EXPECT_EQ(program.weights[0].heldBy.has_value(), bf16);
    EXPECT_FALSE(program.weights[1].heldBy);
    EXPECT_FALSE(program.weights[2].heldBy);
    EXPECT_EQ(llvm::is_contained(kir::buffersOfStep(e, e.steps[0]), 1u), !bf16);
    if (bf16) {
      EXPECT_EQ(program.weights[3].dtype, DType::BF16);
      EXPECT_EQ(program.weights[3].name, "table.bf16");
      kir::elideHeldWeights(program, {&program});
      EXPECT_FALSE(program.weights[0].stored);
    }

    HostTensor idsT(DType::I64, {Ids});
    std::memcpy(idsT.mutableData(), ids.data(), Ids * 8);
    std::vector<HostTensor> weights;
    for (const kir::Weight &w : program.weights) {
      auto t = HostTensor::view(w.dtype, llvm::ArrayRef<int64_t>(w.shape),
                                exported.findWeight(w.name)->bytes(), nullptr);
      ASSERT_TRUE(!!t) << llvm::toString(t.takeError());
      weights.push_back(std::move(*t));
    }
    auto evaluated = kir::evaluate(program, 0, {idsT}, weights);
    ASSERT_TRUE(!!evaluated) << llvm::toString(evaluated.takeError());
    const float *y = reinterpret_cast<const float *>((*evaluated)[0].data());
    for (int64_t r = 0; r < Ids; ++r)
      for (int64_t c = 0; c < Cols; ++c) {
        float table = data[0][ids[r] * Cols + c];
        float want = ((bf16 ? roundedToBf16(table) : table) + data[1][r * Cols + c]) +
                     data[2][ids[r] * Cols + c];
        ASSERT_EQ(y[r * Cols + c], want) << r << ", " << c;
      }
  }
}

} // namespace
