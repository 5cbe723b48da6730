// Host tensors and the half/bfloat16 conversions: exhaustive checks over every 16-bit pattern and
// every rounding boundary, element access for every dtype, shape errors, views and copy-on-write.
#include "aotc/tensor/HostTensor.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace aotc;

namespace {

template <typename T> std::string errorOf(llvm::Expected<T> value) {
  if (value)
    return "<no error>";
  return llvm::toString(value.takeError());
}

bool isHalfNaN(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF); }
bool isBFloat16NaN(uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x7F); }

// The value of an IEEE binary format with `mantissaBits` and `bias`, by the definition rather
// than by moving bits around.
double referenceValue(uint16_t bits, int mantissaBits, int exponentMask, int bias) {
  int sign = bits >> 15;
  int exponent = (bits >> mantissaBits) & exponentMask;
  int mantissa = bits & ((1 << mantissaBits) - 1);
  double magnitude;
  if (exponent == exponentMask)
    magnitude = mantissa ? std::numeric_limits<double>::quiet_NaN()
                         : std::numeric_limits<double>::infinity();
  else if (exponent == 0)
    magnitude = std::ldexp(mantissa, 1 - bias - mantissaBits);
  else
    magnitude = std::ldexp((1 << mantissaBits) + mantissa, exponent - bias - mantissaBits);
  return sign ? -magnitude : magnitude;
}

double referenceHalf(uint16_t h) { return referenceValue(h, 10, 0x1F, 15); }
double referenceBFloat16(uint16_t b) { return referenceValue(b, 7, 0xFF, 127); }

// Checks `toBits` at every boundary between two adjacent finite values of a 16-bit format (and
// between the largest finite value and infinity): the midpoint goes to the even neighbour, the
// floats right around it go to the nearer one. Positive and negative.
void checkRoundingBoundaries(uint16_t maxFinite, double (*value)(uint16_t),
                             uint16_t (*toBits)(float), double beyondMax) {
  for (uint16_t lo = 0; lo <= maxFinite; ++lo) {
    uint16_t hi = lo + 1;
    double loValue = value(lo), hiValue = lo == maxFinite ? beyondMax : value(hi);
    // The midpoint has one more significant bit than the format: exact in float.
    auto mid = static_cast<float>((loValue + hiValue) / 2);
    ASSERT_EQ(static_cast<double>(mid), (loValue + hiValue) / 2);
    uint16_t even = (lo & 1) ? hi : lo;
    for (uint16_t sign : {0, 0x8000}) {
      float s = sign ? -1.0f : 1.0f;
      ASSERT_EQ(toBits(s * mid), even | sign) << std::hex << lo;
      ASSERT_EQ(toBits(s * std::nextafter(mid, 0.0f)), lo | sign) << std::hex << lo;
      ASSERT_EQ(toBits(s * std::nextafter(mid, INFINITY)), hi | sign) << std::hex << lo;
    }
  }
}

//===----------------------------------------------------------------------===//
// half
//===----------------------------------------------------------------------===//

TEST(Half, EveryBitPatternWidensToItsValue) {
  for (uint32_t i = 0; i <= 0xFFFF; ++i) {
    auto h = static_cast<uint16_t>(i);
    float f = halfToFloat(h);
    double expected = referenceHalf(h);
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << i;
      ASSERT_EQ(std::signbit(f), bool(h & 0x8000)) << std::hex << i;
    } else {
      ASSERT_EQ(static_cast<double>(f), expected) << std::hex << i;
      ASSERT_EQ(std::signbit(f), bool(h & 0x8000)) << std::hex << i; // -0 stays -0
    }
  }
}

TEST(Half, EveryBitPatternRoundTrips) {
  for (uint32_t i = 0; i <= 0xFFFF; ++i) {
    auto h = static_cast<uint16_t>(i);
    uint16_t back = floatToHalf(halfToFloat(h));
    if (isHalfNaN(h)) {
      EXPECT_TRUE(isHalfNaN(back)) << std::hex << i;
      EXPECT_EQ(back & 0x8000, h & 0x8000) << std::hex << i;
    } else {
      ASSERT_EQ(back, h) << std::hex << i;
    }
  }
}

TEST(Half, RoundsToNearestEvenAtEveryBoundary) {
  // 0x7BFF is 65504; beyond it the next value would be 2^16, so 65520 is the overflow tie.
  checkRoundingBoundaries(0x7BFF, referenceHalf, floatToHalf, 65536.0);
}

TEST(Half, OverflowUnderflowAndSpecials) {
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65519.996f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);
  EXPECT_EQ(floatToHalf(1e6f), 0x7C00);
  EXPECT_EQ(floatToHalf(-1e6f), 0xFC00);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::max()), 0x7C00);
  EXPECT_EQ(floatToHalf(INFINITY), 0x7C00);
  EXPECT_EQ(floatToHalf(-INFINITY), 0xFC00);
  // Subnormals: 2^-24 is the smallest; 2^-25 is the tie with zero, which is even.
  EXPECT_EQ(floatToHalf(0x1p-24f), 0x0001);
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);
  EXPECT_EQ(floatToHalf(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(floatToHalf(0x1.8p-24f), 0x0002); // 1.5 units: tie, to even 2
  EXPECT_EQ(floatToHalf(0x1p-26f), 0x0000);
  EXPECT_EQ(floatToHalf(-0x1p-26f), 0x8000);
  EXPECT_EQ(floatToHalf(0x1p-14f), 0x0400);     // the smallest normal
  EXPECT_EQ(floatToHalf(0x1.ff8p-15f), 0x03FF); // the largest subnormal
  EXPECT_EQ(floatToHalf(0x1.ffcp-15f), 0x0400); // a tie, rounding up out of the subnormals
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xC000);
  // NaN stays NaN, even when the payload sits only in bits half has no room for.
  EXPECT_TRUE(isHalfNaN(floatToHalf(NAN)));
  EXPECT_TRUE(isHalfNaN(floatToHalf(std::bit_cast<float>(0x7F800001u))));
  EXPECT_EQ(floatToHalf(std::bit_cast<float>(0xFF800001u)) & 0x8000, 0x8000);
}

#ifdef __FLT16_MAX__
TEST(Half, AgreesWithTheCompilersFloat16) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2'000'000; ++i) {
    float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(f))
      continue;
    auto expected = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
    ASSERT_EQ(floatToHalf(f), expected) << f;
  }
}
#endif

//===----------------------------------------------------------------------===//
// bfloat16
//===----------------------------------------------------------------------===//

TEST(BFloat16, EveryBitPatternWidensToItsValue) {
  for (uint32_t i = 0; i <= 0xFFFF; ++i) {
    auto b = static_cast<uint16_t>(i);
    float f = bfloat16ToFloat(b);
    double expected = referenceBFloat16(b);
    if (std::isnan(expected))
      ASSERT_TRUE(std::isnan(f)) << std::hex << i;
    else
      ASSERT_EQ(static_cast<double>(f), expected) << std::hex << i;
    ASSERT_EQ(std::signbit(f), bool(b & 0x8000)) << std::hex << i;
  }
}

TEST(BFloat16, EveryBitPatternRoundTrips) {
  for (uint32_t i = 0; i <= 0xFFFF; ++i) {
    auto b = static_cast<uint16_t>(i);
    // bfloat16 NaNs keep their payload: it lies in the bits float keeps.
    ASSERT_EQ(floatToBFloat16(bfloat16ToFloat(b)), b) << std::hex << i;
  }
}

TEST(BFloat16, RoundsToNearestEvenAtEveryBoundary) {
  checkRoundingBoundaries(0x7F7F, referenceBFloat16, floatToBFloat16, 0x1p128);
}

TEST(BFloat16, OverflowAndSpecials) {
  EXPECT_EQ(floatToBFloat16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(floatToBFloat16(INFINITY), 0x7F80);
  EXPECT_EQ(floatToBFloat16(-INFINITY), 0xFF80);
  EXPECT_EQ(floatToBFloat16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBFloat16(-0.0f), 0x8000);
  EXPECT_EQ(floatToBFloat16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_TRUE(isBFloat16NaN(floatToBFloat16(NAN)));
  EXPECT_TRUE(isBFloat16NaN(floatToBFloat16(std::bit_cast<float>(0x7F800001u))));
  EXPECT_TRUE(isBFloat16NaN(floatToBFloat16(std::bit_cast<float>(0xFF80FFFFu))));
}

//===----------------------------------------------------------------------===//
// HostTensor
//===----------------------------------------------------------------------===//

TEST(HostTensor, DefaultIsAnEmptyF32Vector) {
  HostTensor t;
  EXPECT_EQ(t.dtype(), DType::F32);
  EXPECT_EQ(t.shape(), llvm::ArrayRef<int64_t>({0}));
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.nbytes(), 0u);
  EXPECT_FALSE(t.isView());
  EXPECT_TRUE(t == HostTensor(DType::F32, {0}));
}

TEST(HostTensor, OwnedStorageIsZeroedAnd64ByteAligned) {
  std::vector<std::vector<int64_t>> shapes = {{}, {0}, {1}, {3}, {7, 5}, {2, 0, 3}, {1000}};
  for (DType dtype : AllDTypes) {
    for (const auto &shape : shapes) {
      HostTensor t(dtype, shape);
      SCOPED_TRACE(describe(dtype, shape));
      ASSERT_NE(t.data(), nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
      int64_t numel = 1;
      for (int64_t d : shape)
        numel *= d;
      EXPECT_EQ(t.numel(), numel);
      EXPECT_EQ(t.nbytes(), numel * byteSize(dtype));
      EXPECT_EQ(t.rank(), shape.size());
      for (uint8_t b : t.bytes())
        ASSERT_EQ(b, 0);
    }
  }
}

TEST(HostTensor, CreateRejectsNegativeDims) {
  EXPECT_EQ(errorOf(HostTensor::create(DType::F32, {2, -1})), "f32[2, -1] has a negative dim");
  EXPECT_EQ(errorOf(HostTensor::create(DType::I8, {-3})), "i8[-3] has a negative dim");
}

TEST(HostTensor, CreateRejectsSizesBeyond63Bits) {
  int64_t big = int64_t(1) << 62;
  EXPECT_EQ(errorOf(HostTensor::create(DType::I64, {big})),
            "i64[4611686018427387904] is too large (more than 2^63 - 1 bytes)");
  EXPECT_EQ(errorOf(HostTensor::create(DType::I16, {big})),
            "i16[4611686018427387904] is too large (more than 2^63 - 1 bytes)");
  EXPECT_EQ(errorOf(HostTensor::create(DType::F32, {1 << 22, 1 << 22, 1 << 22})),
            "f32[4194304, 4194304, 4194304] is too large (more than 2^63 - 1 bytes)");
  // A zero dim makes the tensor empty but does not excuse the other dims, wherever it is.
  EXPECT_EQ(errorOf(HostTensor::create(DType::U8, {0, big, 4})),
            "u8[0, 4611686018427387904, 4] is too large (more than 2^63 - 1 bytes)");
  EXPECT_EQ(errorOf(HostTensor::create(DType::U8, {big, 4, 0})),
            "u8[4611686018427387904, 4, 0] is too large (more than 2^63 - 1 bytes)");
  // The largest size that fits is fine (checked without allocating it).
  auto size = checkedByteSize(DType::U8, {std::numeric_limits<int64_t>::max()});
  ASSERT_TRUE(static_cast<bool>(size));
  EXPECT_EQ(*size, size_t(std::numeric_limits<int64_t>::max()));
  auto empty = HostTensor::create(DType::F64, {0, int64_t(1) << 40});
  ASSERT_TRUE(static_cast<bool>(empty));
  EXPECT_EQ(empty->numel(), 0);
}

TEST(HostTensor, ScalarsHaveOneElement) {
  HostTensor t(DType::F64, {});
  EXPECT_EQ(t.rank(), 0u);
  EXPECT_EQ(t.numel(), 1);
  EXPECT_EQ(t.nbytes(), 8u);
  t.setDouble(0, 2.5);
  EXPECT_EQ(t.getDouble(0), 2.5);
}

TEST(HostTensor, FloatingDTypes) {
  HostTensor f64(DType::F64, {3});
  f64.setDouble(0, 0.1);
  EXPECT_EQ(f64.getDouble(0), 0.1);
  f64.setInt(1, (int64_t(1) << 53) + 1); // a tie at 2^53: to even
  EXPECT_EQ(f64.getDouble(1), 0x1p53);
  EXPECT_EQ(f64.getInt(1), int64_t(1) << 53);
  f64.setDouble(2, -2.75);
  EXPECT_EQ(f64.getInt(2), -2);

  HostTensor f32(DType::F32, {4});
  f32.setDouble(0, 0.1);
  EXPECT_EQ(f32.getDouble(0), static_cast<double>(0.1f));
  f32.setInt(1, 16777217);
  EXPECT_EQ(f32.getInt(1), 16777216);
  f32.setDouble(2, 1e300);
  EXPECT_EQ(f32.getDouble(2), INFINITY);
  f32.setDouble(3, -1e-300);
  EXPECT_EQ(f32.getDouble(3), 0.0);
  EXPECT_TRUE(std::signbit(f32.getDouble(3)));
  float raw;
  std::memcpy(&raw, f32.data(), 4);
  EXPECT_EQ(raw, 0.1f);

  HostTensor f16(DType::F16, {8});
  f16.setDouble(0, 65504);
  EXPECT_EQ(f16.getDouble(0), 65504);
  f16.setDouble(1, 1e5);
  EXPECT_EQ(f16.getDouble(1), INFINITY);
  f16.setDouble(2, NAN);
  EXPECT_TRUE(std::isnan(f16.getDouble(2)));
  // Rounded once, from the double: through float first, 1 + 2^-11 + 2^-40 would become the tie
  // 1 + 2^-11 and then round down to 1.
  f16.setDouble(3, 1 + 0x1p-11 + 0x1p-40);
  EXPECT_EQ(f16.getDouble(3), 1 + 0x1p-10);
  f16.setInt(4, 2049); // between 2048 and 2050: a tie, to even
  EXPECT_EQ(f16.getInt(4), 2048);
  f16.setInt(5, 2051);
  EXPECT_EQ(f16.getInt(5), 2052);
  f16.setInt(6, 70000);
  EXPECT_EQ(f16.getDouble(6), INFINITY);
  f16.setDouble(7, 0x1p-24); // the smallest subnormal, widened exactly
  EXPECT_EQ(f16.getDouble(7), 0x1p-24);
  uint16_t bits;
  std::memcpy(&bits, f16.data(), 2);
  EXPECT_EQ(bits, 0x7BFF);

  HostTensor bf16(DType::BF16, {5});
  bf16.setDouble(0, 1 + 0x1p-8 + 0x1p-40);
  EXPECT_EQ(bf16.getDouble(0), 1 + 0x1p-7);
  // Through float, 2^24 + 2^16 + 1 would first round to the bfloat16 tie 2^24 + 2^16.
  bf16.setInt(1, (int64_t(1) << 24) + (1 << 16) + 1);
  EXPECT_EQ(bf16.getInt(1), (int64_t(1) << 24) + (1 << 17));
  // And through double, 2^60 + 2^52 + 1 would round to the tie 2^60 + 2^52.
  bf16.setInt(2, (int64_t(1) << 60) + (int64_t(1) << 52) + 1);
  EXPECT_EQ(bf16.getInt(2), (int64_t(1) << 60) + (int64_t(1) << 53));
  bf16.setInt(3, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(bf16.getDouble(3), 0x1p63);
  bf16.setInt(4, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(bf16.getDouble(4), -0x1p63);
}

TEST(HostTensor, FloatToIntConversionsAreDefinedEverywhere) {
  HostTensor t(DType::F32, {5});
  t.setDouble(0, -2.5);
  t.setDouble(1, NAN);
  t.setDouble(2, INFINITY);
  t.setDouble(3, -INFINITY);
  t.setDouble(4, 1e19);
  EXPECT_EQ(t.getInt(0), -2);
  EXPECT_EQ(t.getInt(1), 0);
  EXPECT_EQ(t.getInt(2), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(t.getInt(3), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(t.getInt(4), std::numeric_limits<int64_t>::max());
}

TEST(HostTensor, IntegerDTypes) {
  HostTensor i64(DType::I64, {5});
  i64.setInt(0, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(i64.getInt(0), std::numeric_limits<int64_t>::min());
  i64.setDouble(1, -2.7);
  EXPECT_EQ(i64.getInt(1), -2);
  i64.setDouble(2, 1e30);
  EXPECT_EQ(i64.getInt(2), std::numeric_limits<int64_t>::max());
  i64.setDouble(3, NAN);
  EXPECT_EQ(i64.getInt(3), 0);
  i64.setInt(4, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(i64.getDouble(4), 0x1p63);

  HostTensor i32(DType::I32, {4});
  i32.setInt(0, (int64_t(1) << 32) + 5); // wraps
  EXPECT_EQ(i32.getInt(0), 5);
  i32.setInt(1, -1);
  EXPECT_EQ(i32.getInt(1), -1);
  i32.setDouble(2, -3.9);
  EXPECT_EQ(i32.getInt(2), -3);
  i32.setDouble(3, 3e9); // truncated to int64, then wrapped
  EXPECT_EQ(i32.getInt(3), 3000000000ll - (1ll << 32));
  int32_t raw;
  std::memcpy(&raw, i32.data(), 4);
  EXPECT_EQ(raw, 5);

  HostTensor i16(DType::I16, {2});
  i16.setInt(0, 40000);
  EXPECT_EQ(i16.getInt(0), 40000 - 65536);
  i16.setDouble(1, -32768.9);
  EXPECT_EQ(i16.getDouble(1), -32768);

  HostTensor i8(DType::I8, {2});
  i8.setInt(0, 200);
  EXPECT_EQ(i8.getInt(0), -56);
  i8.setDouble(1, -128.5);
  EXPECT_EQ(i8.getInt(1), -128);

  HostTensor u8(DType::U8, {4});
  u8.setInt(0, -1);
  EXPECT_EQ(u8.getInt(0), 255);
  u8.setInt(1, 256);
  EXPECT_EQ(u8.getInt(1), 0);
  u8.setDouble(2, 255.9);
  EXPECT_EQ(u8.getDouble(2), 255);
  u8.setDouble(3, -1.0);
  EXPECT_EQ(u8.getInt(3), 255);
}

TEST(HostTensor, Bool) {
  HostTensor b(DType::Bool, {6});
  b.setDouble(0, 0.5);
  b.setDouble(1, 0.0);
  b.setDouble(2, NAN); // NaN != 0, as in C
  b.setInt(3, -7);
  b.setInt(4, 0);
  b.setDouble(5, -0.0);
  std::vector<int64_t> expected = {1, 0, 1, 1, 0, 0};
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(b.getInt(i), expected[i]) << i;
    EXPECT_EQ(b.getDouble(i), double(expected[i])) << i;
    EXPECT_EQ(b.data()[i], expected[i]) << i;
  }
  // Bytes other than 0 and 1 (from a file) still read as 0 or 1.
  uint8_t raw[] = {2, 255, 0};
  auto view = HostTensor::view(DType::Bool, {3}, raw, nullptr);
  ASSERT_TRUE(static_cast<bool>(view));
  EXPECT_EQ(view->getInt(0), 1);
  EXPECT_EQ(view->getDouble(1), 1.0);
  EXPECT_EQ(view->getInt(2), 0);
}

TEST(HostTensor, EveryDTypeHoldsSmallIntegersExactly) {
  for (DType dtype : AllDTypes) {
    HostTensor t(dtype, {3});
    int64_t values[] = {0, 1, dtype == DType::U8 || dtype == DType::Bool ? 1 : -1};
    for (int64_t i = 0; i < 3; ++i)
      t.setInt(i, values[i]);
    for (int64_t i = 0; i < 3; ++i) {
      EXPECT_EQ(t.getInt(i), values[i]) << toString(dtype).str();
      EXPECT_EQ(t.getDouble(i), double(values[i])) << toString(dtype).str();
    }
    for (int64_t i = 0; i < 3; ++i)
      t.setDouble(i, double(values[2 - i]));
    for (int64_t i = 0; i < 3; ++i)
      EXPECT_EQ(t.getInt(i), values[2 - i]) << toString(dtype).str();
  }
}

TEST(HostTensor, ViewSizeMustMatch) {
  std::vector<uint8_t> bytes(12);
  EXPECT_EQ(errorOf(HostTensor::view(DType::F32, {2, 3}, bytes, nullptr)),
            "f32[2, 3] needs 24 bytes but the view has 12");
  EXPECT_EQ(errorOf(HostTensor::view(DType::F32, {-2, 3}, bytes, nullptr)),
            "f32[-2, 3] has a negative dim");
  EXPECT_EQ(errorOf(HostTensor::view(DType::U8, {}, {}, nullptr)),
            "u8[] needs 1 bytes but the view has 0");
  auto empty = HostTensor::view(DType::F64, {0, 4}, {}, nullptr);
  ASSERT_TRUE(static_cast<bool>(empty));
  EXPECT_EQ(empty->nbytes(), 0u);
}

TEST(HostTensor, ViewsAreCopiedOnWrite) {
  auto owner = std::make_shared<std::vector<uint8_t>>(8);
  float values[] = {1.5f, -2.0f};
  std::memcpy(owner->data(), values, 8);
  auto view = HostTensor::view(DType::F32, {2}, *owner, owner);
  ASSERT_TRUE(static_cast<bool>(view));
  EXPECT_TRUE(view->isView());
  EXPECT_EQ(view->data(), owner->data());
  EXPECT_EQ(owner.use_count(), 2); // the view keeps the owner alive

  HostTensor copy = *view; // copies of a view share the viewed bytes
  EXPECT_TRUE(copy.isView());
  EXPECT_EQ(copy.data(), owner->data());

  uint8_t *writable = view->mutableData();
  EXPECT_FALSE(view->isView());
  EXPECT_NE(writable, owner->data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(writable) % 64, 0u);
  EXPECT_EQ(view->getDouble(1), -2.0);
  view->setDouble(0, 7.0);
  EXPECT_EQ(view->getDouble(0), 7.0);
  // The viewed bytes, and the other view of them, are untouched.
  float first;
  std::memcpy(&first, owner->data(), 4);
  EXPECT_EQ(first, 1.5f);
  EXPECT_EQ(copy.getDouble(0), 1.5);
  EXPECT_EQ(view->mutableData(), writable); // owned now: no second copy

  // setDouble on a view copies too.
  copy.setInt(1, 3);
  EXPECT_FALSE(copy.isView());
  EXPECT_EQ(copy.getDouble(1), 3.0);
  EXPECT_EQ(copy.getDouble(0), 1.5);
  std::memcpy(&first, owner->data() + 4, 4);
  EXPECT_EQ(first, -2.0f);
  copy = HostTensor();
  *view = HostTensor();
  EXPECT_EQ(owner.use_count(), 1);
}

TEST(HostTensor, CopiesOfOwnedTensorsAreIndependent) {
  HostTensor a(DType::I32, {3});
  a.setInt(0, 1);
  HostTensor b = a;
  EXPECT_NE(b.data(), a.data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  EXPECT_TRUE(a == b);
  b.setInt(0, 2);
  EXPECT_EQ(a.getInt(0), 1);
  EXPECT_FALSE(a == b);
  HostTensor c(DType::F64, {});
  c = a;
  EXPECT_TRUE(c == a);
  c.setInt(2, 9);
  EXPECT_EQ(a.getInt(2), 0);
  const uint8_t *data = a.data();
  HostTensor moved = std::move(a);
  EXPECT_EQ(moved.data(), data);
  // The moved-from tensor is an empty f32[0], not a dangling one.
  EXPECT_TRUE(a == HostTensor()); // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.nbytes(), 0u);
  HostTensor target(DType::U8, {5});
  target = std::move(moved);
  EXPECT_EQ(target.data(), data);
  EXPECT_EQ(target.dtype(), DType::I32);
  EXPECT_EQ(moved.numel(), 0); // NOLINT(bugprone-use-after-move)
}

TEST(HostTensor, EqualityComparesDTypeShapeAndBytes) {
  HostTensor a(DType::I32, {2, 2}), b(DType::I32, {4}), c(DType::F32, {2, 2});
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(a == c); // same zero bytes, other dtype
  auto view = HostTensor::view(DType::I32, {2, 2}, a.bytes(), nullptr);
  ASSERT_TRUE(static_cast<bool>(view));
  EXPECT_TRUE(*view == a);
  EXPECT_TRUE(HostTensor(DType::U8, {0}) == HostTensor(DType::U8, {0}));
  EXPECT_FALSE(HostTensor(DType::U8, {0}) == HostTensor(DType::U8, {0, 1}));
}

TEST(HostTensor, Describe) {
  EXPECT_EQ(describe(DType::F32, {2, 3}), "f32[2, 3]");
  EXPECT_EQ(describe(DType::Bool, {}), "bool[]");
  EXPECT_EQ(describe(DType::BF16, {0}), "bf16[0]");
}

} // namespace
