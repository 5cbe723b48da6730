// Whole graphs: a small MLP against a hand-written forward pass, cond, state tensors and buffer
// mutations, symint and scalar outputs, kernel errors with their location, and the
// deterministic random tensors of `aotc run`.
#include "InterpTestUtil.h"

#include <cmath>

using namespace aotc;
using namespace aotc::test;

namespace {

const char *MlpGraph = R"(graph @mlp opset 1.0

dim batch in 1..512

parameter "fc1.weight" : f32[16, 12]
parameter "fc1.bias" : f32[16]
parameter "fc2.weight" : f32[5, 16]
parameter "fc2.bias" : f32[5]

entry @forward(%0 : f32[batch, 12] = input "x", %1 : f32[16, 12] = parameter "fc1.weight", %2 : f32[16] = parameter "fc1.bias", %3 : f32[5, 16] = parameter "fc2.weight", %4 : f32[5] = parameter "fc2.bias") {
  %5 = aten.linear(%0, %1, %2) : f32[batch, 16]  # mlp.cpp:14:12
  %6 = aten.gelu(%5) : f32[batch, 16]  # mlp.cpp:14:10
  %7 = aten.linear(%6, %3, %4) : f32[batch, 5]  # mlp.cpp:15:12
  %8 = aten.log_softmax.int(%7) {dim = -1} : f32[batch, 5]  # mlp.cpp:16:10
  return %8 as output "logits"
}
)";

// The same model written out by hand, in double.
std::vector<double> mlpForward(const State &w, const HostTensor &x) {
  auto at = [](const HostTensor &t, int64_t i) { return t.getDouble(i); };
  const HostTensor &w1 = w.at("fc1.weight"), &b1 = w.at("fc1.bias");
  const HostTensor &w2 = w.at("fc2.weight"), &b2 = w.at("fc2.bias");
  int64_t batch = x.shape()[0];
  std::vector<double> out;
  for (int64_t n = 0; n < batch; ++n) {
    double h[16], logits[5], mx = -INFINITY, sum = 0;
    for (int j = 0; j < 16; ++j) {
      double acc = at(b1, j);
      for (int k = 0; k < 12; ++k)
        acc += at(x, n * 12 + k) * at(w1, j * 12 + k);
      // The layer's output is an f32 tensor, so the reference rounds there too.
      acc = static_cast<float>(acc);
      h[j] = static_cast<float>(0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0))));
    }
    for (int j = 0; j < 5; ++j) {
      double acc = at(b2, j);
      for (int k = 0; k < 16; ++k)
        acc += h[k] * at(w2, j * 16 + k);
      logits[j] = static_cast<float>(acc);
      mx = std::max(mx, logits[j]);
    }
    for (double l : logits)
      sum += std::exp(l - mx);
    for (double l : logits)
      out.push_back(l - mx - std::log(sum));
  }
  return out;
}

TEST(Graph, MlpMatchesAHandWrittenForward) {
  auto g = parse(MlpGraph);
  ASSERT_TRUE(g);
  std::mt19937_64 rng(7);
  State w;
  for (const StateTensor &s : g->state()) {
    std::vector<int64_t> shape;
    for (const SymExpr &d : s.type.shape())
      shape.push_back(*d.constant());
    // Scaled like a usual initialization, so that the logits stay near 1 where f32 resolves
    // 1e-6.
    HostTensor t = randomTensor(s.type.dtype(), shape, rng);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.setDouble(i, t.getDouble(i) / std::sqrt(static_cast<double>(shape.back())));
    w.emplace(s.name, std::move(t));
  }
  for (int64_t batch : {1, 3, 8}) {
    HostTensor x = randomTensor(DType::F32, {batch, 12}, rng);
    auto out = run(*g, {x}, w, "forward");
    ASSERT_TRUE(!!out) << llvm::toString(out.takeError());
    ASSERT_EQ(out->size(), 1u);
    expectTensor((*out)[0], DType::F32, {batch, 5}, mlpForward(w, x), 1e-6);
  }
}

TEST(Graph, CondRunsTheChosenRegion) {
  auto g = parse(R"(graph @t opset 1.0
entry @f(%0 : bool[] = input "p", %1 : f32[2] = input "x", %2 : f32[2] = input "y") {
  %3, %4 = aten.cond(%0, %1, %2) : f32[2], f32[] {
    region(%5 : f32[2], %6 : f32[2]) {
      %7 = aten.add.Tensor(%5, %6) : f32[2]
      %8 = aten.sum.dim_IntList(%7) : f32[]
      return %7, %8
    }
    region(%9 : f32[2], %10 : f32[2]) {
      %11 = aten.sum.dim_IntList(%9) : f32[]
      return %10, %11
    }
  }
  return %3 as output "z", %4 as output "s"
}
)");
  ASSERT_TRUE(g);
  HostTensor x = f32({2}, {1, 2}), y = f32({2}, {10, 20});
  auto t = run(*g, {boolean({}, {1}), x, y});
  ASSERT_TRUE(!!t) << llvm::toString(t.takeError());
  expectTensor((*t)[0], DType::F32, {2}, {11, 22});
  expectTensor((*t)[1], DType::F32, {}, {33});
  auto e = run(*g, {boolean({}, {0}), x, y});
  ASSERT_TRUE(!!e) << llvm::toString(e.takeError());
  expectTensor((*e)[0], DType::F32, {2}, {10, 20});
  expectTensor((*e)[1], DType::F32, {}, {3});
}

TEST(Graph, OutputsInSignatureOrderWithMutationsSymintsAndScalars) {
  auto g = parse(R"(graph @t opset 1.0
dim n in 1..8
buffer "count" : i64[]
entry @f(%0 : f32[n] = input "x", %1 : i64[] = buffer "count") {
  %2 = aten.add.Scalar(%1) {other = 1} : i64[]
  %3 = aten.sym_size.int(%0) {dim = 0} : symint
  %4 = aten.sum.dim_IntList(%0) : f32[]
  %5 = aten._local_scalar_dense(%4) : f32
  return %0 as output "same", %2 as mutates "count", %3 as output "n", %5 as output "total", %0 as output "again"
}
)");
  ASSERT_TRUE(g);
  auto out = run(*g, {f32({3}, {1, 2, 3})}, {{"count", i64({}, {41})}});
  ASSERT_TRUE(!!out) << llvm::toString(out.takeError());
  ASSERT_EQ(out->size(), 5u);
  expectTensor((*out)[0], DType::F32, {3}, {1, 2, 3});
  expectTensor((*out)[1], DType::I64, {}, {42});
  expectTensor((*out)[2], DType::I64, {}, {3});
  expectTensor((*out)[3], DType::F32, {}, {6});
  expectTensor((*out)[4], DType::F32, {3}, {1, 2, 3});
}

TEST(Graph, KernelErrorsNameTheValueOpAndLine) {
  auto g = parse(R"(graph @t opset 1.0
entry @f(%0 : f32[4, 2] = input "table", %1 : i64[3] = input "ids") {
  %2 = aten.relu(%0) : f32[4, 2]
  %3 = aten.embedding(%2, %1) : f32[3, 2]  # model.cpp:3:5
  %4 = aten.div.Tensor_mode(%1, %1) {rounding_mode = "floor"} : i64[3]
  return %3 as output "y", %4 as output "z"
}
)");
  ASSERT_TRUE(g);
  HostTensor table(DType::F32, {4, 2});
  EXPECT_EQ(runError(*g, {table, i64({3}, {0, 7, 1})}),
            "entry \"f\": %3 = aten.embedding (model.cpp:3:5): index 7 at position 1 is out of "
            "range for the rows of weight of size 4");
  EXPECT_EQ(runError(*g, {table, i64({3}, {1, 0, 1})}),
            "entry \"f\": %4 = aten.div.Tensor_mode: integer division by zero");
  EXPECT_EQ(runError(*g, {table, i64({3}, {1, 2, 3})}), "<ok>");
}

TEST(Graph, ErrorsInsideCondNameTheInnerNode) {
  auto g = parse(R"(graph @t opset 1.0
entry @f(%0 : bool[] = input "p", %1 : i64[2] = input "x") {
  %2 = aten.cond(%0, %1) : i64[2] {
    region(%3 : i64[2]) {
      %4 = aten.remainder.Tensor(%3, %3) : i64[2]  # m.cpp:7:3
      return %4
    }
    region(%5 : i64[2]) {
      return %5
    }
  }
  return %2 as output "y"
}
)");
  ASSERT_TRUE(g);
  EXPECT_EQ(runError(*g, {boolean({}, {1}), i64({2}, {1, 0})}),
            "entry \"f\": %4 = aten.remainder.Tensor (m.cpp:7:3): integer division by zero");
  EXPECT_EQ(runError(*g, {boolean({}, {0}), i64({2}, {1, 0})}), "<ok>");
}

TEST(Graph, KernelResultsAreCheckedAgainstResultTypes) {
  // An unverified graph whose result type is wrong: the oracle checks itself against the IR.
  auto g = parseGraph(R"(graph @t opset 1.0
dim n in 1..8
entry @f(%0 : f32[n] = input "x") {
  %1 = aten.relu(%0) : f32[n + 1]
  return %1 as output "y"
}
)");
  ASSERT_TRUE(!!g) << llvm::toString(g.takeError());
  EXPECT_EQ(
      runError(**g, {HostTensor(DType::F32, {4})}),
      "entry \"f\": %1 = aten.relu: internal error: the kernel produced f32[4] but the result "
      "type f32[n + 1] is f32[5] here");
}

TEST(Random, IsDeterministicAndShaped) {
  std::mt19937_64 a(0), b(0), c(1);
  HostTensor x = randomTensor(DType::F32, {1000}, a), y = randomTensor(DType::F32, {1000}, b);
  EXPECT_TRUE(x == y);
  EXPECT_FALSE(x == randomTensor(DType::F32, {1000}, c));
  double sum = 0, squares = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    sum += x.getDouble(i);
    squares += x.getDouble(i) * x.getDouble(i);
  }
  EXPECT_NEAR(sum / 1000, 0, 0.1);
  EXPECT_NEAR(squares / 1000, 1, 0.15);
  HostTensor ints = randomTensor(DType::I32, {200}, a);
  HostTensor bools = randomTensor(DType::Bool, {200}, a);
  int ones = 0;
  for (int64_t i = 0; i < 200; ++i) {
    EXPECT_GE(ints.getInt(i), 0);
    EXPECT_LT(ints.getInt(i), 10);
    ones += bools.getInt(i);
  }
  EXPECT_GT(ones, 50);
  EXPECT_LT(ones, 150);
  // The first draws of seed 0 are pinned: `aotc run` users may rely on them.
  std::mt19937_64 seed0(0);
  HostTensor first = randomTensor(DType::F64, {2}, seed0);
  std::mt19937_64 raw(0);
  double u1 = (static_cast<double>(raw() >> 11) + 0.5) * 0x1p-53;
  double u2 = (static_cast<double>(raw() >> 11) + 0.5) * 0x1p-53;
  EXPECT_EQ(first.getDouble(0), std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2));
  EXPECT_EQ(first.getDouble(1), std::sqrt(-2 * std::log(u1)) * std::sin(2 * M_PI * u2));
}

} // namespace
