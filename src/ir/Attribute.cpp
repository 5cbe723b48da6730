// Attribute values and their text form.
#include "aotc/ir/Attribute.h"

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <cstring>

namespace aotc {

Attribute Attribute::integer(SymExpr v) {
  Attribute a;
  a.K = Kind::Int;
  a.Int = std::move(v);
  return a;
}
Attribute Attribute::intList(std::vector<SymExpr> v) {
  Attribute a;
  a.K = Kind::IntList;
  a.IntList = std::move(v);
  return a;
}
Attribute Attribute::floating(double v) {
  Attribute a;
  a.K = Kind::Float;
  a.Float = v;
  return a;
}
Attribute Attribute::boolean(bool v) {
  Attribute a;
  a.K = Kind::Bool;
  a.Bool = v;
  return a;
}
Attribute Attribute::string(std::string v) {
  Attribute a;
  a.K = Kind::Str;
  a.Str = std::move(v);
  return a;
}
Attribute Attribute::dtype(DType v) {
  Attribute a;
  a.K = Kind::DType;
  a.DT = v;
  return a;
}

const SymExpr &Attribute::getInt() const {
  assert(K == Kind::Int);
  return Int;
}
const std::vector<SymExpr> &Attribute::getIntList() const {
  assert(K == Kind::IntList);
  return IntList;
}
double Attribute::getFloat() const {
  assert(K == Kind::Float);
  return Float;
}
bool Attribute::getBool() const {
  assert(K == Kind::Bool);
  return Bool;
}
const std::string &Attribute::getStr() const {
  assert(K == Kind::Str);
  return Str;
}
DType Attribute::getDType() const {
  assert(K == Kind::DType);
  return DT;
}

std::string floatText(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  // fmt prints the shortest text that reads back to the same double.
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

static std::string quote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
      else
        out += c;
    }
  }
  return out + "\"";
}

std::string Attribute::str() const {
  switch (K) {
  case Kind::Int:
    return Int.str();
  case Kind::IntList: {
    std::string s = "[";
    for (size_t i = 0; i < IntList.size(); ++i)
      s += (i ? ", " : "") + IntList[i].str();
    return s + "]";
  }
  case Kind::Float:
    return floatText(Float);
  case Kind::Bool:
    return Bool ? "true" : "false";
  case Kind::Str:
    return quote(Str);
  case Kind::DType:
    return toString(DT).str();
  }
  return "?";
}

bool operator==(const Attribute &a, const Attribute &b) {
  if (a.K != b.K)
    return false;
  switch (a.K) {
  case Attribute::Kind::Int:
    return a.Int == b.Int;
  case Attribute::Kind::IntList:
    return a.IntList == b.IntList;
  case Attribute::Kind::Float:
    return std::memcmp(&a.Float, &b.Float, sizeof(double)) == 0;
  case Attribute::Kind::Bool:
    return a.Bool == b.Bool;
  case Attribute::Kind::Str:
    return a.Str == b.Str;
  case Attribute::Kind::DType:
    return a.DT == b.DT;
  }
  return false;
}

} // namespace aotc
