// dtype names, sizes and PyTorch's promotion rules (torch.promote_types, torch.result_type).
#include "aotc/ir/DType.h"

#include <gtest/gtest.h>

using namespace aotc;

namespace {

TEST(DType, NamesRoundTrip) {
  for (DType t : AllDTypes)
    EXPECT_EQ(parseDType(toString(t)), t);
  EXPECT_EQ(parseDType("float32"), std::nullopt);
  EXPECT_EQ(byteSize(DType::BF16), 2u);
  EXPECT_EQ(byteSize(DType::Bool), 1u);
  EXPECT_EQ(byteSize(DType::I64), 8u);
}

TEST(DType, PromoteTypesMatchesTorch) {
  // Pairs from torch.promote_types.
  struct Case {
    DType a, b, expected;
  } cases[] = {
      {DType::U8, DType::I8, DType::I16},     {DType::U8, DType::I16, DType::I16},
      {DType::U8, DType::I64, DType::I64},    {DType::Bool, DType::U8, DType::U8},
      {DType::Bool, DType::F16, DType::F16},  {DType::F16, DType::BF16, DType::F32},
      {DType::BF16, DType::F32, DType::F32},  {DType::I64, DType::F16, DType::F16},
      {DType::I32, DType::I64, DType::I64},   {DType::F32, DType::F64, DType::F64},
      {DType::I8, DType::I16, DType::I16},    {DType::Bool, DType::Bool, DType::Bool},
      {DType::I64, DType::BF16, DType::BF16}, {DType::U8, DType::U8, DType::U8},
  };
  for (const Case &c : cases) {
    EXPECT_EQ(promoteTypes(c.a, c.b), c.expected)
        << toString(c.a).str() << " + " << toString(c.b).str();
    EXPECT_EQ(promoteTypes(c.b, c.a), c.expected) << "promotion must be symmetric";
  }
}

TEST(DType, PromoteTypesIsAssociativeOverAllTriples) {
  for (DType a : AllDTypes)
    for (DType b : AllDTypes)
      for (DType c : AllDTypes)
        EXPECT_EQ(promoteTypes(promoteTypes(a, b), c), promoteTypes(a, promoteTypes(b, c)));
}

ResultTypeOperand tensor(DType t) { return {ResultTypeOperand::Kind::Tensor, t}; }
ResultTypeOperand zeroDim(DType t) { return {ResultTypeOperand::Kind::ZeroDimTensor, t}; }
ResultTypeOperand number(DType t) { return {ResultTypeOperand::Kind::Number, t}; }

TEST(DType, ResultTypeTiers) {
  // A Python float makes an integer tensor float, but with the default dtype, not f64.
  EXPECT_EQ(resultType({tensor(DType::I32), number(DType::F64)}), DType::F32);
  // ...and does not widen a half tensor.
  EXPECT_EQ(resultType({tensor(DType::F16), number(DType::F64)}), DType::F16);
  // A Python int keeps the tensor's integer type, even u8.
  EXPECT_EQ(resultType({tensor(DType::U8), number(DType::I64)}), DType::U8);
  EXPECT_EQ(resultType({tensor(DType::Bool), number(DType::I64)}), DType::I64);
  EXPECT_EQ(resultType({tensor(DType::Bool), number(DType::Bool)}), DType::Bool);
  // A zero-dim tensor of the same category does not change the type...
  EXPECT_EQ(resultType({tensor(DType::F32), zeroDim(DType::F64)}), DType::F32);
  EXPECT_EQ(resultType({tensor(DType::I32), zeroDim(DType::I64)}), DType::I32);
  // ...but one of a higher category does, with its own width.
  EXPECT_EQ(resultType({tensor(DType::I64), zeroDim(DType::F64)}), DType::F64);
  // Zero-dim tensors among themselves promote normally.
  EXPECT_EQ(resultType({zeroDim(DType::I32), zeroDim(DType::F16)}), DType::F16);
  EXPECT_EQ(resultType({zeroDim(DType::I32), number(DType::F64)}), DType::F32);
  EXPECT_EQ(resultType({tensor(DType::F16), tensor(DType::BF16)}), DType::F32);
}

} // namespace
