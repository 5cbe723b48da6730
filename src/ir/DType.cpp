// dtype names, sizes and PyTorch's promotion rules.
#include "aotc/ir/DType.h"

#include "llvm/ADT/ArrayRef.h"

#include <cassert>

namespace aotc {

llvm::StringRef toString(DType t) {
  switch (t) {
#define AOTC_DTYPE_NAME(Name, Str, Size)                                                           \
  case DType::Name:                                                                                \
    return Str;
    AOTC_FOR_EACH_DTYPE(AOTC_DTYPE_NAME)
#undef AOTC_DTYPE_NAME
  }
  return "?";
}

std::optional<DType> parseDType(llvm::StringRef s) {
  for (DType t : AllDTypes)
    if (toString(t) == s)
      return t;
  return std::nullopt;
}

size_t byteSize(DType t) {
  switch (t) {
#define AOTC_DTYPE_SIZE(Name, Str, Size)                                                           \
  case DType::Name:                                                                                \
    return Size;
    AOTC_FOR_EACH_DTYPE(AOTC_DTYPE_SIZE)
#undef AOTC_DTYPE_SIZE
  }
  return 0;
}

double machineEpsilon(DType t) {
  switch (t) {
  case DType::F16:
    return 0x1p-10;
  case DType::BF16:
    return 0x1p-7;
  case DType::F64:
    return 0x1p-52;
  default:
    return 0x1p-23;
  }
}

bool isFloating(DType t) {
  return t == DType::F64 || t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

bool isIntegral(DType t) {
  return t == DType::I64 || t == DType::I32 || t == DType::I16 || t == DType::I8 || t == DType::U8;
}

bool isSigned(DType t) { return t != DType::U8 && t != DType::Bool; }

namespace {
enum class Category { Bool, Integer, Floating };
Category categoryOf(DType t) {
  if (t == DType::Bool)
    return Category::Bool;
  return isFloating(t) ? Category::Floating : Category::Integer;
}
} // namespace

DType promoteTypes(DType a, DType b) {
  if (a == b)
    return a;
  Category ca = categoryOf(a), cb = categoryOf(b);
  if (ca != cb)
    return ca > cb ? a : b;
  if (ca == Category::Floating) {
    // f16 and bf16 have no common 16-bit supertype.
    if (byteSize(a) == 2 && byteSize(b) == 2)
      return DType::F32;
    return byteSize(a) > byteSize(b) ? a : b;
  }
  // Integers: u8 meets a signed type, which must be wider than 8 bits to hold it.
  if (a == DType::U8 || b == DType::U8) {
    DType other = a == DType::U8 ? b : a;
    return other == DType::I8 ? DType::I16 : other;
  }
  return byteSize(a) > byteSize(b) ? a : b;
}

namespace {
// One tier of torch's ResultTypeState; nullopt until an operand of the tier is seen.
using Tier = std::optional<DType>;

void update(Tier &tier, DType t) { tier = tier ? promoteTypes(*tier, t) : t; }

// A higher tier wins unless the lower tier has a higher category.
Tier combine(Tier higher, Tier lower) {
  if (!higher)
    return lower;
  if (!lower)
    return higher;
  if (categoryOf(*higher) >= categoryOf(*lower))
    return higher;
  return promoteTypes(*higher, *lower);
}
} // namespace

DType resultType(llvm::ArrayRef<ResultTypeOperand> operands) {
  Tier dims, zeroDims, numbers;
  for (const ResultTypeOperand &op : operands) {
    switch (op.kind) {
    case ResultTypeOperand::Kind::Tensor:
      update(dims, op.dtype);
      break;
    case ResultTypeOperand::Kind::ZeroDimTensor:
      update(zeroDims, op.dtype);
      break;
    case ResultTypeOperand::Kind::Number:
      update(numbers, isFloating(op.dtype) ? DType::F32 : op.dtype);
      break;
    }
  }
  Tier result = combine(dims, combine(zeroDims, numbers));
  assert(result && "resultType needs at least one operand");
  return *result;
}

} // namespace aotc
