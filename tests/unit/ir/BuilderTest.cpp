// Building graphs through the Builder: attribute checks, inferred result types (the meta
// functions) and the graph-editing helpers passes rely on.
#include "aotc/ir/Builder.h"
#include "aotc/ir/Printer.h"
#include "aotc/ir/Verifier.h"

#include <gtest/gtest.h>

using namespace aotc;

namespace {

SymExpr sym(const char *name) { return SymExpr::symbol(name); }

class BuilderTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(static_cast<bool>(G.shapeEnv().addSymbol({"batch", 1, 512, 1})));
    ASSERT_FALSE(static_cast<bool>(G.shapeEnv().addSymbol({"seq", 1, 1024, 1})));
  }

  Value *input(Type t, const char *name) { return E.addInput({InputKind::User, name}, t); }

  // The result type, or the error text.
  std::string build(OpKind kind, llvm::ArrayRef<Value *> operands,
                    llvm::ArrayRef<NamedAttribute> attrs = {}) {
    Builder b(G.shapeEnv(), E.body());
    auto node = b.create(kind, operands, attrs);
    if (!node)
      return llvm::toString(node.takeError());
    std::string types;
    for (Value *r : (*node)->results())
      types += (types.empty() ? "" : ", ") + r->type().str();
    return types;
  }

  Graph G;
  Entry &E = G.addEntry("f");
};

TEST_F(BuilderTest, InfersPointwiseTypesWithPromotionAndBroadcasting) {
  Value *x = input(Type::tensor(DType::F32, {sym("batch"), 1, 16}), "x");
  Value *i = input(Type::tensor(DType::I64, {8, 1}), "i");
  Value *h = input(Type::tensor(DType::F16, {}), "h");
  EXPECT_EQ(build(OpKind::AddTensor, {x, i}), "f32[batch, 8, 16]");
  EXPECT_EQ(build(OpKind::MulTensor, {i, h}), "f16[8, 1]");
  EXPECT_EQ(build(OpKind::DivTensor, {i, i}), "f32[8, 1]");
  EXPECT_EQ(build(OpKind::MulScalar, {i}, {{"other", Attribute::floating(0.5)}}), "f32[8, 1]");
  EXPECT_EQ(build(OpKind::MulScalar, {i}, {{"other", Attribute::integer(3)}}), "i64[8, 1]");
  EXPECT_EQ(build(OpKind::LtTensor, {x, i}), "bool[batch, 8, 16]");
  EXPECT_EQ(build(OpKind::Exp, {i}), "f32[8, 1]");
  EXPECT_EQ(build(OpKind::AddTensor, {x, input(Type::tensor(DType::F32, {3}), "bad")}),
            "aten.add.Tensor: shapes [batch, 1, 16] and [3] do not broadcast: dim -1 is 16 in one "
            "and 3 in another");
}

TEST_F(BuilderTest, ChecksAttributesAgainstTheSchema) {
  Value *x = input(Type::tensor(DType::F32, {4, 3}), "x");
  EXPECT_EQ(build(OpKind::Sum, {x}, {{"dim", Attribute::integer(1)}}), "f32[4]");
  EXPECT_EQ(build(OpKind::Sum, {x}, {{"dims", Attribute::integer(1)}}),
            "aten.sum.dim_IntList has no attribute 'dims'");
  EXPECT_EQ(build(OpKind::Sum, {x}, {{"keepdim", Attribute::integer(1)}}),
            "aten.sum.dim_IntList: attribute 'keepdim' must be a bool, got 1");
  EXPECT_EQ(build(OpKind::Relu, {x, x}), "aten.relu: expected 1 operands, got 2");
  EXPECT_EQ(build(OpKind::Linear, {x, nullptr, nullptr}),
            "aten.linear: operand 'weight' is required but none was given");
  // Nothing is left behind by a failed creation.
  EXPECT_EQ(E.body().nodes().size(), 1u);
}

TEST_F(BuilderTest, DropsAttributesEqualToTheDefault) {
  Value *x = input(Type::tensor(DType::F32, {4, 3}), "x");
  Builder b(G.shapeEnv(), E.body());
  Node *n = cantFail(
      b.create(OpKind::Sum, {x},
               {{"dim", Attribute::intList({0})}, {"keepdim", Attribute::boolean(false)}}));
  ASSERT_EQ(n->explicitAttrs().size(), 1u);
  EXPECT_EQ(n->explicitAttrs()[0].first, "dim");
  EXPECT_EQ(*n->attr("keepdim"), Attribute::boolean(false));
  EXPECT_EQ(n->attr("dtype"), nullptr);
  // A single int for an `int[2]` argument is broadcast, as in ATen.
  Value *img = input(Type::tensor(DType::F32, {1, 3, 8, 8}), "img");
  Node *pool =
      cantFail(b.create(OpKind::MaxPool2d, {img}, {{"kernel_size", Attribute::integer(2)}}));
  EXPECT_EQ(*pool->attr("kernel_size"), Attribute::intList({2, 2}));
  EXPECT_EQ(pool->result()->type().str(), "f32[1, 3, 4, 4]");
}

TEST_F(BuilderTest, ContractionsAndConvolutions) {
  Value *x = input(Type::tensor(DType::F32, {sym("batch"), sym("seq"), 64}), "x");
  Value *w = input(Type::tensor(DType::F32, {128, 64}), "w");
  Value *b = input(Type::tensor(DType::F32, {128}), "b");
  EXPECT_EQ(build(OpKind::Linear, {x, w, b}), "f32[batch, seq, 128]");
  EXPECT_EQ(build(OpKind::Matmul, {x, input(Type::tensor(DType::F32, {64}), "v")}),
            "f32[batch, seq]");
  Value *img = input(Type::tensor(DType::F32, {sym("batch"), 3, 224, 224}), "img");
  Value *k = input(Type::tensor(DType::F32, {64, 3, 7, 7}), "k");
  EXPECT_EQ(build(OpKind::Convolution, {img, k, nullptr},
                  {{"stride", Attribute::intList({2, 2})},
                   {"padding", Attribute::intList({3, 3})},
                   {"dilation", Attribute::intList({1, 1})},
                   {"transposed", Attribute::boolean(false)},
                   {"output_padding", Attribute::intList({0, 0})},
                   {"groups", Attribute::integer(1)}}),
            "f32[batch, 64, 112, 112]");
  Value *k2 = input(Type::tensor(DType::F32, {64, 4, 3, 3}), "k2");
  EXPECT_EQ(
      build(OpKind::Convolution, {img, k2, nullptr},
            {{"stride", Attribute::intList({1, 1})},
             {"padding", Attribute::intList({0, 0})},
             {"dilation", Attribute::intList({1, 1})},
             {"transposed", Attribute::boolean(false)},
             {"output_padding", Attribute::intList({0, 0})},
             {"groups", Attribute::integer(1)}}),
      "aten.convolution: input channels and weight channels * groups must match, got 3 and 4");
}

TEST_F(BuilderTest, AttentionAndViews) {
  Value *q = input(Type::tensor(DType::F32, {sym("batch"), 12, sym("seq"), 64}), "q");
  Value *mask = input(Type::tensor(DType::Bool, {sym("seq"), sym("seq")}), "mask");
  EXPECT_EQ(build(OpKind::Sdpa, {q, q, q, mask}), "f32[batch, 12, seq, 64]");
  EXPECT_EQ(build(OpKind::Sdpa, {q, q, q, mask}, {{"is_causal", Attribute::boolean(true)}}),
            "aten.scaled_dot_product_attention: is_causal and attn_mask cannot both be set");
  EXPECT_EQ(build(OpKind::View, {q}, {{"size", Attribute::intList({sym("batch"), -1, 64})}}),
            "f32[batch, 12*seq, 64]");
  EXPECT_EQ(build(OpKind::Slice, {q},
                  {{"dim", Attribute::integer(2)}, {"start", Attribute::integer(-1)}}),
            "f32[batch, 12, 1, 64]");
  EXPECT_EQ(build(OpKind::Split, {q},
                  {{"split_size", Attribute::integer(24)}, {"dim", Attribute::integer(3)}}),
            "f32[batch, 12, seq, 24], f32[batch, 12, seq, 24], f32[batch, 12, seq, 16]");
  EXPECT_EQ(build(OpKind::Split, {q},
                  {{"split_size", Attribute::integer(2)}, {"dim", Attribute::integer(0)}}),
            "aten.split.Tensor: the split dim 0 must be static, got batch");
  EXPECT_EQ(build(OpKind::Squeeze, {q}, {{"dim", Attribute::intList({0})}}),
            "aten.squeeze.dims: dim 0 of f32[batch, 12, seq, 64] may or may not be 1, so squeezing "
            "it is ambiguous");
  EXPECT_EQ(build(OpKind::Arange, {},
                  {{"start", Attribute::integer(0)}, {"end", Attribute::integer(sym("seq"))}}),
            "i64[seq]");
}

TEST_F(BuilderTest, ReplaceAllUsesAndErase) {
  Value *x = input(Type::tensor(DType::F32, {4}), "x");
  Builder b(G.shapeEnv(), E.body());
  Value *neg = cantFail(b.create1(OpKind::Neg, {x}));
  Value *relu = cantFail(b.create1(OpKind::Relu, {neg}));
  E.addOutput({OutputKind::User, "y"}, relu);
  E.body().replaceAllUsesWith(neg, x);
  EXPECT_EQ(relu->definingNode()->operand(0), x);
  E.body().erase(E.body().find(neg->definingNode()));
  EXPECT_FALSE(static_cast<bool>(verifyGraph(G)));
  EXPECT_EQ(printGraph(G), "graph @model opset 1.0\n\ndim batch in 1..512\ndim seq in 1..1024\n\n"
                           "entry @f(%0 : f32[4] = input \"x\") {\n"
                           "  %1 = aten.relu(%0) : f32[4]\n  return %1 as output \"y\"\n}\n");
}

} // namespace
