// Bitwise ops and shifts against hand-computed values: two's complement on negative numbers,
// narrow and unsigned dtypes, bool operands, shift amounts outside the dtype's width,
// broadcasting with size-1 and empty dims, and the error for floating inputs.
#include "InterpTestUtil.h"

using namespace aotc;
using namespace aotc::test;

namespace {

TEST(Bitwise, AndOrXorOfNegativeNumbers) {
  HostTensor a = i64({4}, {12, -12, 5, -1}), b = i64({4}, {10, 10, -6, 7});
  expectTensor(runOp("aten.bitwise_and.Tensor(%0, %1) : i64[4]", {a, b}), DType::I64, {4},
               {8, 0, 0, 7});
  expectTensor(runOp("aten.bitwise_or.Tensor(%0, %1) : i64[4]", {a, b}), DType::I64, {4},
               {14, -2, -1, -1});
  expectTensor(runOp("aten.bitwise_xor.Tensor(%0, %1) : i64[4]", {a, b}), DType::I64, {4},
               {6, -2, -1, -8});
  expectTensor(runOp("aten.bitwise_not(%0) : i64[4]", {a}), DType::I64, {4}, {-13, 11, -6, 0});
}

TEST(Bitwise, ScalarOverloadsAndPromotion) {
  HostTensor a = tensor(DType::I32, {3}, {6, -6, 255});
  expectTensor(runOp("aten.bitwise_and.Scalar(%0) {other = 3} : i32[3]", {a}), DType::I32, {3},
               {2, 2, 3});
  expectTensor(runOp("aten.bitwise_or.Scalar(%0) {other = 1} : i32[3]", {a}), DType::I32, {3},
               {7, -5, 255});
  expectTensor(runOp("aten.bitwise_xor.Scalar(%0) {other = -1} : i32[3]", {a}), DType::I32, {3},
               {-7, 5, -256});
  // i32 & i64 promotes to i64, as torch does.
  expectTensor(runOp("aten.bitwise_and.Tensor(%0, %1) : i64[3]", {a, i64({1}, {12})}), DType::I64,
               {3}, {4, 8, 12});
}

TEST(Bitwise, NarrowAndUnsignedDtypes) {
  HostTensor u = tensor(DType::U8, {3}, {0, 5, 255});
  expectTensor(runOp("aten.bitwise_not(%0) : u8[3]", {u}), DType::U8, {3}, {255, 250, 0});
  HostTensor s = tensor(DType::I8, {3}, {0, 5, -128});
  expectTensor(runOp("aten.bitwise_not(%0) : i8[3]", {s}), DType::I8, {3}, {-1, -6, 127});
  expectTensor(runOp("aten.bitwise_xor.Scalar(%0) {other = 1} : u8[3]", {u}), DType::U8, {3},
               {1, 4, 254});
}

TEST(Bitwise, BoolOperandsStayBool) {
  HostTensor a = boolean({4}, {0, 0, 1, 1}), b = boolean({4}, {0, 1, 0, 1});
  expectTensor(runOp("aten.bitwise_and.Tensor(%0, %1) : bool[4]", {a, b}), DType::Bool, {4},
               {0, 0, 0, 1});
  expectTensor(runOp("aten.bitwise_or.Tensor(%0, %1) : bool[4]", {a, b}), DType::Bool, {4},
               {0, 1, 1, 1});
  expectTensor(runOp("aten.bitwise_xor.Tensor(%0, %1) : bool[4]", {a, b}), DType::Bool, {4},
               {0, 1, 1, 0});
  // ~True is False, not -2.
  expectTensor(runOp("aten.bitwise_not(%0) : bool[4]", {a}), DType::Bool, {4}, {1, 1, 0, 0});
  expectTensor(runOp("aten.bitwise_xor.Scalar(%0) {other = true} : bool[4]", {b}), DType::Bool, {4},
               {1, 0, 1, 0});
  // A bool tensor with an int number is i64.
  expectTensor(runOp("aten.bitwise_or.Scalar(%0) {other = 2} : i64[4]", {b}), DType::I64, {4},
               {2, 3, 2, 3});
}

TEST(Bitwise, ShiftsAreArithmeticForSignedTypes) {
  HostTensor a = i64({5}, {1, -16, -1, 16, 3}), n = i64({5}, {4, 2, 63, 1, 0});
  expectTensor(runOp("aten.bitwise_left_shift.Tensor(%0, %1) : i64[5]", {a, n}), DType::I64, {5},
               {16, -64, -9223372036854775808.0, 32, 3});
  expectTensor(runOp("aten.bitwise_right_shift.Tensor(%0, %1) : i64[5]", {a, n}), DType::I64, {5},
               {0, -4, -1, 8, 3});
  // Amounts outside [0, width): 0 to the left, the sign fill to the right (ATen's kernels).
  HostTensor big = i64({4}, {64, 100, -1, -5}), v = i64({4}, {-7, 7, -7, 7});
  expectTensor(runOp("aten.bitwise_left_shift.Tensor(%0, %1) : i64[4]", {v, big}), DType::I64, {4},
               {0, 0, 0, 0});
  expectTensor(runOp("aten.bitwise_right_shift.Tensor(%0, %1) : i64[4]", {v, big}), DType::I64, {4},
               {-1, 0, -1, 0});
  // Narrow dtypes wrap at their width: 64 << 1 is -128 in i8, and 8 is past its width.
  HostTensor s = tensor(DType::I8, {3}, {64, -100, 1});
  expectTensor(runOp("aten.bitwise_left_shift.Tensor_Scalar(%0) {other = 1} : i8[3]", {s}),
               DType::I8, {3}, {-128, 56, 2});
  expectTensor(runOp("aten.bitwise_left_shift.Tensor_Scalar(%0) {other = 8} : i8[3]", {s}),
               DType::I8, {3}, {0, 0, 0});
  expectTensor(runOp("aten.bitwise_right_shift.Tensor_Scalar(%0) {other = 3} : i8[3]", {s}),
               DType::I8, {3}, {8, -13, 0});
  expectTensor(runOp("aten.bitwise_right_shift.Tensor_Scalar(%0) {other = 9} : i8[3]", {s}),
               DType::I8, {3}, {0, -1, 0});
  // Unsigned: a logical shift.
  HostTensor u = tensor(DType::U8, {2}, {200, 3});
  expectTensor(runOp("aten.bitwise_right_shift.Tensor_Scalar(%0) {other = 2} : u8[2]", {u}),
               DType::U8, {2}, {50, 0});
  expectTensor(runOp("aten.bitwise_left_shift.Tensor_Scalar(%0) {other = 7} : u8[2]", {u}),
               DType::U8, {2}, {0, 128});
}

TEST(Bitwise, BroadcastsWithSizeOneAndEmptyDims) {
  HostTensor col = i64({2, 1}, {1, -8}), row = i64({1, 3}, {0, 1, 2});
  expectTensor(runOp("aten.bitwise_left_shift.Tensor(%0, %1) : i64[2, 3]", {col, row}), DType::I64,
               {2, 3}, {1, 2, 4, -8, -16, -32});
  expectTensor(runOp("aten.bitwise_right_shift.Tensor(%0, %1) : i64[2, 3]", {col, row}), DType::I64,
               {2, 3}, {1, 0, 0, -8, -4, -2});
  expectTensor(runOp("aten.bitwise_xor.Tensor(%0, %1) : i64[2, 3]", {col, row}), DType::I64, {2, 3},
               {1, 0, 3, -8, -7, -6});
  HostTensor empty(DType::I64, {0, 3});
  expectTensor(runOp("aten.bitwise_and.Tensor(%0, %1) : i64[0, 3]", {empty, row}), DType::I64,
               {0, 3}, {});
  expectTensor(runOp("aten.bitwise_not(%0) : i64[0, 3]", {empty}), DType::I64, {0, 3}, {});
}

TEST(Bitwise, FloatingInputsAreErrors) {
  HostTensor x = f32({2}, {1, 2}), ints = i64({2}, {1, 2});
  EXPECT_EQ(metaError("aten.bitwise_and.Tensor(%0, %1) : f32[2]", {x, ints}),
            "aten.bitwise_and.Tensor: not implemented for f32 inputs; it takes integer or bool "
            "tensors");
  EXPECT_EQ(metaError("aten.bitwise_not(%0) : f32[2]", {x}),
            "aten.bitwise_not: not implemented for f32 inputs; it takes integer or bool tensors");
  // An integer tensor with a floating number promotes to f32, which is refused too.
  EXPECT_EQ(metaError("aten.bitwise_or.Scalar(%0) {other = 1.5} : f32[2]", {ints}),
            "aten.bitwise_or.Scalar: not implemented for f32 inputs; it takes integer or bool "
            "tensors");
  // Shifts take integers only.
  HostTensor b = boolean({2}, {0, 1});
  EXPECT_EQ(metaError("aten.bitwise_left_shift.Tensor(%0, %1) : bool[2]", {b, b}),
            "aten.bitwise_left_shift.Tensor: not implemented for bool inputs; it takes integer "
            "tensors");
}

} // namespace
