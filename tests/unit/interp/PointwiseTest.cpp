// Pointwise kernels against hand-computed values: broadcasting, empty and size-1 dims, type
// promotion, integer and bool semantics, f16/bf16 rounding, NaN, and the errors torch raises.
#include "InterpTestUtil.h"

#include <cmath>
#include <limits>

using namespace aotc;
using namespace aotc::test;

namespace {

const double NaN = std::numeric_limits<double>::quiet_NaN();

TEST(Pointwise, AddBroadcastsWithAlpha) {
  HostTensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6}), y = f32({3}, {10, 20, 30});
  expectTensor(runOp("aten.add.Tensor(%0, %1) {alpha = 2} : f32[2, 3]", {x, y}), DType::F32, {2, 3},
               {21, 42, 63, 24, 45, 66});
  // Size-1 dims on both sides broadcast to an outer product.
  HostTensor col = f32({2, 1}, {1, 2}), row = f32({1, 3}, {10, 20, 30});
  expectTensor(runOp("aten.sub.Tensor(%0, %1) : f32[2, 3]", {col, row}), DType::F32, {2, 3},
               {-9, -19, -29, -8, -18, -28});
  // An empty dim broadcasts with anything of size 1 or 0 and gives an empty result.
  HostTensor empty(DType::F32, {0, 3});
  expectTensor(runOp("aten.mul.Tensor(%0, %1) : f32[0, 3]", {empty, y}), DType::F32, {0, 3}, {});
}

TEST(Pointwise, PromotesTypes) {
  HostTensor ints = i64({3}, {1, 2, 3});
  expectTensor(runOp("aten.mul.Scalar(%0) {other = 1.5} : f32[3]", {ints}), DType::F32, {3},
               {1.5, 3, 4.5});
  HostTensor i32 = tensor(DType::I32, {2}, {2147483647, 5});
  expectTensor(runOp("aten.add.Tensor(%0, %1) : i64[2]", {i32, i64({2}, {1, 1})}), DType::I64, {2},
               {2147483648.0, 6});
  // A 0-d f64 tensor does not promote a dimensioned f32 one.
  HostTensor scalar = tensor(DType::F64, {}, {0.1});
  HostTensor r = runOp("aten.add.Tensor(%0, %1) : f32[2]", {f32({2}, {1, 2}), scalar});
  expectTensor(r, DType::F32, {2},
               {static_cast<float>(1 + static_cast<float>(0.1)),
                static_cast<float>(2 + static_cast<float>(0.1))});
}

TEST(Pointwise, IntegersWrapLikeTheirWidth) {
  HostTensor a = tensor(DType::I32, {2}, {2147483647, -2147483648.0});
  HostTensor b = tensor(DType::I32, {2}, {1, -1});
  expectTensor(runOp("aten.add.Tensor(%0, %1) : i32[2]", {a, b}), DType::I32, {2},
               {-2147483648.0, 2147483647});
  HostTensor u = tensor(DType::U8, {2}, {250, 3});
  expectTensor(runOp("aten.mul.Scalar(%0) {other = 2} : u8[2]", {u}), DType::U8, {2}, {244, 6});
}

TEST(Pointwise, HalfPrecisionResultsRound) {
  // 1 + 0.0004 is 1.0004, below half an f16 ulp (0.000977) above 1.
  HostTensor h = tensor(DType::F16, {2}, {1, 1});
  HostTensor d = tensor(DType::F16, {2}, {0.0004, 0.001});
  expectTensor(runOp("aten.add.Tensor(%0, %1) : f16[2]", {h, d}), DType::F16, {2},
               {1, 1.0009765625});
  // bf16 keeps 8 bits: 0.005 is stored as 0.0050048828125 and 1.005 rounds up to 1 + 1/128.
  HostTensor b1 = tensor(DType::BF16, {2}, {1, 1});
  HostTensor b2 = tensor(DType::BF16, {2}, {0.003, 0.005});
  expectTensor(runOp("aten.add.Tensor(%0, %1) : bf16[2]", {b1, b2}), DType::BF16, {2},
               {1, 1.0078125});
  // f16 and bf16 promote to f32, where the sum is exact.
  expectTensor(runOp("aten.add.Tensor(%0, %1) : f32[2]", {h, b2}), DType::F32, {2},
               {1.0030059814453125, 1.0050048828125});
}

TEST(Pointwise, BoolArithmetic) {
  HostTensor a = boolean({4}, {0, 0, 1, 1}), b = boolean({4}, {0, 1, 0, 1});
  expectTensor(runOp("aten.add.Tensor(%0, %1) : bool[4]", {a, b}), DType::Bool, {4}, {0, 1, 1, 1});
  expectTensor(runOp("aten.mul.Tensor(%0, %1) : bool[4]", {a, b}), DType::Bool, {4}, {0, 0, 0, 1});
  expectTensor(runOp("aten.add.Tensor(%0, %1) : i64[4]", {a, i64({4}, {1, 1, 1, 1})}), DType::I64,
               {4}, {1, 1, 2, 2});
  EXPECT_EQ(opError("aten.sub.Tensor(%0, %1) : bool[4]", {a, b}),
            "subtraction of bool tensors is not supported; use aten.logical_xor");
  EXPECT_EQ(opError("aten.neg(%0) : bool[4]", {a}),
            "negation of a bool tensor is not supported; use aten.logical_not");
}

TEST(Pointwise, Division) {
  HostTensor a = i64({4}, {7, -7, 7, -7}), b = i64({4}, {2, 2, -2, -2});
  expectTensor(runOp("aten.div.Tensor(%0, %1) : f32[4]", {a, b}), DType::F32, {4},
               {3.5, -3.5, -3.5, 3.5});
  expectTensor(runOp("aten.div.Tensor_mode(%0, %1) {rounding_mode = \"floor\"} : i64[4]", {a, b}),
               DType::I64, {4}, {3, -4, -4, 3});
  expectTensor(runOp("aten.div.Tensor_mode(%0, %1) {rounding_mode = \"trunc\"} : i64[4]", {a, b}),
               DType::I64, {4}, {3, -3, -3, 3});
  expectTensor(runOp("aten.div.Tensor_mode(%0, %1) : f32[4]", {a, b}), DType::F32, {4},
               {3.5, -3.5, -3.5, 3.5});
  HostTensor fa = f32({3}, {7.5, -7.5, 1}), fb = f32({3}, {2, 2, 0});
  expectTensor(runOp("aten.div.Tensor_mode(%0, %1) {rounding_mode = \"floor\"} : f32[3]", {fa, fb}),
               DType::F32, {3}, {3, -4, INFINITY});
  expectTensor(runOp("aten.div.Tensor_mode(%0, %1) {rounding_mode = \"trunc\"} : f32[3]", {fa, fb}),
               DType::F32, {3}, {3, -3, INFINITY});
  expectTensor(runOp("aten.div.Scalar(%0) {other = 4} : f32[4]", {a}), DType::F32, {4},
               {1.75, -1.75, 1.75, -1.75});
  EXPECT_EQ(opError("aten.div.Tensor_mode(%0, %1) {rounding_mode = \"floor\"} : i64[2]",
                    {i64({2}, {1, 2}), i64({2}, {1, 0})}),
            "integer division by zero");
  EXPECT_EQ(opError("aten.remainder.Tensor(%0, %1) : i64[2]", {i64({2}, {1, 2}), i64({2}, {0, 1})}),
            "integer division by zero");
}

TEST(Pointwise, RemainderTakesTheDivisorsSign) {
  HostTensor a = i64({4}, {7, -7, 7, -7}), b = i64({4}, {3, 3, -3, -3});
  expectTensor(runOp("aten.remainder.Tensor(%0, %1) : i64[4]", {a, b}), DType::I64, {4},
               {1, 2, -2, -1});
  HostTensor fa = f32({3}, {5.5, -5.5, 5.5}), fb = f32({3}, {2, 2, -2});
  expectTensor(runOp("aten.remainder.Tensor(%0, %1) : f32[3]", {fa, fb}), DType::F32, {3},
               {1.5, 0.5, -0.5});
}

TEST(Pointwise, Powers) {
  HostTensor base = i64({5}, {2, 3, 2, -1, 1}), exp = i64({5}, {10, 3, -1, -3, -5});
  expectTensor(runOp("aten.pow.Tensor_Tensor(%0, %1) : i64[5]", {base, exp}), DType::I64, {5},
               {1024, 27, 0, -1, 1});
  expectTensor(runOp("aten.pow.Tensor_Scalar(%0) {exponent = 2} : i64[5]", {base}), DType::I64, {5},
               {4, 9, 4, 1, 1});
  expectTensor(runOp("aten.pow.Tensor_Scalar(%0) {exponent = 0.5} : f32[2]", {i64({2}, {4, 9})}),
               DType::F32, {2}, {2, 3});
  EXPECT_EQ(opError("aten.pow.Tensor_Scalar(%0) {exponent = -1} : i64[5]", {base}),
            "integers to negative integer powers are not allowed");
}

TEST(Pointwise, MaximumAndMinimumPropagateNaN) {
  HostTensor a = f32({3}, {1, NaN, 3}), b = f32({3}, {2, 2, NaN});
  expectTensor(runOp("aten.maximum(%0, %1) : f32[3]", {a, b}), DType::F32, {3}, {2, NaN, NaN});
  expectTensor(runOp("aten.minimum(%0, %1) : f32[3]", {a, b}), DType::F32, {3}, {1, NaN, NaN});
  expectTensor(runOp("aten.maximum(%0, %1) : i64[2]", {i64({2}, {-5, 9}), i64({1}, {0})}),
               DType::I64, {2}, {0, 9});
}

TEST(Pointwise, ComparisonsRunInThePromotedType) {
  HostTensor ints = i64({3}, {1, 2, 3});
  expectTensor(runOp("aten.gt.Scalar(%0) {other = 1.5} : bool[3]", {ints}), DType::Bool, {3},
               {0, 1, 1});
  // 16777217 is not an f32: compared as f32 it equals 16777216, as torch says.
  HostTensor big = i64({1}, {16777217}), f = f32({1}, {16777216});
  expectTensor(runOp("aten.eq.Tensor(%0, %1) : bool[1]", {big, f}), DType::Bool, {1}, {1});
  // Compared as i64, 2^53 + 1 and 2^53 differ although they are one double.
  HostTensor a = i64({1}, {0}), b = i64({1}, {0});
  a.setInt(0, (int64_t(1) << 53) + 1);
  b.setInt(0, int64_t(1) << 53);
  expectTensor(runOp("aten.ne.Tensor(%0, %1) : bool[1]", {a, b}), DType::Bool, {1}, {1});
  HostTensor x = f32({4}, {1, NaN, 3, 4}), y = f32({4}, {1, NaN, 2, 5});
  expectTensor(runOp("aten.eq.Tensor(%0, %1) : bool[4]", {x, y}), DType::Bool, {4}, {1, 0, 0, 0});
  expectTensor(runOp("aten.ne.Tensor(%0, %1) : bool[4]", {x, y}), DType::Bool, {4}, {0, 1, 1, 1});
  expectTensor(runOp("aten.le.Tensor(%0, %1) : bool[4]", {x, y}), DType::Bool, {4}, {1, 0, 0, 1});
  expectTensor(runOp("aten.lt.Scalar(%0) {other = 3} : bool[4]", {x}), DType::Bool, {4},
               {1, 0, 0, 0});
  expectTensor(runOp("aten.ge.Scalar(%0) {other = 3} : bool[4]", {x}), DType::Bool, {4},
               {0, 0, 1, 1});
}

TEST(Pointwise, Logic) {
  HostTensor f = f32({3}, {0, 1.5, NaN}), b = boolean({3}, {1, 1, 0});
  expectTensor(runOp("aten.logical_and(%0, %1) : bool[3]", {f, b}), DType::Bool, {3}, {0, 1, 0});
  expectTensor(runOp("aten.logical_or(%0, %1) : bool[3]", {f, b}), DType::Bool, {3}, {1, 1, 1});
  expectTensor(runOp("aten.logical_not(%0) : bool[3]", {f}), DType::Bool, {3}, {1, 0, 0});
}

TEST(Pointwise, WhereBroadcastsAndPromotes) {
  HostTensor cond = boolean({2, 1}, {1, 0}), a = f32({3}, {1, 2, 3}), b = f32({}, {-1});
  expectTensor(runOp("aten.where.self(%0, %1, %2) : f32[2, 3]", {cond, a, b}), DType::F32, {2, 3},
               {1, 2, 3, -1, -1, -1});
  HostTensor ints = i64({3}, {7, 8, 9}), halfs = f32({3}, {0.5, 0.5, 0.5});
  expectTensor(
      runOp("aten.where.self(%0, %1, %2) : f32[3]", {boolean({3}, {1, 0, 1}), ints, halfs}),
      DType::F32, {3}, {7, 0.5, 9});
}

TEST(Pointwise, Clamp) {
  HostTensor ints = i64({4}, {-2, 0, 5, 2});
  expectTensor(runOp("aten.clamp(%0) {min = -1.5, max = 3} : f32[4]", {ints}), DType::F32, {4},
               {-1.5, 0, 3, 2});
  expectTensor(runOp("aten.clamp(%0) {max = 1} : i64[4]", {ints}), DType::I64, {4}, {-2, 0, 1, 1});
  expectTensor(runOp("aten.clamp(%0) {min = 0.5} : f32[3]", {f32({3}, {NaN, 0, 1})}), DType::F32,
               {3}, {NaN, 0.5, 1});
  EXPECT_EQ(opError("aten.clamp(%0) : i64[4]", {ints}),
            "at least one of min and max must be given");
}

TEST(Pointwise, CastsLikeTorch) {
  HostTensor f = f32({5}, {-1.7, 2.9, NaN, 0, -0.4});
  HostTensor toInt = runOp("aten._to_copy(%0) {dtype = i64} : i64[5]", {f});
  expectTensor(toInt, DType::I64, {5},
               {-1, 2, static_cast<double>(std::numeric_limits<int64_t>::min()), 0, 0});
  expectTensor(runOp("aten._to_copy(%0) {dtype = bool} : bool[5]", {f}), DType::Bool, {5},
               {1, 1, 1, 0, 1});
  // Narrow integers convert through 32 bits and wrap: -1.5 -> -1 -> 255; 300 -> 44.
  expectTensor(runOp("aten._to_copy(%0) {dtype = u8} : u8[3]", {f32({3}, {-1.5, 300, 7.9})}),
               DType::U8, {3}, {255, 44, 7});
  expectTensor(runOp("aten._to_copy(%0) {dtype = i8} : i8[2]", {i64({2}, {128, -129})}), DType::I8,
               {2}, {-128, 127});
  expectTensor(runOp("aten._to_copy(%0) {dtype = f16} : f16[2]", {f32({2}, {1.0004, 65520})}),
               DType::F16, {2}, {1, INFINITY});
  expectTensor(runOp("aten._to_copy(%0) {dtype = f32} : f32[2]", {boolean({2}, {1, 0})}),
               DType::F32, {2}, {1, 0});
}

TEST(Pointwise, FloatMath) {
  const double tol = 1e-6;
  expectTensor(runOp("aten.exp(%0) : f32[2]", {i64({2}, {0, 1})}), DType::F32, {2}, {1, M_E}, tol);
  HostTensor x = f32({3}, {-1, 0, 1});
  expectTensor(runOp("aten.gelu(%0) : f32[3]", {x}), DType::F32, {3},
               {-0.15865525393145707, 0, 0.8413447460685429}, tol);
  expectTensor(runOp("aten.gelu(%0) {approximate = \"tanh\"} : f32[3]", {x}), DType::F32, {3},
               {-0.15880800939172324, 0, 0.8411919906082768}, tol);
  expectTensor(runOp("aten.sigmoid(%0) : f32[3]", {x}), DType::F32, {3},
               {0.2689414213699951, 0.5, 0.7310585786300049}, tol);
  expectTensor(runOp("aten.silu(%0) : f32[3]", {x}), DType::F32, {3},
               {-0.2689414213699951, 0, 0.7310585786300049}, tol);
  expectTensor(runOp("aten.tanh(%0) : f32[3]", {x}), DType::F32, {3},
               {-0.7615941559557649, 0, 0.7615941559557649}, tol);
  expectTensor(runOp("aten.erf(%0) : f32[3]", {x}), DType::F32, {3},
               {-0.8427007929497149, 0, 0.8427007929497149}, tol);
  expectTensor(runOp("aten.log(%0) : f32[3]", {x}), DType::F32, {3}, {NaN, -INFINITY, 0});
  expectTensor(runOp("aten.log1p(%0) : f32[3]", {x}), DType::F32, {3},
               {-INFINITY, 0, 0.6931471805599453}, tol);
  expectTensor(runOp("aten.sqrt(%0) : f32[3]", {f32({3}, {4, 2, -1})}), DType::F32, {3},
               {2, M_SQRT2, NaN}, tol);
  expectTensor(runOp("aten.rsqrt(%0) : f32[2]", {f32({2}, {4, 0})}), DType::F32, {2},
               {0.5, INFINITY});
  expectTensor(runOp("aten.reciprocal(%0) : f32[2]", {i64({2}, {4, -2})}), DType::F32, {2},
               {0.25, -0.5});
  expectTensor(runOp("aten.sin(%0) : f32[2]", {f32({2}, {0, M_PI / 2})}), DType::F32, {2}, {0, 1},
               tol);
  expectTensor(runOp("aten.cos(%0) : f32[2]", {f32({2}, {0, M_PI})}), DType::F32, {2}, {1, -1},
               tol);
}

TEST(Pointwise, RoundingAndSignOps) {
  HostTensor x = f32({5}, {0.5, 1.5, 2.5, -0.5, -1.2});
  expectTensor(runOp("aten.round(%0) : f32[5]", {x}), DType::F32, {5}, {0, 2, 2, -0.0, -1});
  expectTensor(runOp("aten.floor(%0) : f32[5]", {x}), DType::F32, {5}, {0, 1, 2, -1, -2});
  expectTensor(runOp("aten.ceil(%0) : f32[5]", {x}), DType::F32, {5}, {1, 2, 3, -0.0, -1});
  expectTensor(runOp("aten.abs(%0) : f32[5]", {x}), DType::F32, {5}, {0.5, 1.5, 2.5, 0.5, 1.2});
  expectTensor(runOp("aten.relu(%0) : f32[5]", {x}), DType::F32, {5}, {0.5, 1.5, 2.5, 0, 0});
  expectTensor(runOp("aten.relu(%0) : f32[1]", {f32({1}, {NaN})}), DType::F32, {1}, {NaN});
  HostTensor ints = i64({3}, {-3, 0, 4});
  expectTensor(runOp("aten.abs(%0) : i64[3]", {ints}), DType::I64, {3}, {3, 0, 4});
  expectTensor(runOp("aten.neg(%0) : i64[3]", {ints}), DType::I64, {3}, {3, 0, -4});
  expectTensor(runOp("aten.relu(%0) : i64[3]", {ints}), DType::I64, {3}, {0, 0, 4});
  expectTensor(runOp("aten.floor(%0) : i64[3]", {ints}), DType::I64, {3}, {-3, 0, 4});
}

TEST(Pointwise, ScalarOverloadsAndTernaries) {
  HostTensor x = f32({3}, {1, 2, 3});
  expectTensor(runOp("aten.add.Scalar(%0) {other = 1, alpha = 3} : f32[3]", {x}), DType::F32, {3},
               {4, 5, 6});
  expectTensor(runOp("aten.sub.Scalar(%0) {other = 0.5} : f32[3]", {x}), DType::F32, {3},
               {0.5, 1.5, 2.5});
  expectTensor(runOp("aten.rsub.Scalar(%0) {other = 1, alpha = 2} : f32[3]", {x}), DType::F32, {3},
               {-1, -3, -5});
  expectTensor(runOp("aten.add.Scalar(%0) {other = 2} : i64[2]", {i64({2}, {1, 2})}), DType::I64,
               {2}, {3, 4});
  EXPECT_EQ(opError("aten.add.Tensor(%0, %1) {alpha = 2.5} : i64[2]",
                    {i64({2}, {1, 2}), i64({2}, {1, 2})}),
            "alpha must not be a floating-point number for integer inputs");
  expectTensor(runOp("aten.addcmul(%0, %1, %2) {value = 0.5} : f32[3]",
                     {x, f32({3}, {2, 2, 2}), f32({1}, {3})}),
               DType::F32, {3}, {4, 5, 6});
  expectTensor(runOp("aten.lerp.Tensor(%0, %1, %2) : f32[3]",
                     {x, f32({3}, {11, 12, 13}), f32({3}, {0, 0.25, 1})}),
               DType::F32, {3}, {1, 4.5, 13});
}

} // namespace
