// Element types of tensors and scalars, with PyTorch's type-promotion rules.
#ifndef AOTC_IR_DTYPE_H
#define AOTC_IR_DTYPE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <optional>

namespace aotc {

#define AOTC_FOR_EACH_DTYPE(X)                                                                     \
  X(F64, "f64", 8)                                                                                 \
  X(F32, "f32", 4)                                                                                 \
  X(F16, "f16", 2)                                                                                 \
  X(BF16, "bf16", 2)                                                                               \
  X(I64, "i64", 8)                                                                                 \
  X(I32, "i32", 4)                                                                                 \
  X(I16, "i16", 2)                                                                                 \
  X(I8, "i8", 1)                                                                                   \
  X(U8, "u8", 1)                                                                                   \
  X(Bool, "bool", 1)

enum class DType : unsigned char {
#define AOTC_DTYPE_ENUM(Name, Str, Size) Name,
  AOTC_FOR_EACH_DTYPE(AOTC_DTYPE_ENUM)
#undef AOTC_DTYPE_ENUM
};

inline constexpr DType AllDTypes[] = {
#define AOTC_DTYPE_LIST(Name, Str, Size) DType::Name,
    AOTC_FOR_EACH_DTYPE(AOTC_DTYPE_LIST)
#undef AOTC_DTYPE_LIST
};

llvm::StringRef toString(DType t);
std::optional<DType> parseDType(llvm::StringRef s);
size_t byteSize(DType t);
bool isFloating(DType t);
/// Integers, not bool.
bool isIntegral(DType t);
bool isSigned(DType t);

/// torch.promote_types: the smallest type both convert to without losing range or kind.
DType promoteTypes(DType a, DType b);

/// One participant in torch.result_type: a tensor of some rank, or a wrapped Python number.
struct ResultTypeOperand {
  enum class Kind { Tensor, ZeroDimTensor, Number } kind;
  DType dtype; // for Number: I64, F64 (a Python float) or Bool
};

/// torch.result_type: dimensioned tensors take priority over zero-dim tensors, which take
/// priority over numbers, unless a lower tier has a higher category (bool < integer < floating).
/// A floating Python number counts as the default dtype (f32).
DType resultType(llvm::ArrayRef<ResultTypeOperand> operands);

} // namespace aotc

#endif
