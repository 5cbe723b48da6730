// Numerical equivalence of the decompose pass: each graph runs in the reference interpreter
// before and after decomposition on the same random inputs, at several sizes of its dynamic dims.
#include "../interp/InterpTestUtil.h"

#include "passes/Passes.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace aotc {
namespace {

using test::parse;
using test::run;

testing::AssertionResult ok(llvm::Error err) {
  if (err)
    return testing::AssertionFailure() << llvm::toString(std::move(err));
  return testing::AssertionSuccess();
}

/// One user input of a run. Variances must be positive for rsqrt; every other input is a
/// standard normal, with exact zeros (which would hide sign and division bugs) nudged away.
struct Input {
  DType dtype;
  std::vector<int64_t> shape;
  bool positive = false;
};

std::vector<HostTensor> randomInputs(const std::vector<Input> &specs, std::mt19937_64 &rng) {
  std::vector<HostTensor> out;
  for (const Input &spec : specs) {
    HostTensor t = randomTensor(spec.dtype, spec.shape, rng);
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = t.getDouble(i);
      if (spec.positive)
        v = std::abs(v) + 0.1;
      t.setDouble(i, v == 0 ? 0.5 : v);
    }
    out.push_back(std::move(t));
  }
  return out;
}

/// True when some node of `g` (regions included) is of `kind`.
bool contains(const Graph &g, OpKind kind) {
  bool found = false;
  for (const auto &entry : g.entries())
    entry->body().walk([&](const Node &n) { found |= n.kind() == kind; });
  return found;
}

/// Runs `text` (entry @f) before and after decompose on fresh random inputs for each element of
/// `runs`, and compares every output: max|a - b| <= tolerance * max(1, max|ref|), no NaN.
/// `gone` are the ops the pass must have removed.
void expectEquivalent(const std::string &text, const std::vector<std::vector<Input>> &runs,
                      double tolerance, std::vector<OpKind> gone,
                      const DecomposeOptions &options = {}) {
  std::unique_ptr<Graph> ref = parse(text), dec = parse(text);
  ASSERT_TRUE(ref && dec);
  ASSERT_TRUE(ok(runDecompose(*dec, options)));
  ASSERT_TRUE(ok(verifyGraph(*dec)));
  for (OpKind kind : gone)
    EXPECT_FALSE(contains(*dec, kind)) << opName(kind).str() << " was not decomposed";

  std::mt19937_64 rng(20261122);
  for (const std::vector<Input> &specs : runs) {
    std::vector<HostTensor> inputs = randomInputs(specs, rng);
    auto want = run(*ref, inputs);
    auto got = run(*dec, inputs);
    ASSERT_TRUE(static_cast<bool>(want)) << llvm::toString(want.takeError());
    ASSERT_TRUE(static_cast<bool>(got)) << llvm::toString(got.takeError());
    ASSERT_EQ(want->size(), got->size());
    for (size_t o = 0; o < want->size(); ++o) {
      const HostTensor &a = (*want)[o], &b = (*got)[o];
      ASSERT_EQ(describe(a.dtype(), a.shape()), describe(b.dtype(), b.shape()));
      double maxRef = 0, maxDiff = 0;
      for (int64_t i = 0; i < a.numel(); ++i) {
        ASSERT_FALSE(std::isnan(a.getDouble(i)) || std::isnan(b.getDouble(i)))
            << "output " << o << " element " << i << " is NaN";
        maxRef = std::max(maxRef, std::abs(a.getDouble(i)));
        maxDiff = std::max(maxDiff, std::abs(a.getDouble(i) - b.getDouble(i)));
      }
      EXPECT_LE(maxDiff, tolerance * std::max(1.0, maxRef))
          << "output " << o << " of " << describe(a.dtype(), a.shape());
    }
  }
}

constexpr double F32Tol = 1e-5;
constexpr double F64Tol = 1e-12;
const DType F32 = DType::F32;
const DType F64 = DType::F64;

TEST(DecomposeTest, Linear2dWithBiasAndWithout) {
  std::string text = R"(graph @t opset 1.0
dim batch in 1..64
entry @f(%0 : f32[batch, 8] = input "x", %1 : f32[16, 8] = input "w", %2 : f32[16] = input "b", %3 : f32[4, 16] = input "w2") {
  %4 = aten.linear(%0, %1, %2) : f32[batch, 16]
  %5 = aten.linear(%4, %3, none) : f32[batch, 4]
  return %5 as output "y"
}
)";
  auto inputs = [](int64_t batch) {
    return std::vector<Input>{{F32, {batch, 8}}, {F32, {16, 8}}, {F32, {16}}, {F32, {4, 16}}};
  };
  expectEquivalent(text, {inputs(1), inputs(7)}, F32Tol, {OpKind::Linear});
}

TEST(DecomposeTest, LinearHigherRankAndVector) {
  // Two symbolic leading dims flatten into one product; a 1-d input goes through [1, in].
  std::string text = R"(graph @t opset 1.0
dim batch in 1..64
dim seq in 1..16
entry @f(%0 : f32[batch, seq, 8] = input "x", %1 : f32[5, 8] = input "w", %2 : f32[5] = input "b", %3 : f32[8] = input "v") {
  %4 = aten.linear(%0, %1, %2) : f32[batch, seq, 5]
  %5 = aten.linear(%3, %1, none) : f32[5]
  return %4 as output "y", %5 as output "z"
}
)";
  auto inputs = [](int64_t batch, int64_t seq) {
    return std::vector<Input>{{F32, {batch, seq, 8}}, {F32, {5, 8}}, {F32, {5}}, {F32, {8}}};
  };
  expectEquivalent(text, {inputs(1, 3), inputs(7, 1), inputs(2, 16)}, F32Tol, {OpKind::Linear});
}

TEST(DecomposeTest, Activations) {
  std::string text = std::string(R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 3, 4] = input "x", %1 : f32[3] = input "slope", %2 : f32[] = input "one_slope", %3 : f64[batch, 3] = input "z") {
  %4 = aten.mul.Scalar(%0) {other = 8} : f32[batch, 3, 4]
  %5 = aten.hardtanh(%4) {min_val = 0, max_val = 6} : f32[batch, 3, 4]
  %6 = aten.hardswish(%4) : f32[batch, 3, 4]
  %7 = aten.hardsigmoid(%4) : f32[batch, 3, 4]
  %8 = aten.leaky_relu(%4) {negative_slope = 0.2} : f32[batch, 3, 4]
  %9 = aten.elu(%4) {alpha = 0.5, scale = 2, input_scale = 0.5} : f32[batch, 3, 4]
  %10 = aten.mish(%4) : f32[batch, 3, 4]
  %11 = aten.softplus(%4) {beta = 2, threshold = 3} : f32[batch, 3, 4]
  %12 = aten.prelu(%4, %1) : f32[batch, 3, 4]
  %13 = aten.prelu(%4, %2) : f32[batch, 3, 4]
  %14 = aten.mul.Scalar(%3) {other = 16} : f64[batch, 3]
  %15 = aten.softplus(%14) : f64[batch, 3]
  %16 = aten.mish(%14) : f64[batch, 3]
  %17 = aten.elu(%14) : f64[batch, 3]
  return %5 as output "a", %6 as output "b", %7 as output "c", %8 as output "d", %9 as output "e", %10 as output "f", %11 as output "g", %12 as output "h", %13 as output "i", %15 as output "j", %16 as output "k", %17 as output "l"
}
)");
  auto inputs = [](int64_t batch) {
    return std::vector<Input>{{F32, {batch, 3, 4}}, {F32, {3}}, {F32, {}}, {F64, {batch, 3}}};
  };
  // f64 results are within rounding of the direct formulas, except elu's exp(x) - 1 against
  // expm1 near 0.
  expectEquivalent(text, {inputs(1), inputs(9)}, F32Tol,
                   {OpKind::Hardtanh, OpKind::Hardswish, OpKind::Hardsigmoid, OpKind::LeakyRelu,
                    OpKind::Elu, OpKind::Mish, OpKind::Softplus, OpKind::Prelu});
}

TEST(DecomposeTest, Statistics) {
  // var over the symbolic batch divides by max(batch - 1, 0): batch 1 is left out (0/0).
  std::string text = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 6] = input "x", %1 : i64[batch, 3] = input "ids") {
  %2 = aten.logsumexp(%0) {dim = [1]} : f32[batch]
  %3 = aten.logsumexp(%1) {dim = [0, 1], keepdim = true} : f32[1, 1]
  %4 = aten.var.correction(%0) {dim = [0]} : f32[6]
  %5 = aten.std.correction(%0) {dim = [1], correction = 0.5, keepdim = true} : f32[batch, 1]
  %6 = aten.var.correction(%0) : f32[]
  %7 = aten.linalg_vector_norm(%0) {dim = [1]} : f32[batch]
  %8 = aten.linalg_vector_norm(%0) {ord = 1} : f32[]
  %9 = aten.linalg_vector_norm(%0) {ord = 2.5, dim = [0], keepdim = true} : f32[1, 6]
  return %2 as output "a", %3 as output "b", %4 as output "c", %5 as output "d", %6 as output "e", %7 as output "f", %8 as output "g", %9 as output "h"
}
)";
  auto inputs = [](int64_t batch) {
    return std::vector<Input>{{F32, {batch, 6}}, {DType::I64, {batch, 3}}};
  };
  expectEquivalent(text, {inputs(2), inputs(9)}, F32Tol,
                   {OpKind::Logsumexp, OpKind::Var, OpKind::Std, OpKind::VectorNorm});
}

TEST(DecomposeTest, RmsNorm) {
  std::string text = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 3, 8] = input "x", %1 : f32[8] = input "w") {
  %2 = aten.rms_norm(%0, %1) {normalized_shape = [8]} : f32[batch, 3, 8]
  %3 = aten.rms_norm(%0, none) {normalized_shape = [3, 8], eps = 0.001} : f32[batch, 3, 8]
  return %2 as output "a", %3 as output "b"
}
)";
  auto inputs = [](int64_t batch) { return std::vector<Input>{{F32, {batch, 3, 8}}, {F32, {8}}}; };
  expectEquivalent(text, {inputs(1), inputs(5)}, F32Tol, {OpKind::RmsNorm});
}

TEST(DecomposeTest, BatchNorm) {
  std::string text = R"(graph @t opset 1.0
dim batch in 1..16
dim h in 1..8
entry @f(%0 : f32[batch, 3, h, 5] = input "x", %1 : f32[3] = input "w", %2 : f32[3] = input "b", %3 : f32[3] = input "mean", %4 : f32[3] = input "var", %5 : f32[batch, 3] = input "z") {
  %6 = aten.batch_norm(%0, %1, %2, %3, %4) {training = false, momentum = 0.1, eps = 1e-05, cudnn_enabled = true} : f32[batch, 3, h, 5]
  %7 = aten.batch_norm(%5, none, none, %3, %4) {training = false, momentum = 0.1, eps = 0.001, cudnn_enabled = true} : f32[batch, 3]
  return %6 as output "y", %7 as output "y2"
}
)";
  auto inputs = [](int64_t batch, int64_t h) {
    return std::vector<Input>{{F32, {batch, 3, h, 5}}, {F32, {3}},       {F32, {3}}, {F32, {3}},
                              {F32, {3}, true},        {F32, {batch, 3}}};
  };
  expectEquivalent(text, {inputs(1, 4), inputs(7, 2)}, F32Tol, {OpKind::BatchNorm});
}

TEST(DecomposeTest, GeluSiluAndSoftmax) {
  std::string text = R"(graph @t opset 1.0
dim batch in 1..64
entry @f(%0 : f32[batch, 10] = input "x") {
  %1 = aten.gelu(%0) : f32[batch, 10]
  %2 = aten.gelu(%0) {approximate = "tanh"} : f32[batch, 10]
  %3 = aten.silu(%0) : f32[batch, 10]
  %4 = aten.softmax.int(%0) {dim = -1} : f32[batch, 10]
  %5 = aten.log_softmax.int(%0) {dim = 0} : f32[batch, 10]
  %6 = aten.softmax.int(%0) {dim = 1, dtype = f64} : f64[batch, 10]
  return %1 as output "gelu", %2 as output "gelu_tanh", %3 as output "silu", %4 as output "softmax", %5 as output "log_softmax", %6 as output "softmax64"
}
)";
  auto inputs = [](int64_t batch) { return std::vector<Input>{{F32, {batch, 10}}}; };
  expectEquivalent(text, {inputs(1), inputs(7)}, F32Tol,
                   {OpKind::Gelu, OpKind::Silu, OpKind::Softmax, OpKind::LogSoftmax});
}

TEST(DecomposeTest, LayerNorm) {
  std::string text = R"(graph @t opset 1.0
dim batch in 1..16
dim seq in 1..16
entry @f(%0 : f32[batch, seq, 4, 6] = input "x", %1 : f32[4, 6] = input "w", %2 : f32[4, 6] = input "b") {
  %3 = aten.layer_norm(%0, %1, %2) {normalized_shape = [4, 6]} : f32[batch, seq, 4, 6]
  %4 = aten.layer_norm(%0, none, none) {normalized_shape = [6], eps = 1e-06} : f32[batch, seq, 4, 6]
  return %3 as output "y", %4 as output "y2"
}
)";
  auto inputs = [](int64_t batch, int64_t seq) {
    return std::vector<Input>{{F32, {batch, seq, 4, 6}}, {F32, {4, 6}}, {F32, {4, 6}}};
  };
  expectEquivalent(text, {inputs(1, 5), inputs(7, 2)}, F32Tol, {OpKind::LayerNorm});
}

TEST(DecomposeTest, GroupNorm) {
  std::string text = R"(graph @t opset 1.0
dim batch in 1..16
dim h in 1..16
entry @f(%0 : f32[batch, 6, h, 4] = input "x", %1 : f32[6] = input "w", %2 : f32[6] = input "b") {
  %3 = aten.group_norm(%0, %1, %2) {num_groups = 3} : f32[batch, 6, h, 4]
  %4 = aten.group_norm(%0, none, none) {num_groups = 2, eps = 0.001} : f32[batch, 6, h, 4]
  return %3 as output "y", %4 as output "y2"
}
)";
  auto inputs = [](int64_t batch, int64_t h) {
    return std::vector<Input>{{F32, {batch, 6, h, 4}}, {F32, {6}}, {F32, {6}}};
  };
  expectEquivalent(text, {inputs(1, 3), inputs(7, 1)}, F32Tol, {OpKind::GroupNorm});
}

// conv_transpose as zero insertion, a pad (negative where padding exceeds the kernel's reach) and
// a convolution with the flipped kernel, channels swapped per group.
TEST(DecomposeTest, ConvTranspose) {
  std::string text = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 4, 3, 5] = input "x", %1 : f32[4, 3, 3, 2] = input "w", %2 : f32[6] = input "b", %3 : f32[batch, 3, 7] = input "s", %4 : f32[3, 2, 4] = input "v") {
  %5 = aten.convolution(%0, %1, %2) {stride = [2, 3], padding = [1, 0], dilation = [1, 2], transposed = true, output_padding = [1, 2], groups = 2} : f32[batch, 6, 6, 17]
  %6 = aten.convolution(%3, %4, none) {stride = [3], padding = [7], dilation = [2], transposed = true, output_padding = [2], groups = 1} : f32[batch, 2, 13]
  return %5 as output "a", %6 as output "b"
}
)";
  auto inputs = [](int64_t batch) {
    return std::vector<Input>{{F32, {batch, 4, 3, 5}},
                              {F32, {4, 3, 3, 2}},
                              {F32, {6}},
                              {F32, {batch, 3, 7}},
                              {F32, {3, 2, 4}}};
  };
  expectEquivalent(text, {inputs(1), inputs(3)}, F32Tol, {});
}

TEST(DecomposeTest, EveryRewriteInF64) {
  // In f64 the only differences left are rounding of the decomposed steps: a much tighter check
  // that the formulas themselves are exact.
  std::string text = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f64[batch, 4, 3] = input "x", %1 : f64[6, 3] = input "w", %2 : f64[6] = input "b", %3 : f64[4] = input "mean", %4 : f64[4] = input "var") {
  %5 = aten.linear(%0, %1, %2) : f64[batch, 4, 6]
  %6 = aten.gelu(%5) : f64[batch, 4, 6]
  %7 = aten.gelu(%5) {approximate = "tanh"} : f64[batch, 4, 6]
  %8 = aten.silu(%6) : f64[batch, 4, 6]
  %9 = aten.softmax.int(%7) {dim = 2} : f64[batch, 4, 6]
  %10 = aten.log_softmax.int(%8) {dim = 1} : f64[batch, 4, 6]
  %11 = aten.batch_norm(%10, %3, %3, %3, %4) {training = false, momentum = 0.1, eps = 1e-05, cudnn_enabled = true} : f64[batch, 4, 6]
  %12 = aten.layer_norm(%11, none, none) {normalized_shape = [6]} : f64[batch, 4, 6]
  %13 = aten.group_norm(%9, %3, %3) {num_groups = 2} : f64[batch, 4, 6]
  return %12 as output "a", %13 as output "b"
}
)";
  auto inputs = [](int64_t batch) {
    return std::vector<Input>{
        {F64, {batch, 4, 3}}, {F64, {6, 3}}, {F64, {6}}, {F64, {4}}, {F64, {4}, true}};
  };
  expectEquivalent(text, {inputs(1), inputs(7)}, F64Tol,
                   {OpKind::Linear, OpKind::Gelu, OpKind::Silu, OpKind::Softmax, OpKind::LogSoftmax,
                    OpKind::BatchNorm, OpKind::LayerNorm, OpKind::GroupNorm});
}

TEST(DecomposeTest, KeepListLeavesChosenOpsWhole) {
  std::string text = R"(graph @t opset 1.0
entry @f(%0 : f32[3, 5] = input "x") {
  %1 = aten.gelu(%0) : f32[3, 5]
  %2 = aten.softmax.int(%1) {dim = 1} : f32[3, 5]
  %3 = aten.silu(%2) : f32[3, 5]
  return %3 as output "y"
}
)";
  DecomposeOptions options;
  options.keep = {OpKind::Gelu, OpKind::Softmax};
  expectEquivalent(text, {{{F32, {3, 5}}}}, F32Tol, {OpKind::Silu}, options);

  std::unique_ptr<Graph> g = parse(text);
  ASSERT_TRUE(g);
  ASSERT_TRUE(ok(runDecompose(*g, options)));
  EXPECT_TRUE(contains(*g, OpKind::Gelu));
  EXPECT_TRUE(contains(*g, OpKind::Softmax));
  EXPECT_FALSE(contains(*g, OpKind::Silu));
}

} // namespace
} // namespace aotc
