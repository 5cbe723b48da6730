// The interpreter's internal interface: the context a kernel reads its operands and attributes
// from, the kernel families, and the element conversions and index helpers they share.
#ifndef AOTC_INTERP_KERNELS_H
#define AOTC_INTERP_KERNELS_H

#include "aotc/interp/Interpreter.h"
#include "aotc/ir/Graph.h"
#include "aotc/tensor/HostTensor.h"

#include "llvm/ADT/SmallVector.h"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

namespace aotc::interp {

using Dims = llvm::SmallVector<int64_t, 6>;

llvm::Error makeError(std::string message);
template <typename... Ts> llvm::Error error(fmt::format_string<Ts...> f, Ts &&...args) {
  return makeError(fmt::format(f, std::forward<Ts>(args)...));
}

/// A Scalar attribute as written in the graph: an int, a float or a bool.
struct Scalar {
  enum class Kind { Int, Float, Bool };
  Kind kind = Kind::Int;
  int64_t i = 0; // Int and Bool (0 or 1)
  double f = 0;  // Float
  bool isFloat() const { return kind == Kind::Float; }
  double asDouble() const { return isFloat() ? f : static_cast<double>(i); }
  /// How torch.result_type sees the Python number: i64, f64 or bool.
  DType numberDType() const;
};

/// What a kernel sees of its node: operands (by schema argument) and attributes with symbolic
/// ints evaluated for the current call.
class KernelContext {
public:
  KernelContext(const Node &node, llvm::ArrayRef<const HostTensor *> operands,
                const SymbolValues &symbols)
      : N(node), Operands(operands), Symbols(symbols) {}

  const Node &node() const { return N; }
  OpKind kind() const { return N.kind(); }
  /// The tensor bound to the schema argument `name`; null when an optional one is absent.
  const HostTensor *tensor(llvm::StringRef name) const;
  /// The tensors bound to the schema's Tensor[] argument.
  llvm::ArrayRef<const HostTensor *> tensorList() const;

  bool has(llvm::StringRef attrName) const { return N.attr(attrName) != nullptr; }
  llvm::Expected<int64_t> getInt(llvm::StringRef name) const;
  llvm::Expected<std::optional<int64_t>> getOptionalInt(llvm::StringRef name) const;
  /// An int list; a single int is a list of one, an absent attribute an empty list.
  llvm::Expected<Dims> getInts(llvm::StringRef name) const;
  llvm::Expected<std::optional<Scalar>> getScalar(llvm::StringRef name) const;
  std::optional<double> getFloat(llvm::StringRef name) const;
  bool getBool(llvm::StringRef name) const;
  std::string getStr(llvm::StringRef name) const;
  std::optional<DType> getDType(llvm::StringRef name) const;

  /// The dtype of result `i` as the graph states it; kernels produce exactly this dtype.
  DType resultDType(unsigned i = 0) const { return N.result(i)->type().dtype(); }
  /// torch.result_type of tensors and Scalar attributes, as the meta functions compute it.
  llvm::Expected<DType> commonDType(llvm::ArrayRef<const HostTensor *> tensors,
                                    llvm::ArrayRef<llvm::StringRef> scalarAttrs = {}) const;

private:
  llvm::Expected<int64_t> evaluate(const SymExpr &e, llvm::StringRef attrName) const;

  const Node &N;
  llvm::ArrayRef<const HostTensor *> Operands;
  const SymbolValues &Symbols;
};

using KernelResult = llvm::Expected<llvm::SmallVector<HostTensor, 1>>;

inline KernelResult one(HostTensor t) { return llvm::SmallVector<HostTensor, 1>{std::move(t)}; }
inline KernelResult one(llvm::Expected<HostTensor> t) {
  if (!t)
    return t.takeError();
  return one(std::move(*t));
}

/// The kernel families, one per file.
KernelResult runPointwise(const KernelContext &ctx); // PointwiseKernels.cpp, BinaryKernels.cpp
KernelResult runReduction(const KernelContext &ctx); // ReductionKernels.cpp (with softmax)
KernelResult runLinalg(const KernelContext &ctx);    // LinalgKernels.cpp (contractions, conv)
KernelResult runNormPool(const KernelContext &ctx);  // NormPoolKernels.cpp (norms, pooling, sdpa)
KernelResult runShape(const KernelContext &ctx);     // ShapeKernels.cpp (views, creation)
KernelResult runIndexing(const KernelContext &ctx);  // IndexingKernels.cpp (embedding, gather)
/// Flip, roll, repeat, tril, triu, and the scans (PositionKernels.cpp).
KernelResult runPosition(const KernelContext &ctx);
/// pad and the upsample_* interpolations (ResampleKernels.cpp).
KernelResult runResample(const KernelContext &ctx);
/// Sort and topk (SortKernels.cpp).
KernelResult runSort(const KernelContext &ctx);
/// The pointwise ops with two or more tensor or scalar operands (BinaryKernels.cpp).
KernelResult runBinary(const KernelContext &ctx);

//===----------------------------------------------------------------------===//
// Elements (Elements.cpp): casts with PyTorch's semantics on x86-64.
//===----------------------------------------------------------------------===//

// roundToFloat and wrapInt (HostTensor.h) round and wrap to a dtype.
/// A C++ cast of `v` to an integer dtype as x86 PyTorch performs it: truncation toward zero;
/// NaN and values out of range give the "integer indefinite" value (INT64_MIN, or INT32_MIN
/// wrapped to narrower types, which convert through 32 bits); bool is `v != 0`.
int64_t doubleToInt(DType to, double v);
/// `v` converted to a floating dtype with a single rounding.
double intToFloat(DType to, int64_t v);
/// Element `i` of `t` cast to `as` (a floating dtype) / to `as` (an integer or bool dtype).
double elementAsDouble(const HostTensor &t, int64_t i, DType as);
int64_t elementAsInt(const HostTensor &t, int64_t i, DType as);
/// Every element of `t` cast to `as`.
std::vector<double> readDoubles(const HostTensor &t, DType as);
std::vector<int64_t> readInts(const HostTensor &t, DType as);
/// Truthiness of every element (`x != 0`; NaN is true).
std::vector<bool> readTruth(const HostTensor &t);

/// A zero-filled tensor; an error for a shape whose byte size overflows.
llvm::Expected<HostTensor> newTensor(DType dtype, llvm::ArrayRef<int64_t> shape);
/// A tensor of `values` cast to `dtype` (floating values or integer values).
llvm::Expected<HostTensor> fromDoubles(DType dtype, llvm::ArrayRef<int64_t> shape,
                                       llvm::ArrayRef<double> values);
llvm::Expected<HostTensor> fromInts(DType dtype, llvm::ArrayRef<int64_t> shape,
                                    llvm::ArrayRef<int64_t> values);
/// `t` cast element by element to `dtype` (aten._to_copy).
llvm::Expected<HostTensor> castTensor(const HostTensor &t, DType dtype);

//===----------------------------------------------------------------------===//
// Indexing helpers (Elements.cpp).
//===----------------------------------------------------------------------===//

int64_t numelOf(llvm::ArrayRef<int64_t> shape);
/// C-order strides of a contiguous tensor.
Dims stridesOf(llvm::ArrayRef<int64_t> shape);
/// `[2, 3]`
std::string dimsStr(llvm::ArrayRef<int64_t> shape);
/// `dim` in [-rank, rank) made non-negative (rank 0 accepts 0 and -1, as torch does).
llvm::Expected<int64_t> normalizeDim(int64_t dim, int64_t rank);
/// The element offsets, in C order of `outShape`, of a strided view: offset + sum(i_d * s_d).
std::vector<int64_t> stridedOffsets(llvm::ArrayRef<int64_t> outShape,
                                    llvm::ArrayRef<int64_t> strides, int64_t offset = 0);
/// Copies the strided view of `in` described by `outShape`, `strides` and `offset` into a new
/// contiguous tensor (every view op of the functional IR is a copy).
llvm::Expected<HostTensor> stridedCopy(const HostTensor &in, llvm::ArrayRef<int64_t> outShape,
                                       llvm::ArrayRef<int64_t> strides, int64_t offset = 0);
/// A copy of `in` with another shape of the same number of elements.
llvm::Expected<HostTensor> reshapeCopy(const HostTensor &in, llvm::ArrayRef<int64_t> shape);
/// Broadcasts shapes right-aligned, as torch does.
llvm::Expected<Dims> broadcastShapes(llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes);
/// For each element of `outShape` (C order), the offset of the element of a tensor of `inShape`
/// broadcast to it.
std::vector<int64_t> broadcastOffsets(llvm::ArrayRef<int64_t> inShape,
                                      llvm::ArrayRef<int64_t> outShape);

//===----------------------------------------------------------------------===//
// Elementwise maps over broadcast operands (pointwise kernels).
//===----------------------------------------------------------------------===//

/// A Scalar attribute cast to the computation dtype `as`.
inline double scalarAsDouble(const Scalar &s, DType as) {
  return s.isFloat() ? roundToFloat(as, s.f) : intToFloat(as, s.i);
}
inline int64_t scalarAsInt(const Scalar &s, DType as) {
  return s.isFloat() ? doubleToInt(as, s.f) : wrapInt(as, s.i);
}
/// Integer power with ATen's powi semantics for negative exponents (PointwiseKernels.cpp).
int64_t powInteger(int64_t base, int64_t exp);

/// A Scalar as a 0-d tensor (f64, i64 or bool), so that scalar overloads share the tensor code.
HostTensor scalarTensor(const Scalar &s);

/// Integer arithmetic that wraps like two's complement hardware instead of overflowing (which
/// would be undefined behaviour); results are wrapped to the result dtype when stored.
inline int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

/// Applies `f(const T *args)` to the elements of `inputs` broadcast together, each element cast
/// to `computeAs` first (T is double for a floating `computeAs`, int64_t otherwise); the results
/// are stored as `resultAs`.
template <typename T, typename F>
KernelResult mapElements(llvm::ArrayRef<const HostTensor *> inputs, DType computeAs, DType resultAs,
                         F f) {
  llvm::SmallVector<llvm::ArrayRef<int64_t>, 3> shapes;
  for (const HostTensor *t : inputs)
    shapes.push_back(t->shape());
  auto shape = broadcastShapes(shapes);
  if (!shape)
    return shape.takeError();
  std::vector<std::vector<T>> values;
  std::vector<std::vector<int64_t>> offsets;
  for (const HostTensor *t : inputs) {
    if constexpr (std::is_same_v<T, double>)
      values.push_back(readDoubles(*t, computeAs));
    else
      values.push_back(readInts(*t, computeAs));
    offsets.push_back(broadcastOffsets(t->shape(), *shape));
  }
  int64_t n = numelOf(*shape);
  std::vector<T> out(n);
  T args[4];
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < inputs.size(); ++k)
      args[k] = values[k][offsets[k][i]];
    out[i] = f(static_cast<const T *>(args));
  }
  if constexpr (std::is_same_v<T, double>)
    return one(fromDoubles(resultAs, *shape, out));
  else
    return one(fromInts(resultAs, *shape, out));
}

} // namespace aotc::interp

#endif
