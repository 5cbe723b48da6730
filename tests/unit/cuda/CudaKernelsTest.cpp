// Loop kernels on the emulated CUDA device against the reference interpreter, and their PTX
// through ptxas for sm_80 and sm_90: each graph is lowered for the CUDA target (fused and
// unfused), emitted as NVPTX IR, and run at 1, a middle value and the max of its dynamic dims.
#include "CudaTestUtil.h"

namespace aotc::cuda {
namespace {

using test::Dims;

const std::vector<Dims> Batches = {{{"batch", 1}}, {{"batch", 7}}, {{"batch", 16}}};

// Each graph runs emulated against the interpreter and goes through ptxas.
#define CUDA_GRAPH_TEST(Name, Text, Runs, Tol, Decompose)                                          \
  TEST(CudaEmu, Name) { test::expectEmulatedMatches(Text, Runs, Tol, Decompose); }                 \
  TEST(CudaPtxas, Name) { test::expectPtxasAccepts(Text, Decompose); }

// Pointwise chains with broadcasting: tanh, sigmoid, exp, log1p, pow, rounding.
const char *PointwiseGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 1, 5] = input "x", %1 : f32[3, 1] = input "y", %2 : f32[5] = input "z") {
  %3 = aten.add.Tensor(%0, %1) {alpha = 2} : f32[batch, 3, 5]
  %4 = aten.mul.Tensor(%3, %2) : f32[batch, 3, 5]
  %5 = aten.sub.Scalar(%4) {other = 0.5} : f32[batch, 3, 5]
  %6 = aten.rsub.Scalar(%5) {other = 2} : f32[batch, 3, 5]
  %7 = aten.div.Tensor(%6, %2) : f32[batch, 3, 5]
  %8 = aten.tanh(%7) : f32[batch, 3, 5]
  %9 = aten.clamp(%8) {min = -0.5, max = 0.25} : f32[batch, 3, 5]
  %10 = aten.sigmoid(%9) : f32[batch, 3, 5]
  %11 = aten.pow.Tensor_Scalar(%10) {exponent = 3} : f32[batch, 3, 5]
  %12 = aten.maximum(%11, %1) : f32[batch, 3, 5]
  %13 = aten.exp(%12) : f32[batch, 3, 5]
  %14 = aten.abs(%0) : f32[batch, 1, 5]
  %15 = aten.sqrt(%14) : f32[batch, 1, 5]
  %16 = aten.log1p(%15) : f32[batch, 1, 5]
  %17 = aten.floor(%7) : f32[batch, 3, 5]
  %18 = aten.round(%7) : f32[batch, 3, 5]
  %19 = aten.silu(%1) : f32[3, 1]
  return %13 as output "a", %16 as output "b", %17 as output "c", %18 as output "d", %19 as output "e"
}
)";
CUDA_GRAPH_TEST(Pointwise, PointwiseGraph, Batches, 1e-5, true)

// Python floor division and modulo on integers, bool logic, casts.
const char *IntegerGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : i64[batch, 4] = input "a", %1 : i64[4] = input "b", %2 : f32[batch, 4] = input "x", %3 : i32[batch, 4] = input "c") {
  %4 = aten.add.Tensor(%0, %1) : i64[batch, 4]
  %5 = aten.mul.Scalar(%4) {other = 3} : i64[batch, 4]
  %20 = aten.add.Scalar(%1) {other = 1} : i64[4]
  %6 = aten.remainder.Tensor(%5, %20) : i64[batch, 4]
  %7 = aten.gt.Scalar(%2) {other = 0.0} : bool[batch, 4]
  %8 = aten.lt.Tensor(%0, %1) : bool[batch, 4]
  %9 = aten.logical_and(%7, %8) : bool[batch, 4]
  %10 = aten.logical_not(%9) : bool[batch, 4]
  %11 = aten.where.self(%10, %2, %2) : f32[batch, 4]
  %12 = aten.neg(%2) : f32[batch, 4]
  %13 = aten.where.self(%9, %12, %11) : f32[batch, 4]
  %14 = aten._to_copy(%13) {dtype = i32} : i32[batch, 4]
  %15 = aten.add.Tensor(%14, %3) : i32[batch, 4]
  %21 = aten.neg(%5) : i64[batch, 4]
  %16 = aten.div.Tensor_mode(%21, %20) {rounding_mode = "floor"} : i64[batch, 4]
  %17 = aten.eq.Tensor(%0, %1) : bool[batch, 4]
  %18 = aten.logical_or(%17, %7) : bool[batch, 4]
  %19 = aten.div.Tensor(%0, %20) : f32[batch, 4]
  %22 = aten.div.Tensor_mode(%21, %20) {rounding_mode = "trunc"} : i64[batch, 4]
  return %6 as output "m", %10 as output "n", %15 as output "s", %16 as output "q", %18 as output "o", %19 as output "d", %22 as output "t"
}
)";
CUDA_GRAPH_TEST(Integer, IntegerGraph, Batches, 1e-5, true)

// f16 and bf16 storage, computed in f32.
const char *HalfGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f16[batch, 8] = input "x", %1 : bf16[8] = input "y") {
  %2 = aten._to_copy(%1) {dtype = f16} : f16[8]
  %3 = aten.add.Tensor(%0, %2) : f16[batch, 8]
  %4 = aten.exp(%3) : f16[batch, 8]
  %5 = aten._to_copy(%4) {dtype = f32} : f32[batch, 8]
  %6 = aten.sum.dim_IntList(%5) {dim = [1]} : f32[batch]
  %7 = aten.mul.Tensor(%1, %1) : bf16[8]
  return %4 as output "e", %6 as output "s", %7 as output "m"
}
)";
CUDA_GRAPH_TEST(Half, HalfGraph, Batches, 1e-3, true)

// Row reductions feeding the same kernel: softmax and log_softmax (f64).
const char *SoftmaxGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 10] = input "x") {
  %1 = aten.softmax.int(%0) {dim = -1} : f32[batch, 10]
  %2 = aten.log_softmax.int(%0) {dim = 1, dtype = f64} : f64[batch, 10]
  %3 = aten.softmax.int(%0) {dim = 0} : f32[batch, 10]
  return %1 as output "p", %2 as output "logp", %3 as output "p0"
}
)";
CUDA_GRAPH_TEST(Softmax, SoftmaxGraph, Batches, 1e-5, true)

// layer_norm as one kernel, then erf and tanh gelu.
const char *LayerNormGraph = R"(graph @t opset 1.0
dim batch in 1..16
dim seq in 1..9
parameter "ln.weight" : f32[4, 6]
parameter "ln.bias" : f32[4, 6]
entry @f(%0 : f32[batch, seq, 4, 6] = input "x", %1 : f32[4, 6] = parameter "ln.weight", %2 : f32[4, 6] = parameter "ln.bias") {
  %3 = aten.layer_norm(%0, %1, %2) {normalized_shape = [4, 6]} : f32[batch, seq, 4, 6]
  %4 = aten.layer_norm(%3, none, none) {normalized_shape = [6], eps = 1e-06} : f32[batch, seq, 4, 6]
  %5 = aten.gelu(%4) : f32[batch, seq, 4, 6]
  %6 = aten.gelu(%4) {approximate = "tanh"} : f32[batch, seq, 4, 6]
  return %5 as output "y", %6 as output "z"
}
)";
CUDA_GRAPH_TEST(LayerNorm, LayerNormGraph,
                (std::vector<Dims>{{{"batch", 1}, {"seq", 1}},
                                   {{"batch", 3}, {"seq", 5}},
                                   {{"batch", 16}, {"seq", 9}}}),
                1e-4, true)

// Sum, mean, amax, amin, prod, argmax over any dims; integer sums.
const char *ReductionsGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 3, 4, 5] = input "x", %1 : i64[batch, 3] = input "i") {
  %2 = aten.sum.dim_IntList(%0) {dim = [1]} : f32[batch, 4, 5]
  %3 = aten.mean.dim(%0) {dim = [0, 2], keepdim = true} : f32[1, 3, 1, 5]
  %4 = aten.amax(%0) {dim = [1, 3]} : f32[batch, 4]
  %5 = aten.amin(%0) {dim = [2]} : f32[batch, 3, 5]
  %6 = aten.prod.dim_int(%0) {dim = 3} : f32[batch, 3, 4]
  %7 = aten.argmax(%0) {dim = 2} : i64[batch, 3, 5]
  %8 = aten.argmax(%0) : i64[]
  %9 = aten.sum.dim_IntList(%1) {dim = [0]} : i64[3]
  %10 = aten.sub.Tensor(%0, %3) : f32[batch, 3, 4, 5]
  %11 = aten.sum.dim_IntList(%0) : f32[]
  return %2 as output "s", %3 as output "m", %4 as output "mx", %5 as output "mn", %6 as output "p", %7 as output "am", %8 as output "amall", %9 as output "si", %10 as output "c", %11 as output "all"
}
)";
CUDA_GRAPH_TEST(Reductions, ReductionsGraph, Batches, 1e-4, true)

// Views and index math over the symbolic batch: cat, permute, slice, expand, reshape.
const char *ViewsGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 4, 6] = input "x", %1 : f32[batch, 2, 6] = input "y", %2 : f32[6] = input "z") {
  %3 = aten.cat(%0, %1) {dim = 1} : f32[batch, 6, 6]
  %4 = aten.permute(%3) {dims = [2, 0, 1]} : f32[6, batch, 6]
  %5 = aten.slice.Tensor(%4) {dim = 2, start = 1, end = 5, step = 2} : f32[6, batch, 2]
  %6 = aten.relu(%5) : f32[6, batch, 2]
  %7 = aten.expand(%2) {size = [batch, 4, 6]} : f32[batch, 4, 6]
  %8 = aten.add.Tensor(%0, %7) : f32[batch, 4, 6]
  %9 = aten.transpose.int(%8) {dim0 = 1, dim1 = 2} : f32[batch, 6, 4]
  %10 = aten.reshape(%9) {shape = [batch, 24]} : f32[batch, 24]
  %11 = aten.select.int(%0) {dim = 1, index = -1} : f32[batch, 6]
  %12 = aten.unsqueeze(%11) {dim = 1} : f32[batch, 1, 6]
  %13 = aten.stack(%11, %11) {dim = 2} : f32[batch, 6, 2]
  %14 = aten.flatten.using_ints(%0) {start_dim = 1} : f32[batch, 24]
  %15 = aten.slice.Tensor(%0) {dim = 2, start = -3} : f32[batch, 4, 3]
  return %6 as output "a", %10 as output "b", %12 as output "c", %13 as output "d", %14 as output "e", %15 as output "f", %0 as output "g"
}
)";
CUDA_GRAPH_TEST(Views, ViewsGraph, Batches, 1e-5, true)

// split, arange, full.
const char *CreationGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 7] = input "x") {
  %1, %2, %3 = aten.split.Tensor(%0) {split_size = 3, dim = 1} : f32[batch, 3], f32[batch, 3], f32[batch, 1]
  %4 = aten.arange.start_step() {start = 0, end = 3} : i64[3]
  %5 = aten.mul.Tensor(%1, %4) : f32[batch, 3]
  %6 = aten.full() {size = [batch, 3], fill_value = 1.5} : f32[batch, 3]
  %7 = aten.add.Tensor(%2, %6) : f32[batch, 3]
  %8 = aten.ones() {size = [1]} : f32[1]
  %9 = aten.sub.Tensor(%3, %8) : f32[batch, 1]
  return %5 as output "a", %7 as output "b", %9 as output "c"
}
)";
CUDA_GRAPH_TEST(Creation, CreationGraph, Batches, 1e-5, false)

// Float functions through libdevice (host libm when emulated), Python's float modulo, NaN-free
// min/max, and float floor division.
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
