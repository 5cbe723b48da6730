// Types of graph values: tensors (dtype + symbolic shape), symbolic ints and scalars.
#ifndef AOTC_IR_TYPE_H
#define AOTC_IR_TYPE_H

#include "aotc/ir/DType.h"
#include "aotc/ir/SymExpr.h"

#include "llvm/ADT/SmallVector.h"

#include <string>

namespace aotc {

using Shape = llvm::SmallVector<SymExpr, 4>;

/// Printed as `f32[batch, 784]` (tensor), `f32` (scalar) or `symint`.
class Type {
public:
  enum class Kind { Tensor, SymInt, Scalar };

  static Type tensor(DType dtype, Shape shape) {
    return Type(Kind::Tensor, dtype, std::move(shape));
  }
  static Type symInt() { return Type(Kind::SymInt, DType::I64, {}); }
  static Type scalar(DType dtype) { return Type(Kind::Scalar, dtype, {}); }

  Kind kind() const { return K; }
  bool isTensor() const { return K == Kind::Tensor; }
  DType dtype() const { return DT; }
  const Shape &shape() const { return Dims; }
  size_t rank() const { return Dims.size(); }
  /// The number of elements: the product of the dims.
  SymExpr numel() const;

  std::string str() const;
  friend bool operator==(const Type &a, const Type &b) {
    return a.K == b.K && a.DT == b.DT && a.Dims == b.Dims;
  }

private:
  Type(Kind k, DType dtype, Shape shape) : K(k), DT(dtype), Dims(std::move(shape)) {}
  Kind K;
  DType DT;
  Shape Dims;
};

/// `[batch, 784]`
std::string shapeStr(llvm::ArrayRef<SymExpr> shape);

} // namespace aotc

#endif
