// The CUDA GEMM library kernel on the emulated device against the reference interpreter, and
// through ptxas for sm_80 and sm_90 without register spills: matmuls at odd sizes (m, n, k not
// multiples of the tiles, k = 1), batched and transposed operands, linear layers with their bias
// and relu / gelu fused into the epilogue, convolutions as implicit GEMMs (stride, padding,
// dilation, 1x1, a residual), and grouped convolutions, which stay loop kernels; the same on
// the tensor cores at tf32, bf16 and fp16.
#include "../kernel/KernelTestUtil.h"
#include "CudaTestUtil.h"
#include "codegen/cuda/Gemm.h"
#include "codegen/cuda/HalfActivations.h"
#include "codegen/cuda/HalfWeights.h"
#include "codegen/cuda/KernelBuilder.h"
#include "kernel/Evaluate.h"

#include "llvm/ADT/StringExtras.h"

namespace aotc::cuda {
namespace {

using test::Dims;

/// How many GemmCalls the fused lowering of `text` for CUDA has.
unsigned gemms(const std::string &text) {
  std::unique_ptr<Graph> g = aotc::test::prepare(text, true);
  if (!g)
    return 0;
  auto p = test::lowerForCuda(*g, true);
  if (!p)
    return 0;
  unsigned n = 0;
  kir::forEachStep(p->entries[0].steps,
                   [&](const kir::Step &s) { n += std::holds_alternative<kir::GemmCall>(s); });
  return n;
}

/// Each graph runs emulated against the interpreter at 1, a middle value and the max of its
/// dims, lowers to `Gemms` GEMMs, and its kernels go through ptxas.
#define CUDA_GEMM_TEST(Name, Text, Runs, Gemms)                                                    \
  TEST(CudaGemm, Name) {                                                                           \
    EXPECT_EQ(gemms(Text), Gemms);                                                                 \
    test::expectEmulatedMatches(Text, Runs, 1e-5, true);                                           \
  }                                                                                                \
  TEST(CudaGemmPtxas, Name) { test::expectPtxasAccepts(Text, true); }

const std::vector<Dims> Rows = {{{"rows", 1}}, {{"rows", 65}}, {{"rows", 130}}};

// m over two block tiles and a bit (130 = 2 * 64 + 2), n and k odd and off the tiles.
const char *Mm = R"(graph @t opset 1.0
dim rows in 1..130
entry @f(%0 : f32[rows, 67] = input "x", %1 : f32[67, 33] = input "w") {
  %2 = aten.mm(%0, %1) : f32[rows, 33]
  return %2 as output "y"
}
)";
CUDA_GEMM_TEST(MmOddSizes, Mm, Rows, 1u)

// k = 1 (one partial k-step), n past one block tile.
const char *OuterProduct = R"(graph @t opset 1.0
dim rows in 1..130
entry @f(%0 : f32[rows, 1] = input "x", %1 : f32[1, 70] = input "w") {
  %2 = aten.mm(%0, %1) : f32[rows, 70]
  return %2 as output "y"
}
)";
CUDA_GEMM_TEST(KOfOne, OuterProduct, Rows, 1u)

const std::vector<Dims> Batches = {{{"batch", 1}}, {{"batch", 3}}, {{"batch", 6}}};

// Batched matmuls: 4-d operands folded into one batch, a broadcast right operand (batch stride
// 0), a transposed one, and bmm.
const char *Batched = R"(graph @t opset 1.0
dim batch in 1..6
entry @f(%0 : f32[batch, 3, 17, 9] = input "a", %1 : f32[batch, 3, 9, 13] = input "b", %2 : f32[9, 13] = input "w", %3 : f32[batch, 13, 9] = input "c") {
  %4 = aten.matmul(%0, %1) : f32[batch, 3, 17, 13]
  %5 = aten.matmul(%0, %2) : f32[batch, 3, 17, 13]
  %6 = aten.transpose.int(%3) {dim0 = 1, dim1 = 2} : f32[batch, 9, 13]
  %7 = aten.view(%0) {size = [batch, 51, 9]} : f32[batch, 51, 9]
  %8 = aten.bmm(%7, %6) : f32[batch, 51, 13]
  return %4 as output "y", %5 as output "z", %8 as output "t"
}
)";
CUDA_GEMM_TEST(Batched, Batched, Batches, 3u)

// Every side of GemmFewBlocks: a matrix is 1 tile of 128 x 128, 2 x 1 of 64 x 64 and 3 x 2 of
// 32 x 32, so 1 matrix runs on the 32 x 32 tiles, 66 (132 of 64 x 64) on the 64 x 64 ones and
// 132 (132 of 128 x 128) on the 128 x 128 ones; 65 and 131 just below.
const char *ManyTiles = R"(graph @t opset 1.0
dim batch in 1..132
entry @f(%0 : f32[batch, 70, 5] = input "a", %1 : f32[batch, 5, 40] = input "b") {
  %2 = aten.bmm(%0, %1) : f32[batch, 70, 40]
  return %2 as output "y"
}
)";
CUDA_GEMM_TEST(
    FewAndManyTiles, ManyTiles,
    (std::vector<Dims>{
        {{"batch", 1}}, {{"batch", 65}}, {{"batch", 66}}, {{"batch", 131}}, {{"batch", 132}}}),
    1u)

// The same tiles with both operands transposed: A's rows and B's k contiguous, which the tiles'
// loads take along m and k (consecutive threads on consecutive addresses); k of 37, a partial
// k-tile at every tile size.
const char *ManyTilesTransposed = R"(graph @t opset 1.0
dim batch in 1..132
entry @f(%0 : f32[batch, 37, 70] = input "a", %1 : f32[batch, 40, 37] = input "b") {
  %2 = aten.transpose.int(%0) {dim0 = 1, dim1 = 2} : f32[batch, 70, 37]
  %3 = aten.transpose.int(%1) {dim0 = 1, dim1 = 2} : f32[batch, 37, 40]
  %4 = aten.bmm(%2, %3) : f32[batch, 70, 40]
  return %4 as output "y"
}
)";
CUDA_GEMM_TEST(TransposedOperands, ManyTilesTransposed,
               (std::vector<Dims>{{{"batch", 1}}, {{"batch", 66}}, {{"batch", 132}}}), 1u)

const std::vector<Dims> Tokens = {
    {{"batch", 1}, {"seq", 1}}, {{"batch", 3}, {"seq", 7}}, {{"batch", 8}, {"seq", 17}}};

// nn.Linear with its bias and relu, then with erf gelu, fused into the GEMMs' epilogues. Two
// layers of f32 dot products keep within 1e-5 of the interpreter's (which sums in double) at
// these widths; much longer chains would not, in any f32 summation order.
const char *Linear = R"(graph @t opset 1.0
dim batch in 1..8
dim seq in 1..17
entry @f(%0 : f32[batch, seq, 24] = input "x", %1 : f32[36, 24] = input "w1", %2 : f32[36] = input "b1", %3 : f32[20, 36] = input "w2", %4 : f32[20] = input "b2") {
  %5 = aten.linear(%0, %1, %2) : f32[batch, seq, 36]
  %6 = aten.relu(%5) : f32[batch, seq, 36]
  %7 = aten.linear(%6, %3, %4) : f32[batch, seq, 20]
  %8 = aten.gelu(%7) : f32[batch, seq, 20]
  return %8 as output "y"
}
)";
CUDA_GEMM_TEST(LinearBiasReluGelu, Linear, Tokens, 2u)

// A 3x3 convolution with stride 2, padding 1 and dilation 2 on a rectangular map, bias and relu
// in the epilogue: the implicit GEMM reads zeros in the padding.
const char *ConvStrided = R"(graph @t opset 1.0
dim batch in 1..5
entry @f(%0 : f32[batch, 5, 11, 9] = input "x", %1 : f32[20, 5, 3, 3] = input "w", %2 : f32[20] = input "bias") {
  %3 = aten.convolution(%0, %1, %2) {stride = [2, 2], padding = [1, 1], dilation = [2, 2], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 20, 5, 4]
  %4 = aten.relu(%3) : f32[batch, 20, 5, 4]
  return %4 as output "y"
}
)";
const std::vector<Dims> Images = {{{"batch", 1}}, {{"batch", 2}}, {{"batch", 5}}};
CUDA_GEMM_TEST(ConvStridePaddingDilation, ConvStrided, Images, 1u)

// A convolution on each of its tiles (CudaCoreConvTiles): 130 output channels are 2 rows of
// 128 x 64 tiles, 3 of 64 x 64, 5 of 32 x 32, over n = 96 h columns: h = 48 makes 144 tiles of
// 128 x 64, h = 32 96 of those and 144 of 64 x 64, h = 8 fewer than 132 of either.
const char *ConvTiers = R"(graph @t opset 1.0
dim h in 8..48
entry @f(%0 : f32[1, 3, h, 96] = input "x", %1 : f32[130, 3, 3, 3] = input "w", %2 : f32[130] = input "bias") {
  %3 = aten.convolution(%0, %1, %2) {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[1, 130, h, 96]
  %4 = aten.relu(%3) : f32[1, 130, h, 96]
  return %4 as output "y"
}
)";
CUDA_GEMM_TEST(ConvOnEveryTile, ConvTiers,
               (std::vector<Dims>{{{"h", 8}}, {{"h", 32}}, {{"h", 48}}}), 1u)

// Uneven stride, padding and dilation per axis.
const char *ConvRect = R"(graph @t opset 1.0
dim batch in 1..5
entry @f(%0 : f32[batch, 3, 9, 12] = input "x", %1 : f32[17, 3, 3, 2] = input "w", %2 : f32[17] = input "bias") {
  %3 = aten.convolution(%0, %1, %2) {stride = [2, 1], padding = [2, 1], dilation = [2, 3], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 17, 5, 11]
  return %3 as output "y"
}
)";
CUDA_GEMM_TEST(ConvRectangular, ConvRect, Images, 1u)

// 1x1: the input itself is B.
const char *Conv1x1 = R"(graph @t opset 1.0
dim batch in 1..5
entry @f(%0 : f32[batch, 16, 7, 6] = input "x", %1 : f32[24, 16, 1, 1] = input "w", %2 : f32[24] = input "bias") {
  %3 = aten.convolution(%0, %1, %2) {stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 24, 7, 6]
  return %3 as output "y"
}
)";
CUDA_GEMM_TEST(Conv1x1, Conv1x1, Images, 1u)

// ResNet's block: conv, bias, relu and the residual add, all in the epilogue.
const char *ConvResidual = R"(graph @t opset 1.0
dim batch in 1..5
entry @f(%0 : f32[batch, 16, 10, 9] = input "x", %1 : f32[16, 16, 3, 3] = input "w", %2 : f32[16] = input "bias") {
  %3 = aten.convolution(%0, %1, %2) {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 16, 10, 9]
  %4 = aten.relu(%3) : f32[batch, 16, 10, 9]
  %5 = aten.add.Tensor(%4, %0) : f32[batch, 16, 10, 9]
  return %5 as output "y"
}
)";
CUDA_GEMM_TEST(ConvBiasReluResidual, ConvResidual, Images, 1u)

// Grouped convolutions lower to loop kernels (no GEMM) on CUDA as on the CPU.
const char *ConvGrouped = R"(graph @t opset 1.0
dim batch in 1..5
entry @f(%0 : f32[batch, 8, 6, 7] = input "x", %1 : f32[16, 4, 3, 3] = input "w") {
  %2 = aten.convolution(%0, %1, none) {stride = [1, 2], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 2} : f32[batch, 16, 6, 4]
  return %2 as output "y"
}
)";
CUDA_GEMM_TEST(ConvGroupedStaysDirect, ConvGrouped, Images, 0u)

// The tensor-core kernel (mma.sync through cp.async) on the same graphs at each precision that
// runs there. The inputs are rounded to the precision first, so that the kernel multiplies
// exactly what the interpreter does and only the order of f32 sums differs (1e-5, as for
// fp32): a wrong fragment element, a stage read early or overwritten late would show. Linear
// rounds its hidden layer inside the kernel too, which the interpreter does not: within what
// 10 (tf32, fp16) or 7 (bf16) mantissa bits allow there.
const kir::Precision TensorCorePrecisions[] = {kir::Precision::TF32, kir::Precision::BF16,
                                               kir::Precision::FP16};

#define CUDA_MMA_TEST(Name, Text, Runs, Gemms)                                                     \
  TEST(CudaMmaGemm, Name) {                                                                        \
    EXPECT_EQ(gemms(Text), Gemms);                                                                 \
    for (kir::Precision precision : TensorCorePrecisions) {                                        \
      SCOPED_TRACE(toString(precision).str());                                                     \
      test::expectEmulatedMatches(Text, Runs, 1e-5, true, true, precision, true);                  \
    }                                                                                              \
  }                                                                                                \
  TEST(CudaMmaGemmPtxas, Name) {                                                                   \
    for (kir::Precision precision : TensorCorePrecisions)                                          \
      test::expectPtxasAccepts(Text, true, precision);                                             \
  }

CUDA_MMA_TEST(MmOddSizes, Mm, Rows, 1u)
CUDA_MMA_TEST(KOfOne, OuterProduct, Rows, 1u)
CUDA_MMA_TEST(Batched, Batched, Batches, 3u)
CUDA_MMA_TEST(ConvStridePaddingDilation, ConvStrided, Images, 1u)
CUDA_MMA_TEST(ConvBiasReluResidual, ConvResidual, Images, 1u)

TEST(CudaMmaGemm, LinearBiasReluGelu) {
  for (auto [precision, tol] :
       {std::pair(kir::Precision::TF32, 2e-2), std::pair(kir::Precision::BF16, 1e-1),
        std::pair(kir::Precision::FP16, 2e-2)}) {
    SCOPED_TRACE(toString(precision).str());
    test::expectEmulatedMatches(Linear, Tokens, tol, true, true, precision, true);
  }
}

// A long k (25 k-tiles, the 3-stage pipeline wrapping around 8 times) and m, n over several
// block tiles: the waits let no stage be read before its copies land or be overwritten before
// every warp is done with it (the emulator lands a copy only at the wait that completes it).
const char *LongK = R"(graph @t opset 1.0
dim rows in 1..300
entry @f(%0 : f32[rows, 397] = input "x", %1 : f32[397, 150] = input "w") {
  %2 = aten.mm(%0, %1) : f32[rows, 150]
  return %2 as output "y"
}
)";
TEST(CudaMmaGemm, LongKThroughThePipeline) {
  test::expectEmulatedMatches(LongK, {{{"rows", 300}}}, 1e-5, true, true, kir::Precision::TF32,
                              true);
}

// The 16-bit buffers: bf16 and fp16 convolutions take them on ConvTensorCoreGemmTiles (the
// CudaMmaGemm convolution tests above, and here one of seven k-tiles through the two buffers),
// plain GEMMs on HalfTensorCoreGemmTiles where they have GemmFewBlocks 128 x 128 tiles with
// every dim at 1: here 132 matrices of one tile each, B read along n (bmm), broadcast (batch
// stride 0) and along k (a transposed operand: its shared tile is n-major), k of 37 (a partial
// second k-tile). At bf16 only: fp16 differs in the mma alone, which the convolutions cover.
// (132 blocks of 256 emulated threads are the cost: 8 s here, minutes under the sanitizers.)
const char *SixteenBit = R"(graph @t opset 1.0
dim rows in 1..20
entry @f(%0 : f32[132, rows, 37] = input "a", %1 : f32[132, 37, 45] = input "b", %2 : f32[37, 45] = input "w", %3 : f32[132, 45, 37] = input "c") {
  %4 = aten.bmm(%0, %1) : f32[132, rows, 45]
  %5 = aten.matmul(%0, %2) : f32[132, rows, 45]
  %6 = aten.transpose.int(%3) {dim0 = 1, dim1 = 2} : f32[132, 37, 45]
  %7 = aten.bmm(%0, %6) : f32[132, rows, 45]
  return %4 as output "y", %5 as output "z", %7 as output "t"
}
)";
const char *SixteenBitLongK = R"(graph @t opset 1.0
dim batch in 1..2
entry @f(%0 : f32[batch, 24, 6, 5] = input "x", %1 : f32[20, 24, 3, 3] = input "w") {
  %2 = aten.convolution(%0, %1, none) {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 20, 6, 5]
  return %2 as output "y"
}
)";
TEST(CudaMmaGemm, SixteenBitBuffers) {
  test::expectEmulatedMatches(SixteenBit, {{{"rows", 20}}}, 1e-5, true, true, kir::Precision::BF16,
                              true);
  for (kir::Precision precision : {kir::Precision::BF16, kir::Precision::FP16}) {
    SCOPED_TRACE(toString(precision).str());
    test::expectEmulatedMatches(SixteenBitLongK, {{{"batch", 1}}, {{"batch", 2}}}, 1e-5, true, true,
                                precision, true);
  }
}
TEST(CudaMmaGemmPtxas, SixteenBitBuffers) {
  for (kir::Precision precision : {kir::Precision::BF16, kir::Precision::FP16})
    test::expectPtxasAccepts(SixteenBit, true, precision);
}

// fp32 stays on the CUDA cores, and a GEMM at fp32 is no tensor-core kernel.
TEST(CudaMmaGemm, Fp32IsNotForTheTensorCores) {
  std::unique_ptr<Graph> g = aotc::test::prepare(Mm, true);
  ASSERT_TRUE(g);
  auto p = test::lowerForCuda(*g, true);
  ASSERT_TRUE(p);
  llvm::LLVMContext ctx;
  llvm::Module m("test", ctx);
  LibdeviceMath math(m);
  auto k =
      emitMmaGemmKernel(m, math, p->entries[0], p->entries[0].steps[0], {}, TensorCoreGemmTiles);
  ASSERT_FALSE(static_cast<bool>(k));
  EXPECT_EQ(llvm::toString(k.takeError()),
            "f: GEMM '" + std::get<kir::GemmCall>(p->entries[0].steps[0]).name +
                "': fp32 precision does not run on the tensor cores");
}

// The kernels of a GEMM: those no size in the dims' declared ranges launches are left out.
std::vector<std::string> gemmKernels(const char *text) {
  llvm::LLVMContext ctx;
  auto emitted = test::emitKernels(ctx, text, true);
  if (!emitted)
    return {"(no kernels)"};
  std::vector<std::string> names;
  for (const CudaKernel &k : emitted->module.kernels)
    if (std::holds_alternative<kir::GemmCall>(*k.step))
      names.push_back(k.name);
  return names;
}

TEST(CudaGemm, KernelsOnlyForTheDeclaredSizes) {
  // m = 70 always: no small-m kernel; 1 to 132 matrices reach every tile size.
  EXPECT_EQ(gemmKernels(ManyTiles), (std::vector<std::string>{"bmm_2", "bmm_2_t64", "bmm_2_t32"}));
  // m = batch x seq in 1..136 and n = 36 or 20: the small-m kernels and 32 x 32 tiles only.
  std::vector<std::string> linear = gemmKernels(Linear);
  ASSERT_EQ(linear.size(), 6u) << linear.front();
  for (size_t i = 0; i < linear.size(); ++i)
    EXPECT_TRUE(llvm::StringRef(linear[i]).ends_with(i % 3 == 0   ? "_m1"
                                                     : i % 3 == 1 ? "_m8"
                                                                  : "_t32"))
        << linear[i];
  // The convolution: 128 x 64 tiles and both smaller ones.
  std::vector<std::string> conv = gemmKernels(ConvTiers);
  ASSERT_EQ(conv.size(), 3u) << conv.front();
  EXPECT_TRUE(llvm::StringRef(conv[1]).ends_with("_t64"));
  EXPECT_TRUE(llvm::StringRef(conv[2]).ends_with("_t32"));
}

// ptxas -v on the GEMM kernels of the linear and convolution graphs: no register spills on
// sm_80 and sm_90. The tensor-core kernel holds 64 accumulators and 24 fragment registers a
// thread (130-192 registers, two 128-thread blocks an SM); the CUDA-core 128 x 128 tiles 64
// accumulators and 64 partial sums (one 256-thread block an SM, up to the 255 a thread may have).
TEST(CudaGemmPtxas, NoSpills) {
  for (auto [text, precision] :
       {std::pair(Linear, kir::Precision::FP32), std::pair(ConvStrided, kir::Precision::FP32),
        std::pair(ManyTilesTransposed, kir::Precision::FP32),
        std::pair(ConvTiers, kir::Precision::FP32), std::pair(Linear, kir::Precision::TF32),
        std::pair(ConvStrided, kir::Precision::BF16), std::pair(Linear, kir::Precision::FP16),
        std::pair(SixteenBit, kir::Precision::BF16)})
    test::expectNoSpills(text, precision, precision == kir::Precision::FP32 ? 255 : 208);
}

// half-weights: GEMMs whose weights are stored in bf16 or fp16 and widened as the kernels load
// them: a Conv1D-like [k, n] weight (B along n) and an nn.Linear-like [n, k] one (B along k) at
// 3 rows (the small-m kernel) and 40 (the tensor cores' 16-bit buffers on 128 x 64 tiles, which
// 16-bit operands take), a convolution's filter (A). Inputs and weights are rounded to the
// precision first, so the copies hold them exactly and only the order of f32 sums differs. With
// k = 37 and n = 45 the tensor cores' tiles widen and round each element; with 38 and 46 (and
// the filter's k = 216) they load each pair of weights as one 32-bit word.
const char *HalfWeightGraph = R"(graph @t opset 1.0
dim rows in 1..40
parameter "w" : f32[37, 45]
parameter "lin" : f32[45, 37]
parameter "f" : f32[20, 24, 3, 3]
entry @f(%0 : f32[rows, 37] = input "a", %1 : f32[2, 24, 6, 5] = input "x", %2 : f32[37, 45] = parameter "w", %3 : f32[45, 37] = parameter "lin", %4 : f32[20, 24, 3, 3] = parameter "f") {
  %5 = aten.mm(%0, %2) : f32[rows, 45]
  %6 = aten.permute(%3) {dims = [1, 0]} : f32[37, 45]
  %7 = aten.mm(%0, %6) : f32[rows, 45]
  %8 = aten.convolution(%1, %4, none) {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[2, 20, 6, 5]
  return %5 as output "y", %7 as output "z", %8 as output "c"
}
)";

// The program's weights for a run: the graph's, then each 16-bit copy that half-weights
// declared ("<name>.bf16" or ".fp16"), converted from its original.
std::vector<HostTensor> withHalfCopies(const kir::Program &p, std::vector<HostTensor> weights) {
  for (size_t i = weights.size(); i < p.weights.size(); ++i) {
    const kir::Weight &w = p.weights[i];
    llvm::StringRef source = llvm::StringRef(w.name).rsplit('.').first;
    auto it = llvm::find_if(p.weights, [&](const kir::Weight &x) { return x.name == source; });
    HostTensor copy(w.dtype, std::vector<int64_t>(w.shape.begin(), w.shape.end()));
    const HostTensor &from = weights[it - p.weights.begin()];
    for (int64_t j = 0; j < copy.numel(); ++j)
      copy.setDouble(j, from.getDouble(j));
    weights.push_back(std::move(copy));
  }
  return weights;
}

std::string evenHalfWeightGraph() {
  std::string text = HalfWeightGraph;
  for (auto [from, to] : {std::pair("37", "38"), std::pair("45", "46")})
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at))
      text.replace(at, 2, to);
  return text;
}

/// Entry 0 of `program` (lowered from `g`) emulated at 3 and 40 rows on random inputs rounded to
/// `precision`, with the weights' 16-bit copies, against `reference(args, weights)` at 1e-5.
void expectRowsMatch(const Graph &g, const kir::Program &program, kir::Precision precision,
                     std::mt19937_64 &rng,
                     llvm::function_ref<llvm::Expected<std::vector<HostTensor>>(
                         const aotc::test::EntryArgs &, llvm::ArrayRef<HostTensor>)>
                         reference) {
  llvm::LLVMContext ctx;
  auto cm = emitEntryKernels(ctx, program.entries[0], "test");
  ASSERT_TRUE(static_cast<bool>(cm)) << llvm::toString(cm.takeError());
  auto dev = emu::EmulatedModule::load(*cm->module);
  ASSERT_TRUE(static_cast<bool>(dev)) << llvm::toString(dev.takeError());
  for (int64_t rows : {3, 40}) {
    Dims dims{{"rows", rows}};
    aotc::test::EntryArgs args = aotc::test::randomArgs(g, dims, rng);
    test::roundArgs(args, precision);
    std::vector<HostTensor> weights = withHalfCopies(program, args.weights);
    auto want = reference(args, weights);
    ASSERT_TRUE(static_cast<bool>(want)) << llvm::toString(want.takeError());
    int32_t failed = 0;
    auto got = test::runEmulated(program, *cm, **dev, dims, args.inputs, weights, failed, true);
    ASSERT_TRUE(static_cast<bool>(got)) << llvm::toString(got.takeError());
    ASSERT_EQ(failed, 0);
    ASSERT_NO_FATAL_FAILURE(
        aotc::test::expectClose(*want, *got, 1e-5, fmt::format(" rows={}", rows)));
  }
}

/// expectRowsMatch against kir::evaluate of the same program: the kernels multiply what it
/// multiplies (inputs rounded to the precision), so only the order of the sums differs.
void expectMatchesEvaluate(const Graph &g, const kir::Program &program, kir::Precision precision,
                           std::mt19937_64 &rng) {
  expectRowsMatch(g, program, precision, rng,
                  [&](const aotc::test::EntryArgs &args, llvm::ArrayRef<HostTensor> weights) {
                    return kir::evaluate(program, 0, args.inputs, weights);
                  });
}

TEST(CudaMmaGemm, HalfWeights) {
  for (const std::string &text : {std::string(HalfWeightGraph), evenHalfWeightGraph()}) {
    std::unique_ptr<Graph> g = aotc::test::prepare(text, true);
    ASSERT_TRUE(g);
    std::mt19937_64 rng(7);
    for (auto [precision, half] : {std::pair(kir::Precision::BF16, DType::BF16),
                                   std::pair(kir::Precision::FP16, DType::F16)}) {
      SCOPED_TRACE(toString(precision).str() + "\n" + text);
      auto program = test::lowerForCuda(*g, true, precision);
      ASSERT_TRUE(program);
      ExportedProgram exported;
      ASSERT_FALSE(static_cast<bool>(storeHalfWeights(*program, exported, nullptr, false)));
      const kir::EntryKernels &e = program->entries[0];
      unsigned sixteenBit = 0;
      kir::forEachStep(e.steps, [&](const kir::Step &step) {
        if (const auto *gemm = std::get_if<kir::GemmCall>(&step))
          for (const kir::MatrixOperand *op : {&gemm->a, &gemm->b})
            sixteenBit += e.buffers[op->buffer].dtype == half;
      });
      EXPECT_EQ(sixteenBit, 3u) << aotc::test::printed(*program);
      ASSERT_NO_FATAL_FAILURE(
          expectRowsMatch(*g, *program, precision, rng,
                          [&](const aotc::test::EntryArgs &args, llvm::ArrayRef<HostTensor>) {
                            return aotc::test::interpretArgs(*g, args);
                          }));
    }
  }
}

// GPT-2's c_fc: the tanh gelu, which reads the sum three times, in the epilogue.
const char *GeluHalfWeightGraph = R"(graph @t opset 1.0
dim rows in 1..40
parameter "w" : f32[38, 128]
entry @f(%0 : f32[rows, 38] = input "a", %1 : f32[38, 128] = parameter "w") {
  %2 = aten.mm(%0, %1) : f32[rows, 128]
  %3 = aten.gelu(%2) {approximate = "tanh"} : f32[rows, 128]
  return %3 as output "y"
}
)";

// No spills. The plain GEMMs on the 16-bit buffers of 128 x 64 tiles take 254-255 registers
// (48 staged values and their addresses a thread beside 64 accumulators; the convolution 178):
// still two 128-thread blocks an SM, as the f32 buffers' 130-192.
TEST(CudaMmaGemmPtxas, HalfWeightsNoSpills) {
  for (const std::string &text :
       {std::string(HalfWeightGraph), evenHalfWeightGraph(), std::string(GeluHalfWeightGraph)})
    for (kir::Precision precision : {kir::Precision::BF16, kir::Precision::FP16})
      test::expectNoSpills(text, precision, 255, [](kir::Program &p) {
        ExportedProgram exported;
        ASSERT_FALSE(static_cast<bool>(storeHalfWeights(p, exported, nullptr, false)));
      });
}

// half-activations: the temporaries that only 16-bit GEMMs read (a pointwise kernel's output, a
// GEMM's epilogue's, a convolution's read through its window or as a plain B) are stored in
// 16 bits. On the tensor cores the results are bitwise those of the f32 temporaries, which the
// kernels rounded to the same bits as they loaded them; the small-m kernel (3 rows) multiplies
// the rounded A, within the precision's rounding of the f32 one.
const char *HalfActivationGraph = R"(graph @t opset 1.0
dim rows in 1..40
parameter "w" : f32[38, 46]
parameter "lin" : f32[30, 46]
parameter "f1" : f32[24, 16, 3, 3]
parameter "f2" : f32[16, 24, 1, 1]
parameter "f3" : f32[24, 24, 3, 3]
entry @f(%0 : f32[rows, 38] = input "a", %1 : f32[2, 16, 6, 5] = input "x", %2 : f32[38, 46] = parameter "w", %3 : f32[30, 46] = parameter "lin", %4 : f32[24, 16, 3, 3] = parameter "f1", %5 : f32[16, 24, 1, 1] = parameter "f2", %16 : f32[24, 24, 3, 3] = parameter "f3") {
  %6 = aten.mm(%0, %2) : f32[rows, 46]
  %7 = aten.relu(%6) : f32[rows, 46]
  %8 = aten.permute(%3) {dims = [1, 0]} : f32[46, 30]
  %9 = aten.mm(%7, %8) : f32[rows, 30]
  %10 = aten.tanh(%0) : f32[rows, 38]
  %11 = aten.mm(%10, %2) : f32[rows, 46]
  %12 = aten.convolution(%1, %4, none) {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[2, 24, 6, 5]
  %13 = aten.relu(%12) : f32[2, 24, 6, 5]
  %14 = aten.convolution(%13, %5, none) {stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[2, 16, 6, 5]
  %15 = aten.convolution(%13, %16, none) {stride = [1, 1], padding = [1, 1], dilation = [2, 2], transposed = false, output_padding = [0, 0], groups = 1} : f32[2, 24, 4, 3]
  return %9 as output "y", %11 as output "u", %14 as output "z", %15 as output "c"
}
)";

TEST(CudaMmaGemm, HalfActivations) {
  std::unique_ptr<Graph> g = aotc::test::prepare(HalfActivationGraph, true);
  ASSERT_TRUE(g);
  std::mt19937_64 rng(11);
  for (auto [precision, half] : {std::pair(kir::Precision::BF16, DType::BF16),
                                 std::pair(kir::Precision::FP16, DType::F16)}) {
    SCOPED_TRACE(toString(precision).str());
    auto wide = test::lowerForCuda(*g, true, precision);
    ASSERT_TRUE(wide);
    ExportedProgram exported;
    ASSERT_FALSE(static_cast<bool>(storeHalfWeights(*wide, exported, nullptr, false)));
    kir::Program narrow = *wide;
    storeHalfActivations(narrow, g->shapeEnv().facts());
    // relu(a @ w), tanh(a) and relu(conv(x, f1)): nothing else reads them.
    unsigned narrowed = 0;
    for (const kir::Buffer &b : narrow.entries[0].buffers)
      narrowed += b.kind == kir::Buffer::Kind::Arena && b.dtype == half;
    EXPECT_EQ(narrowed, 3u) << aotc::test::printed(narrow);
    llvm::LLVMContext ctx;
    auto wideModule = emitEntryKernels(ctx, wide->entries[0], "wide");
    auto narrowModule = emitEntryKernels(ctx, narrow.entries[0], "narrow");
    ASSERT_TRUE(static_cast<bool>(wideModule)) << llvm::toString(wideModule.takeError());
    ASSERT_TRUE(static_cast<bool>(narrowModule)) << llvm::toString(narrowModule.takeError());
    auto wideDev = emu::EmulatedModule::load(*wideModule->module);
    auto narrowDev = emu::EmulatedModule::load(*narrowModule->module);
    ASSERT_TRUE(static_cast<bool>(wideDev)) << llvm::toString(wideDev.takeError());
    ASSERT_TRUE(static_cast<bool>(narrowDev)) << llvm::toString(narrowDev.takeError());
    for (int64_t rows : {3, 40}) {
      Dims dims{{"rows", rows}};
      aotc::test::EntryArgs args = aotc::test::randomArgs(*g, dims, rng);
      std::vector<HostTensor> weights = withHalfCopies(*wide, args.weights);
      int32_t failed = 0;
      auto want = test::runEmulated(*wide, *wideModule, **wideDev, dims, args.inputs, weights,
                                    failed, true);
      ASSERT_TRUE(static_cast<bool>(want)) << llvm::toString(want.takeError());
      auto got = test::runEmulated(narrow, *narrowModule, **narrowDev, dims, args.inputs, weights,
                                   failed, true);
      ASSERT_TRUE(static_cast<bool>(got)) << llvm::toString(got.takeError());
      ASSERT_EQ(failed, 0);
      for (size_t o = 0; o < want->size(); ++o) {
        SCOPED_TRACE(fmt::format("rows={} output {}", rows, o));
        // At 3 rows y and u come from the small-m kernel: within 1e-2 of the largest output.
        if (rows == 3 && o < 2) {
          const HostTensor &x = (*want)[o], &y = (*got)[o];
          double largest = 0, worst = 0;
          for (int64_t i = 0; i < x.numel(); ++i) {
            largest = std::max(largest, std::abs(x.getDouble(i)));
            worst = std::max(worst, std::abs(x.getDouble(i) - y.getDouble(i)));
          }
          EXPECT_GT(worst, 0.0) << "the small-m kernel reads the rounded A";
          EXPECT_LE(worst, 1e-2 * largest);
          continue;
        }
        ASSERT_EQ((*want)[o].nbytes(), (*got)[o].nbytes());
        EXPECT_EQ(std::memcmp((*want)[o].data(), (*got)[o].data(), (*want)[o].nbytes()), 0);
      }
    }
  }
}

// The cp.async 16-bit buffers: GEMMs whose operands are both stored in 16 bits in rows of
// 16-byte chunks (a relu's output that only GEMMs read, half-weights' copies). B with n = 44 (a
// slice of a [40, 48] weight) and A with k = 36 (a slice of a [20, 40] weight) end in a partial
// chunk (4 elements copied, the rest zeros); nn.Linear's weight is B along k; the batched GEMM
// has 132 tiles of 128 x 128 (AsyncHalfGemmTiles), the others fewer (AsyncHalfFewGemmTiles,
// three stages). Inputs are rounded to the precision and the relus keep them exact, so the
// kernels multiply what kir::evaluate of the same program multiplies.
const char *AsyncChunkGraph = R"(graph @t opset 1.0
dim rows in 1..40
parameter "w" : f32[40, 48]
parameter "lin" : f32[30, 40]
parameter "w3" : f32[20, 40]
entry @f(%0 : f32[rows, 40] = input "a", %1 : f32[132, 12, 40] = input "p", %2 : f32[132, 40, 48] = input "q", %3 : f32[40, 48] = parameter "w", %4 : f32[30, 40] = parameter "lin", %5 : f32[20, 40] = parameter "w3", %6 : f32[36, 40] = input "r") {
  %7 = aten.relu(%0) : f32[rows, 40]
  %8 = aten.slice.Tensor(%3) {dim = 1, start = 0, end = 44} : f32[40, 44]
  %9 = aten.mm(%7, %8) : f32[rows, 44]
  %10 = aten.permute(%4) {dims = [1, 0]} : f32[40, 30]
  %11 = aten.mm(%7, %10) : f32[rows, 30]
  %12 = aten.relu(%1) : f32[132, 12, 40]
  %13 = aten.relu(%2) : f32[132, 40, 48]
  %14 = aten.bmm(%12, %13) : f32[132, 12, 48]
  %15 = aten.slice.Tensor(%5) {dim = 1, start = 0, end = 36} : f32[20, 36]
  %16 = aten.relu(%6) : f32[36, 40]
  %17 = aten.mm(%15, %16) : f32[20, 40]
  return %9 as output "y", %11 as output "z", %14 as output "t", %17 as output "u"
}
)";

// The CUDA layout passes on a program of graph `g`: half-weights, then half-activations.
void halfLayout(const Graph &g, kir::Program &program) {
  ExportedProgram exported;
  if (llvm::Error e = storeHalfWeights(program, exported, nullptr, false))
    ADD_FAILURE() << llvm::toString(std::move(e));
  storeHalfActivations(program, g.shapeEnv().facts());
}

// The program of a graph at `precision` after the CUDA layout passes.
std::optional<kir::Program> halfProgram(const Graph &g, kir::Precision precision) {
  auto program = test::lowerForCuda(g, true, precision);
  if (program)
    halfLayout(g, *program);
  return program;
}

TEST(CudaMmaGemm, AsyncChunks) {
  std::unique_ptr<Graph> g = aotc::test::prepare(AsyncChunkGraph, true);
  ASSERT_TRUE(g);
  std::mt19937_64 rng(5);
  for (kir::Precision precision : {kir::Precision::BF16, kir::Precision::FP16}) {
    SCOPED_TRACE(toString(precision).str());
    auto program = halfProgram(*g, precision);
    ASSERT_TRUE(program);
    const kir::EntryKernels &e = program->entries[0];
    unsigned async = 0;
    kir::forEachStep(e.steps, [&](const kir::Step &step) {
      if (const auto *gemm = std::get_if<kir::GemmCall>(&step))
        async += asyncChunks(e, *gemm);
    });
    EXPECT_EQ(async, 4u) << aotc::test::printed(*program);
    ASSERT_NO_FATAL_FAILURE(expectMatchesEvaluate(*g, *program, precision, rng));
  }
}

// The batched GEMM of AsyncChunkGraph (132 tiles of 128 x 128) keeps AsyncHalfGemmTiles'
// three stages in dynamic shared memory: A's stages then B's in the module's one dynamic array
// of 16-bit elements, its launch asking for all 60 KiB; the GEMMs of few tiles keep their static
// arrays. AsyncChunks runs it on the emulated device.
TEST(CudaMmaGemm, DynamicSharedStages) {
  llvm::LLVMContext ctx;
  auto emitted = test::emitKernels(ctx, AsyncChunkGraph, true, kir::Precision::BF16, halfLayout);
  ASSERT_TRUE(emitted);
  const CudaModule &cm = emitted->module;
  std::vector<std::string> dynamic;
  for (const CudaKernel &k : cm.kernels)
    if (k.launch.dynamicShared) {
      dynamic.push_back(k.name);
      EXPECT_EQ(k.launch.dynamicShared, AsyncHalfGemmTiles.sharedBytes());
    }
  ASSERT_EQ(dynamic.size(), 1u);
  EXPECT_NE(dynamic[0].find("bmm"), std::string::npos) << dynamic[0];
  EXPECT_EQ(AsyncHalfGemmTiles.sharedBytes(), 60u * 1024);
  llvm::GlobalVariable *array = cm.module->getGlobalVariable("dynamic_shared_i16");
  ASSERT_TRUE(array);
  EXPECT_TRUE(array->isDeclaration());
  EXPECT_EQ(array->getAddressSpace(), 3u);
  EXPECT_EQ(array->getAlign().valueOrOne().value(), 16u);
  const llvm::Function *bmm = cm.module->getFunction(dynamic[0]);
  ASSERT_TRUE(bmm);
  bool reads = false;
  for (const llvm::User *u : array->users())
    if (const auto *i = llvm::dyn_cast<llvm::Instruction>(u))
      reads |= i->getFunction() == bmm;
  EXPECT_TRUE(reads);
}

// A bf16 GEMM whose m is symbolic reaches both sides of GemmFewBlocks tiles of 128 x 128 (1056
// columns are 9 of them): the large tiles' kernel serves from 15 row tiles (135 tiles), the
// 128 x 64 one (_t64) below, beside the small-m kernels, one launched a run. Both run on the
// emulated device against the interpreter, on either side of the switch.
const char *DynamicTilesGraph = R"(graph @t opset 1.0
dim m in 1..2048
entry @f(%0 : bf16[m, 8] = input "a", %1 : bf16[8, 1056] = input "b") {
  %2 = aten.mm(%0, %1) : bf16[m, 1056]
  return %2 as output "c"
}
)";

TEST(CudaMmaGemm, DynamicTiles) {
  llvm::LLVMContext ctx;
  auto emitted = test::emitKernels(ctx, DynamicTilesGraph, true, kir::Precision::BF16, halfLayout);
  ASSERT_TRUE(emitted);
  const CudaModule &cm = emitted->module;
  std::vector<std::string> names;
  for (const CudaKernel &k : cm.kernels)
    names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"mm_2_m1", "mm_2_m8", "mm_2", "mm_2_t64"}));
  EXPECT_EQ(cm.kernels[2].launch.dynamicShared, AsyncHalfGemmTiles.sharedBytes());
  EXPECT_EQ(cm.kernels[3].launch.dynamicShared, 0u);
  test::expectEmulatedMatches(DynamicTilesGraph, {{{"m", 1920}}, {{"m", 1793}}, {{"m", 200}}}, 1e-2,
                              true, false, kir::Precision::BF16);
}

// The f32 buffers' 16-byte copies (4 elements) at tf32: A from an arena temporary (a relu's
// output) or a weight, k = 38 ending in a partial chunk (a slice of a [20, 40] weight); B along
// n with n = 42 (a slice of a [40, 48] weight, half a chunk at the end); nn.Linear's weight is B
// along k, which the f32 tiles (k-major) take an element a copy; an input's rows (a caller's
// f32 tensor need not start on a 16-byte boundary) too.
const char *F32ChunkGraph = R"(graph @t opset 1.0
dim rows in 1..40
parameter "w" : f32[40, 48]
parameter "lin" : f32[30, 40]
parameter "w3" : f32[20, 40]
entry @f(%0 : f32[rows, 40] = input "a", %3 : f32[40, 48] = parameter "w", %4 : f32[30, 40] = parameter "lin", %5 : f32[20, 40] = parameter "w3", %6 : f32[38, 40] = input "r") {
  %7 = aten.relu(%0) : f32[rows, 40]
  %8 = aten.slice.Tensor(%3) {dim = 1, start = 0, end = 42} : f32[40, 42]
  %9 = aten.mm(%7, %8) : f32[rows, 42]
  %10 = aten.permute(%4) {dims = [1, 0]} : f32[40, 30]
  %11 = aten.mm(%7, %10) : f32[rows, 30]
  %15 = aten.slice.Tensor(%5) {dim = 1, start = 0, end = 38} : f32[20, 38]
  %17 = aten.mm(%15, %6) : f32[20, 40]
  return %9 as output "y", %11 as output "z", %17 as output "u"
}
)";

TEST(CudaMmaGemm, F32Chunks) {
  std::unique_ptr<Graph> g = aotc::test::prepare(F32ChunkGraph, true);
  ASSERT_TRUE(g);
  auto program = test::lowerForCuda(*g, true, kir::Precision::TF32);
  ASSERT_TRUE(program);
  const kir::EntryKernels &e = program->entries[0];
  std::string chunked;
  kir::forEachStep(e.steps, [&](const kir::Step &step) {
    if (const auto *gemm = std::get_if<kir::GemmCall>(&step))
      chunked += fmt::format("{}{} ", int(chunkedRows(e, gemm->a, false, DType::F32)),
                             int(chunkedRows(e, gemm->b, false, DType::F32)));
  });
  // y: both; z: A only (B along k); u: A only (B is an input).
  EXPECT_EQ(chunked, "11 10 10 ") << aotc::test::printed(*program);
  std::mt19937_64 rng(11);
  ASSERT_NO_FATAL_FAILURE(expectMatchesEvaluate(*g, *program, kir::Precision::TF32, rng));
}

// ptxas on the cp.async 16-bit buffers at a transformer layer's sizes (m symbolic, so that no
// accumulator is dead): no spills, and at most 128 registers a thread, where the register-staged
// 16-bit buffers take 247-255.
const char *AsyncChunkLayerGraph = R"(graph @t opset 1.0
dim tokens in 1..4096
parameter "w" : f32[768, 3072]
parameter "head" : f32[50304, 768]
entry @f(%0 : f32[tokens, 768] = input "x", %1 : f32[768, 3072] = parameter "w", %2 : f32[50304, 768] = parameter "head") {
  %3 = aten.relu(%0) : f32[tokens, 768]
  %4 = aten.mm(%3, %1) : f32[tokens, 3072]
  %5 = aten.permute(%2) {dims = [1, 0]} : f32[768, 50304]
  %6 = aten.mm(%3, %5) : f32[tokens, 50304]
  return %4 as output "y", %6 as output "logits"
}
)";

TEST(CudaMmaGemmPtxas, AsyncChunksNoSpills) {
  std::unique_ptr<Graph> g = aotc::test::prepare(AsyncChunkLayerGraph, true);
  ASSERT_TRUE(g);
  for (kir::Precision precision : {kir::Precision::BF16, kir::Precision::FP16})
    test::expectNoSpills(AsyncChunkLayerGraph, precision, 128, [&](kir::Program &p) {
      ExportedProgram exported;
      ASSERT_FALSE(static_cast<bool>(storeHalfWeights(p, exported, nullptr, false)));
      storeHalfActivations(p, g->shapeEnv().facts());
      unsigned async = 0;
      kir::forEachStep(p.entries[0].steps, [&](const kir::Step &step) {
        if (const auto *gemm = std::get_if<kir::GemmCall>(&step))
          async += asyncChunks(p.entries[0], *gemm);
      });
      EXPECT_EQ(async, 2u);
    });
}

// Nothing packs weights for CUDA and its lowering target turns Winograd off, so a GEMM with a
// packed operand is a compiler bug upstream: an error naming the GEMM, not wrong results.
TEST(CudaGemm, PackedOperandsAreErrors) {
  EXPECT_EQ(loweringTarget().winogradMinOutChannels, 0);
  std::unique_ptr<Graph> g = aotc::test::prepare(Mm, true);
  ASSERT_TRUE(g);
  for (int which : {0, 1}) {
    auto p = test::lowerForCuda(*g, true);
    ASSERT_TRUE(p);
    auto &gemm = std::get<kir::GemmCall>(p->entries[0].steps[0]);
    EXPECT_EQ(gemm.a.panelRows, 0u);
    EXPECT_EQ(gemm.a.winogradTile, 0);
    if (which == 0)
      gemm.a.panelRows = 8;
    else
      gemm.a.winogradTile = 2;
    llvm::LLVMContext ctx;
    auto cm = emitEntryKernels(ctx, p->entries[0], "test");
    ASSERT_FALSE(static_cast<bool>(cm));
    EXPECT_EQ(llvm::toString(cm.takeError()),
              "f: GEMM '" + gemm.name +
                  "': a packed (panel or Winograd) operand is not supported by the CUDA backend");
  }
}

} // namespace
} // namespace aotc::cuda
