// Element conversions with PyTorch's cast semantics, tensor creation, and the index helpers the
// interpreter's kernels share (strided views, broadcasting).
#include "Kernels.h"

#include "llvm/ADT/StringExtras.h"

#include <cassert>
#include <cmath>
#include <cstring>

namespace aotc::interp {

llvm::Error makeError(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

DType Scalar::numberDType() const {
  switch (kind) {
  case Kind::Float:
    return DType::F64;
  case Kind::Bool:
    return DType::Bool;
  case Kind::Int:
    break;
  }
  return DType::I64;
}

int64_t doubleToInt(DType to, double v) {
  if (to == DType::Bool)
    return v != 0;
  // cvttsd2si gives the "integer indefinite" value for NaN and out-of-range inputs; casting here
  // instead would be undefined behaviour.
  if (to == DType::I64)
    return v >= -0x1p63 && v < 0x1p63 ? static_cast<int64_t>(v) : INT64_MIN;
  int64_t i32 = v > -0x1p31 - 1 && v < 0x1p31 ? static_cast<int64_t>(v) : INT32_MIN;
  return wrapInt(to, i32);
}

double intToFloat(DType to, int64_t v) {
  switch (to) {
  case DType::F64:
    return static_cast<double>(v);
  case DType::F32:
    return static_cast<float>(v);
  case DType::F16:
    return halfToFloat(floatToHalf(static_cast<float>(v)));
  case DType::BF16:
    return bfloat16ToFloat(floatToBFloat16(static_cast<float>(v)));
  default:
    assert(false && "intToFloat needs a floating dtype");
    return static_cast<double>(v);
  }
}

double elementAsDouble(const HostTensor &t, int64_t i, DType as) {
  return isFloating(t.dtype()) ? roundToFloat(as, t.getDouble(i)) : intToFloat(as, t.getInt(i));
}

int64_t elementAsInt(const HostTensor &t, int64_t i, DType as) {
  return isFloating(t.dtype()) ? doubleToInt(as, t.getDouble(i)) : wrapInt(as, t.getInt(i));
}

std::vector<double> readDoubles(const HostTensor &t, DType as) {
  std::vector<double> out(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i)
    out[i] = elementAsDouble(t, i, as);
  return out;
}

std::vector<int64_t> readInts(const HostTensor &t, DType as) {
  std::vector<int64_t> out(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i)
    out[i] = elementAsInt(t, i, as);
  return out;
}

std::vector<bool> readTruth(const HostTensor &t) {
  std::vector<bool> out(t.numel());
  bool floating = isFloating(t.dtype());
  for (int64_t i = 0; i < t.numel(); ++i)
    out[i] = floating ? t.getDouble(i) != 0 : t.getInt(i) != 0;
  return out;
}

llvm::Expected<HostTensor> newTensor(DType dtype, llvm::ArrayRef<int64_t> shape) {
  return HostTensor::create(dtype, shape);
}

llvm::Expected<HostTensor> fromDoubles(DType dtype, llvm::ArrayRef<int64_t> shape,
                                       llvm::ArrayRef<double> values) {
  auto t = newTensor(dtype, shape);
  if (!t)
    return t.takeError();
  assert(static_cast<int64_t>(values.size()) == t->numel() && "value count mismatch");
  for (int64_t i = 0; i < t->numel(); ++i) {
    // Rounding first (f16 through f32, as torch does) makes the store exact.
    if (isFloating(dtype))
      t->setDouble(i, roundToFloat(dtype, values[i]));
    else
      t->setInt(i, doubleToInt(dtype, values[i]));
  }
  return t;
}

llvm::Expected<HostTensor> fromInts(DType dtype, llvm::ArrayRef<int64_t> shape,
                                    llvm::ArrayRef<int64_t> values) {
  auto t = newTensor(dtype, shape);
  if (!t)
    return t.takeError();
  assert(static_cast<int64_t>(values.size()) == t->numel() && "value count mismatch");
  for (int64_t i = 0; i < t->numel(); ++i) {
    if (isFloating(dtype))
      t->setDouble(i, intToFloat(dtype, values[i]));
    else
      t->setInt(i, wrapInt(dtype, values[i]));
  }
  return t;
}

llvm::Expected<HostTensor> castTensor(const HostTensor &t, DType dtype) {
  if (t.dtype() == dtype)
    return reshapeCopy(t, t.shape());
  if (isFloating(dtype))
    return fromDoubles(dtype, t.shape(), readDoubles(t, dtype));
  return fromInts(dtype, t.shape(), readInts(t, dtype));
}

HostTensor scalarTensor(const Scalar &s) {
  DType dtype = s.isFloat() ? DType::F64 : s.kind == Scalar::Kind::Bool ? DType::Bool : DType::I64;
  HostTensor t(dtype, {});
  if (s.isFloat())
    t.setDouble(0, s.f);
  else
    t.setInt(0, s.i);
  return t;
}

int64_t numelOf(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Dims stridesOf(llvm::ArrayRef<int64_t> shape) {
  Dims strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

std::string dimsStr(llvm::ArrayRef<int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

llvm::Expected<int64_t> normalizeDim(int64_t dim, int64_t rank) {
  int64_t lo = rank == 0 ? -1 : -rank, hi = rank == 0 ? 0 : rank - 1;
  if (dim < lo || dim > hi)
    return error("dim {} is out of range for a tensor of rank {} (expected {}..{})", dim, rank, lo,
                 hi);
  return dim < 0 ? dim + std::max<int64_t>(rank, 1) : dim;
}

std::vector<int64_t> stridedOffsets(llvm::ArrayRef<int64_t> outShape,
                                    llvm::ArrayRef<int64_t> strides, int64_t offset) {
  int64_t n = numelOf(outShape);
  std::vector<int64_t> out(n);
  if (n == 0)
    return out;
  size_t rank = outShape.size();
  Dims index(rank, 0);
  int64_t pos = offset;
  for (int64_t i = 0; i < n; ++i) {
    out[i] = pos;
    // Odometer increment of the multi-index, keeping `pos` in step.
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < outShape[d]) {
        pos += strides[d];
        break;
      }
      pos -= strides[d] * (outShape[d] - 1);
      index[d] = 0;
    }
  }
  return out;
}

llvm::Expected<HostTensor> stridedCopy(const HostTensor &in, llvm::ArrayRef<int64_t> outShape,
                                       llvm::ArrayRef<int64_t> strides, int64_t offset) {
  auto out = newTensor(in.dtype(), outShape);
  if (!out)
    return out.takeError();
  size_t size = byteSize(in.dtype());
  std::vector<int64_t> offsets = stridedOffsets(outShape, strides, offset);
  if (offsets.empty())
    return out;
  const uint8_t *src = in.data();
  uint8_t *dst = out->mutableData();
  for (size_t i = 0; i < offsets.size(); ++i) {
    assert(offsets[i] >= 0 && offsets[i] < in.numel() && "strided view out of bounds");
    std::memcpy(dst + i * size, src + offsets[i] * size, size);
  }
  return out;
}

llvm::Expected<HostTensor> reshapeCopy(const HostTensor &in, llvm::ArrayRef<int64_t> shape) {
  assert(numelOf(shape) == in.numel() && "reshape changes the element count");
  auto out = newTensor(in.dtype(), shape);
  if (!out)
    return out.takeError();
  if (in.nbytes())
    std::memcpy(out->mutableData(), in.data(), in.nbytes());
  return out;
}

llvm::Expected<Dims> broadcastShapes(llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes) {
  size_t rank = 0;
  for (llvm::ArrayRef<int64_t> s : shapes)
    rank = std::max(rank, s.size());
  Dims out(rank, 1);
  for (llvm::ArrayRef<int64_t> s : shapes) {
    size_t offset = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &o = out[offset + i];
      if (s[i] == o || s[i] == 1)
        continue;
      if (o == 1) {
        o = s[i];
        continue;
      }
      std::vector<std::string> strs;
      for (llvm::ArrayRef<int64_t> t : shapes)
        strs.push_back(dimsStr(t));
      return error("shapes {} do not broadcast", llvm::join(strs, " and "));
    }
  }
  return out;
}

std::vector<int64_t> broadcastOffsets(llvm::ArrayRef<int64_t> inShape,
                                      llvm::ArrayRef<int64_t> outShape) {
  assert(inShape.size() <= outShape.size() && "broadcast to a lower rank");
  Dims inStrides = stridesOf(inShape);
  Dims strides(outShape.size(), 0);
  size_t offset = outShape.size() - inShape.size();
  for (size_t i = 0; i < inShape.size(); ++i)
    strides[offset + i] = inShape[i] == 1 ? 0 : inStrides[i];
  return stridedOffsets(outShape, strides);
}

} // namespace aotc::interp
