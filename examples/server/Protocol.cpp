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

// Deeper nesting than any tensor rank is refused before it can exhaust the stack.
constexpr int kMaxNesting = 64;

void countValues(const json &data, int depth, int64_t &count, const std::string &input) {
  if (!data.is_array()) {
    ++count;
    return;
  }
  if (depth > kMaxNesting)
    throw HttpError(400, "input \"" + input + "\": \"data\" is nested deeper than " +
                             std::to_string(kMaxNesting) + " arrays");
  for (const json &element : data)
    countValues(element, depth + 1, count, input);
}

class Decoder {
public:
  Decoder(int32_t dtype, int64_t numel, const std::string &input)
      : dtype_(dtype), input_(input), size_(elementSize(dtype)),
        bytes_(static_cast<size_t>(numel) * size_) {}

  void add(const json &data) {
    if (data.is_array()) {
      for (const json &element : data)
        add(element);
      return;
    }
    unsigned char *out = bytes_.data() + index_ * size_;
    switch (dtype_) {
    case AOTC_DTYPE_F32:
      store(out, static_cast<float>(number(data)));
      break;
    case AOTC_DTYPE_F64:
      store(out, number(data));
      break;
    case AOTC_DTYPE_F16:
      store(out, floatToHalf(static_cast<float>(number(data))));
      break;
    case AOTC_DTYPE_BF16:
      store(out, floatToBFloat16(static_cast<float>(number(data))));
      break;
    case AOTC_DTYPE_I64:
      store(out, integer<int64_t>(data));
      break;
    case AOTC_DTYPE_I32:
      store(out, integer<int32_t>(data));
      break;
    case AOTC_DTYPE_I16:
      store(out, integer<int16_t>(data));
      break;
    case AOTC_DTYPE_I8:
      store(out, integer<int8_t>(data));
      break;
    case AOTC_DTYPE_U8:
      store(out, integer<uint8_t>(data));
      break;
    case AOTC_DTYPE_BOOL:
      store(out, static_cast<uint8_t>(boolean(data)));
      break;
    }
    ++index_;
  }

  std::vector<unsigned char> take() { return std::move(bytes_); }

private:
  template <typename T> static void store(unsigned char *out, T value) {
    std::memcpy(out, &value, sizeof value);
  }

  [[noreturn]] void reject(const json &value) const {
    std::string text = value.dump();
    if (text.size() > 40)
      text = text.substr(0, 40) + "...";
    throw HttpError(400, "input \"" + input_ + "\": data[" + std::to_string(index_) + "] = " +
                             text + " is not a valid " + kserveDatatype(dtype_) + " value");
  }

  double number(const json &value) const {
    if (!value.is_number())
      reject(value);
    return value.get<double>();
  }

  template <typename T> T integer(const json &value) const {
    if (value.is_number_unsigned()) {
      uint64_t v = value.get<uint64_t>();
      if (v > static_cast<uint64_t>(std::numeric_limits<T>::max()))
        reject(value);
      return static_cast<T>(v);
    }
    if (!value.is_number_integer())
      reject(value);
    int64_t v = value.get<int64_t>();
    if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        (v > 0 && static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
      reject(value);
    return static_cast<T>(v);
  }

  bool boolean(const json &value) const {
    if (value.is_boolean())
      return value.get<bool>();
    if (value.is_number_integer() && (value.get<int64_t>() == 0 || value.get<int64_t>() == 1))
      return value.get<int64_t>() == 1;
    reject(value);
  }

  int32_t dtype_;
  const std::string &input_;
  size_t size_;
  std::vector<unsigned char> bytes_;
  size_t index_ = 0;
};

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

std::vector<unsigned char> decodeData(const json &data, int32_t dtype, int64_t numel,
                                      const std::string &input) {
  if (!data.is_array())
    throw HttpError(400, "input \"" + input + "\": \"data\" must be an array");
  int64_t count = 0;
  countValues(data, 0, count, input);
  if (count != numel)
    throw HttpError(400, "input \"" + input + "\": \"data\" holds " + std::to_string(count) +
                             " values, its shape needs " + std::to_string(numel));
  Decoder decoder(dtype, numel, input);
  decoder.add(data);
  return decoder.take();
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
