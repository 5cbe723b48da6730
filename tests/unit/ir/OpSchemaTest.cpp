// The op table generated from Ops.def: every schema parses, names resolve, defaults are typed.
#include "aotc/ir/OpSchema.h"

#include <gtest/gtest.h>

#include <set>

using namespace aotc;

namespace {

TEST(OpSchema, EveryOpHasAUniqueNameAndAParsedSchema) {
  std::set<std::string> names;
  for (OpKind k : allOps()) {
    const OpSchema &s = schemaOf(k);
    EXPECT_EQ(s.kind, k);
    EXPECT_TRUE(names.insert(s.name).second) << s.name << " appears twice";
    EXPECT_EQ(lookupOp(s.name), k);
    EXPECT_FALSE(s.results.empty()) << s.name;
    EXPECT_TRUE(s.name.rfind("aten.", 0) == 0) << s.name;
  }
  EXPECT_GE(allOps().size(), 90u);
  EXPECT_EQ(lookupOp("aten.frobnicate"), std::nullopt);
}

TEST(OpSchema, ArgumentsAndDefaults) {
  const OpSchema &sum = schemaOf(OpKind::Sum);
  ASSERT_EQ(sum.args.size(), 4u);
  EXPECT_EQ(sum.args[0].type, ArgType::Tensor);
  EXPECT_EQ(sum.args[1].type, ArgType::IntList);
  EXPECT_TRUE(sum.args[1].optional);
  EXPECT_EQ(sum.args[2].defaultValue, Attribute::boolean(false));
  EXPECT_TRUE(sum.args[3].kwargOnly);
  EXPECT_FALSE(sum.args[3].defaultValue.has_value());

  const OpSchema &pool = schemaOf(OpKind::MaxPool2d);
  int padding = pool.argIndex("padding");
  ASSERT_GE(padding, 0);
  EXPECT_EQ(pool.args[padding].fixedLength, 2u);
  // `int[2] padding=0` broadcasts the scalar default.
  EXPECT_EQ(pool.args[padding].defaultValue, Attribute::intList({0, 0}));

  const OpSchema &ln = schemaOf(OpKind::LayerNorm);
  EXPECT_EQ(ln.args[ln.argIndex("eps")].defaultValue, Attribute::floating(1e-5));
  EXPECT_EQ(schemaOf(OpKind::Gelu).args[1].defaultValue, Attribute::string("none"));
}

TEST(OpSchema, OperandLayout) {
  EXPECT_EQ(schemaOf(OpKind::Linear).numFixedOperands(), 3u);
  EXPECT_FALSE(schemaOf(OpKind::Linear).hasTensorList());
  EXPECT_TRUE(schemaOf(OpKind::Cat).hasTensorList());
  EXPECT_EQ(schemaOf(OpKind::Cond).numFixedOperands(), 1u);
  EXPECT_EQ(schemaOf(OpKind::Split).results[0], ResultType::TensorList);
  EXPECT_EQ(schemaOf(OpKind::Relu).trait, OpTrait::Pointwise);
  EXPECT_EQ(schemaOf(OpKind::Convolution).trait, OpTrait::Contraction);
}

} // namespace
