// Attribute values of nodes: (symbolic) ints, int lists, floats, bools, strings and dtypes.
#ifndef AOTC_IR_ATTRIBUTE_H
#define AOTC_IR_ATTRIBUTE_H

#include "aotc/ir/DType.h"
#include "aotc/ir/SymExpr.h"

#include <string>
#include <vector>

namespace aotc {

class Attribute {
public:
  enum class Kind { Int, IntList, Float, Bool, Str, DType };

  static Attribute integer(SymExpr v);
  static Attribute intList(std::vector<SymExpr> v);
  static Attribute floating(double v);
  static Attribute boolean(bool v);
  static Attribute string(std::string v);
  static Attribute dtype(DType v);

  Kind kind() const { return K; }
  const SymExpr &getInt() const;
  const std::vector<SymExpr> &getIntList() const;
  double getFloat() const;
  bool getBool() const;
  const std::string &getStr() const;
  DType getDType() const;

  /// `3`, `seq + 1`, `[2, 2]`, `1e-05`, `2.0`, `true`, `"tanh"`, `f32`; floats always show a
  /// `.`, an exponent, `inf` or `nan`, so the text form tells them apart from ints.
  std::string str() const;
  /// Floats compare bitwise, so NaN attributes are equal to themselves and CSE stays exact.
  friend bool operator==(const Attribute &a, const Attribute &b);

private:
  Kind K = Kind::Int;
  SymExpr Int;
  std::vector<SymExpr> IntList;
  double Float = 0;
  bool Bool = false;
  std::string Str;
  DType DT = DType::F32;
};

/// A float as the IR prints it: the shortest text that reads back to the same double, with a
/// `.0` where that text would look like an integer; `nan`, `inf`, `-inf`.
std::string floatText(double v);

} // namespace aotc

#endif
