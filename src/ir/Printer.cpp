// Writes the text form of a graph: deterministic numbering, schema-ordered attributes, locations
// as trailing comments.
#include "aotc/ir/Printer.h"

#include "llvm/ADT/DenseMap.h"

#include <fmt/format.h>

namespace aotc {

namespace {

std::string quoted(llvm::StringRef s) { return Attribute::string(s.str()).str(); }

class Printer {
public:
  explicit Printer(llvm::raw_ostream &os) : OS(os) {}

  void print(const Graph &g) {
    OS << "graph @" << g.name() << " opset " << g.opsetMajor() << "." << g.opsetMinor() << "\n";
    const ShapeEnv &env = g.shapeEnv();
    if (!env.symbols().empty() || !env.derived().empty() || !env.guards().empty())
      OS << "\n";
    for (const SymbolDecl &s : env.symbols()) {
      OS << "dim " << s.name << " in " << s.lo << ".." << s.hi;
      if (s.divisor != 1)
        OS << " divisible by " << s.divisor;
      OS << "\n";
    }
    for (const DerivedDim &d : env.derived())
      OS << "derived " << d.name << " = " << d.expr.str() << "\n";
    for (const Guard &guard : env.guards()) {
      OS << "guard " << guard.lhs.str() << " " << toString(guard.kind) << " " << guard.rhs.str();
      printLoc(guard.loc);
      OS << "\n";
    }
    if (!g.state().empty())
      OS << "\n";
    for (const StateTensor &t : g.state())
      OS << toString(t.kind) << " " << quoted(t.name) << " : " << t.type.str() << "\n";
    for (const auto &e : g.entries())
      printEntry(*e);
  }

private:
  void printEntry(const Entry &e) {
    Ids.clear();
    OS << "\nentry @" << e.name() << "(";
    const Block &body = e.body();
    for (unsigned i = 0; i < body.numArguments(); ++i) {
      Value *arg = body.argument(i);
      OS << (i ? ", " : "") << name(arg) << " : " << arg->type().str();
      if (i < e.inputs().size())
        OS << " = " << toString(e.inputs()[i].kind) << " " << quoted(e.inputs()[i].name);
    }
    OS << ") {\n";
    printNodes(body, 1);
    OS << "  return";
    for (size_t i = 0; i < body.returns().size(); ++i) {
      OS << (i ? ", " : " ") << name(body.returns()[i]);
      if (i < e.outputs().size())
        OS << " as " << toString(e.outputs()[i].kind) << " " << quoted(e.outputs()[i].name);
    }
    OS << "\n}\n";
  }

  void printNodes(const Block &b, unsigned depth) {
    std::string indent(2 * depth, ' ');
    for (const auto &n : b.nodes()) {
      OS << indent;
      for (unsigned i = 0; i < n->numResults(); ++i)
        OS << (i ? ", " : "") << name(n->result(i));
      OS << " = " << n->name() << "(";
      for (size_t i = 0; i < n->operands().size(); ++i)
        OS << (i ? ", " : "") << (n->operand(i) ? name(n->operand(i)) : "none");
      OS << ")";
      std::vector<NamedAttribute> attrs = n->explicitAttrs();
      if (!attrs.empty()) {
        OS << " {";
        for (size_t i = 0; i < attrs.size(); ++i)
          OS << (i ? ", " : "") << attrs[i].first << " = " << attrs[i].second.str();
        OS << "}";
      }
      OS << " :";
      for (unsigned i = 0; i < n->numResults(); ++i)
        OS << (i ? ", " : " ") << n->result(i)->type().str();
      if (n->numRegions())
        OS << " {";
      printLoc(n->loc());
      OS << "\n";
      for (unsigned r = 0; r < n->numRegions(); ++r)
        printRegion(n->region(r), depth + 1);
      if (n->numRegions())
        OS << indent << "}\n";
    }
  }

  void printRegion(const Block &b, unsigned depth) {
    std::string indent(2 * depth, ' ');
    OS << indent << "region(";
    for (unsigned i = 0; i < b.numArguments(); ++i)
      OS << (i ? ", " : "") << name(b.argument(i)) << " : " << b.argument(i)->type().str();
    OS << ") {\n";
    printNodes(b, depth + 1);
    OS << indent << "  return";
    for (size_t i = 0; i < b.returns().size(); ++i)
      OS << (i ? ", " : " ") << name(b.returns()[i]);
    OS << "\n" << indent << "}\n";
  }

  void printLoc(const SourceLoc &loc) {
    if (loc.isKnown())
      OS << "  # " << loc.str();
  }

  // Values get numbers in the order the text first mentions them.
  std::string name(const Value *v) {
    if (!v)
      return "none";
    auto [it, inserted] = Ids.try_emplace(v, Ids.size());
    return fmt::format("%{}", it->second);
  }

  llvm::raw_ostream &OS;
  llvm::DenseMap<const Value *, unsigned> Ids;
};

} // namespace

void printGraph(const Graph &g, llvm::raw_ostream &os) { Printer(os).print(g); }

static void numberBlock(const Block &b, llvm::DenseMap<const Value *, unsigned> &ids) {
  for (unsigned i = 0; i < b.numArguments(); ++i)
    ids.try_emplace(b.argument(i), ids.size());
  for (const auto &n : b.nodes()) {
    for (unsigned i = 0; i < n->numResults(); ++i)
      ids.try_emplace(n->result(i), ids.size());
    for (unsigned r = 0; r < n->numRegions(); ++r)
      numberBlock(n->region(r), ids);
  }
}

llvm::DenseMap<const Value *, unsigned> numberValues(const Entry &entry) {
  llvm::DenseMap<const Value *, unsigned> ids;
  numberBlock(entry.body(), ids);
  return ids;
}

std::string printGraph(const Graph &g) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printGraph(g, os);
  return s;
}

} // namespace aotc
