// Binding dims from input shapes and the input checks: every rejected input has an exact,
// one-line message naming the input, the dim and the rule it breaks.
#include "InterpTestUtil.h"

using namespace aotc;
using namespace aotc::test;

namespace {

// Plain, derived and solved dims, a divisor and a guard with a source location.
const char *DimsGraph = R"(graph @t opset 1.0

dim batch in 1..512
dim seq in 8..1024 divisible by 8
dim half in 1..64
derived seq_plus_1 = seq + 1
derived twice_half = 2*half
guard batch <= 16  # model.cpp:42:7

entry @f(%0 : f32[batch, seq] = input "x", %1 : f32[batch, seq_plus_1] = input "y", %2 : f32[twice_half] = input "c") {
  %3 = aten.reshape(%2) {shape = [half, 2]} : f32[half, 2]
  return %0 as output "a", %3 as output "b"
}
)";

HostTensor zeros(std::vector<int64_t> shape, DType dtype = DType::F32) {
  return HostTensor(dtype, shape);
}

TEST(Binding, BindsPlainDerivedAndSolvedDims) {
  auto g = parse(DimsGraph);
  ASSERT_TRUE(g);
  std::vector<HostTensor> in = {zeros({4, 8}), zeros({4, 9}), iota(DType::F32, {6})};
  auto values = bindInputs(*g, *g->entries()[0], in);
  ASSERT_TRUE(!!values) << llvm::toString(values.takeError());
  SymbolValues expected = {
      {"batch", 4}, {"seq", 8}, {"half", 3}, {"seq_plus_1", 9}, {"twice_half", 6}};
  EXPECT_EQ(*values, expected);
  auto out = run(*g, in);
  ASSERT_TRUE(!!out) << llvm::toString(out.takeError());
  ASSERT_EQ(out->size(), 2u);
  expectTensor((*out)[1], DType::F32, {3, 2}, {0, 1, 2, 3, 4, 5});
}

struct Case {
  const char *why;
  std::vector<std::vector<int64_t>> shapes; // f32 inputs x, y, c
  const char *error;
};

TEST(Binding, RejectsBadInputsWithExactMessages) {
  auto g = parse(DimsGraph);
  ASSERT_TRUE(g);
  const Case cases[] = {
      {"one dim, two sizes",
       {{4, 8}, {5, 9}, {6}},
       "input \"y\" dim 0 (batch) = 5 but batch = 4 from input \"x\" dim 0"},
      {"above the range",
       {{600, 8}, {600, 9}, {6}},
       "input \"x\" dim 0 (batch) = 600 is outside 1..512"},
      {"below the range (an empty dim where none is allowed)",
       {{0, 8}, {0, 9}, {6}},
       "input \"x\" dim 0 (batch) = 0 is outside 1..512"},
      {"not a multiple of the divisor",
       {{4, 12}, {4, 13}, {6}},
       "input \"x\" dim 1 (seq) = 12 is not a multiple of 8"},
      {"a derived dim that disagrees with its definition",
       {{4, 8}, {4, 10}, {6}},
       "input \"y\" dim 1 (seq_plus_1) = 10 but seq_plus_1 = seq + 1 = 9 with seq = 8 from input "
       "\"x\" dim 1"},
      {"a derived dim with no solution",
       {{4, 8}, {4, 9}, {7}},
       "input \"c\" dim 0 (twice_half) = 7 is not 2*half for any integer half"},
      {"a solved dim outside its range",
       {{4, 8}, {4, 9}, {130}},
       "input \"c\" dim 0 (twice_half) = 130 gives half = 65, which is outside 1..64"},
      {"a guard that fails",
       {{20, 8}, {20, 9}, {6}},
       "guard batch <= 16 (model.cpp:42:7) does not hold for batch = 20"},
      {"a wrong rank",
       {{4}, {4, 9}, {6}},
       "input \"x\" is f32[4] but the entry takes f32[batch, seq]"},
  };
  for (const Case &c : cases) {
    std::vector<HostTensor> in;
    for (const auto &shape : c.shapes)
      in.push_back(zeros(shape));
    EXPECT_EQ(runError(*g, in), c.error) << c.why;
  }
}

TEST(Binding, RejectsWrongCountsAndDTypes) {
  auto g = parse(DimsGraph);
  ASSERT_TRUE(g);
  EXPECT_EQ(runError(*g, {zeros({4, 8}), zeros({4, 9})}),
            "entry \"f\" takes 3 inputs (x, y, c) but 2 were given");
  EXPECT_EQ(runError(*g, {zeros({4, 8}, DType::I64), zeros({4, 9}), zeros({6})}),
            "input \"x\" is i64[4, 8] but the entry takes f32[batch, seq]");
  EXPECT_EQ(runError(*g, {zeros({4, 8}), zeros({4, 9}), zeros({6})}, {}, "g"),
            "the graph has no entry \"g\" (entries: f)");

  auto one = parse(R"(graph @t opset 1.0
dim batch in 1..512
entry @f(%0 : f32[batch, 784] = input "x") {
  return %0 as output "y"
}
)");
  ASSERT_TRUE(one);
  EXPECT_EQ(runError(*one, {}), "entry \"f\" takes 1 input (x) but 0 were given");
  EXPECT_EQ(runError(*one, {zeros({8, 780})}),
            "input \"x\" is f32[8, 780] but the entry takes f32[batch, 784]");
  EXPECT_EQ(runError(*one, {zeros({8, 784}), zeros({1})}),
            "entry \"f\" takes 1 input (x) but 2 were given");
}

TEST(Binding, ChecksGuardsOfAllKindsAndSkipsOtherEntries) {
  // The guards on `other` belong to entry @g; @f does not bind it and must not check them.
  auto g = parse(R"(graph @t opset 1.0
dim n in 0..100
dim m in 1..100
dim other in 1..100
guard n != 3
guard n < 50
guard m == n + 1  # m.cpp:1:2
guard other <= 2
entry @f(%0 : f32[n] = input "x", %1 : f32[m] = input "y") {
  return %0 as output "z"
}
entry @g(%0 : f32[other] = input "x") {
  return %0 as output "z"
}
)");
  ASSERT_TRUE(g);
  EXPECT_EQ(runError(*g, {zeros({0}), zeros({1})}), "<ok>") << "an empty dim where 0 is allowed";
  EXPECT_EQ(runError(*g, {zeros({3}), zeros({4})}), "guard n != 3 does not hold for n = 3");
  EXPECT_EQ(runError(*g, {zeros({60}), zeros({61})}), "guard n < 50 does not hold for n = 60");
  EXPECT_EQ(runError(*g, {zeros({5}), zeros({7})}),
            "guard m == n + 1 (m.cpp:1:2) does not hold for m = 7, n = 5");
  EXPECT_EQ(runError(*g, {zeros({3})}, {}, "g"), "guard other <= 2 does not hold for other = 3");
}

TEST(Binding, ReportsDimsNoInputDetermines) {
  auto g = parse(R"(graph @t opset 1.0
dim a in 1..10
dim b in 1..10
entry @f(%0 : f32[a*b] = input "x") {
  return %0 as output "y"
}
)");
  ASSERT_TRUE(g);
  EXPECT_EQ(runError(*g, {zeros({6})}),
            "input \"x\" dim 0 (a*b) = 6 does not determine a and b; no input has them as dims "
            "of their own");
}

TEST(Binding, ReportsDimsThatDoNotDetermineTheirSymbol) {
  // floordiv(n, 4) = 2 holds for n = 8..11, so it cannot bind n.
  auto g = parse(R"(graph @t opset 1.0
dim n in 1..64
derived quarter = floordiv(n, 4)
entry @f(%0 : f32[quarter] = input "x") {
  return %0 as output "y"
}
)");
  ASSERT_TRUE(g);
  EXPECT_EQ(runError(*g, {zeros({2})}),
            "input \"x\" dim 0 (quarter) = 2 does not determine n; no input has it as a dim of "
            "its own");
}

TEST(Binding, ChecksStateTensors) {
  auto g = parse(R"(graph @t opset 1.0
parameter "w" : f32[4]
buffer "b" : i64[]
entry @f(%0 : f32[4] = input "x", %1 : f32[4] = parameter "w", %2 : i64[] = buffer "b") {
  %3 = aten.add.Tensor(%0, %1) : f32[4]
  %4 = aten.add.Scalar(%2) {other = 1} : i64[]
  return %3 as output "y", %4 as mutates "b"
}
)");
  ASSERT_TRUE(g);
  HostTensor x = f32({4}, {1, 2, 3, 4});
  EXPECT_EQ(runError(*g, {x}, {{"w", f32({4}, {0, 0, 0, 0})}}), "buffer \"b\" is missing");
  EXPECT_EQ(runError(*g, {x}, {{"w", f32({3}, {0, 0, 0})}, {"b", i64({}, {0})}}),
            "parameter \"w\" is f32[3] but the graph declares f32[4]");
  EXPECT_EQ(runError(*g, {x}, {{"w", i64({4}, {0, 0, 0, 0})}, {"b", i64({}, {0})}}),
            "parameter \"w\" is i64[4] but the graph declares f32[4]");
  auto out = run(*g, {x}, {{"w", f32({4}, {10, 20, 30, 40})}, {"b", i64({}, {41})}});
  ASSERT_TRUE(!!out) << llvm::toString(out.takeError());
  expectTensor((*out)[0], DType::F32, {4}, {11, 22, 33, 44});
  expectTensor((*out)[1], DType::I64, {}, {42});
}

} // namespace
