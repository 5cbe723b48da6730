// Element types of tensors and scalars, with PyTorch's type-promotion rules.
#ifndef AOTC_IR_DTYPE_H
#define AOTC_IR_DTYPE_H

#include "aotc/DTypeKind.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <optional>

namespace aotc {

llvm::StringRef toString(DType t);
std::optional<DType> parseDType(llvm::StringRef s);
size_t byteSize(DType t);
bool isFloating(DType t);
/// The 16-bit floating types, bf16 and f16.
inline bool isHalfFloat(DType t) { return t == DType::BF16 || t == DType::F16; }
/// torch.finfo(t).eps of a floating dtype: the distance from 1 to the next value (f16 2^-10,
/// bf16 2^-7, f32 2^-23, f64 2^-52); the default eps of rms_norm.
double machineEpsilon(DType t);
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
