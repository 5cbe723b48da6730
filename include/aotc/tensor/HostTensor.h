// A dense, contiguous (C order) tensor in host memory with a concrete shape: what the reference
// interpreter computes on, and what .npy and safetensors files are read into and written from.
#ifndef AOTC_TENSOR_HOSTTENSOR_H
#define AOTC_TENSOR_HOSTTENSOR_H

#include "aotc/ir/DType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace aotc {

class HostTensor {
public:
  /// An empty f32 tensor of shape [0].
  HostTensor();
  /// Owned storage, zero-filled, 64-byte aligned. Shapes must be non-negative and their byte size
  /// must fit in 63 bits (use create() for untrusted shapes).
  HostTensor(DType dtype, llvm::ArrayRef<int64_t> shape);
  /// Like the constructor, but an error for negative dims or a byte size that overflows.
  static llvm::Expected<HostTensor> create(DType dtype, llvm::ArrayRef<int64_t> shape);
  /// A read-only view of `bytes` (e.g. an mmapped weight); `keepAlive` owns the memory.
  /// `bytes.size()` must equal byteSize(dtype) * numel(shape).
  static llvm::Expected<HostTensor> view(DType dtype, llvm::ArrayRef<int64_t> shape,
                                         llvm::ArrayRef<uint8_t> bytes,
                                         std::shared_ptr<const void> keepAlive);

  /// Copies of an owned tensor own a copy of its bytes (value semantics); copies of a view share
  /// the viewed memory, which is read-only. Moves are cheap and leave an empty f32[0] behind.
  HostTensor(const HostTensor &other);
  HostTensor &operator=(const HostTensor &other);
  HostTensor(HostTensor &&other) noexcept;
  HostTensor &operator=(HostTensor &&other) noexcept;
  ~HostTensor() = default;

  DType dtype() const { return DT; }
  llvm::ArrayRef<int64_t> shape() const { return Shape; }
  size_t rank() const { return Shape.size(); }
  int64_t numel() const { return Numel; }
  size_t nbytes() const { return static_cast<size_t>(Numel) * byteSize(DT); }
  bool isView() const { return ReadOnly; }

  const uint8_t *data() const { return Data; }
  /// Writable bytes; a view is copied into owned storage first.
  uint8_t *mutableData();
  llvm::ArrayRef<uint8_t> bytes() const { return {Data, nbytes()}; }

  /// Element `i` (flat, C order) converted to double / int64; bool is 0 or 1, f16 and bf16 are
  /// widened exactly. getInt truncates floats toward zero, saturating at the int64 limits, and
  /// gives 0 for NaN (where a C cast would be undefined).
  double getDouble(int64_t i) const;
  int64_t getInt(int64_t i) const;
  /// Stores `v` converted to the dtype as a C cast would (round to nearest even for f16/bf16,
  /// nonzero -> true for bool, truncation toward zero for integers). Where a C cast would be
  /// undefined, the result is defined: NaN becomes 0, other doubles saturate to int64 first, and
  /// integers wrap modulo 2^bits into narrower types (as C++20 defines for integer casts).
  void setDouble(int64_t i, double v);
  void setInt(int64_t i, int64_t v);

  /// Same dtype, shape and bytes.
  friend bool operator==(const HostTensor &a, const HostTensor &b);

private:
  DType DT = DType::F32;
  std::vector<int64_t> Shape;
  int64_t Numel = 0;
  std::shared_ptr<const void> Storage;
  uint8_t *Data = nullptr;
  bool ReadOnly = false;
};

/// IEEE half and bfloat16 conversions (round to nearest even; NaN stays NaN).
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
uint16_t floatToBFloat16(float f);
float bfloat16ToFloat(uint16_t b);

/// `v` rounded to a floating dtype; f16 and bf16 go through f32 as c10::Half does.
double roundToFloat(DType to, double v);
/// `v` wrapped to an integer dtype (two's complement), or `v != 0` for bool.
int64_t wrapInt(DType to, int64_t v);

/// The byte size of a dtype x shape tensor, or the error create() gives for it (a negative dim,
/// more than 2^63 - 1 bytes). Zero dims do not hide an overflow of the other dims.
llvm::Expected<size_t> checkedByteSize(DType dtype, llvm::ArrayRef<int64_t> shape);

/// `f32[2, 3]`
std::string describe(DType dtype, llvm::ArrayRef<int64_t> shape);

} // namespace aotc

#endif
