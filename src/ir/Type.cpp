// Printing and helpers for value types.
#include "aotc/ir/Type.h"
#include "aotc/ir/SourceLoc.h"

#include <fmt/format.h>

namespace aotc {

SymExpr Type::numel() const {
  SymExpr n = 1;
  for (const SymExpr &d : Dims)
    n = n * d;
  return n;
}

std::string shapeStr(llvm::ArrayRef<SymExpr> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += shape[i].str();
  }
  return s + "]";
}

std::string Type::str() const {
  switch (K) {
  case Kind::Tensor:
    return toString(DT).str() + shapeStr(Dims);
  case Kind::Scalar:
    return toString(DT).str();
  case Kind::SymInt:
    return "symint";
  }
  return "?";
}

} // namespace aotc
