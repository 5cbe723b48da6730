// Symbolic ints of the DSL: arithmetic in canonical form, comparisons through the tracer.
#include "Tracer.h"

#include <fmt/format.h>

namespace aotc {

SymExpr symOf(const SymInt &v) { return v.impl() ? v.impl()->expr : SymExpr(0); }

SymInt makeSym(SymExpr e) {
  return SymInt(std::make_shared<const detail::SymIntImpl>(detail::SymIntImpl{std::move(e)}));
}

Attribute scalarAttr(const Scalar &s) {
  switch (s.kind()) {
  case Scalar::Kind::Int:
    return Attribute::integer(s.sym() ? symOf(*s.sym()) : SymExpr(s.toInt()));
  case Scalar::Kind::Float:
    return Attribute::floating(s.toDouble());
  case Scalar::Kind::Bool:
    return Attribute::boolean(s.toBool());
  }
  return Attribute::integer(0);
}

Attribute intsAttr(const SymIntList &v) {
  std::vector<SymExpr> out;
  for (const SymInt &s : v)
    out.push_back(symOf(s));
  return Attribute::intList(std::move(out));
}

Attribute intsAttr(const IntList &v) {
  return Attribute::intList(std::vector<SymExpr>(v.begin(), v.end()));
}

Tracer &activeTracer(const Loc &loc) {
  if (Tracer *t = Tracer::current())
    return *t;
  throw DslError(fmt::format("{}:{}: tensor ops run only while an entry is traced; this one runs "
                             "outside (in a module constructor?)",
                             loc.file_name(), loc.line()));
}

SymInt::SymInt(int64_t value)
    : Impl(std::make_shared<const detail::SymIntImpl>(detail::SymIntImpl{value})) {}

std::optional<int64_t> SymInt::maybe_static() const { return symOf(*this).constant(); }

int64_t SymInt::value(Loc loc) const {
  SymExpr e = symOf(*this);
  if (auto c = e.constant())
    return *c;
  return activeTracer(loc).concrete(e, loc);
}

std::string SymInt::str() const { return symOf(*this).str(); }

SymInt operator+(const SymInt &a, const SymInt &b) { return makeSym(symOf(a) + symOf(b)); }
SymInt operator-(const SymInt &a, const SymInt &b) { return makeSym(symOf(a) - symOf(b)); }
SymInt operator*(const SymInt &a, const SymInt &b) { return makeSym(symOf(a) * symOf(b)); }
SymInt operator/(const SymInt &a, const SymInt &b) {
  return makeSym(SymExpr::floorDiv(symOf(a), symOf(b)));
}
SymInt operator%(const SymInt &a, const SymInt &b) {
  return makeSym(SymExpr::mod(symOf(a), symOf(b)));
}
SymInt min(const SymInt &a, const SymInt &b) { return makeSym(SymExpr::min(symOf(a), symOf(b))); }
SymInt max(const SymInt &a, const SymInt &b) { return makeSym(SymExpr::max(symOf(a), symOf(b))); }

namespace {
// Static comparisons need no tracer (module constructors compare sizes too).
bool compare(GuardKind kind, const SymInt &a, const SymIntAt &b) {
  SymExpr x = symOf(a), y = symOf(b.value);
  if (auto cx = x.constant())
    if (auto cy = y.constant()) {
      switch (kind) {
      case GuardKind::EQ:
        return *cx == *cy;
      case GuardKind::NE:
        return *cx != *cy;
      case GuardKind::LE:
        return *cx <= *cy;
      case GuardKind::LT:
        return *cx < *cy;
      }
    }
  return activeTracer(b.loc).decide(kind, x, y, b.loc);
}
} // namespace

bool operator==(const SymInt &a, const SymIntAt &b) { return compare(GuardKind::EQ, a, b); }
bool operator!=(const SymInt &a, const SymIntAt &b) { return compare(GuardKind::NE, a, b); }
bool operator<(const SymInt &a, const SymIntAt &b) { return compare(GuardKind::LT, a, b); }
bool operator<=(const SymInt &a, const SymIntAt &b) { return compare(GuardKind::LE, a, b); }
bool operator>(const SymInt &a, const SymIntAt &b) {
  return compare(GuardKind::LT, b.value, SymIntAt(a, b.loc));
}
bool operator>=(const SymInt &a, const SymIntAt &b) {
  return compare(GuardKind::LE, b.value, SymIntAt(a, b.loc));
}

} // namespace aotc
