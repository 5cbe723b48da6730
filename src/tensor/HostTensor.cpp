// Host tensors (64-byte-aligned owned storage or read-only views with copy-on-write) and the
// element conversions they use, including IEEE half and bfloat16 rounding.
#include "aotc/tensor/HostTensor.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MathExtras.h"

#include <fmt/format.h>

#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

namespace aotc {

namespace {

// The widest vector load; owned storage starts at a multiple of it.
constexpr size_t StorageAlignment = 64;

llvm::Error makeError(std::string msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

// Zero-filled storage of at least `n` bytes (never a null pointer, even for 0), or null when the
// allocation fails.
std::shared_ptr<uint8_t> allocate(size_t n) {
  size_t size = llvm::alignTo(std::max<size_t>(n, 1), StorageAlignment);
  void *p = ::operator new(size, std::align_val_t(StorageAlignment), std::nothrow);
  if (!p)
    return nullptr;
  std::memset(p, 0, size);
  return std::shared_ptr<uint8_t>(static_cast<uint8_t *>(p), [](uint8_t *q) {
    ::operator delete(q, std::align_val_t(StorageAlignment));
  });
}

// The element count and byte size of dtype x shape. Zero dims are skipped in the overflow check
// (as numpy does), so whether a shape is too large does not depend on the order of its dims.
struct Extent {
  int64_t numel;
  uint64_t bytes;
};

llvm::Expected<Extent> extentOf(DType dtype, llvm::ArrayRef<int64_t> shape) {
  uint64_t bytes = byteSize(dtype);
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0)
      return makeError(fmt::format("{} has a negative dim", describe(dtype, shape)));
    if (d == 0) {
      empty = true;
      continue;
    }
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes) ||
        bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return makeError(
          fmt::format("{} is too large (more than 2^63 - 1 bytes)", describe(dtype, shape)));
  }
  if (empty)
    return Extent{0, 0};
  return Extent{static_cast<int64_t>(bytes / byteSize(dtype)), bytes};
}

template <typename T> T load(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T> void store(uint8_t *p, T v) { std::memcpy(p, &v, sizeof(T)); }

// Float-to-integer conversion without undefined behaviour: truncation toward zero, NaN -> 0,
// saturation at the int64 limits.
int64_t saturatingToInt64(double v) {
  if (std::isnan(v))
    return 0;
  // 2^63 is exactly representable; every double below it converts.
  if (v >= 0x1p63)
    return std::numeric_limits<int64_t>::max();
  if (v < -0x1p63)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

// Rounds to float with "round to odd": an inexact result gets its last mantissa bit set. A value
// rounded to odd at >= p + 2 bits and then to nearest even at p bits is rounded correctly, which
// plain double -> float -> half rounding is not (the first rounding can create a false tie).
float roundToOddFloat(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(v) || static_cast<double>(f) == v)
    return f;
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 1) == 0) {
    // Step one ulp toward v: down in magnitude if f overshot it, up otherwise. From an infinity
    // (v beyond FLT_MAX) this gives FLT_MAX, which keeps the overflow.
    bool overshot = std::fabs(static_cast<double>(f)) > std::fabs(v);
    bits = overshot ? bits - 1 : bits + 1;
  }
  return std::bit_cast<float>(bits);
}

// int64 -> double with round to odd (exact below 2^53), so that narrowing it further rounds once.
double roundToOddDouble(int64_t v) {
  uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  int width = 64 - std::countl_zero(mag);
  if (width > 53) {
    int drop = width - 53;
    uint64_t sticky = (mag & ((uint64_t(1) << drop) - 1)) != 0;
    double d = std::ldexp(static_cast<double>((mag >> drop) | sticky), drop);
    return v < 0 ? -d : d;
  }
  return static_cast<double>(v);
}

template <typename T> T wrapTo(int64_t v) {
  // C++20 defines integer narrowing as modulo 2^bits.
  return static_cast<T>(v);
}

} // namespace

//===----------------------------------------------------------------------===//
// half and bfloat16
//===----------------------------------------------------------------------===//

uint16_t floatToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  auto sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  uint32_t mag = x & 0x7FFFFFFF;
  if (mag >= 0x7F800000) {
    if (mag == 0x7F800000)
      return sign | 0x7C00;
    // Keep the payload's top bits; a payload only in the dropped bits must still be a NaN.
    auto payload = static_cast<uint16_t>((mag >> 13) & 0x3FF);
    return sign | 0x7C00 | (payload ? payload : 0x200);
  }
  // 65520 is the tie between 65504 (the largest half) and 2^16; it and all above round to inf.
  if (mag >= 0x477FF000)
    return sign | 0x7C00;
  auto roundShift = [](uint32_t m, unsigned shift) {
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    return q + (rem > half || (rem == half && (q & 1)));
  };
  uint32_t exponent = mag >> 23;
  if (exponent < 113) {
    // Below 2^-14: a half subnormal, in units of 2^-24. Below 2^-25 everything rounds to zero.
    if (exponent < 102)
      return sign;
    uint32_t m = (mag & 0x7FFFFF) | 0x800000; // value = m * 2^(exponent - 150)
    return sign | static_cast<uint16_t>(roundShift(m, 126 - exponent));
  }
  // Rebias the exponent (127 -> 15) and round the mantissa from 23 to 10 bits; a carry out of the
  // mantissa correctly bumps the exponent.
  return sign | static_cast<uint16_t>(roundShift(mag - (112u << 23), 13));
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  if (exponent == 0x1F)
    return std::bit_cast<float>(sign | 0x7F800000 | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    float v = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t floatToBFloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFF) > 0x7F800000) {
    auto top = static_cast<uint16_t>(x >> 16);
    return (top & 0x7F) ? top : static_cast<uint16_t>(top | 0x40);
  }
  // Round to nearest even on the dropped 16 bits; overflow past the largest finite value carries
  // into the exponent and gives inf, as it should.
  uint32_t rounding = 0x7FFF + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float bfloat16ToFloat(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

llvm::Expected<size_t> checkedByteSize(DType dtype, llvm::ArrayRef<int64_t> shape) {
  auto extent = extentOf(dtype, shape);
  if (!extent)
    return extent.takeError();
  return static_cast<size_t>(extent->bytes);
}

std::string describe(DType dtype, llvm::ArrayRef<int64_t> shape) {
  // By hand, since fmt::join of int64_t trips a GCC 12 false -Wstringop-overflow.
  std::string s = toString(dtype).str() + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// HostTensor
//===----------------------------------------------------------------------===//

HostTensor::HostTensor() : Shape{0} {}

HostTensor::HostTensor(DType dtype, llvm::ArrayRef<int64_t> shape) {
  auto tensor = create(dtype, shape);
  if (!tensor) {
    std::string msg = llvm::toString(tensor.takeError());
    llvm::report_fatal_error(llvm::Twine("HostTensor: ") + msg);
  }
  *this = std::move(*tensor);
}

llvm::Expected<HostTensor> HostTensor::create(DType dtype, llvm::ArrayRef<int64_t> shape) {
  auto extent = extentOf(dtype, shape);
  if (!extent)
    return extent.takeError();
  std::shared_ptr<uint8_t> storage = allocate(extent->bytes);
  if (!storage)
    return makeError(
        fmt::format("cannot allocate {} bytes for {}", extent->bytes, describe(dtype, shape)));
  HostTensor t;
  t.DT = dtype;
  t.Shape.assign(shape.begin(), shape.end());
  t.Numel = extent->numel;
  t.Data = storage.get();
  t.Storage = std::move(storage);
  return t;
}

llvm::Expected<HostTensor> HostTensor::view(DType dtype, llvm::ArrayRef<int64_t> shape,
                                            llvm::ArrayRef<uint8_t> bytes,
                                            std::shared_ptr<const void> keepAlive) {
  auto extent = extentOf(dtype, shape);
  if (!extent)
    return extent.takeError();
  if (bytes.size() != extent->bytes)
    return makeError(fmt::format("{} needs {} bytes but the view has {}", describe(dtype, shape),
                                 extent->bytes, bytes.size()));
  HostTensor t;
  t.DT = dtype;
  t.Shape.assign(shape.begin(), shape.end());
  t.Numel = extent->numel;
  // Views are never written through (mutableData() copies first), so dropping const is safe.
  t.Data = const_cast<uint8_t *>(bytes.data());
  t.Storage = std::move(keepAlive);
  t.ReadOnly = true;
  return t;
}

HostTensor::HostTensor(const HostTensor &other)
    : DT(other.DT), Shape(other.Shape), Numel(other.Numel), Storage(other.Storage),
      Data(other.Data), ReadOnly(other.ReadOnly) {
  if (!ReadOnly && Data) {
    std::shared_ptr<uint8_t> storage = allocate(nbytes());
    if (!storage)
      llvm::report_bad_alloc_error("HostTensor: cannot copy a tensor");
    std::memcpy(storage.get(), other.Data, nbytes());
    Data = storage.get();
    Storage = std::move(storage);
  }
}

HostTensor &HostTensor::operator=(const HostTensor &other) {
  if (this != &other)
    *this = HostTensor(other);
  return *this;
}

HostTensor::HostTensor(HostTensor &&other) noexcept
    : DT(std::exchange(other.DT, DType::F32)), Shape(std::exchange(other.Shape, {0})),
      Numel(std::exchange(other.Numel, 0)), Storage(std::move(other.Storage)),
      Data(std::exchange(other.Data, nullptr)), ReadOnly(std::exchange(other.ReadOnly, false)) {}

HostTensor &HostTensor::operator=(HostTensor &&other) noexcept {
  // Through a temporary, so that `other` is left empty and a self-move keeps the value.
  HostTensor moved(std::move(other));
  std::swap(DT, moved.DT);
  std::swap(Shape, moved.Shape);
  std::swap(Numel, moved.Numel);
  std::swap(Storage, moved.Storage);
  std::swap(Data, moved.Data);
  std::swap(ReadOnly, moved.ReadOnly);
  return *this;
}

uint8_t *HostTensor::mutableData() {
  if (ReadOnly) {
    std::shared_ptr<uint8_t> storage = allocate(nbytes());
    if (!storage)
      llvm::report_bad_alloc_error("HostTensor: cannot copy a view");
    if (nbytes())
      std::memcpy(storage.get(), Data, nbytes());
    Data = storage.get();
    Storage = std::move(storage);
    ReadOnly = false;
  }
  return Data;
}

double HostTensor::getDouble(int64_t i) const {
  assert(i >= 0 && i < Numel && "element index out of range");
  const uint8_t *p = Data + static_cast<size_t>(i) * byteSize(DT);
  switch (DT) {
  case DType::F64:
    return load<double>(p);
  case DType::F32:
    return load<float>(p);
  case DType::F16:
    return halfToFloat(load<uint16_t>(p));
  case DType::BF16:
    return bfloat16ToFloat(load<uint16_t>(p));
  case DType::I64:
    return static_cast<double>(load<int64_t>(p));
  case DType::I32:
    return load<int32_t>(p);
  case DType::I16:
    return load<int16_t>(p);
  case DType::I8:
    return load<int8_t>(p);
  case DType::U8:
    return load<uint8_t>(p);
  case DType::Bool:
    return load<uint8_t>(p) != 0;
  }
  llvm_unreachable("unknown dtype");
}

int64_t HostTensor::getInt(int64_t i) const {
  assert(i >= 0 && i < Numel && "element index out of range");
  const uint8_t *p = Data + static_cast<size_t>(i) * byteSize(DT);
  switch (DT) {
  case DType::F64:
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    return saturatingToInt64(getDouble(i));
  case DType::I64:
    return load<int64_t>(p);
  case DType::I32:
    return load<int32_t>(p);
  case DType::I16:
    return load<int16_t>(p);
  case DType::I8:
    return load<int8_t>(p);
  case DType::U8:
    return load<uint8_t>(p);
  case DType::Bool:
    return load<uint8_t>(p) != 0;
  }
  llvm_unreachable("unknown dtype");
}

void HostTensor::setDouble(int64_t i, double v) {
  assert(i >= 0 && i < Numel && "element index out of range");
  uint8_t *p = mutableData() + static_cast<size_t>(i) * byteSize(DT);
  switch (DT) {
  case DType::F64:
    return store(p, v);
  case DType::F32:
    return store(p, static_cast<float>(v));
  case DType::F16:
    return store(p, floatToHalf(roundToOddFloat(v)));
  case DType::BF16:
    return store(p, floatToBFloat16(roundToOddFloat(v)));
  case DType::Bool:
    return store<uint8_t>(p, v != 0);
  default:
    return setInt(i, saturatingToInt64(v));
  }
}

void HostTensor::setInt(int64_t i, int64_t v) {
  assert(i >= 0 && i < Numel && "element index out of range");
  uint8_t *p = mutableData() + static_cast<size_t>(i) * byteSize(DT);
  switch (DT) {
  case DType::F64:
    return store(p, static_cast<double>(v));
  case DType::F32:
    return store(p, static_cast<float>(v));
  case DType::F16:
    return store(p, floatToHalf(roundToOddFloat(roundToOddDouble(v))));
  case DType::BF16:
    return store(p, floatToBFloat16(roundToOddFloat(roundToOddDouble(v))));
  case DType::I64:
    return store(p, v);
  case DType::I32:
    return store(p, wrapTo<int32_t>(v));
  case DType::I16:
    return store(p, wrapTo<int16_t>(v));
  case DType::I8:
    return store(p, wrapTo<int8_t>(v));
  case DType::U8:
    return store(p, wrapTo<uint8_t>(v));
  case DType::Bool:
    return store<uint8_t>(p, v != 0);
  }
  llvm_unreachable("unknown dtype");
}

bool operator==(const HostTensor &a, const HostTensor &b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape())
    return false;
  // memcmp must not see the null data of an empty default tensor.
  return a.nbytes() == 0 || std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

double roundToFloat(DType to, double v) {
  switch (to) {
  case DType::F64:
    return v;
  case DType::F32:
    return static_cast<float>(v);
  case DType::F16:
    return halfToFloat(floatToHalf(static_cast<float>(v)));
  case DType::BF16:
    return bfloat16ToFloat(floatToBFloat16(static_cast<float>(v)));
  default:
    assert(false && "roundToFloat needs a floating dtype");
    return v;
  }
}

int64_t wrapInt(DType to, int64_t v) {
  // C++20 defines narrowing integer conversions as modular.
  switch (to) {
  case DType::I64:
    return v;
  case DType::I32:
    return static_cast<int32_t>(v);
  case DType::I16:
    return static_cast<int16_t>(v);
  case DType::I8:
    return static_cast<int8_t>(v);
  case DType::U8:
    return static_cast<uint8_t>(v);
  case DType::Bool:
    return v != 0;
  default:
    assert(false && "wrapInt needs an integer or bool dtype");
    return v;
  }
}

} // namespace aotc
