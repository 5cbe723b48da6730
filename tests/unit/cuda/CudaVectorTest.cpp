// The thread-per-point loop kernels' vector accesses (VectorPlan in LoopKernel.cpp): each graph
// against the reference interpreter on the emulated device where the vector path must be taken,
// where it must fall back (odd and dynamic inner extents, strided and misaligned operands), and
// bitwise against the same kernels made to fall back by unaligned inputs.
#include "CudaTestUtil.h"

#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"

#include <map>
#include <random>

namespace aotc::cuda {
namespace {

const std::vector<test::Dims> Runs = {{{"batch", 1}, {"n", 1}},
                                      {{"batch", 3}, {"n", 8}},
                                      {{"batch", 5}, {"n", 13}},
                                      {{"batch", 16}, {"n", 20}},
                                      {{"batch", 16}, {"n", 40}}};

// f32: a chain with a contiguous operand, one broadcast along the row (stride 0) and one along the
// batch; odd inner extents 7 and 13; a dynamic one; a transposed operand (per-lane loads in a
// vector thread); a slice whose rows start 8 bytes past 16 in every other row.
const char *F32Graph = R"(graph @t opset 1.0
dim batch in 1..16
dim n in 1..40
entry @f(%0 : f32[batch, 8] = input "x", %1 : f32[8] = input "b", %2 : f32[batch, 1] = input "s", %3 : f32[batch, 7] = input "odd", %4 : f32[batch, 13] = input "odd13", %5 : f32[batch, n] = input "dyn", %6 : f32[8, batch] = input "t", %7 : f32[batch, 10] = input "wide") {
  %8 = aten.add.Tensor(%0, %1) : f32[batch, 8]
  %9 = aten.mul.Tensor(%8, %2) : f32[batch, 8]
  %10 = aten.exp(%9) : f32[batch, 8]
  %11 = aten.tanh(%3) : f32[batch, 7]
  %12 = aten.sigmoid(%4) : f32[batch, 13]
  %13 = aten.mul.Tensor(%5, %2) : f32[batch, n]
  %14 = aten.transpose.int(%6) {dim0 = 0, dim1 = 1} : f32[batch, 8]
  %15 = aten.add.Tensor(%14, %0) : f32[batch, 8]
  %16 = aten.slice.Tensor(%7) {dim = 1, start = 2, end = 10} : f32[batch, 8]
  %17 = aten.sub.Tensor(%16, %1) : f32[batch, 8]
  return %10 as output "a", %11 as output "b7", %12 as output "c13", %13 as output "d", %15 as output "p", %17 as output "sl"
}
)";

// 16-bit floats: 8 lanes of f16 and of bf16 (one 16-byte access each), a bf16 operand broadcast
// along the batch, a dynamic f16 extent and an odd one.
const char *HalfGraph = R"(graph @t opset 1.0
dim batch in 1..16
dim n in 1..40
entry @f(%0 : f16[batch, 16] = input "x", %1 : bf16[16] = input "y", %2 : bf16[batch, 24] = input "z", %3 : f16[batch, n] = input "dyn", %4 : f16[batch, 7] = input "odd") {
  %5 = aten._to_copy(%1) {dtype = f16} : f16[16]
  %6 = aten.add.Tensor(%0, %5) : f16[batch, 16]
  %7 = aten.exp(%6) : f16[batch, 16]
  %8 = aten.sigmoid(%2) : bf16[batch, 24]
  %9 = aten.mul.Tensor(%3, %3) : f16[batch, n]
  %10 = aten.neg(%4) : f16[batch, 7]
  return %7 as output "e", %8 as output "s", %9 as output "d", %10 as output "o"
}
)";

TEST(CudaVector, F32MatchesInterpreter) { test::expectEmulatedMatches(F32Graph, Runs); }
TEST(CudaVector, F32OwnBlocks) { test::expectEmulatedMatches(F32Graph, Runs, 1e-5, true, true); }
TEST(CudaVector, HalfMatchesInterpreter) { test::expectEmulatedMatches(HalfGraph, Runs, 1e-3); }
TEST(CudaVectorPtxas, F32) { test::expectPtxasAccepts(F32Graph); }
TEST(CudaVectorPtxas, Half) { test::expectPtxasAccepts(HalfGraph); }

// The vector width of each kernel's stores (1: scalar), by the names of its outputs.
std::map<std::string, unsigned> storeLanes(const char *text) {
  std::map<std::string, unsigned> out;
  llvm::LLVMContext ctx;
  std::optional<test::EmittedKernels> ek = test::emitKernels(ctx, text, false);
  if (!ek)
    return out;
  const kir::EntryKernels &e = ek->program.entries[0];
  for (const CudaKernel &k : ek->module.kernels) {
    unsigned lanes = 1;
    for (const llvm::Instruction &i : llvm::instructions(*ek->module.module->getFunction(k.name)))
      if (auto *s = llvm::dyn_cast<llvm::StoreInst>(&i))
        if (auto *v = llvm::dyn_cast<llvm::FixedVectorType>(s->getValueOperand()->getType()))
          lanes = v->getNumElements();
    for (uint32_t b : k.buffers)
      if (e.buffers[b].kind == kir::Buffer::Kind::Output)
        out[e.outputs[e.buffers[b].index].name] = lanes;
  }
  return out;
}

TEST(CudaVector, WhichKernelsVectorize) {
  std::map<std::string, unsigned> want = {{"a", 4}, {"b7", 1}, {"c13", 1},
                                          {"d", 4}, {"p", 4},  {"sl", 4}};
  EXPECT_EQ(storeLanes(F32Graph), want);
  want = {{"e", 8}, {"s", 8}, {"d", 8}, {"o", 1}};
  EXPECT_EQ(storeLanes(HalfGraph), want);
}

// Inputs 4 bytes past a 64-byte boundary (a caller's pointer into its own buffer): every vector
// thread takes its points one at a time, the scalar kernel's code; the outputs are bitwise those
// of the vector accesses.
TEST(CudaVector, UnalignedInputsFallBackBitwise) {
  for (const char *text : {F32Graph, HalfGraph}) {
    llvm::LLVMContext ctx;
    std::optional<test::EmittedKernels> ek = test::emitKernels(ctx, text, true);
    ASSERT_TRUE(ek);
    const Graph &g = *ek->graph;
    const kir::Program &program = ek->program;
    auto dev = emu::EmulatedModule::load(*ek->module.module);
    ASSERT_TRUE(static_cast<bool>(dev)) << llvm::toString(dev.takeError());
    std::mt19937_64 rng(7);
    for (const test::Dims &dims : Runs) {
      aotc::test::EntryArgs args = aotc::test::randomArgs(g, dims, rng);
      int32_t failed = 0;
      auto aligned =
          test::runEmulated(program, ek->module, **dev, dims, args.inputs, args.weights, failed);
      ASSERT_TRUE(static_cast<bool>(aligned)) << llvm::toString(aligned.takeError());
      auto shifted = test::runEmulated(program, ek->module, **dev, dims, args.inputs, args.weights,
                                       failed, false, /*shiftInputs=*/4);
      ASSERT_TRUE(static_cast<bool>(shifted)) << llvm::toString(shifted.takeError());
      ASSERT_EQ(aligned->size(), shifted->size());
      for (size_t i = 0; i < aligned->size(); ++i) {
        ASSERT_EQ((*aligned)[i].nbytes(), (*shifted)[i].nbytes());
        EXPECT_EQ(std::memcmp((*aligned)[i].data(), (*shifted)[i].data(), (*aligned)[i].nbytes()),
                  0)
            << "output " << i;
      }
      auto want = aotc::test::interpretArgs(g, args);
      ASSERT_TRUE(static_cast<bool>(want)) << llvm::toString(want.takeError());
      ASSERT_NO_FATAL_FAILURE(aotc::test::expectClose(*want, *shifted, 1e-3, ""));
    }
  }
}

} // namespace
} // namespace aotc::cuda
