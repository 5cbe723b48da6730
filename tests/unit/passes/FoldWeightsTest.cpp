// Weight folding: each program runs in the reference interpreter before and after decompose,
// cleanup and foldWeights on fresh random inputs and weights, and the folded graph is checked for
// what folding promises (no scale/shift after a convolution, no computation on weights only,
// mutated buffers untouched, unused weights removed, deterministic output).
#include "../interp/InterpTestUtil.h"

#include "passes/FoldWeights.h"
#include "passes/Passes.h"

#include "aotc/ir/Printer.h"
#include "aotc/serialize/Archive.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

namespace aotc {
namespace {

using test::parse;
using test::run;
using test::State;

testing::AssertionResult ok(llvm::Error err) {
  if (err)
    return testing::AssertionFailure() << llvm::toString(std::move(err));
  return testing::AssertionSuccess();
}

std::vector<int64_t> staticShape(const Type &t) {
  std::vector<int64_t> dims;
  for (const SymExpr &d : t.shape())
    dims.push_back(*d.constant());
  return dims;
}

/// Standard normal values with exact zeros nudged away; `positive` (variances) gives |v| + 0.1.
HostTensor randomValues(DType dtype, llvm::ArrayRef<int64_t> shape, bool positive,
                        std::mt19937_64 &rng) {
  HostTensor t = randomTensor(dtype, shape, rng);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.getDouble(i);
    if (positive)
      v = std::abs(v) + 0.1;
    t.setDouble(i, v == 0 ? 0.5 : v);
  }
  return t;
}

/// A program of `text` with random weights for every state tensor (those named `*var*` positive),
/// and the same weights as interpreter state.
struct TestProgram {
  ExportedProgram program;
  State state;
};

TestProgram makeProgram(const std::string &text, std::mt19937_64 &rng) {
  TestProgram p;
  p.program.graph = parse(text);
  if (!p.program.graph)
    return p;
  for (const StateTensor &st : p.program.graph->state()) {
    auto data = std::make_shared<HostTensor>(randomValues(
        st.type.dtype(), staticShape(st.type), llvm::StringRef(st.name).contains("var"), rng));
    p.state[st.name] = *data;
    p.program.weights.emplace_back(st.name, data->dtype(), std::vector<int64_t>(data->shape()),
                                   data->bytes(), data);
  }
  return p;
}

/// The compile pipeline's graph passes up to folding: decompose, then the default cleanup.
llvm::Error prepare(Graph &g) {
  if (llvm::Error e = runDecompose(g))
    return e;
  if (llvm::Error e = runCanonicalize(g))
    return e;
  if (llvm::Error e = runCommonSubexpressionElimination(g))
    return e;
  return runDeadCodeElimination(g);
}

State stateOf(const ExportedProgram &program) {
  State state;
  for (const Weight &w : program.weights)
    state[w.name()] = llvm::cantFail(HostTensor::view(w.dtype(), w.shape(), w.bytes(), nullptr));
  return state;
}

/// Every weight of the program is a state tensor of its graph and the other way round, with
/// equal types.
void expectConsistent(const ExportedProgram &program) {
  std::set<std::string> weights, state;
  for (const Weight &w : program.weights) {
    weights.insert(w.name());
    const StateTensor *st = program.graph->findState(w.name());
    ASSERT_NE(st, nullptr) << w.name();
    EXPECT_EQ(st->type.dtype(), w.dtype()) << w.name();
    EXPECT_EQ(staticShape(st->type), std::vector<int64_t>(w.shape())) << w.name();
  }
  for (const StateTensor &st : program.graph->state())
    state.insert(st.name);
  EXPECT_EQ(weights, state);
}

/// Fails for every node that is not a view and whose operands all derive from state tensors that
/// no entry mutates: what folding should have evaluated.
void expectNoWeightOnlyComputation(const Graph &g) {
  std::set<std::string> mutated;
  for (const auto &entry : g.entries())
    for (const OutputSpec &out : entry->outputs())
      if (out.kind == OutputKind::BufferMutation)
        mutated.insert(out.name);
  for (const auto &entry : g.entries()) {
    llvm::DenseSet<const Value *> weightOnly;
    for (unsigned i = 0; i < entry->inputs().size(); ++i)
      if (entry->inputs()[i].kind != InputKind::User && !mutated.count(entry->inputs()[i].name))
        weightOnly.insert(entry->body().argument(i));
    for (const auto &node : entry->body().nodes()) {
      bool allWeights = !node->operands().empty();
      for (const Value *v : node->operands())
        allWeights &= !v || weightOnly.contains(v);
      if (!allWeights)
        continue;
      for (unsigned r = 0; r < node->numResults(); ++r)
        weightOnly.insert(node->result(r));
      EXPECT_EQ(node->schema().trait, OpTrait::View)
          << node->name().str() << " computes on weights only in @" << entry->name();
    }
  }
}

/// The name of the state tensor bound to `v`, or "" when `v` is not an entry argument.
std::string stateName(const Entry &entry, const Value *v) {
  if (v->definingNode() || v->argumentOf() != &entry.body())
    return "";
  return entry.inputs()[v->index()].name;
}

/// Every convolution reads a folded constant weight, and its result goes to no mul/add/sub.
void expectConvolutionsFolded(const Graph &g) {
  int convs = 0;
  for (const auto &entry : g.entries()) {
    for (const auto &node : entry->body().nodes()) {
      if (node->kind() == OpKind::Convolution) {
        ++convs;
        EXPECT_TRUE(
            llvm::StringRef(stateName(*entry, node->operand("weight"))).ends_with(".folded"))
            << "the convolution weight is " << stateName(*entry, node->operand("weight"));
        if (const Value *bias = node->operand("bias")) {
          EXPECT_TRUE(llvm::StringRef(stateName(*entry, bias)).ends_with(".folded"));
        }
      }
      for (const Value *v : node->operands()) {
        const Node *def = v ? v->definingNode() : nullptr;
        if (def && def->kind() == OpKind::Convolution) {
          EXPECT_TRUE(node->kind() != OpKind::MulTensor && node->kind() != OpKind::AddTensor &&
                      node->kind() != OpKind::SubTensor)
              << node->name().str() << " still follows the convolution";
        }
      }
    }
  }
  EXPECT_GT(convs, 0);
}

/// One run: the user inputs' shapes.
using Inputs = std::vector<std::vector<int64_t>>;

/// Folds `text` (entry @f, or `entry`) and compares the folded program with the original one on
/// fresh random inputs for each element of `runs`: max|a - b| <= 1e-5 * max(1, max|ref|) per
/// output, no NaN. Returns the folded program for further checks.
ExportedProgram expectFoldedEquivalent(const std::string &text, const std::vector<Inputs> &runs,
                                       uint64_t seed, const std::string &entry = "f") {
  std::mt19937_64 rng(seed);
  TestProgram p = makeProgram(text, rng);
  std::unique_ptr<Graph> ref = parse(text);
  if (!p.program.graph || !ref)
    return std::move(p.program);
  EXPECT_TRUE(ok(prepare(*p.program.graph)));
  EXPECT_TRUE(ok(foldWeights(p.program)));
  EXPECT_TRUE(ok(verifyGraph(*p.program.graph))) << printGraph(*p.program.graph);
  expectConsistent(p.program);
  State folded = stateOf(p.program);

  for (const Inputs &shapes : runs) {
    std::vector<HostTensor> inputs;
    for (const auto &shape : shapes)
      inputs.push_back(randomValues(DType::F32, shape, false, rng));
    auto want = run(*ref, inputs, p.state, entry);
    auto got = run(*p.program.graph, inputs, folded, entry);
    if (!want || !got) {
      ADD_FAILURE() << (want ? llvm::toString(got.takeError()) : llvm::toString(want.takeError()));
      continue;
    }
    EXPECT_EQ(want->size(), got->size());
    for (size_t o = 0; o < want->size() && o < got->size(); ++o) {
      const HostTensor &a = (*want)[o], &b = (*got)[o];
      EXPECT_EQ(describe(a.dtype(), a.shape()), describe(b.dtype(), b.shape()));
      double maxRef = 0, maxDiff = 0;
      for (int64_t i = 0; i < a.numel() && i < b.numel(); ++i) {
        EXPECT_FALSE(std::isnan(a.getDouble(i)) || std::isnan(b.getDouble(i)))
            << "output " << o << " element " << i << " is NaN";
        maxRef = std::max(maxRef, std::abs(a.getDouble(i)));
        maxDiff = std::max(maxDiff, std::abs(a.getDouble(i) - b.getDouble(i)));
      }
      EXPECT_LE(maxDiff, 1e-5 * std::max(1.0, maxRef)) << "output " << o;
    }
  }
  return std::move(p.program);
}

bool hasWeight(const ExportedProgram &p, llvm::StringRef name) {
  return p.findWeight(name) != nullptr;
}

bool contains(const Graph &g, OpKind kind) {
  bool found = false;
  for (const auto &entry : g.entries())
    entry->body().walk([&](const Node &n) { found |= n.kind() == kind; });
  return found;
}

/// conv2d -> batch_norm -> relu with groups `groups` and an optional conv bias.
std::string convBnRelu(int groups, bool convBias) {
  int cin = 4, cout = 6;
  std::string bias = convBias ? "%2" : "none";
  return fmt::format(R"(graph @t opset 1.0
dim batch in 1..8
dim h in 3..16
parameter "layer1.conv.weight" : f32[{cout}, {cinPerGroup}, 3, 3]
parameter "layer1.conv.bias" : f32[{cout}]
parameter "layer1.bn.weight" : f32[{cout}]
parameter "layer1.bn.bias" : f32[{cout}]
buffer "layer1.bn.running_mean" : f32[{cout}]
buffer "layer1.bn.running_var" : f32[{cout}]
entry @f(%0 : f32[batch, {cin}, h, 7] = input "x", %1 : f32[{cout}, {cinPerGroup}, 3, 3] = parameter "layer1.conv.weight", %2 : f32[{cout}] = parameter "layer1.conv.bias", %3 : f32[{cout}] = parameter "layer1.bn.weight", %4 : f32[{cout}] = parameter "layer1.bn.bias", %5 : f32[{cout}] = buffer "layer1.bn.running_mean", %6 : f32[{cout}] = buffer "layer1.bn.running_var") {{
  %7 = aten.convolution(%0, %1, {bias}) {{stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = {groups}}} : f32[batch, {cout}, h, 7]
  %8 = aten.batch_norm(%7, %3, %4, %5, %6) {{training = false, momentum = 0.1, eps = 1e-05, cudnn_enabled = true}} : f32[batch, {cout}, h, 7]
  %9 = aten.relu(%8) : f32[batch, {cout}, h, 7]
  return %9 as output "y"
}}
)",
                     fmt::arg("cin", cin), fmt::arg("cout", cout),
                     fmt::arg("cinPerGroup", cin / groups), fmt::arg("bias", bias),
                     fmt::arg("groups", groups));
}

void expectConvBnFolded(int groups, bool convBias, uint64_t seed) {
  ExportedProgram p = expectFoldedEquivalent(
      convBnRelu(groups, convBias), {{{1, 4, 3, 7}}, {{5, 4, 9, 7}}, {{8, 4, 16, 7}}}, seed);
  ASSERT_TRUE(p.graph);
  expectConvolutionsFolded(*p.graph);
  expectNoWeightOnlyComputation(*p.graph);
  // Everything the batch norm read went into the two folded weights. A conv bias that was never
  // read stays: folding only removes the weights it leaves unused.
  for (llvm::StringRef gone : {"layer1.conv.weight", "layer1.bn.weight", "layer1.bn.bias",
                               "layer1.bn.running_mean", "layer1.bn.running_var"})
    EXPECT_FALSE(hasWeight(p, gone) || p.graph->findState(gone)) << gone.str();
  EXPECT_EQ(hasWeight(p, "layer1.conv.bias"), !convBias);
  EXPECT_TRUE(hasWeight(p, "layer1.conv.weight.folded"));
  // Without a conv bias, the new one is still named after the conv.
  EXPECT_TRUE(hasWeight(p, "layer1.conv.bias.folded"));
  EXPECT_EQ(p.weights.size(), convBias ? 2u : 3u);
  EXPECT_EQ(p.graph->entries()[0]->inputs().size(), convBias ? 3u : 4u)
      << "unused inputs were not removed";
}

TEST(FoldWeightsTest, ConvBatchNormReluWithBias) { expectConvBnFolded(1, true, 1); }
TEST(FoldWeightsTest, ConvBatchNormReluWithoutBias) { expectConvBnFolded(1, false, 2); }
TEST(FoldWeightsTest, GroupedConvBatchNormReluWithBias) { expectConvBnFolded(2, true, 3); }
TEST(FoldWeightsTest, GroupedConvBatchNormReluWithoutBias) { expectConvBnFolded(2, false, 4); }

TEST(FoldWeightsTest, LinearWithCastWeight) {
  // An f16 weight cast to f32 for the GEMM: the cast runs once at compile time, and the GEMM
  // reads the f32 copy through a transposing view.
  std::string text = R"(graph @t opset 1.0
dim batch in 1..64
parameter "fc.weight" : f16[5, 8]
parameter "fc.bias" : f32[5]
entry @f(%0 : f32[batch, 8] = input "x", %1 : f16[5, 8] = parameter "fc.weight", %2 : f32[5] = parameter "fc.bias") {
  %3 = aten._to_copy(%1) {dtype = f32} : f32[5, 8]
  %4 = aten.linear(%0, %3, %2) : f32[batch, 5]
  return %4 as output "y"
}
)";
  ExportedProgram p = expectFoldedEquivalent(text, {{{1, 8}}, {{7, 8}}, {{64, 8}}}, 5);
  ASSERT_TRUE(p.graph);
  expectNoWeightOnlyComputation(*p.graph);
  EXPECT_FALSE(contains(*p.graph, OpKind::ToCopy));
  EXPECT_TRUE(contains(*p.graph, OpKind::Permute)) << "the transposing view was folded too";
  EXPECT_FALSE(hasWeight(p, "fc.weight"));
  const Weight *w = p.findWeight("fc.weight.folded");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype(), DType::F32);
  EXPECT_EQ(std::vector<int64_t>(w->shape()), (std::vector<int64_t>{5, 8}));
  EXPECT_TRUE(hasWeight(p, "fc.bias"));
}

TEST(FoldWeightsTest, WeightOnlyChainSharedByEntries) {
  // A chain of arithmetic on weights, read by two entries: it is evaluated once into one constant
  // that both entries take; the weight still read directly (`a`) stays.
  std::string text = R"(graph @t opset 1.0
dim batch in 1..16
parameter "a" : f32[4, 3]
parameter "b" : f32[3]
constant "c" : f32[4, 1]
entry @f(%0 : f32[batch, 4, 3] = input "x", %1 : f32[4, 3] = parameter "a", %2 : f32[3] = parameter "b", %3 : f32[4, 1] = constant "c") {
  %4 = aten.exp(%2) : f32[3]
  %5 = aten.mul.Tensor(%1, %4) : f32[4, 3]
  %6 = aten.add.Tensor(%5, %3) : f32[4, 3]
  %7 = aten.tanh(%6) : f32[4, 3]
  %8 = aten.mul.Tensor(%0, %7) : f32[batch, 4, 3]
  %9 = aten.add.Tensor(%8, %1) : f32[batch, 4, 3]
  return %9 as output "y"
}
entry @g(%0 : f32[batch, 4, 3] = input "x", %1 : f32[4, 3] = parameter "a", %2 : f32[3] = parameter "b", %3 : f32[4, 1] = constant "c") {
  %4 = aten.exp(%2) : f32[3]
  %5 = aten.mul.Tensor(%1, %4) : f32[4, 3]
  %6 = aten.add.Tensor(%5, %3) : f32[4, 3]
  %7 = aten.tanh(%6) : f32[4, 3]
  %8 = aten.sub.Tensor(%0, %7) : f32[batch, 4, 3]
  return %8 as output "z"
}
)";
  ExportedProgram p = expectFoldedEquivalent(text, {{{1, 4, 3}}, {{16, 4, 3}}}, 6, "f");
  ASSERT_TRUE(p.graph);
  expectFoldedEquivalent(text, {{{3, 4, 3}}}, 6, "g");
  expectNoWeightOnlyComputation(*p.graph);
  EXPECT_TRUE(hasWeight(p, "a"));
  EXPECT_FALSE(hasWeight(p, "b") || hasWeight(p, "c"));
  EXPECT_TRUE(hasWeight(p, "a.folded"));
  EXPECT_FALSE(hasWeight(p, "a.folded.1")) << "the entries did not share the constant";
  for (const auto &entry : p.graph->entries())
    EXPECT_TRUE(llvm::any_of(entry->inputs(), [](const InputSpec &in) {
      return in.kind == InputKind::Constant && in.name == "a.folded";
    })) << entry->name();
}

TEST(FoldWeightsTest, MutatedBufferIsNeverFolded) {
  // The running mean is written back by the entry, so it changes between calls: the shift it
  // feeds must stay a runtime subtraction. The scale (variance and weight) may still fold.
  std::string text = R"(graph @t opset 1.0
dim batch in 1..8
parameter "conv.weight" : f32[3, 2, 3, 3]
parameter "bn.weight" : f32[3]
parameter "bn.bias" : f32[3]
buffer "bn.running_mean" : f32[3]
buffer "bn.running_var" : f32[3]
entry @f(%0 : f32[batch, 2, 6, 6] = input "x", %1 : f32[3, 2, 3, 3] = parameter "conv.weight", %2 : f32[3] = parameter "bn.weight", %3 : f32[3] = parameter "bn.bias", %4 : f32[3] = buffer "bn.running_mean", %5 : f32[3] = buffer "bn.running_var") {
  %6 = aten.convolution(%0, %1, none) {stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 3, 4, 4]
  %7 = aten.batch_norm(%6, %2, %3, %4, %5) {training = false, momentum = 0.1, eps = 1e-05, cudnn_enabled = true} : f32[batch, 3, 4, 4]
  %8 = aten.mul.Scalar(%4) {other = 0.5} : f32[3]
  return %7 as output "y", %8 as mutates "bn.running_mean"
}
)";
  ExportedProgram p = expectFoldedEquivalent(text, {{{1, 2, 6, 6}}, {{8, 2, 6, 6}}}, 7);
  ASSERT_TRUE(p.graph);
  expectNoWeightOnlyComputation(*p.graph);
  const StateTensor *mean = p.graph->findState("bn.running_mean");
  ASSERT_NE(mean, nullptr);
  EXPECT_EQ(mean->kind, InputKind::Buffer);
  EXPECT_TRUE(hasWeight(p, "bn.running_mean"));
  for (const Weight &w : p.weights)
    EXPECT_FALSE(llvm::StringRef(w.name()).starts_with("bn.running_mean."))
        << w.name() << " derives from a mutated buffer";
  // The subtraction of the mean stays right after the convolution.
  bool subAfterConv = false;
  p.graph->entries()[0]->body().walk([&](const Node &n) {
    subAfterConv |= n.kind() == OpKind::SubTensor && n.operand(0)->definingNode() &&
                    n.operand(0)->definingNode()->kind() == OpKind::Convolution;
  });
  EXPECT_TRUE(subAfterConv);
}

TEST(FoldWeightsTest, Deterministic) {
  std::string text = convBnRelu(2, false);
  auto fold = [&](std::string &printed, std::vector<std::vector<uint8_t>> &bytes) {
    std::mt19937_64 rng(11);
    TestProgram p = makeProgram(text, rng);
    ASSERT_TRUE(p.program.graph);
    ASSERT_TRUE(ok(prepare(*p.program.graph)));
    ASSERT_TRUE(ok(foldWeights(p.program)));
    printed = printGraph(*p.program.graph);
    for (const Weight &w : p.program.weights) {
      printed += w.name() + "\n";
      bytes.emplace_back(w.bytes().begin(), w.bytes().end());
    }
  };
  std::string first, second;
  std::vector<std::vector<uint8_t>> firstBytes, secondBytes;
  fold(first, firstBytes);
  fold(second, secondBytes);
  EXPECT_EQ(first, second);
  EXPECT_EQ(firstBytes, secondBytes);
}

TEST(FoldWeightsTest, NothingToFold) {
  // Weights only read through views and GEMMs: no constant, no change to the weights.
  std::string text = R"(graph @t opset 1.0
dim batch in 1..8
parameter "w" : f32[4, 3]
entry @f(%0 : f32[batch, 3] = input "x", %1 : f32[4, 3] = parameter "w") {
  %2 = aten.linear(%0, %1, none) : f32[batch, 4]
  return %2 as output "y"
}
)";
  ExportedProgram p = expectFoldedEquivalent(text, {{{2, 3}}}, 8);
  ASSERT_TRUE(p.graph);
  ASSERT_EQ(p.weights.size(), 1u);
  EXPECT_EQ(p.weights[0].name(), "w");
  EXPECT_TRUE(contains(*p.graph, OpKind::Permute));
}

} // namespace
} // namespace aotc
