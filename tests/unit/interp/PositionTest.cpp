// Kernels that move elements by position (flip, roll, repeat, tril, triu), the scans (cumsum,
// cumprod) and the statistics (logsumexp, var, std, vector norms) against hand-computed values:
// negative dims, empty and size-1 dims, integer accumulation, and the errors of bad dims and
// counts.
#include "InterpTestUtil.h"

#include <cmath>
#include <limits>

using namespace aotc;
using namespace aotc::test;

namespace {

TEST(Position, FlipOneOrSeveralDims) {
  HostTensor x = iota(DType::I64, {2, 3});
  expectTensor(runOp("aten.flip(%0) {dims = [-1]} : i64[2, 3]", {x}), DType::I64, {2, 3},
               {2, 1, 0, 5, 4, 3});
  expectTensor(runOp("aten.flip(%0) {dims = [0, 1]} : i64[2, 3]", {x}), DType::I64, {2, 3},
               {5, 4, 3, 2, 1, 0});
  expectTensor(runOp("aten.flip(%0) {dims = [0]} : f32[0, 3]", {HostTensor(DType::F32, {0, 3})}),
               DType::F32, {0, 3}, {});
  EXPECT_EQ(metaError("aten.flip(%0) {dims = [1, -1]} : i64[2, 3]", {x}),
            "aten.flip: dim -1 appears twice in dims");
  EXPECT_EQ(metaError("aten.flip(%0) {dims = [2]} : i64[2, 3]", {x}),
            "aten.flip: dim 2 is out of range for a tensor of rank 2 (expected -2..1)");
}

TEST(Position, RollAlongDimsAndFlattened) {
  HostTensor x = iota(DType::I64, {2, 3});
  expectTensor(runOp("aten.roll(%0) {shifts = [1], dims = [1]} : i64[2, 3]", {x}), DType::I64,
               {2, 3}, {2, 0, 1, 5, 3, 4});
  // Negative and oversized shifts wrap; two dims at once.
  expectTensor(runOp("aten.roll(%0) {shifts = [-4, 1], dims = [-1, 0]} : i64[2, 3]", {x}),
               DType::I64, {2, 3}, {4, 5, 3, 1, 2, 0});
  // Without dims the flattened tensor rolls.
  expectTensor(runOp("aten.roll(%0) {shifts = [2]} : i64[2, 3]", {x}), DType::I64, {2, 3},
               {4, 5, 0, 1, 2, 3});
  EXPECT_EQ(metaError("aten.roll(%0) {shifts = [1, 2], dims = [0]} : i64[2, 3]", {x}),
            "aten.roll: shifts and dims must have the same length (one shift without dims), "
            "got 2 and 1");
}

TEST(Position, RepeatTilesAndAddsLeadingDims) {
  HostTensor x = iota(DType::I64, {2});
  expectTensor(runOp("aten.repeat(%0) {repeats = [2, 3]} : i64[2, 6]", {x}), DType::I64, {2, 6},
               {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1});
  HostTensor m = iota(DType::I64, {2, 1});
  expectTensor(runOp("aten.repeat(%0) {repeats = [2, 2]} : i64[4, 2]", {m}), DType::I64, {4, 2},
               {0, 0, 1, 1, 0, 0, 1, 1});
  // A zero count gives an empty result.
  expectTensor(runOp("aten.repeat(%0) {repeats = [0, 1]} : i64[0, 1]", {m}), DType::I64, {0, 1},
               {});
  EXPECT_EQ(metaError("aten.repeat(%0) {repeats = [2]} : i64[4, 1]", {m}),
            "aten.repeat: repeats has 1 entries, fewer than the 2 dims of input i64[2, 1]");
  EXPECT_EQ(metaError("aten.repeat(%0) {repeats = [-1, 1]} : i64[2, 1]", {m}),
            "aten.repeat: repeats must be non-negative, got -1");
}

TEST(Position, TrilTriuWithDiagonals) {
  HostTensor x = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expectTensor(runOp("aten.tril(%0) : f32[3, 3]", {x}), DType::F32, {3, 3},
               {1, 0, 0, 4, 5, 0, 7, 8, 9});
  expectTensor(runOp("aten.triu(%0) {diagonal = 1} : f32[3, 3]", {x}), DType::F32, {3, 3},
               {0, 2, 3, 0, 0, 6, 0, 0, 0});
  expectTensor(runOp("aten.tril(%0) {diagonal = -1} : f32[3, 3]", {x}), DType::F32, {3, 3},
               {0, 0, 0, 4, 0, 0, 7, 8, 0});
  // Diagonals past the matrix keep everything or nothing; batch dims go along.
  HostTensor b = boolean({2, 1, 2}, {1, 1, 1, 1});
  expectTensor(runOp("aten.triu(%0) {diagonal = 5} : bool[2, 1, 2]", {b}), DType::Bool, {2, 1, 2},
               {0, 0, 0, 0});
  expectTensor(runOp("aten.tril(%0) {diagonal = 5} : bool[2, 1, 2]", {b}), DType::Bool, {2, 1, 2},
               {1, 1, 1, 1});
  EXPECT_EQ(metaError("aten.tril(%0) : f32[3]", {f32({3}, {1, 2, 3})}),
            "aten.tril: needs an input with at least 2 dims, got f32[3]");
}

TEST(Position, CumsumCumprod) {
  HostTensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expectTensor(runOp("aten.cumsum(%0) {dim = 1} : f32[2, 3]", {x}), DType::F32, {2, 3},
               {1, 3, 6, 4, 9, 15});
  expectTensor(runOp("aten.cumsum(%0) {dim = -2} : f32[2, 3]", {x}), DType::F32, {2, 3},
               {1, 2, 3, 5, 7, 9});
  expectTensor(runOp("aten.cumprod(%0) {dim = 1} : f32[2, 3]", {x}), DType::F32, {2, 3},
               {1, 2, 6, 4, 20, 120});
  // Bools and narrow integers accumulate in i64; a dtype overrides.
  HostTensor mask = boolean({4}, {1, 0, 1, 1});
  expectTensor(runOp("aten.cumsum(%0) {dim = 0} : i64[4]", {mask}), DType::I64, {4}, {1, 1, 2, 3});
  expectTensor(runOp("aten.cumsum(%0) {dim = 0, dtype = f64} : f64[4]", {mask}), DType::F64, {4},
               {1, 1, 2, 3});
  expectTensor(runOp("aten.cumsum(%0) {dim = 0} : f32[0]", {HostTensor(DType::F32, {0})}),
               DType::F32, {0}, {});
  EXPECT_EQ(metaError("aten.cumsum(%0) {dim = 2} : f32[2, 3]", {x}),
            "aten.cumsum: dim 2 is out of range for a tensor of rank 2 (expected -2..1)");
}

TEST(Statistics, LogsumexpIsStableAndKeepsInfinities) {
  HostTensor x = tensor(DType::F64, {2, 2}, {0, 0, 1000, 1000});
  expectTensor(runOp("aten.logsumexp(%0) {dim = [1]} : f64[2]", {x}), DType::F64, {2},
               {std::log(2.0), 1000 + std::log(2.0)});
  double inf = std::numeric_limits<double>::infinity();
  HostTensor masked = tensor(DType::F64, {1, 2}, {-inf, -inf});
  expectTensor(runOp("aten.logsumexp(%0) {dim = [-1], keepdim = true} : f64[1, 1]", {masked}),
               DType::F64, {1, 1}, {-inf});
  // Integer inputs give the default float dtype.
  expectTensor(runOp("aten.logsumexp(%0) {dim = [0]} : f32[]", {i64({2}, {0, 0})}), DType::F32, {},
               {std::log(2.0)}, 1e-6);
}

TEST(Statistics, VarStdWithCorrection) {
  HostTensor x = tensor(DType::F64, {2, 4}, {1, 2, 3, 4, 2, 2, 2, 2});
  // Mean 2.5, squared deviations sum to 5.
  expectTensor(runOp("aten.var.correction(%0) {dim = [1]} : f64[2]", {x}), DType::F64, {2},
               {5.0 / 3, 0});
  expectTensor(runOp("aten.var.correction(%0) {dim = [-1], correction = 0, keepdim = true} : "
                     "f64[2, 1]",
                     {x}),
               DType::F64, {2, 1}, {1.25, 0});
  expectTensor(runOp("aten.std.correction(%0) {dim = [1], correction = 0} : f64[2]", {x}),
               DType::F64, {2}, {std::sqrt(1.25), 0});
  // Over every dim: mean 2.25, squared deviations 5 + 0.25 = 5.25... of 8 elements.
  expectTensor(runOp("aten.var.correction(%0) : f64[]", {x}), DType::F64, {}, {5.5 / 7}, 1e-12);
  EXPECT_EQ(metaError("aten.var.correction(%0) : i64[]", {i64({2}, {1, 2})}),
            "aten.var.correction: needs a floating-point input, got i64[2]");
}

TEST(Statistics, VectorNorms) {
  HostTensor x = f32({2, 2}, {3, -4, 0, 1});
  expectTensor(runOp("aten.linalg_vector_norm(%0) {dim = [1]} : f32[2]", {x}), DType::F32, {2},
               {5, 1});
  expectTensor(runOp("aten.linalg_vector_norm(%0) {ord = 1, dim = [0], keepdim = true} : "
                     "f32[1, 2]",
                     {x}),
               DType::F32, {1, 2}, {3, 5});
  expectTensor(runOp("aten.linalg_vector_norm(%0) {ord = 3} : f32[]", {x}), DType::F32, {},
               {std::cbrt(27.0 + 64 + 1)}, 1e-5);
  EXPECT_EQ(metaError("aten.linalg_vector_norm(%0) {ord = 0} : f32[]", {x}),
            "aten.linalg_vector_norm: ord must be a positive finite number, got 0");
}

} // namespace
