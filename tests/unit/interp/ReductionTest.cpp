// Reduction and softmax kernels against hand-computed values: dims lists, negative dims,
// keepdim, dtype arguments, empty reductions, NaN and the first-maximum rule of argmax.
#include "InterpTestUtil.h"

#include <cmath>
#include <limits>

using namespace aotc;
using namespace aotc::test;

namespace {

const double NaN = std::numeric_limits<double>::quiet_NaN();

TEST(Reduction, Sum) {
  HostTensor x = iota(DType::F32, {2, 3});
  expectTensor(runOp("aten.sum.dim_IntList(%0) {dim = [1]} : f32[2]", {x}), DType::F32, {2},
               {3, 12});
  expectTensor(runOp("aten.sum.dim_IntList(%0) {dim = [-2], keepdim = true} : f32[1, 3]", {x}),
               DType::F32, {1, 3}, {3, 5, 7});
  expectTensor(runOp("aten.sum.dim_IntList(%0) : f32[]", {x}), DType::F32, {}, {15});
  expectTensor(runOp("aten.sum.dim_IntList(%0) {dim = []} : f32[]", {x}), DType::F32, {}, {15});
  // Integers and bools sum in i64 unless a dtype says otherwise; the dtype casts first.
  HostTensor b = boolean({4}, {1, 0, 1, 1});
  expectTensor(runOp("aten.sum.dim_IntList(%0) : i64[]", {b}), DType::I64, {}, {3});
  expectTensor(runOp("aten.sum.dim_IntList(%0) {dtype = f64} : f64[]", {f32({2}, {0.5, 0.25})}),
               DType::F64, {}, {0.75});
  HostTensor i32 = tensor(DType::I32, {2}, {2147483647, 2147483647});
  expectTensor(runOp("aten.sum.dim_IntList(%0) : i64[]", {i32}), DType::I64, {}, {4294967294.0});
  // An empty reduction is 0.
  HostTensor empty(DType::F32, {2, 0});
  expectTensor(runOp("aten.sum.dim_IntList(%0) {dim = [1]} : f32[2]", {empty}), DType::F32, {2},
               {0, 0});
}

TEST(Reduction, SumAccumulatesInDouble) {
  // In f32, 1e8 + 1 is 1e8 again; accumulated in double the sum is exactly 1.
  HostTensor x = f32({3}, {1e8, 1, -1e8});
  expectTensor(runOp("aten.sum.dim_IntList(%0) : f32[]", {x}), DType::F32, {}, {1});
}

TEST(Reduction, MeanAndProd) {
  HostTensor x = iota(DType::F32, {2, 3});
  expectTensor(runOp("aten.mean.dim(%0) {dim = [0]} : f32[3]", {x}), DType::F32, {3},
               {1.5, 2.5, 3.5});
  expectTensor(runOp("aten.mean.dim(%0) {dtype = f64} : f64[]", {x}), DType::F64, {}, {2.5});
  expectTensor(runOp("aten.mean.dim(%0) {dim = [1]} : f32[0]", {HostTensor(DType::F32, {0, 3})}),
               DType::F32, {0}, {});
  expectTensor(runOp("aten.mean.dim(%0) : f32[]", {HostTensor(DType::F32, {0})}), DType::F32, {},
               {NaN});
  HostTensor ints = i64({2, 3}, {1, 2, 3, -4, 5, 6});
  expectTensor(runOp("aten.prod.dim_int(%0) {dim = 1} : i64[2]", {ints}), DType::I64, {2},
               {6, -120});
  expectTensor(runOp("aten.prod.dim_int(%0) {dim = 0, keepdim = true} : i64[1, 3]", {ints}),
               DType::I64, {1, 3}, {-4, 10, 18});
}

TEST(Reduction, AmaxAmin) {
  HostTensor x = f32({2, 3}, {1, NaN, 3, 4, 5, 6});
  expectTensor(runOp("aten.amax(%0) {dim = [1]} : f32[2]", {x}), DType::F32, {2}, {NaN, 6});
  expectTensor(runOp("aten.amin(%0) {dim = [1]} : f32[2]", {x}), DType::F32, {2}, {NaN, 4});
  expectTensor(runOp("aten.amax(%0) {dim = [0], keepdim = true} : f32[1, 3]", {x}), DType::F32,
               {1, 3}, {4, NaN, 6});
  HostTensor ints = i64({2, 2}, {3, -7, 2, 9});
  expectTensor(runOp("aten.amin(%0) : i64[]", {ints}), DType::I64, {}, {-7});
  expectTensor(runOp("aten.amax(%0) {dim = [-1]} : i64[2]", {ints}), DType::I64, {2}, {3, 9});
  EXPECT_EQ(opError("aten.amax(%0) {dim = [1]} : f32[2]", {HostTensor(DType::F32, {2, 0})}),
            "cannot reduce f32[2, 0] over an empty dim");
}

TEST(Reduction, ArgmaxTakesTheFirstMaximumAndNaN) {
  expectTensor(runOp("aten.argmax(%0) : i64[]", {f32({4}, {1, 3, 3, 2})}), DType::I64, {}, {1});
  expectTensor(runOp("aten.argmax(%0) : i64[]", {f32({4}, {1, NaN, 5, NaN})}), DType::I64, {}, {1});
  HostTensor x = f32({2, 3}, {1, 9, 9, 7, 2, 7});
  expectTensor(runOp("aten.argmax(%0) {dim = 1} : i64[2]", {x}), DType::I64, {2}, {1, 0});
  expectTensor(runOp("aten.argmax(%0) {dim = 0, keepdim = true} : i64[1, 3]", {x}), DType::I64,
               {1, 3}, {1, 0, 0});
  expectTensor(runOp("aten.argmax(%0) {keepdim = true} : i64[1, 1]", {x}), DType::I64, {1, 1}, {1});
  expectTensor(runOp("aten.argmax(%0) {dim = 0} : i64[]", {i64({3}, {-5, -2, -2})}), DType::I64, {},
               {1});
  EXPECT_EQ(opError("aten.argmax(%0) : i64[]", {HostTensor(DType::F32, {0})}),
            "argmax of an empty dim");
}

TEST(Reduction, Softmax) {
  const double tol = 1e-6;
  HostTensor x = f32({3}, {1, 2, 3});
  expectTensor(runOp("aten.softmax.int(%0) {dim = 0} : f32[3]", {x}), DType::F32, {3},
               {0.09003057317038046, 0.24472847105479764, 0.6652409557748219}, tol);
  expectTensor(runOp("aten.log_softmax.int(%0) {dim = -1} : f32[3]", {x}), DType::F32, {3},
               {-2.4076059644443806, -1.4076059644443804, -0.4076059644443803}, tol);
  // Large values do not overflow: the maximum is subtracted first.
  expectTensor(runOp("aten.softmax.int(%0) {dim = 1} : f32[2, 2]",
                     {f32({2, 2}, {1000, 1000, -INFINITY, 0})}),
               DType::F32, {2, 2}, {0.5, 0.5, 0, 1});
  // Along dim 0 of a matrix; a column of -inf gives NaN, as in torch.
  expectTensor(runOp("aten.softmax.int(%0) {dim = 0} : f32[2, 2]",
                     {f32({2, 2}, {0, -INFINITY, 0, -INFINITY})}),
               DType::F32, {2, 2}, {0.5, NaN, 0.5, NaN});
  // A dtype argument casts first; f16 input gives f16 output.
  expectTensor(runOp("aten.softmax.int(%0) {dim = 0, dtype = f64} : f64[2]",
                     {tensor(DType::F16, {2}, {0, 0})}),
               DType::F64, {2}, {0.5, 0.5});
  expectTensor(
      runOp("aten.softmax.int(%0) {dim = 0} : f16[3]", {tensor(DType::F16, {3}, {1, 2, 3})}),
      DType::F16, {3}, {0.09002685546875, 0.2447509765625, 0.6650390625});
}

} // namespace
