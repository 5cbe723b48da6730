// Structural checks of the lowering: what fuses into one step, which views stay free, and that
// the memory plan never overlaps live buffers and reuses memory along a chain.
#include "KernelTestUtil.h"

#include "kernel/MemoryPlan.h"

namespace aotc {
namespace {

using test::lower;
using test::prepare;
using test::printed;

unsigned countLoops(const kir::EntryKernels &e) {
  unsigned n = 0;
  for (const kir::Step &s : e.steps)
    n += std::holds_alternative<kir::LoopKernel>(s);
  return n;
}

unsigned countGemms(const kir::EntryKernels &e) { return e.steps.size() - countLoops(e); }

/// The lowered program of `text` (decomposed and cleaned up first).
std::optional<kir::Program> lowered(const std::string &text) {
  auto g = prepare(text);
  if (!g)
    return std::nullopt;
  return lower(*g);
}

TEST(Structure, SoftmaxIsOneKernelWithTwoReduceStages) {
  auto p = lowered(R"(graph @t opset 1.0
dim batch in 1..512
entry @f(%0 : f32[batch, 10] = input "x") {
  %1 = aten.softmax.int(%0) {dim = -1} : f32[batch, 10]
  return %1 as output "p"
}
)");
  ASSERT_TRUE(p);
  const kir::EntryKernels &e = p->entries[0];
  ASSERT_EQ(e.steps.size(), 1u) << printed(*p);
  const auto &k = std::get<kir::LoopKernel>(e.steps[0]);
  ASSERT_EQ(k.stages.size(), 3u) << printed(*p);
  EXPECT_EQ(k.stages[0].reduce, kir::ReduceOp::Max);
  EXPECT_EQ(k.stages[1].reduce, kir::ReduceOp::Sum);
  EXPECT_EQ(k.stages[2].kind, kir::Stage::Kind::Store);
  EXPECT_EQ(k.outer.size(), 1u);
  EXPECT_EQ(k.parallelLoops, 1u);
  EXPECT_EQ(e.arenaBytes, SymExpr(0));
}

TEST(Structure, LayerNormIsOneKernel) {
  auto p = lowered(R"(graph @t opset 1.0
dim batch in 1..16
parameter "ln.weight" : f32[8]
parameter "ln.bias" : f32[8]
entry @f(%0 : f32[batch, 3, 8] = input "x", %1 : f32[8] = parameter "ln.weight", %2 : f32[8] = parameter "ln.bias") {
  %3 = aten.layer_norm(%0, %1, %2) {normalized_shape = [8]} : f32[batch, 3, 8]
  return %3 as output "y"
}
)");
  ASSERT_TRUE(p);
  const kir::EntryKernels &e = p->entries[0];
  ASSERT_EQ(e.steps.size(), 1u) << printed(*p);
  const auto &k = std::get<kir::LoopKernel>(e.steps[0]);
  ASSERT_EQ(k.stages.size(), 3u) << printed(*p);
  EXPECT_EQ(k.stages[0].kind, kir::Stage::Kind::Reduce);
  EXPECT_EQ(k.stages[1].kind, kir::Stage::Kind::Reduce);
  EXPECT_EQ(k.outer.size(), 2u);
}

TEST(Structure, LayerNormThroughAReshapeReducesOncePerRow) {
  // GPT-2 flattens [batch, seq, 768] to [batch*seq, 768] between layer_norm and the linear
  // layer: the norm is one kernel over its own rows (reduce stages once per row, the row stored
  // by a stage), not a kernel over the flattened shape reducing again for every element.
  auto p = lowered(R"(graph @t opset 1.0
dim batch in 1..16
parameter "ln.weight" : f32[8]
parameter "ln.bias" : f32[8]
entry @f(%0 : f32[batch, 3, 8] = input "x", %1 : f32[8] = parameter "ln.weight", %2 : f32[8] = parameter "ln.bias", %3 : f32[8, 5] = input "w") {
  %4 = aten.layer_norm(%0, %1, %2) {normalized_shape = [8]} : f32[batch, 3, 8]
  %5 = aten.reshape(%4) {shape = [3*batch, 8]} : f32[3*batch, 8]
  %6 = aten.mm(%5, %3) : f32[3*batch, 5]
  return %6 as output "y"
}
)");
  ASSERT_TRUE(p);
  const kir::EntryKernels &e = p->entries[0];
  ASSERT_EQ(countLoops(e), 1u) << printed(*p);
  ASSERT_EQ(countGemms(e), 1u) << printed(*p);
  const auto &k = std::get<kir::LoopKernel>(e.steps[0]);
  EXPECT_EQ(k.outer.size(), 2u) << printed(*p);
  ASSERT_FALSE(k.stages.empty());
  EXPECT_EQ(k.stages.back().kind, kir::Stage::Kind::Store);
  EXPECT_EQ(k.stages.back().inner.size(), 1u) << printed(*p);
}

TEST(Structure, LinearReluIsOneGemmWithEpilogue) {
  auto p = lowered(R"(graph @t opset 1.0
dim batch in 1..64
parameter "fc.weight" : f32[16, 8]
parameter "fc.bias" : f32[16]
entry @f(%0 : f32[batch, 8] = input "x", %1 : f32[16, 8] = parameter "fc.weight", %2 : f32[16] = parameter "fc.bias") {
  %3 = aten.linear(%0, %1, %2) : f32[batch, 16]
  %4 = aten.relu(%3) : f32[batch, 16]
  return %4 as output "y"
}
)");
  ASSERT_TRUE(p);
  const kir::EntryKernels &e = p->entries[0];
  ASSERT_EQ(e.steps.size(), 1u) << printed(*p);
  const auto &g = std::get<kir::GemmCall>(e.steps[0]);
  EXPECT_NE(g.epilogue, kir::NoExpr);
  EXPECT_EQ(e.buffers[g.out].kind, kir::Buffer::Kind::Output);
  // The weight [out, in] is B transposed by strides alone.
  EXPECT_EQ(e.buffers[g.b.buffer].kind, kir::Buffer::Kind::Weight);
  EXPECT_EQ(g.b.rowStride, SymExpr(1));
  EXPECT_EQ(g.b.colStride, SymExpr(8));
}

TEST(Structure, PointwiseChainIsOneKernel) {
  auto p = lowered(R"(graph @t opset 1.0
dim batch in 1..64
entry @f(%0 : f32[batch, 8] = input "x", %1 : f32[8] = input "b") {
  %2 = aten.add.Tensor(%0, %1) : f32[batch, 8]
  %3 = aten.relu(%2) : f32[batch, 8]
  %4 = aten.mul.Scalar(%3) {other = 2.0} : f32[batch, 8]
  %5 = aten.exp(%4) : f32[batch, 8]
  %6 = aten.tanh(%5) : f32[batch, 8]
  return %6 as output "y"
}
)");
  ASSERT_TRUE(p);
  ASSERT_EQ(p->entries[0].steps.size(), 1u) << printed(*p);
  EXPECT_EQ(countLoops(p->entries[0]), 1u);
  EXPECT_EQ(p->entries[0].arenaBytes, SymExpr(0));
}

TEST(Structure, ReshapeOfRealizedBufferIsFree) {
  auto p = lowered(R"(graph @t opset 1.0
dim batch in 1..64
entry @f(%0 : f32[batch, 8] = input "x", %1 : f32[8, 8] = input "w") {
  %2 = aten.mm(%0, %1) : f32[batch, 8]
  %3 = aten.reshape(%2) {shape = [batch, 2, 4]} : f32[batch, 2, 4]
  %4 = aten.permute(%3) {dims = [1, 0, 2]} : f32[2, batch, 4]
  %5 = aten.reshape(%4) {shape = [2, 4, batch]} : f32[2, 4, batch]
  %6 = aten.sum.dim_IntList(%5) {dim = [2]} : f32[2, 4]
  return %6 as output "y"
}
)");
  ASSERT_TRUE(p);
  const kir::EntryKernels &e = p->entries[0];
  // The GEMM and one reduction kernel; neither the reshape nor the permute copies.
  EXPECT_EQ(countGemms(e), 1u) << printed(*p);
  EXPECT_EQ(countLoops(e), 1u) << printed(*p);
}

TEST(Structure, FlattenedIndexStaysAffine) {
  // A 1x1 convolution is a GEMM over [batch, 16, 4*5]; its residual-add epilogue reads y
  // [batch, 16, 4, 5] at (n // 5) * 5 + n % 5, which is n again: the load stays contiguous (and
  // vectorizes).
  auto p = lowered(R"(graph @t opset 1.0
dim batch in 1..64
entry @f(%0 : f32[batch, 8, 4, 5] = input "x", %1 : f32[16, 8, 1, 1] = input "w", %2 : f32[batch, 16, 4, 5] = input "y") {
  %3 = aten.convolution(%0, %1, none) {stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 16, 4, 5]
  %4 = aten.add.Tensor(%3, %2) : f32[batch, 16, 4, 5]
  return %4 as output "z"
}
)");
  ASSERT_TRUE(p);
  std::string text = printed(*p);
  ASSERT_EQ(countGemms(p->entries[0]), 1u) << text;
  EXPECT_NE(text.find("b2["), std::string::npos) << text;
  EXPECT_EQ(text.find("//"), std::string::npos) << text;
  EXPECT_EQ(text.find(" % "), std::string::npos) << text;
}

TEST(Structure, MergingDynamicDimsStaysAffine) {
  // relu over [batch, seq, 8] read as [batch*seq, 8] by a GEMM: the merged index splits as
  // (r // seq, r % seq) only within its group, and (r // seq) * (8*seq) + (r % seq) * 8 folds back
  // to r * 8: no division by seq is left per element.
  auto p = lowered(R"(graph @t opset 1.0
dim batch in 1..8
dim seq in 1..64
entry @f(%0 : f32[batch, seq, 8] = input "x", %1 : f32[8, 5] = input "w") {
  %2 = aten.relu(%0) : f32[batch, seq, 8]
  %3 = aten.reshape(%2) {shape = [batch*seq, 8]} : f32[batch*seq, 8]
  %4 = aten.mm(%3, %1) : f32[batch*seq, 5]
  return %4 as output "y"
}
)");
  ASSERT_TRUE(p);
  std::string text = printed(*p);
  ASSERT_EQ(countLoops(p->entries[0]), 1u) << text;
  EXPECT_EQ(text.find("//"), std::string::npos) << text;
  EXPECT_EQ(text.find(" % "), std::string::npos) << text;
}

TEST(Structure, ConvBiasReluIsOneKernel) {
  auto p = lowered(R"(graph @t opset 1.0
dim batch in 1..4
entry @f(%0 : f32[batch, 3, 8, 8] = input "x", %1 : f32[4, 3, 3, 3] = input "w", %2 : f32[4] = input "b") {
  %3 = aten.convolution(%0, %1, %2) {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 4, 8, 8]
  %4 = aten.relu(%3) : f32[batch, 4, 8, 8]
  return %4 as output "y"
}
)");
  ASSERT_TRUE(p);
  ASSERT_EQ(p->entries[0].steps.size(), 1u) << printed(*p);
  const auto &k = std::get<kir::LoopKernel>(p->entries[0].steps[0]);
  ASSERT_EQ(k.stages.size(), 2u);
  EXPECT_EQ(k.stages[0].inner.size(), 3u);
}

// The message names the line and the backend of the target lowered for.
TEST(Structure, UnsupportedOpNamesTheLineAndTheBackend) {
  auto g = prepare(R"(graph @t opset 1.0
entry @f(%0 : f32[2, 4] = input "x") {
  %1 = aten.layer_norm(%0, none, none) {normalized_shape = [4]} : f32[2, 4]  # model.cpp:7:3
  return %1 as output "y"
}
)",
                   /*decompose=*/false);
  ASSERT_TRUE(g);
  for (const char *backend : {"CPU", "CUDA"}) {
    kir::TargetInfo target = cpu::loweringTarget();
    target.backend = backend;
    auto p = lowerToKernels(*g, target, {});
    ASSERT_FALSE(static_cast<bool>(p));
    EXPECT_EQ(llvm::toString(p.takeError()),
              fmt::format("model.cpp:7:3: aten.layer_norm is not supported by the {} backend yet",
                          backend));
  }
}

// A cond is one step: the predicate kernel comes before it, each branch holds its own steps, and
// the results are written by both branches into the same buffers.
TEST(Structure, CondIsOneStepWithTwoBranches) {
  auto p = lowered(R"(graph @t opset 1.0
dim batch in 1..8
entry @f(%0 : f32[batch, 4] = input "x") {
  %1 = aten.sum.dim_IntList(%0) : f32[]
  %2 = aten.gt.Scalar(%1) {other = 0} : bool[]
  %3 = aten.cond(%2, %0) : f32[batch, 4] {  # model.cpp:9:3
    region(%4 : f32[batch, 4]) {
      %5 = aten.exp(%4) : f32[batch, 4]
      return %5
    }
    region(%6 : f32[batch, 4]) {
      %7 = aten.neg(%6) : f32[batch, 4]
      return %7
    }
  }
  return %3 as output "y"
}
)");
  ASSERT_TRUE(p);
  const kir::EntryKernels &e = p->entries[0];
  const kir::CondStep *cond = nullptr;
  for (const kir::Step &s : e.steps)
    if (const auto *c = std::get_if<kir::CondStep>(&s))
      cond = c;
  ASSERT_TRUE(cond) << printed(*p);
  EXPECT_EQ(e.buffers[cond->predicate].dtype, DType::Bool);
  ASSERT_EQ(cond->thenSteps.size(), 1u) << printed(*p);
  ASSERT_EQ(cond->elseSteps.size(), 1u) << printed(*p);
  const auto &then = std::get<kir::LoopKernel>(cond->thenSteps[0]);
  const auto &other = std::get<kir::LoopKernel>(cond->elseSteps[0]);
  EXPECT_EQ(then.stages.back().buffer, other.stages.back().buffer);
  EXPECT_NE(printed(*p).find("cond b"), std::string::npos);
}

/// Checks that no two Arena buffers whose live ranges (first..last step touching them) overlap
/// share bytes, at each of `values` of `symbol`; returns the arena size at each value.
std::vector<int64_t> expectNoOverlap(const kir::EntryKernels &e, const std::string &symbol,
                                     const std::vector<int64_t> &values) {
  size_t nb = e.buffers.size();
  std::vector<int> first(nb, -1), last(nb, -1);
  for (size_t s = 0; s < e.steps.size(); ++s)
    for (uint32_t b : kir::buffersOfStep(e, e.steps[s])) {
      if (first[b] < 0)
        first[b] = s;
      last[b] = s;
    }
  std::vector<int64_t> sizes;
  for (int64_t v : values) {
    std::map<std::string, int64_t, std::less<>> env = {{symbol, v}};
    int64_t arena = *e.arenaBytes.evaluate(env);
    sizes.push_back(arena);
    for (size_t a = 0; a < nb; ++a)
      for (size_t b = a + 1; b < nb; ++b) {
        const kir::Buffer &x = e.buffers[a], &y = e.buffers[b];
        if (x.kind != kir::Buffer::Kind::Arena || y.kind != kir::Buffer::Kind::Arena ||
            first[a] < 0 || first[b] < 0)
          continue;
        int64_t xo = *x.arenaOffset.evaluate(env), yo = *y.arenaOffset.evaluate(env);
        int64_t xe = xo + *x.numel.evaluate(env) * int64_t(byteSize(x.dtype));
        int64_t ye = yo + *y.numel.evaluate(env) * int64_t(byteSize(y.dtype));
        EXPECT_EQ(xo % 64, 0);
        EXPECT_LE(xe, arena);
        EXPECT_LE(ye, arena);
        bool liveTogether = first[a] <= last[b] && first[b] <= last[a];
        bool share = xo < ye && yo < xe;
        EXPECT_FALSE(liveTogether && share)
            << x.name << " and " << y.name << " overlap at " << symbol << " = " << v;
      }
  }
  return sizes;
}

// A chain of GEMMs whose intermediates all have to be realized: A -> B -> C -> D. Only two
// intermediates are live at once, so the arena holds two slots, not four.
TEST(Structure, MemoryPlanReusesAlongAChainWithoutOverlap) {
  auto p = lowered(R"(graph @t opset 1.0
dim batch in 1..64
entry @f(%0 : f32[batch, 16] = input "x", %1 : f32[16, 16] = input "w", %2 : f32[16, 32] = input "w2", %3 : f32[32, 16] = input "w3") {
  %4 = aten.mm(%0, %1) : f32[batch, 16]
  %5 = aten.mm(%4, %1) : f32[batch, 16]
  %6 = aten.mm(%5, %2) : f32[batch, 32]
  %7 = aten.mm(%6, %3) : f32[batch, 16]
  %8 = aten.mm(%7, %1) : f32[batch, 16]
  %9 = aten.mm(%8, %1) : f32[batch, 16]
  return %9 as output "y"
}
)");
  ASSERT_TRUE(p);
  const kir::EntryKernels &e = p->entries[0];
  ASSERT_EQ(countGemms(e), 6u) << printed(*p);
  auto sizes = expectNoOverlap(e, "batch", {1, 7, 64});
  // Two slots: 32 and 16 floats per row at most (the 32-wide one grew the slot).
  EXPECT_EQ(sizes[2], 64 * 32 * 4 + 64 * 16 * 4) << printed(*p);
}

// Many temporaries of different sizes (a reduction over a middle dim, a softmax over dim 0,
// GEMMs): whatever the plan, live buffers never share bytes.
// Temporaries of both branches of a cond (GEMMs, a softmax) are live across the whole cond:
// none shares bytes with another, nor with the operands and results around the cond.
TEST(Structure, CondBranchTemporariesNeverOverlap) {
  auto p = lowered(R"(graph @t opset 1.0
dim batch in 1..32
entry @f(%0 : f32[batch, 8] = input "x", %1 : f32[8, 8] = input "w", %2 : bool[] = input "p") {
  %3 = aten.mm(%0, %1) : f32[batch, 8]
  %4 = aten.cond(%2, %3, %1) : f32[batch, 8] {
    region(%5 : f32[batch, 8], %6 : f32[8, 8]) {
      %7 = aten.mm(%5, %6) : f32[batch, 8]
      %8 = aten.softmax.int(%7) {dim = 0} : f32[batch, 8]
      %9 = aten.mm(%8, %6) : f32[batch, 8]
      %10 = aten.add.Tensor(%9, %7) : f32[batch, 8]
      return %10
    }
    region(%11 : f32[batch, 8], %12 : f32[8, 8]) {
      %13 = aten.mm(%11, %12) : f32[batch, 8]
      %14 = aten.mm(%13, %12) : f32[batch, 8]
      %15 = aten.mul.Tensor(%14, %13) : f32[batch, 8]
      return %15
    }
  }
  %16 = aten.mm(%4, %1) : f32[batch, 8]
  return %16 as output "y"
}
)");
  ASSERT_TRUE(p);
  expectNoOverlap(p->entries[0], "batch", {1, 5, 32});
}

TEST(Structure, MemoryPlanNeverOverlapsLiveBuffers) {
  auto p = lowered(R"(graph @t opset 1.0
dim batch in 1..32
entry @f(%0 : f32[batch, 8, 4] = input "x", %1 : f32[4, 4] = input "w") {
  %2 = aten.matmul(%0, %1) : f32[batch, 8, 4]
  %3 = aten.softmax.int(%2) {dim = 0} : f32[batch, 8, 4]
  %4 = aten.sum.dim_IntList(%3) {dim = [1], keepdim = true} : f32[batch, 1, 4]
  %5 = aten.matmul(%3, %1) : f32[batch, 8, 4]
  %6 = aten.mul.Tensor(%5, %4) : f32[batch, 8, 4]
  %7 = aten.matmul(%6, %1) : f32[batch, 8, 4]
  %8 = aten.add.Tensor(%7, %2) : f32[batch, 8, 4]
  %9 = aten.matmul(%8, %1) : f32[batch, 8, 4]
  return %9 as output "y"
}
)");
  ASSERT_TRUE(p);
  expectNoOverlap(p->entries[0], "batch", {1, 2, 13, 32});
}

} // namespace
} // namespace aotc
