// Reference computations in double that the interpreter and the kernel IR evaluator share, so
// that both define an op's numerics in one place.
#ifndef AOTC_TENSOR_REFERENCEMATH_H
#define AOTC_TENSOR_REFERENCEMATH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>

namespace aotc {

/// One query row of scaled dot-product attention after its scores: `scores` (scaled and
/// masked, -inf where masked; a NaN propagates) become their softmax, and out[e] is the sum over
/// keys j of probability j times value(j, e); a row whose every score is -inf gives zeros, as
/// torch's math backend (_safe_softmax).
void attentionRow(llvm::MutableArrayRef<double> scores,
                  llvm::function_ref<double(int64_t j, int64_t e)> value,
                  llvm::MutableArrayRef<double> out);

} // namespace aotc

#endif
