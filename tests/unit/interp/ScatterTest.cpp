// scatter and scatter_add against hand-computed values: along the first, last and a negative
// dim, an index smaller than src and self, repeated positions (the last write wins; adds sum),
// integer sums, empty indices, 0-d tensors, and the errors of a bad index and bad operands.
#include "InterpTestUtil.h"

using namespace aotc;
using namespace aotc::test;

namespace {

TEST(Scatter, WritesAlongADim) {
  HostTensor self = f32({3, 2}, {0, 0, 0, 0, 0, 0});
  HostTensor src = f32({2, 2}, {1, 2, 3, 4});
  HostTensor index = i64({2, 2}, {2, 0, 0, 2});
  expectTensor(runOp("aten.scatter.src(%0, %1, %2) {dim = 0} : f32[3, 2]", {self, index, src}),
               DType::F32, {3, 2}, {3, 2, 0, 0, 1, 4});
  // Along the last dim (negative), an index smaller than src in both dims.
  HostTensor row = i64({1, 1}, {1});
  expectTensor(runOp("aten.scatter.src(%0, %1, %2) {dim = -1} : f32[3, 2]", {self, row, src}),
               DType::F32, {3, 2}, {0, 1, 0, 0, 0, 0});
  // Two writes to one position: the last one stays.
  HostTensor same = i64({2, 1}, {1, 1});
  expectTensor(runOp("aten.scatter.src(%0, %1, %2) {dim = 0} : f32[3, 2]", {self, same, src}),
               DType::F32, {3, 2}, {0, 0, 3, 0, 0, 0});
}

TEST(Scatter, AddSumsRepeatedPositions) {
  HostTensor self = i64({2, 3}, {1, 1, 1, 1, 1, 1});
  HostTensor src = i64({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor index = i64({2, 3}, {0, 0, 2, 2, 2, 2});
  expectTensor(runOp("aten.scatter_add(%0, %1, %2) {dim = 1} : i64[2, 3]", {self, index, src}),
               DType::I64, {2, 3}, {4, 1, 4, 1, 1, 16});
  HostTensor fself = f32({4}, {0.5, 0, 0, 0});
  expectTensor(runOp("aten.scatter_add(%0, %1, %2) {dim = 0} : f32[4]",
                     {fself, i64({3}, {0, 3, 0}), f32({3}, {1, 2, 4})}),
               DType::F32, {4}, {5.5, 0, 0, 2});
}

TEST(Scatter, EmptyAndZeroDim) {
  HostTensor self = f32({2}, {7, 8});
  expectTensor(runOp("aten.scatter.src(%0, %1, %2) {dim = 0} : f32[2]",
                     {self, HostTensor(DType::I64, {0}), HostTensor(DType::F32, {0})}),
               DType::F32, {2}, {7, 8});
  expectTensor(runOp("aten.scatter_add(%0, %1, %2) {dim = 0} : f32[]",
                     {f32({}, {1}), i64({}, {0}), f32({}, {2})}),
               DType::F32, {}, {3});
}

TEST(Scatter, BadIndexAndOperands) {
  HostTensor self = f32({3, 2}, {0, 0, 0, 0, 0, 0});
  HostTensor src = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(opError("aten.scatter.src(%0, %1, %2) {dim = 0} : f32[3, 2]",
                    {self, i64({1, 2}, {0, 3}), src}),
            "index 3 at position 1 is out of range for dim 0 of size 3");
  EXPECT_EQ(
      opError("aten.scatter_add(%0, %1, %2) {dim = 1} : f32[3, 2]", {self, i64({1, 1}, {-1}), src}),
      "index -1 at position 0 is out of range for dim 1 of size 2");
  EXPECT_EQ(metaError("aten.scatter.src(%0, %1, %2) {dim = 0} : f32[3, 2]",
                      {self, f32({1, 1}, {0}), src}),
            "aten.scatter.src: index must be an integer tensor, got f32[1, 1]");
  EXPECT_EQ(metaError("aten.scatter.src(%0, %1, %2) {dim = 0} : f32[3, 2]",
                      {self, i64({3, 1}, {0, 0, 0}), src}),
            "aten.scatter.src: index i64[3, 1] must be no larger than src f32[2, 2] in dim 0");
  EXPECT_EQ(metaError("aten.scatter.src(%0, %1, %2) {dim = 0} : f32[3, 2]",
                      {self, i64({1, 3}, {0, 0, 0}), f32({2, 3}, {0, 0, 0, 0, 0, 0})}),
            "aten.scatter.src: index i64[1, 3] must be no larger than self f32[3, 2] in dim 1");
  EXPECT_EQ(
      metaError("aten.scatter_add(%0, %1, %2) {dim = 0} : f32[3, 2]", {self, i64({1}, {0}), src}),
      "aten.scatter_add: index i64[1] and src f32[2, 2] must have the rank of self "
      "f32[3, 2]");
  EXPECT_EQ(metaError("aten.scatter_add(%0, %1, %2) {dim = 0} : f32[3, 2]",
                      {self, i64({1, 1}, {0}), i64({2, 2}, {0, 0, 0, 0})}),
            "aten.scatter_add: src i64[2, 2] must have the dtype of self f32[3, 2]");
}

} // namespace
