// KServe v2 JSON tensors <-> dense aotc buffers: datatype names, value checks, half and bfloat16
// rounding.
#include "Protocol.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace aotc::server {
namespace {

using nlohmann::json;

struct DatatypeName {
  int32_t dtype;
  const char *name;
};
constexpr DatatypeName kDatatypes[] = {
    {AOTC_DTYPE_F32, "FP32"},  {AOTC_DTYPE_F64, "FP64"},  {AOTC_DTYPE_F16, "FP16"},
    {AOTC_DTYPE_BF16, "BF16"}, {AOTC_DTYPE_I64, "INT64"}, {AOTC_DTYPE_I32, "INT32"},
    {AOTC_DTYPE_I16, "INT16"}, {AOTC_DTYPE_I8, "INT8"},   {AOTC_DTYPE_U8, "UINT8"},
    {AOTC_DTYPE_BOOL, "BOOL"},
};

/// Round to nearest even, as PyTorch and numpy convert.
uint16_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)
    return sign | 0x7e00u;
  // 65520 and above round to infinity.
  if (magnitude >= 0x477ff000u)
    return sign | 0x7c00u;
  if (magnitude < 0x38800000u) {
    // Below the smallest normal half: a multiple of 2^-24; scaling by 2^24 is exact.
    float scaled;
    std::memcpy(&scaled, &magnitude, 4);
    return sign | static_cast<uint16_t>(std::nearbyint(scaled * 16777216.0f));
  }
  uint32_t half = ((((magnitude >> 23) - 127 + 15) << 10) | ((magnitude & 0x7fffffu) >> 13));
  uint32_t rest = magnitude & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
    ++half; // a carry into the exponent is the right result
  return sign | static_cast<uint16_t>(half);
}

float halfToFloat(uint16_t half) {
  uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1fu, mantissa = half & 0x3ffu;
  if (exponent == 0) {
    float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  uint32_t bits = sign | (exponent == 31 ? 0x7f800000u | (mantissa << 13)
                                         : ((exponent - 15 + 127) << 23) | (mantissa << 13));
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

uint16_t floatToBFloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

float bfloat16ToFloat(uint16_t value) {
  uint32_t bits = static_cast<uint32_t>(value) << 16;
  float result;
  std::memcpy(&result, &bits, 4);
  return result;
}

template <typename T> void store(unsigned char *out, T value) {
  std::memcpy(out, &value, sizeof value);
}

bool isNumber(const Scalar &v) {
  return v.kind == Scalar::Kind::Integer || v.kind == Scalar::Kind::Unsigned ||
         v.kind == Scalar::Kind::Float;
}

double number(const Scalar &v) {
  switch (v.kind) {
  case Scalar::Kind::Integer:
    return static_cast<double>(v.integer);
  case Scalar::Kind::Unsigned:
    return static_cast<double>(v.unsignedInteger);
  default:
    return v.floating;
  }
}

template <typename T> bool storeInteger(unsigned char *out, const Scalar &v) {
  if (v.kind == Scalar::Kind::Unsigned) {
    if (v.unsignedInteger > static_cast<uint64_t>(std::numeric_limits<T>::max()))
      return false;
    store(out, static_cast<T>(v.unsignedInteger));
    return true;
  }
  if (v.kind != Scalar::Kind::Integer ||
      v.integer < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
      (v.integer > 0 &&
       static_cast<uint64_t>(v.integer) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
    return false;
  store(out, static_cast<T>(v.integer));
  return true;
}

template <typename T, typename Convert>
json encodeAs(const void *data, int64_t numel, Convert convert) {
  json array = json::array();
  auto &values = array.get_ref<json::array_t &>();
  values.reserve(static_cast<size_t>(numel));
  const unsigned char *bytes = static_cast<const unsigned char *>(data);
  for (int64_t i = 0; i < numel; ++i) {
    T element;
    std::memcpy(&element, bytes + i * sizeof(T), sizeof(T));
    values.emplace_back(convert(element));
  }
  return array;
}

json floatValue(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

} // namespace

const char *kserveDatatype(int32_t dtype) {
  for (const DatatypeName &d : kDatatypes)
    if (d.dtype == dtype)
      return d.name;
  return nullptr;
}

int32_t dtypeOfDatatype(std::string_view datatype) {
  for (const DatatypeName &d : kDatatypes)
    if (datatype == d.name)
      return d.dtype;
  return 0;
}

size_t elementSize(int32_t dtype) {
  switch (dtype) {
  case AOTC_DTYPE_F64:
  case AOTC_DTYPE_I64:
    return 8;
  case AOTC_DTYPE_F32:
  case AOTC_DTYPE_I32:
    return 4;
  case AOTC_DTYPE_F16:
  case AOTC_DTYPE_BF16:
  case AOTC_DTYPE_I16:
    return 2;
  default:
    return 1;
  }
}

bool storeElement(unsigned char *out, int32_t dtype, const Scalar &value) {
  bool numeric = isNumber(value);
  switch (dtype) {
  case AOTC_DTYPE_F32:
    if (numeric)
      store(out, static_cast<float>(number(value)));
    return numeric;
  case AOTC_DTYPE_F64:
    if (numeric)
      store(out, number(value));
    return numeric;
  case AOTC_DTYPE_F16:
    if (numeric)
      store(out, floatToHalf(static_cast<float>(number(value))));
    return numeric;
  case AOTC_DTYPE_BF16:
    if (numeric)
      store(out, floatToBFloat16(static_cast<float>(number(value))));
    return numeric;
  case AOTC_DTYPE_I64:
    return storeInteger<int64_t>(out, value);
  case AOTC_DTYPE_I32:
    return storeInteger<int32_t>(out, value);
  case AOTC_DTYPE_I16:
    return storeInteger<int16_t>(out, value);
  case AOTC_DTYPE_I8:
    return storeInteger<int8_t>(out, value);
  case AOTC_DTYPE_U8:
    return storeInteger<uint8_t>(out, value);
  case AOTC_DTYPE_BOOL: {
    bool isBool = value.kind == Scalar::Kind::Boolean;
    bool zeroOrOne =
        (value.kind == Scalar::Kind::Integer && (value.integer == 0 || value.integer == 1)) ||
        (value.kind == Scalar::Kind::Unsigned && value.unsignedInteger <= 1);
    if (!isBool && !zeroOrOne)
      return false;
    store(out, static_cast<uint8_t>(isBool ? value.boolean : number(value) != 0));
    return true;
  }
  default:
    return false;
  }
}

json encodeData(const void *data, int32_t dtype, int64_t numel) {
  switch (dtype) {
  case AOTC_DTYPE_F32:
    return encodeAs<float>(data, numel, [](float v) { return floatValue(v); });
  case AOTC_DTYPE_F64:
    return encodeAs<double>(data, numel, [](double v) { return floatValue(v); });
  case AOTC_DTYPE_F16:
    return encodeAs<uint16_t>(data, numel, [](uint16_t v) { return floatValue(halfToFloat(v)); });
  case AOTC_DTYPE_BF16:
    return encodeAs<uint16_t>(data, numel,
                              [](uint16_t v) { return floatValue(bfloat16ToFloat(v)); });
  case AOTC_DTYPE_I64:
    return encodeAs<int64_t>(data, numel, [](int64_t v) { return json(v); });
  case AOTC_DTYPE_I32:
    return encodeAs<int32_t>(data, numel, [](int32_t v) { return json(v); });
  case AOTC_DTYPE_I16:
    return encodeAs<int16_t>(data, numel, [](int16_t v) { return json(v); });
  case AOTC_DTYPE_I8:
    return encodeAs<int8_t>(data, numel, [](int8_t v) { return json(v); });
  case AOTC_DTYPE_U8:
    return encodeAs<uint8_t>(data, numel, [](uint8_t v) { return json(v); });
  case AOTC_DTYPE_BOOL:
    return encodeAs<uint8_t>(data, numel, [](uint8_t v) { return json(v != 0); });
  default:
    throw HttpError(500, "output of unknown dtype " + std::to_string(dtype));
  }
}

} // namespace aotc::server
