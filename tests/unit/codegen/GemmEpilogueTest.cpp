// Which GEMM epilogues the micro-kernel applies in registers (matchTileEpilogue): ResNet's
// bias, residual and relu in either operand order; anything it would compute differently (another
// order of the sums, a column stride other than 1, a signed zero, the output read back, a narrow
// type) stays with the generic epilogue.
#include "CodegenTestUtil.h"
#include "codegen/cpu/GemmEmitter.h"

#include <gtest/gtest.h>

using namespace aotc;
using namespace aotc::cpu;
using namespace aotc::cpu::test;
using kir::BinaryOp;

namespace {

class GemmEpilogueTest : public ::testing::Test {
protected:
  GemmEpilogueTest() {
    // 0 out, 1 bias, 2 residual, 3 an f16 bias.
    e.buffers = {makeBuffer(kir::Buffer::Kind::Output, 0, 64),
                 makeBuffer(kir::Buffer::Kind::Weight, 0, 4),
                 makeBuffer(kir::Buffer::Kind::Input, 0, 64),
                 makeBuffer(kir::Buffer::Kind::Weight, 1, 4, DType::F16)};
    g.out = 0;
  }
  kir::ExprId add(kir::ExprId x, kir::ExprId y) {
    return eb.binary(BinaryOp::Add, x, y, DType::F32);
  }
  kir::ExprId relu(kir::ExprId x, double zero = 0.0) {
    return eb.binary(BinaryOp::Max, x, eb.cf(zero), DType::F32);
  }
  kir::ExprId bias(uint32_t buffer = 1) {
    return eb.load(buffer, eb.loopVar(1), buffer == 3 ? DType::F16 : DType::F32);
  }
  // buffer[i0 * 32 + i1 * 8 + i2 * column]
  kir::ExprId residual(int64_t column = 1, uint32_t buffer = 2) {
    kir::ExprId at = eb.linear({{0, 32}, {1, 8}});
    kir::ExprId col = column == 1
                          ? eb.loopVar(2)
                          : eb.binary(BinaryOp::Mul, eb.loopVar(2), eb.ci(column), DType::I64);
    return eb.load(buffer, eb.binary(BinaryOp::Add, at, col, DType::I64), DType::F32);
  }
  std::optional<gemm::TileEpilogue> match(kir::ExprId epilogue) {
    g.epilogue = epilogue;
    return gemm::matchTileEpilogue(e, g);
  }

  kir::EntryKernels e;
  ExprBuilder eb{e};
  kir::GemmCall g;
};

TEST_F(GemmEpilogueTest, BiasResidualRelu) {
  auto t = match(relu(add(add(eb.acc(), bias()), residual())));
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->bias && t->bias->index == 1);
  EXPECT_TRUE(t->residual && t->residual->index == 2);
  EXPECT_TRUE(t->relu);
}

TEST_F(GemmEpilogueTest, OperandsInEitherOrder) {
  auto t = match(add(residual(), add(bias(), eb.acc())));
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->bias && t->residual);
  EXPECT_FALSE(t->relu);
}

TEST_F(GemmEpilogueTest, EachPartAlone) {
  auto b = match(add(eb.acc(), bias()));
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->bias && !b->residual && !b->relu);
  auto r = match(add(eb.acc(), residual()));
  ASSERT_TRUE(r);
  EXPECT_TRUE(!r->bias && r->residual && !r->relu);
  auto z = match(relu(eb.acc()));
  ASSERT_TRUE(z);
  EXPECT_TRUE(!z->bias && !z->residual && z->relu);
}

TEST_F(GemmEpilogueTest, OthersStayGeneric) {
  // The residual before the bias: (acc + r) + b rounds differently from (acc + b) + r.
  EXPECT_FALSE(match(add(add(eb.acc(), residual()), bias())));
  // Columns two apart.
  EXPECT_FALSE(match(add(eb.acc(), residual(2))));
  // max(x, -0.0) keeps -0.0 where relu gives +0.0.
  EXPECT_FALSE(match(relu(add(eb.acc(), bias()), -0.0)));
  // The output itself, an f16 bias, a product.
  EXPECT_FALSE(match(add(eb.acc(), residual(1, 0))));
  EXPECT_FALSE(match(add(eb.acc(), bias(3))));
  EXPECT_FALSE(match(eb.binary(BinaryOp::Mul, eb.acc(), bias(), DType::F32)));
  // Two residuals.
  EXPECT_FALSE(match(add(add(eb.acc(), residual()), residual())));
}

} // namespace
