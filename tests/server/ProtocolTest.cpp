// Unit tests of the server's JSON tensor conversions: half and bfloat16 rounding (the expected
// bits are numpy's and PyTorch's), integer and bool range checks, nesting, round trips.
#include "Protocol.h"

#include <gtest/gtest.h>

#include <cstring>

namespace {

using aotc::server::decodeData;
using aotc::server::encodeData;
using aotc::server::HttpError;
using nlohmann::json;

template <typename T> std::vector<T> decodeAs(const json &data, int32_t dtype) {
  std::vector<unsigned char> bytes =
      decodeData(data, dtype, static_cast<int64_t>(data.size()), "x");
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

int refusal(const json &data, int32_t dtype, int64_t numel) {
  try {
    decodeData(data, dtype, numel, "x");
  } catch (const HttpError &e) {
    return e.status();
  }
  return 0;
}

TEST(Protocol, HalfRoundsToNearestEvenLikeNumpy) {
  // Ties included: 1 + 2^-11, 1 + 3 * 2^-11, 1.5 * 2^-24 and 2.5 * 2^-24 round to even.
  json values =
      json::array({1.0, 65504, 65519, 65520, 1e-8, 3e-8, 5.9604645e-8, -2.5, 0.1, 6.1e-5, -0.0,
                   1.00048828125, 1.00146484375, 8.940696716308594e-08, 1.4901161193847656e-07});
  std::vector<uint16_t> want = {0x3c00, 0x7bff, 0x7bff, 0x7c00, 0x0000, 0x0001, 0x0001, 0xc100,
                                0x2e66, 0x03ff, 0x8000, 0x3c00, 0x3c02, 0x0002, 0x0002};
  EXPECT_EQ(decodeAs<uint16_t>(values, AOTC_DTYPE_F16), want);
  std::vector<uint16_t> bits = want;
  json back = encodeData(bits.data(), AOTC_DTYPE_F16, static_cast<int64_t>(bits.size()));
  EXPECT_EQ(back[0], 1.0);
  EXPECT_EQ(back[1], 65504.0);
  EXPECT_TRUE(back[3].is_null()); // infinity
  EXPECT_EQ(back[5], 5.9604644775390625e-8);
  EXPECT_EQ(back[7], -2.5);
  EXPECT_EQ(decodeAs<uint16_t>(json::array({back[8]}), AOTC_DTYPE_F16)[0], 0x2e66);
}

TEST(Protocol, BFloat16RoundsToNearestEvenLikeTorch) {
  json values = json::array({1.0, 0.1, -2.5, 3.3e38, 1.00390625, 1.01171875});
  std::vector<uint16_t> want = {0x3f80, 0x3dcd, 0xc020, 0x7f78, 0x3f80, 0x3f82};
  EXPECT_EQ(decodeAs<uint16_t>(values, AOTC_DTYPE_BF16), want);
  json back = encodeData(want.data(), AOTC_DTYPE_BF16, static_cast<int64_t>(want.size()));
  EXPECT_EQ(back[2], -2.5);
  EXPECT_EQ(back[5], 1.015625);
}

TEST(Protocol, FloatsRoundTripExactly) {
  std::vector<float> values = {0.1f, -3.4028235e38f, 1.17549435e-38f, 1e-45f, 123456.789f};
  json encoded = encodeData(values.data(), AOTC_DTYPE_F32, static_cast<int64_t>(values.size()));
  EXPECT_EQ(decodeAs<float>(json::parse(encoded.dump()), AOTC_DTYPE_F32), values);
  float nan = std::nanf("");
  EXPECT_TRUE(encodeData(&nan, AOTC_DTYPE_F32, 1)[0].is_null());
}

TEST(Protocol, IntegersAndBoolsAreRangeChecked) {
  EXPECT_EQ(decodeAs<int8_t>(json::array({-128, 127}), AOTC_DTYPE_I8),
            (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(refusal(json::array({128}), AOTC_DTYPE_I8, 1), 400);
  EXPECT_EQ(refusal(json::array({-1}), AOTC_DTYPE_U8, 1), 400);
  EXPECT_EQ(refusal(json::array({1.5}), AOTC_DTYPE_I32, 1), 400);
  EXPECT_EQ(refusal(json::array({9223372036854775808u}), AOTC_DTYPE_I64, 1), 400);
  EXPECT_EQ(decodeAs<int64_t>(json::array({-9223372036854775807ll - 1}), AOTC_DTYPE_I64)[0],
            INT64_MIN);
  EXPECT_EQ(decodeAs<uint8_t>(json::array({true, false, 1, 0}), AOTC_DTYPE_BOOL),
            (std::vector<uint8_t>{1, 0, 1, 0}));
  EXPECT_EQ(refusal(json::array({2}), AOTC_DTYPE_BOOL, 1), 400);
  EXPECT_EQ(refusal(json::array({true}), AOTC_DTYPE_F32, 1), 400);
  std::vector<int16_t> shorts = {-7, 300};
  EXPECT_EQ(encodeData(shorts.data(), AOTC_DTYPE_I16, 2), (json::array({-7, 300})));
}

TEST(Protocol, NestedDataIsRowMajorAndCounted) {
  json nested = json::parse("[[1, 2, 3], [4, 5, 6]]");
  std::vector<unsigned char> bytes = decodeData(nested, AOTC_DTYPE_I32, 6, "x");
  std::vector<int32_t> values(6);
  std::memcpy(values.data(), bytes.data(), bytes.size());
  EXPECT_EQ(values, (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(refusal(nested, AOTC_DTYPE_I32, 5), 400);
  EXPECT_EQ(refusal(json(3), AOTC_DTYPE_I32, 1), 400);
  json deep = json::array({1});
  for (int i = 0; i < 100; ++i)
    deep = json::array({deep});
  EXPECT_EQ(refusal(deep, AOTC_DTYPE_I32, 1), 400);
}

} // namespace
