// Parses the ATen-style schema strings of Ops.def once, on first use.
#include "aotc/ir/OpSchema.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/ErrorHandling.h"

#include <array>

namespace aotc {

namespace {

struct OpDef {
  OpKind kind;
  const char *name;
  const char *schema;
  OpTrait trait;
};

constexpr OpDef OpDefs[] = {
#define AOTC_OP(Enum, Name, Schema, Traits, Meta) {OpKind::Enum, Name, Schema, OpTrait::Traits},
#include "aotc/ir/Ops.def"
};

// Ops.def is compiled in: a malformed schema is a bug in aotc, reported at first use.
[[noreturn]] void badSchema(const OpDef &def, llvm::StringRef why) {
  llvm::report_fatal_error(llvm::Twine("Ops.def: bad schema for ") + def.name + ": " + why);
}

std::optional<Attribute> parseDefault(const OpDef &def, const ArgSchema &arg,
                                      llvm::StringRef text) {
  if (text == "None")
    return std::nullopt;
  if (text == "True" || text == "False")
    return Attribute::boolean(text == "True");
  if (text.starts_with("'") && text.ends_with("'") && text.size() >= 2)
    return Attribute::string(text.drop_front().drop_back().str());
  if (text.starts_with("[")) {
    std::vector<SymExpr> items;
    llvm::SmallVector<llvm::StringRef, 4> parts;
    text.drop_front().drop_back().split(parts, ',', -1, false);
    for (llvm::StringRef p : parts) {
      int64_t v;
      if (p.trim().getAsInteger(10, v))
        badSchema(def, "bad list default");
      items.push_back(v);
    }
    return Attribute::intList(std::move(items));
  }
  int64_t i;
  if (!text.getAsInteger(10, i)) {
    if (arg.type == ArgType::Float)
      return Attribute::floating(static_cast<double>(i));
    if (arg.type == ArgType::IntList)
      return Attribute::intList(std::vector<SymExpr>(arg.fixedLength, SymExpr(i)));
    return Attribute::integer(i);
  }
  double d;
  if (!text.getAsDouble(d))
    return Attribute::floating(d);
  badSchema(def, "bad default '" + text.str() + "'");
}

ArgSchema parseArg(const OpDef &def, llvm::StringRef text, bool kwargOnly) {
  ArgSchema arg;
  arg.kwargOnly = kwargOnly;
  auto [decl, dflt] = text.split('=');
  auto [typeText, name] = decl.trim().rsplit(' ');
  arg.name = name.str();
  if (typeText.consume_back("?"))
    arg.optional = true;
  if (typeText.consume_front("int[")) {
    arg.type = ArgType::IntList;
    if (typeText != "]" && typeText.drop_back().getAsInteger(10, arg.fixedLength))
      badSchema(def, "bad list length");
  } else if (typeText == "Tensor[]") {
    arg.type = ArgType::TensorList;
  } else {
    static const std::pair<llvm::StringRef, ArgType> Names[] = {
        {"Tensor", ArgType::Tensor},
        {"int", ArgType::Int},
        {"float", ArgType::Float},
        {"bool", ArgType::Bool},
        {"str", ArgType::Str},
        {"Scalar", ArgType::Scalar},
        {"ScalarType", ArgType::ScalarType}};
    bool found = false;
    for (auto &[n, t] : Names)
      if (n == typeText) {
        arg.type = t;
        found = true;
      }
    if (!found)
      badSchema(def, "unknown type '" + typeText.str() + "'");
  }
  if (!dflt.empty()) {
    arg.hasDefault = true;
    arg.defaultValue = parseDefault(def, arg, dflt.trim());
  } else if (arg.optional && arg.type != ArgType::Tensor) {
    arg.hasDefault = true; // `T?` without a default: absent means None
  }
  return arg;
}

OpSchema parseSchema(const OpDef &def) {
  OpSchema s;
  s.kind = def.kind;
  s.name = def.name;
  s.trait = def.trait;
  auto [argsText, resultText] = llvm::StringRef(def.schema).split(" -> ");
  if (!argsText.consume_front("(") || !argsText.consume_back(")"))
    badSchema(def, "arguments must be parenthesised");
  llvm::SmallVector<llvm::StringRef, 8> parts;
  argsText.split(parts, ", ", -1, false);
  bool kwargOnly = false;
  for (llvm::StringRef p : parts) {
    if (p == "*") {
      kwargOnly = true;
      continue;
    }
    s.args.push_back(parseArg(def, p, kwargOnly));
  }
  resultText.consume_front("(");
  resultText.consume_back(")");
  llvm::SmallVector<llvm::StringRef, 3> results;
  resultText.split(results, ", ");
  for (llvm::StringRef r : results) {
    if (r == "Tensor")
      s.results.push_back(ResultType::Tensor);
    else if (r == "Tensor[]")
      s.results.push_back(ResultType::TensorList);
    else if (r == "SymInt")
      s.results.push_back(ResultType::SymInt);
    else if (r == "Scalar")
      s.results.push_back(ResultType::Scalar);
    else
      badSchema(def, "unknown result '" + r.str() + "'");
  }
  return s;
}

struct SchemaTable {
  std::vector<OpSchema> schemas;
  llvm::StringMap<OpKind> byName;
  std::vector<OpKind> kinds;
  SchemaTable() {
    for (const OpDef &def : OpDefs) {
      schemas.push_back(parseSchema(def));
      byName[def.name] = def.kind;
      kinds.push_back(def.kind);
    }
  }
};

const SchemaTable &table() {
  static const SchemaTable T;
  return T;
}

} // namespace

int OpSchema::argIndex(llvm::StringRef argName) const {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].name == argName)
      return static_cast<int>(i);
  return -1;
}

bool OpSchema::hasTensorList() const {
  for (const ArgSchema &a : args)
    if (a.type == ArgType::TensorList)
      return true;
  return false;
}

std::optional<unsigned> OpSchema::operandIndex(llvm::StringRef argName, size_t numOperands) const {
  unsigned index = 0;
  for (const ArgSchema &a : args) {
    if (a.type == ArgType::TensorList)
      index += numOperands - numFixedOperands();
    if (a.type != ArgType::Tensor)
      continue;
    if (a.name == argName)
      return index;
    ++index;
  }
  return std::nullopt;
}

unsigned OpSchema::numFixedOperands() const {
  unsigned n = 0;
  for (const ArgSchema &a : args)
    n += a.type == ArgType::Tensor;
  return n;
}

const OpSchema &schemaOf(OpKind kind) { return table().schemas[static_cast<size_t>(kind)]; }

llvm::StringRef opName(OpKind kind) { return OpDefs[static_cast<size_t>(kind)].name; }

std::optional<OpKind> lookupOp(llvm::StringRef name) {
  auto it = table().byName.find(name);
  if (it == table().byName.end())
    return std::nullopt;
  return it->second;
}

const std::vector<OpKind> &allOps() { return table().kinds; }

} // namespace aotc
