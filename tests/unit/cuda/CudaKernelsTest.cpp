// Loop kernels on the emulated CUDA device against the reference interpreter, and their PTX
// through ptxas for sm_80 and sm_90: each graph is lowered for the CUDA target (fused and
// unfused), emitted as NVPTX IR, and run at 1, a middle value and the max of its dynamic dims.
#include "../kernel/TestGraphs.h"
#include "CudaTestUtil.h"

namespace aotc::cuda {
namespace {

using test::Dims;
using namespace aotc::test;

const std::vector<Dims> Batches = {{{"batch", 1}}, {{"batch", 7}}, {{"batch", 16}}};

// Each graph runs emulated against the interpreter and goes through ptxas.
#define CUDA_GRAPH_TEST(Name, Text, Runs, Tol, Decompose)                                          \
  TEST(CudaEmu, Name) { test::expectEmulatedMatches(Text, Runs, Tol, Decompose); }                 \
  TEST(CudaPtxas, Name) { test::expectPtxasAccepts(Text, Decompose); }

// Pointwise chains with broadcasting: tanh, sigmoid, exp, log1p, pow, rounding.
CUDA_GRAPH_TEST(Pointwise, PointwiseGraph, Batches, 1e-5, true)

// hardtanh, hardswish, hardsigmoid, leaky_relu, elu, mish, softplus and prelu, decomposed.
CUDA_GRAPH_TEST(Activations, ActivationsGraph, Batches, 1e-5, true)

// flip, roll, repeat, tril / triu and the scans (Reduce stages masked past the element).
CUDA_GRAPH_TEST(Position, PositionGraph, Batches, 1e-5, true)

// logsumexp, var / std and vector norms, decomposed into reductions.
CUDA_GRAPH_TEST(Statistics, StatisticsGraph, Batches, 1e-5, true)

// sort and topk: bitonic networks, a kernel per compare-exchange step.
CUDA_GRAPH_TEST(Sort, SortGraph, Batches, 1e-5, true)

// scatter / scatter_add as reductions from the output side (no atomics).
CUDA_GRAPH_TEST(Scatter, ScatterGraph, Batches, 1e-5, true)

// rms_norm, batch norm of 3-d and 5-d inputs, instance norm (group_norm, a group per channel).
CUDA_GRAPH_TEST(Norms, NormsGraph, Batches, 1e-5, true)

// interpolation (nearest views, bilinear and bicubic taps), pad in its three modes, and transposed
// convolution decomposed into a padded convolution.
CUDA_GRAPH_TEST(Resample, ResampleGraph, Batches, 1e-5, true)
CUDA_GRAPH_TEST(ResampleAfterGemm, ResampleAfterGemmGraph, Batches, 1e-5, true)
CUDA_GRAPH_TEST(ConvTranspose, ConvTransposeGraph, Batches, 1e-4, true)
// 3-d convolution (im2col over three spatial dims, and the direct reduction with groups).
CUDA_GRAPH_TEST(Conv3d, Conv3dGraph, Batches, 1e-4, true)

// Python floor division and modulo on integers, bool logic, casts.
CUDA_GRAPH_TEST(Integer, IntegerGraph, Batches, 1e-5, true)

// Bitwise ops and shifts (amounts past the width), on i64, i8, u8 and bool.
CUDA_GRAPH_TEST(Bitwise, BitwiseGraph, Batches, 1e-5, true)

// f16 and bf16 storage, computed in f32.
CUDA_GRAPH_TEST(Half, HalfGraph, Batches, 1e-3, true)

// Row reductions feeding the same kernel: softmax and log_softmax (f64).
CUDA_GRAPH_TEST(Softmax, SoftmaxGraph, Batches, 1e-5, true)

// layer_norm as one kernel, then erf and tanh gelu.
CUDA_GRAPH_TEST(LayerNorm, LayerNormGraph,
                (std::vector<Dims>{{{"batch", 1}, {"seq", 1}},
                                   {{"batch", 3}, {"seq", 5}},
                                   {{"batch", 16}, {"seq", 9}}}),
                1e-4, true)

// Grouped-query attention on the attention kernel (query head h reading key/value head h / G in
// place): causal, masked, strided query, decode shapes; CudaAttentionTest.cpp has more.
CUDA_GRAPH_TEST(GroupedQueryAttention, GqaGraph,
                (std::vector<Dims>{{{"batch", 1}, {"seq", 1}, {"past", 1}},
                                   {{"batch", 2}, {"seq", 3}, {"past", 4}},
                                   {{"batch", 4}, {"seq", 6}, {"past", 7}}}),
                1e-5, true)

// Sum, mean, amax, amin, prod, argmax over any dims; integer sums.
CUDA_GRAPH_TEST(Reductions, ReductionsGraph, Batches, 1e-4, true)

// Views and index math over the symbolic batch: cat, permute, slice, expand, reshape.
CUDA_GRAPH_TEST(Views, ViewsGraph, Batches, 1e-5, true)

// split, arange, full.
CUDA_GRAPH_TEST(Creation, CreationGraph, Batches, 1e-5, false)

// Float functions through libdevice (host libm when emulated), Python's float modulo,
// NaN-propagating minimum, and float floor division.
const char *MathGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 6] = input "x", %1 : f32[6] = input "y") {
  %2 = aten.sin(%0) : f32[batch, 6]
  %3 = aten.cos(%2) : f32[batch, 6]
  %4 = aten.abs(%0) : f32[batch, 6]
  %5 = aten.log(%4) : f32[batch, 6]
  %6 = aten.remainder.Tensor(%0, %1) : f32[batch, 6]
  %7 = aten.pow.Tensor_Tensor(%4, %1) : f32[batch, 6]
  %8 = aten.minimum(%0, %1) : f32[batch, 6]
  %9 = aten.rsqrt(%4) : f32[batch, 6]
  %10 = aten.reciprocal(%0) : f32[batch, 6]
  %11 = aten.ceil(%0) : f32[batch, 6]
  %12 = aten.erf(%0) : f32[batch, 6]
  %13 = aten.div.Tensor_mode(%0, %1) {rounding_mode = "floor"} : f32[batch, 6]
  return %3 as output "a", %5 as output "b", %6 as output "c", %7 as output "d", %8 as output "e", %9 as output "f", %10 as output "g", %11 as output "h", %12 as output "i", %13 as output "j"
}
)";
CUDA_GRAPH_TEST(Math, MathGraph, Batches, 1e-5, true)

// Embedding, index_select and gather: indices through CheckIndex, in range here.
const char *GatherGraph = R"(graph @t opset 1.0
dim batch in 1..4
dim seq in 1..6
entry @f(%0 : i64[batch, seq] = input "ids", %1 : f32[12, 10] = input "w", %2 : i64[12, 3] = input "g", %3 : i64[batch] = input "i") {
  %4 = aten.embedding(%1, %0) : f32[batch, seq, 10]
  %5 = aten.index_select(%1, %3) {dim = 0} : f32[batch, 10]
  %6 = aten.gather(%1, %2) {dim = 1} : f32[12, 3]
  %7 = aten.argmax(%4) {dim = 2} : i64[batch, seq]
  return %4 as output "e", %5 as output "s", %6 as output "g", %7 as output "am"
}
)";
CUDA_GRAPH_TEST(Gather, GatherGraph,
                (std::vector<Dims>{{{"batch", 1}, {"seq", 1}},
                                   {{"batch", 3}, {"seq", 4}},
                                   {{"batch", 4}, {"seq", 6}}}),
                1e-5, false)

// An index out of range reports its check (the same number kir::evaluate reports) and reads a
// clamped element instead of faulting.
TEST(CudaEmu, IndexOutOfRangeReportsItsCheck) {
  auto g = aotc::test::prepare(R"(graph @t opset 1.0
entry @f(%0 : i64[3] = input "ids", %1 : f32[5, 2] = input "w") {
  %2 = aten.embedding(%1, %0) : f32[3, 2]  # model.cpp:4:5
  return %2 as output "e"
}
)",
                               /*decompose=*/false);
  ASSERT_TRUE(g);
  auto program = test::lowerForCuda(*g, true);
  ASSERT_TRUE(program);
  llvm::LLVMContext ctx;
  auto cm = emitEntryKernels(ctx, program->entries[0], "test");
  ASSERT_TRUE(static_cast<bool>(cm)) << llvm::toString(cm.takeError());
  auto dev = emu::EmulatedModule::load(*cm->module);
  ASSERT_TRUE(static_cast<bool>(dev)) << llvm::toString(dev.takeError());
  HostTensor ids(DType::I64, {3}), w(DType::F32, {5, 2});
  for (int64_t i = 0; i < 10; ++i)
    w.setDouble(i, 0.5 + i);
  for (auto [idv, bad] : {std::pair{std::vector<int64_t>{0, 4, 2}, false},
                          std::pair{std::vector<int64_t>{0, 5, 2}, true},
                          std::pair{std::vector<int64_t>{-1, 4, 2}, true}}) {
    for (int64_t i = 0; i < 3; ++i)
      ids.setInt(i, idv[i]);
    int32_t failed = -1;
    auto got = test::runEmulated(*program, *cm, **dev, {}, {ids, w}, {}, failed);
    ASSERT_TRUE(static_cast<bool>(got)) << llvm::toString(got.takeError());
    auto want = kir::evaluate(*program, 0, {ids, w}, {});
    if (!bad) {
      ASSERT_TRUE(static_cast<bool>(want)) << llvm::toString(want.takeError());
      EXPECT_EQ(failed, 0);
      EXPECT_EQ((*got)[0].getDouble(2), 8.5); // w[4][0]
      continue;
    }
    ASSERT_EQ(failed, 1);
    EXPECT_EQ(program->entries[0].indexChecks[failed - 1],
              "aten.embedding (model.cpp:4:5): indices into dim 0 of weight must be in 0..4");
    ASSERT_FALSE(static_cast<bool>(want));
    EXPECT_EQ(llvm::toString(want.takeError()),
              "an index is out of range in " + program->entries[0].indexChecks[failed - 1]);
  }
}

} // namespace
} // namespace aotc::cuda
