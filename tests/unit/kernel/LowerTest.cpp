// Numerical equivalence of lowered kernels with the reference interpreter: each graph is lowered
// (fused and unfused), evaluated on random inputs at several sizes of its dynamic dims, and
// compared with `aotc::interpret`.
#include "KernelTestUtil.h"
#include "TestGraphs.h"

namespace aotc {
namespace {

using test::Dims;
using test::expectMatches;
using namespace test; // the shared graphs of TestGraphs.h

const std::vector<Dims> Batches = {{{"batch", 1}}, {{"batch", 5}}, {{"batch", 16}}};

TEST(Lower, Mlp) {
  expectMatches(R"(graph @mlp opset 1.0
dim batch in 1..16
parameter "fc1.weight" : f32[32, 24]
parameter "fc1.bias" : f32[32]
parameter "fc2.weight" : f32[10, 32]
parameter "fc2.bias" : f32[10]
entry @f(%0 : f32[batch, 24] = input "x", %1 : f32[32, 24] = parameter "fc1.weight", %2 : f32[32] = parameter "fc1.bias", %3 : f32[10, 32] = parameter "fc2.weight", %4 : f32[10] = parameter "fc2.bias") {
  %5 = aten.linear(%0, %1, %2) : f32[batch, 32]
  %6 = aten.relu(%5) : f32[batch, 32]
  %7 = aten.linear(%6, %3, %4) : f32[batch, 10]
  return %7 as output "y"
}
)",
                Batches, 1e-5);
}

TEST(Lower, Softmax) { expectMatches(SoftmaxGraph, Batches); }

TEST(Lower, LayerNormAndGelu) {
  expectMatches(
      LayerNormGraph,
      {{{"batch", 1}, {"seq", 1}}, {{"batch", 3}, {"seq", 5}}, {{"batch", 16}, {"seq", 9}}}, 1e-4);
}

TEST(Lower, PointwiseBroadcastingAndScalars) { expectMatches(PointwiseGraph, Batches); }

TEST(Lower, Activations) { expectMatches(ActivationsGraph, Batches); }

TEST(Lower, PositionOpsAndScans) { expectMatches(PositionGraph, Batches); }

TEST(Lower, Statistics) { expectMatches(StatisticsGraph, Batches); }

TEST(Lower, SortAndTopk) { expectMatches(SortGraph, Batches); }

TEST(Lower, ScatterAndScatterAdd) { expectMatches(ScatterGraph, Batches); }

TEST(Lower, Norms) { expectMatches(NormsGraph, Batches, 1e-5); }

TEST(Lower, ResampleAndPad) { expectMatches(ResampleGraph, Batches, 1e-5); }

TEST(Lower, ResampleAfterGemm) { expectMatches(ResampleAfterGemmGraph, Batches, 1e-5); }

TEST(Lower, ConvTranspose) { expectMatches(ConvTransposeGraph, Batches, 1e-4); }

TEST(Lower, Conv3d) { expectMatches(Conv3dGraph, Batches, 1e-4); }

TEST(Lower, IntegerAndBoolOps) { expectMatches(IntegerGraph, Batches); }

TEST(Lower, BitwiseOpsAndShifts) { expectMatches(BitwiseGraph, Batches); }

TEST(Lower, HalfInputs) { expectMatches(HalfGraph, Batches, 1e-3); }

TEST(Lower, ReductionsOverAnyDims) { expectMatches(ReductionsGraph, Batches, 1e-4); }

TEST(Lower, ViewsCatSlice) { expectMatches(ViewsGraph, Batches); }

TEST(Lower, SplitAndCreation) { expectMatches(CreationGraph, Batches, 1e-5, /*decompose=*/false); }

TEST(Lower, BatchedMatmulAndBmm) {
  expectMatches(R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 2, 3, 4] = input "a", %1 : f32[batch, 2, 4, 5] = input "b", %2 : f32[4, 5] = input "w", %3 : f64[batch, 3, 4] = input "c", %4 : f64[batch, 4, 2] = input "d", %5 : f32[4] = input "v") {
  %6 = aten.matmul(%0, %1) : f32[batch, 2, 3, 5]
  %7 = aten.matmul(%0, %2) : f32[batch, 2, 3, 5]
  %8 = aten.add.Tensor(%6, %7) : f32[batch, 2, 3, 5]
  %9 = aten.bmm(%3, %4) : f64[batch, 3, 2]
  %10 = aten.matmul(%0, %5) : f32[batch, 2, 3]
  %11 = aten.transpose.int(%1) {dim0 = 2, dim1 = 3} : f32[batch, 2, 5, 4]
  %12 = aten.matmul(%11, %5) : f32[batch, 2, 5]
  return %8 as output "y", %9 as output "z", %10 as output "mv", %12 as output "tv"
}
)",
                Batches, 1e-5);
}

TEST(Lower, ConvBatchNormReluPool) {
  expectMatches(R"(graph @t opset 1.0
dim batch in 1..4
parameter "conv.weight" : f32[6, 2, 3, 3]
parameter "conv.bias" : f32[6]
parameter "bn.weight" : f32[6]
parameter "bn.bias" : f32[6]
buffer "bn.running_mean" : f32[6]
buffer "bn.running_var" : f32[6]
entry @f(%0 : f32[batch, 4, 9, 8] = input "x", %1 : f32[6, 2, 3, 3] = parameter "conv.weight", %2 : f32[6] = parameter "conv.bias", %3 : f32[6] = parameter "bn.weight", %4 : f32[6] = parameter "bn.bias", %5 : f32[6] = buffer "bn.running_mean", %6 : f32[6] = buffer "bn.running_var") {
  %7 = aten.convolution(%0, %1, %2) {stride = [2, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 2} : f32[batch, 6, 5, 8]
  %8 = aten.batch_norm(%7, %3, %4, %5, %6) {training = false, momentum = 0.1, eps = 1e-05, cudnn_enabled = true} : f32[batch, 6, 5, 8]
  %9 = aten.relu(%8) : f32[batch, 6, 5, 8]
  %10 = aten.max_pool2d(%9) {kernel_size = [2, 2], stride = [2, 2], padding = [1, 1]} : f32[batch, 6, 3, 5]
  %11 = aten.avg_pool2d(%9) {kernel_size = [3, 3], stride = [2, 2], padding = [1, 1]} : f32[batch, 6, 3, 4]
  %12 = aten.avg_pool2d(%9) {kernel_size = [3, 3], stride = [2, 2], padding = [1, 1], count_include_pad = false} : f32[batch, 6, 3, 4]
  %13 = aten.adaptive_avg_pool2d(%9) {output_size = [3, 3]} : f32[batch, 6, 3, 3]
  return %10 as output "mp", %11 as output "ap", %12 as output "ap2", %13 as output "aap"
}
)",
                {{{"batch", 1}}, {{"batch", 2}}, {{"batch", 4}}}, 1e-4);
}

// Max pooling reads a tap past the map clamped to its edge instead of selecting -inf (with
// dilation 1 the clamped tap is one of the window's own elements): on signed inputs, windows
// that overhang every side, odd sizes and stride 1 give PyTorch's results; dilation 2, where a
// clamped tap could leave the window, keeps the -inf.
TEST(Lower, MaxPoolAtTheEdges) {
  expectMatches(R"(graph @t opset 1.0
dim batch in 1..4
entry @f(%0 : f32[batch, 3, 7, 6] = input "x") {
  %1 = aten.max_pool2d(%0) {kernel_size = [3, 3], stride = [2, 2], padding = [1, 1]} : f32[batch, 3, 4, 3]
  %2 = aten.max_pool2d(%0) {kernel_size = [2, 3], stride = [1, 1], padding = [1, 1]} : f32[batch, 3, 8, 6]
  %3 = aten.max_pool2d(%0) {kernel_size = [5, 5], stride = [3, 2], padding = [2, 2]} : f32[batch, 3, 3, 3]
  %4 = aten.max_pool2d(%0) {kernel_size = [3, 3], stride = [1, 1], padding = [1, 1], dilation = [2, 2]} : f32[batch, 3, 5, 4]
  return %1 as output "a", %2 as output "b", %3 as output "c", %4 as output "d"
}
)",
                {{{"batch", 1}}, {{"batch", 3}}}, 1e-6);
}

TEST(Lower, Conv1dDilation) {
  expectMatches(R"(graph @t opset 1.0
dim batch in 1..4
entry @f(%0 : f32[batch, 3, 12] = input "x", %1 : f32[4, 3, 3] = input "w") {
  %2 = aten.convolution(%0, %1, none) {stride = [1], padding = [2], dilation = [2], transposed = false, output_padding = [0], groups = 1} : f32[batch, 4, 12]
  return %2 as output "y"
}
)",
                {{{"batch", 1}}, {{"batch", 3}}}, 1e-4);
}

TEST(Lower, ReshapesMergeSplitAndRegroup) {
  // Views of an unrealized pointwise value through reshapes that merge dynamic dims, split them,
  // add and drop 1s, and regroup across dims ([2, 6] -> [3, 4]: one group of two dims each).
  expectMatches(
      R"(graph @t opset 1.0
dim batch in 1..4
dim seq in 1..5
entry @f(%0 : f32[batch, seq, 2, 6] = input "x") {
  %1 = aten.relu(%0) : f32[batch, seq, 2, 6]
  %2 = aten.reshape(%1) {shape = [batch*seq, 1, 12]} : f32[batch*seq, 1, 12]
  %3 = aten.neg(%2) : f32[batch*seq, 1, 12]
  %4 = aten.reshape(%3) {shape = [batch, seq, 3, 4]} : f32[batch, seq, 3, 4]
  %5 = aten.exp(%4) : f32[batch, seq, 3, 4]
  %6 = aten.reshape(%5) {shape = [batch, 1, seq*12]} : f32[batch, 1, seq*12]
  %7 = aten.add.Tensor(%6, %6) : f32[batch, 1, seq*12]
  return %7 as output "y", %4 as output "z"
}
)",
      {{{"batch", 1}, {"seq", 1}}, {{"batch", 2}, {"seq", 3}}, {{"batch", 4}, {"seq", 5}}}, 1e-6);
}

TEST(Lower, EmbeddingAndAttention) {
  expectMatches(
      R"(graph @t opset 1.0
dim batch in 1..4
dim seq in 1..6
parameter "emb.weight" : f32[12, 8]
entry @f(%0 : i64[batch, seq] = input "ids", %1 : f32[12, 8] = parameter "emb.weight", %2 : bool[seq, seq] = input "mask", %3 : f32[batch, 2, seq, seq] = input "fmask") {
  %4 = aten.embedding(%1, %0) : f32[batch, seq, 8]
  %5 = aten.reshape(%4) {shape = [batch, seq, 2, 4]} : f32[batch, seq, 2, 4]
  %6 = aten.transpose.int(%5) {dim0 = 1, dim1 = 2} : f32[batch, 2, seq, 4]
  %7 = aten.scaled_dot_product_attention(%6, %6, %6, none) {is_causal = true} : f32[batch, 2, seq, 4]
  %8 = aten.scaled_dot_product_attention(%6, %6, %6, %3) {scale = 0.3} : f32[batch, 2, seq, 4]
  return %7 as output "causal", %8 as output "masked", %4 as output "e"
}
)",
      {{{"batch", 1}, {"seq", 1}}, {{"batch", 2}, {"seq", 3}}, {{"batch", 4}, {"seq", 6}}}, 1e-5);
}

TEST(Lower, GroupedQueryAttention) {
  expectMatches(GqaGraph,
                {{{"batch", 1}, {"seq", 1}, {"past", 1}},
                 {{"batch", 2}, {"seq", 3}, {"past", 4}},
                 {{"batch", 4}, {"seq", 6}, {"past", 7}}},
                1e-5);
}

TEST(Lower, IndexSelectGatherBoolMask) {
  expectMatches(R"(graph @t opset 1.0
dim batch in 1..4
entry @f(%0 : f32[12, 10] = input "t", %1 : i64[batch] = input "i", %2 : i64[12, 3] = input "g", %3 : f32[2, 3, 4] = input "q", %4 : bool[3, 3] = input "m") {
  %5 = aten.index_select(%0, %1) {dim = 0} : f32[batch, 10]
  %6 = aten.index_select(%0, %1) {dim = 1} : f32[12, batch]
  %7 = aten.gather(%0, %2) {dim = 1} : f32[12, 3]
  %9 = aten.arange.start_step() {start = 0, end = 3} : i64[3]
  %10 = aten.reshape(%9) {shape = [3, 1]} : i64[3, 1]
  %11 = aten.ge.Tensor(%10, %9) : bool[3, 3]
  %12 = aten.logical_or(%4, %11) : bool[3, 3]
  %8 = aten.scaled_dot_product_attention(%3, %3, %3, %12) : f32[2, 3, 4]
  return %5 as output "s", %7 as output "g", %8 as output "a", %6 as output "s1"
}
)",
                {{{"batch", 1}}, {{"batch", 4}}}, 1e-5, /*decompose=*/false);
}

// A query row whose keys the mask all hides (row 0 here: keys j < i) gets zeros, as the
// interpreter and PyTorch (2.5 on, its safe softmax) give it, not the NaN of a softmax over
// -inf alone; the other rows are plain attention.
TEST(Lower, AttentionFullyMaskedRowIsZero) {
  const char *text = R"(graph @t opset 1.0
dim batch in 1..3
entry @f(%0 : f32[batch, 2, 4, 3] = input "q", %1 : f32[batch, 2, 5, 3] = input "k", %2 : f32[batch, 2, 5, 3] = input "v") {
  %3 = aten.arange.start_step() {start = 0, end = 5} : i64[5]
  %4 = aten.arange.start_step() {start = 0, end = 4} : i64[4]
  %5 = aten.reshape(%4) {shape = [4, 1]} : i64[4, 1]
  %6 = aten.lt.Tensor(%3, %5) : bool[4, 5]
  %7 = aten.scaled_dot_product_attention(%0, %1, %2, %6) : f32[batch, 2, 4, 3]
  return %7 as output "a"
}
)";
  for (bool decompose : {true, false})
    expectMatches(text, {{{"batch", 1}}, {{"batch", 3}}}, 1e-5, decompose);
}

// Both branches run in every call (one cond on p, one on !p); the then-branch nests a cond and
// both have temporaries that must not share arena bytes with anything live.
TEST(Lower, CondBranchesAndNesting) {
  expectMatches(R"(graph @t opset 1.0
dim batch in 1..8
entry @f(%0 : f32[batch, 4] = input "x", %1 : f32[4, 4] = input "w") {
  %2 = aten.sum.dim_IntList(%0) : f32[]
  %3 = aten.gt.Scalar(%2) {other = 0} : bool[]
  %4 = aten.logical_not(%3) : bool[]
  %5 = aten.lt.Scalar(%2) {other = 1} : bool[]
  %6 = aten.cond(%3, %0, %1, %5) : f32[batch, 4] {
    region(%7 : f32[batch, 4], %8 : f32[4, 4], %9 : bool[]) {
      %10 = aten.mm(%7, %8) : f32[batch, 4]
      %11 = aten.cond(%9, %10) : f32[batch, 4] {
        region(%12 : f32[batch, 4]) {
          %13 = aten.exp(%12) : f32[batch, 4]
          return %13
        }
        region(%14 : f32[batch, 4]) {
          %15 = aten.softmax.int(%14) {dim = 1} : f32[batch, 4]
          return %15
        }
      }
      %16 = aten.mm(%11, %8) : f32[batch, 4]
      %17 = aten.add.Tensor(%16, %10) : f32[batch, 4]
      return %17
    }
    region(%18 : f32[batch, 4], %19 : f32[4, 4], %20 : bool[]) {
      %21 = aten.neg(%18) : f32[batch, 4]
      return %21
    }
  }
  %22 = aten.cond(%4, %0, %1, %5) : f32[batch, 4] {
    region(%23 : f32[batch, 4], %24 : f32[4, 4], %25 : bool[]) {
      %26 = aten.mm(%23, %24) : f32[batch, 4]
      %27 = aten.cond(%25, %26) : f32[batch, 4] {
        region(%28 : f32[batch, 4]) {
          %29 = aten.exp(%28) : f32[batch, 4]
          return %29
        }
        region(%30 : f32[batch, 4]) {
          %31 = aten.softmax.int(%30) {dim = 1} : f32[batch, 4]
          return %31
        }
      }
      %32 = aten.mm(%27, %24) : f32[batch, 4]
      %33 = aten.add.Tensor(%32, %26) : f32[batch, 4]
      return %33
    }
    region(%34 : f32[batch, 4], %35 : f32[4, 4], %36 : bool[]) {
      %37 = aten.neg(%34) : f32[batch, 4]
      return %37
    }
  }
  %38 = aten.add.Tensor(%6, %22) : f32[batch, 4]
  return %6 as output "a", %22 as output "b", %38 as output "sum"
}
)",
                {{{"batch", 1}}, {{"batch", 3}}, {{"batch", 8}}, {{"batch", 5}}});
}

// An input sized by a derived dim `2*half` binds half in the evaluator as in the runtime.
TEST(Lower, DerivedDimBindsItsRoot) {
  expectMatches(R"(graph @t opset 1.0
dim half in 1..16
derived twice_half = 2*half
entry @f(%0 : f32[twice_half] = input "c") {
  %1 = aten.view(%0) {size = [half, 2]} : f32[half, 2]
  %2 = aten.sum.dim_IntList(%1) {dim = [1]} : f32[half]
  return %2 as output "y"
}
)",
                {{{"half", 1}}, {{"half", 7}}, {{"half", 16}}});
}

// An index out of range is an error naming the op, its line and the size, never a wild read:
// too large and negative ids for embedding, index_select and gather.
TEST(Lower, IndicesOutOfRangeAreErrors) {
  auto g = test::prepare(R"(graph @t opset 1.0
entry @f(%0 : i64[3] = input "ids", %1 : f32[5, 2] = input "w", %2 : i64[5, 2] = input "g") {
  %3 = aten.embedding(%1, %0) : f32[3, 2]  # model.cpp:4:5
  %4 = aten.index_select(%1, %0) {dim = 0} : f32[3, 2]  # model.cpp:5:5
  %5 = aten.gather(%1, %2) {dim = 1} : f32[5, 2]  # model.cpp:6:5
  return %3 as output "e", %4 as output "s", %5 as output "t"
}
)",
                         /*decompose=*/false);
  ASSERT_TRUE(g);
  for (bool fuse : {true, false}) {
    auto program = test::lower(*g, fuse);
    ASSERT_TRUE(program);
    HostTensor w(DType::F32, {5, 2}), gi(DType::I64, {5, 2}), ids(DType::I64, {3});
    for (int64_t i = 0; i < 10; ++i) {
      w.setDouble(i, 0.5 + i);
      gi.setInt(i, i % 2);
    }
    auto run = [&](std::vector<int64_t> idv, std::vector<int64_t> gv) {
      for (int64_t i = 0; i < 3; ++i)
        ids.setInt(i, idv[i]);
      for (int64_t i = 0; i < 10; ++i)
        gi.setInt(i, gv[i]);
      return kir::evaluate(*program, 0, {ids, w, gi}, {});
    };
    std::vector<int64_t> goodG = {0, 1, 1, 0, 0, 0, 1, 1, 0, 1};
    auto ok = run({0, 4, 2}, goodG);
    ASSERT_TRUE(static_cast<bool>(ok)) << llvm::toString(ok.takeError());
    EXPECT_EQ((*ok)[0].getDouble(2), 8.5); // w[4][0]
    auto tooLarge = run({0, 5, 2}, goodG);
    ASSERT_FALSE(static_cast<bool>(tooLarge));
    EXPECT_EQ(llvm::toString(tooLarge.takeError()),
              "an index is out of range in aten.embedding (model.cpp:4:5): indices into dim 0 "
              "of weight must be in 0..4");
    auto negative = run({0, -1, 2}, goodG);
    ASSERT_FALSE(static_cast<bool>(negative));
    EXPECT_EQ(llvm::toString(negative.takeError()),
              "an index is out of range in aten.embedding (model.cpp:4:5): indices into dim 0 "
              "of weight must be in 0..4");
    std::vector<int64_t> badG = goodG;
    badG[7] = 2;
    auto gather = run({0, 1, 2}, badG);
    ASSERT_FALSE(static_cast<bool>(gather));
    EXPECT_EQ(llvm::toString(gather.takeError()),
              "an index is out of range in aten.gather (model.cpp:6:5): indices into dim 1 of "
              "self must be in 0..1");
  }
}

} // namespace
} // namespace aotc
