// The dtype enum on its own, without LLVM headers, so that the model DSL stays light to compile.
#ifndef AOTC_DTYPEKIND_H
#define AOTC_DTYPEKIND_H

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

} // namespace aotc

#endif
