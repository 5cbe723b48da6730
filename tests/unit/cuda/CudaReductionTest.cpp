// Loop kernels that reduce, on the emulated device against the reference interpreter: a block per
// outer point, its threads splitting the inner points, warp shuffles and shared memory combining
// them, and the stages after a reduction reading its result, all in one kernel. Inner sizes 1,
// 31, 33 and 1000 (no inner point, a partial warp, a warp and one, several points per thread).
#include "CudaTestUtil.h"

namespace aotc::cuda {
namespace {

using test::Dims;

const char *RowReductions = R"(graph @t opset 1.0
dim batch in 1..3
dim n in 1..1000
entry @f(%0 : f32[batch, n] = input "x", %1 : f32[n] = input "g", %2 : f32[n] = input "b", %3 : i64[batch, n] = input "i") {
  %4 = aten.softmax.int(%0) {dim = -1} : f32[batch, n]
  %5 = aten.log_softmax.int(%0) {dim = 1, dtype = f64} : f64[batch, n]
  %6 = aten.layer_norm(%0, %1, %2) {normalized_shape = [n]} : f32[batch, n]
  %7 = aten.sum.dim_IntList(%0) {dim = [1]} : f32[batch]
  %8 = aten.mean.dim(%0) {dim = [1], keepdim = true} : f32[batch, 1]
  %9 = aten.amax(%0) {dim = [1]} : f32[batch]
  %10 = aten.amin(%0) {dim = [1]} : f32[batch]
  %11 = aten.prod.dim_int(%0) {dim = 1} : f32[batch]
  %12 = aten.argmax(%0) {dim = 1} : i64[batch]
  %13 = aten.sum.dim_IntList(%3) {dim = [1]} : i64[batch]
  %14 = aten.amax(%3) {dim = [1]} : i64[batch]
  %15 = aten.argmax(%3) {dim = 1} : i64[batch]
  %16 = aten.sum.dim_IntList(%0) {dim = [0]} : f32[n]
  %17 = aten.argmax(%0) : i64[]
  return %4 as output "softmax", %5 as output "logsoftmax", %6 as output "ln", %7 as output "sum", %8 as output "mean", %9 as output "max", %10 as output "min", %11 as output "prod", %12 as output "argmax", %13 as output "isum", %14 as output "imax", %15 as output "iargmax", %16 as output "colsum", %17 as output "argmaxall"
}
)";

const std::vector<Dims> InnerSizes = {{{"batch", 1}, {"n", 1}},
                                      {{"batch", 2}, {"n", 31}},
                                      {{"batch", 3}, {"n", 33}},
                                      {{"batch", 2}, {"n", 1000}}};

TEST(CudaReduce, RowReductions) { test::expectEmulatedMatches(RowReductions, InnerSizes, 1e-5); }
// The same with the kernels' own blocks (up to 256 threads, 8 warps to combine).
TEST(CudaReduce, RowReductionsOwnBlocks) {
  test::expectEmulatedMatches(RowReductions, InnerSizes, 1e-5, true, /*ownBlocks=*/true);
}
TEST(CudaReducePtxas, RowReductions) { test::expectPtxasAccepts(RowReductions); }

// Which kernels take a block per point: a symbolic or large reduction does, a short constant one
// and a kernel without reductions do not.
TEST(CudaReduce, BlockPerPointLaunch) {
  auto launches = [](const std::string &text) {
    std::vector<uint32_t> blocks;
    llvm::LLVMContext ctx;
    std::optional<test::EmittedKernels> k = test::emitKernels(ctx, text, true);
    EXPECT_TRUE(k);
    for (const CudaKernel &x : k ? k->module.kernels : std::vector<CudaKernel>{})
      blocks.push_back(x.launch.block[0]);
    return blocks;
  };
  auto softmax = [](const std::string &width) {
    return "graph @t opset 1.0\ndim batch in 1..8\ndim n in 1..4096\nentry @f(%0 : f32[batch, " +
           width + "] = input \"x\") {\n  %1 = aten.softmax.int(%0) {dim = -1} : f32[batch, " +
           width + "]\n  return %1 as output \"y\"\n}\n";
  };
  EXPECT_EQ(launches(softmax("n")), std::vector<uint32_t>{ReductionBlock});
  EXPECT_EQ(launches(softmax("1000")), std::vector<uint32_t>{256});
  EXPECT_EQ(launches(softmax("40")), std::vector<uint32_t>{64});
  EXPECT_EQ(launches(softmax("10")), std::vector<uint32_t>{LoopKernelBlock});
}

} // namespace
} // namespace aotc::cuda
