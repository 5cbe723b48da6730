// place-concat (kernel/PlaceConcat.cpp): a stack or cat of whole temporaries into an output
// writes them in place; anything else keeps its copy. The kernel IR evaluator runs the placed
// entries against the interpreter (fused and not).
#include "KernelTestUtil.h"

namespace aotc {
namespace {

using test::Dims;

// A decode step's cache: each layer's keys and values a cat of the past and the new row (a
// temporary the attention reads), all of them stacked into `present`.
const char *CacheGraph = R"(graph @t opset 1.0
dim batch in 1..3
dim past in 1..20
entry @f(%0 : f32[batch, 2, 1, 8] = input "q", %1 : f32[batch, 2, past, 8] = input "pk", %2 : f32[batch, 2, 1, 8] = input "nk", %3 : f32[batch, 2, past, 8] = input "pv", %4 : f32[batch, 2, 1, 8] = input "nv") {
  %5 = aten.cat(%1, %2) {dim = 2} : f32[batch, 2, past + 1, 8]
  %6 = aten.cat(%3, %4) {dim = 2} : f32[batch, 2, past + 1, 8]
  %7 = aten.scaled_dot_product_attention(%0, %5, %6, none) : f32[batch, 2, 1, 8]
  %8 = aten.add.Tensor(%5, %6) : f32[batch, 2, past + 1, 8]
  %9 = aten.stack(%5, %6) : f32[2, batch, 2, past + 1, 8]
  return %7 as output "o", %9 as output "present", %8 as output "sum"
}
)";

const std::vector<Dims> CacheRuns = {
    {{"batch", 1}, {"past", 1}}, {{"batch", 2}, {"past", 7}}, {{"batch", 3}, {"past", 20}}};

/// The steps of entry 0 that are loop kernels named `prefix`...
int kernelsNamed(const kir::Program &p, llvm::StringRef prefix) {
  int n = 0;
  kir::forEachStep(p.entries[0].steps, [&](const kir::Step &s) {
    if (const auto *k = std::get_if<kir::LoopKernel>(&s))
      n += llvm::StringRef(k->name).starts_with(prefix);
  });
  return n;
}

// The cats write into `present` (keys from element 0, values half way), the stack's copy is
// gone, and the attention and the sum read the cache there.
TEST(PlaceConcat, CachePiecesWriteInPlace) {
  std::unique_ptr<Graph> g = test::prepare(CacheGraph);
  ASSERT_TRUE(g);
  auto p = test::lower(*g);
  ASSERT_TRUE(p);
  const kir::EntryKernels &e = p->entries[0];
  EXPECT_EQ(kernelsNamed(*p, "stack"), 0) << test::printed(*p);
  std::vector<std::string> views;
  for (const kir::Buffer &b : e.buffers)
    if (b.kind == kir::Buffer::Kind::Output && b.index == 1)
      views.push_back(b.name + " at " + b.viewOffset.str());
  EXPECT_EQ(views,
            (std::vector<std::string>{"present at 0", "%5 at 0", "%6 at 16*batch*past + 16*batch"}))
      << test::printed(*p);
  test::expectMatches(CacheGraph, CacheRuns);
}

// Copies that stay: a stack of inputs (nothing to place), a cat whose pieces are read through
// clamped indices, a stack along dim 1 whose pieces are not contiguous in the output, pieces
// that would start 12 bytes into it (the output's alignment), and a conversion to f16.
const char *KeptGraph = R"(graph @t opset 1.0
dim batch in 1..3
entry @f(%0 : f32[batch, 8] = input "a", %1 : f32[batch, 8] = input "b", %2 : f32[8, 5] = input "w", %3 : f32[8, 3] = input "w3") {
  %4 = aten.stack(%0, %1) : f32[2, batch, 8]
  %5 = aten.mm(%0, %2) : f32[batch, 5]
  %6 = aten.mm(%1, %2) : f32[batch, 5]
  %7 = aten.cat(%5, %6) {dim = 1} : f32[batch, 10]
  %8 = aten.stack(%5, %6) {dim = 1} : f32[batch, 2, 5]
  %9 = aten.mm(%0, %3) : f32[batch, 3]
  %10 = aten.mm(%1, %3) : f32[batch, 3]
  %11 = aten.stack(%9, %10) : f32[2, batch, 3]
  %12 = aten._to_copy(%5) {dtype = f16} : f16[batch, 5]
  return %4 as output "inputs", %7 as output "clamped", %8 as output "strided", %11 as output "unaligned", %12 as output "half"
}
)";

TEST(PlaceConcat, OtherCopiesStay) {
  std::unique_ptr<Graph> g = test::prepare(KeptGraph);
  ASSERT_TRUE(g);
  auto p = test::lower(*g);
  ASSERT_TRUE(p);
  for (const kir::Buffer &b : p->entries[0].buffers)
    EXPECT_TRUE(b.viewOffset == SymExpr(0)) << b.name << "\n" << test::printed(*p);
  test::expectMatches(KeptGraph, {{{"batch", 1}}, {{"batch", 3}}});
}

} // namespace
} // namespace aotc
