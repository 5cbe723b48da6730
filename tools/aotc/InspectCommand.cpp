// `aotc inspect`: what an exported program (.aotp) holds: its entries with their inputs and
// outputs (symbolic shapes, dim ranges), op counts and weight sizes; `--graph` prints the IR.
#include "Subcommand.h"

#include "aotc/ir/Printer.h"
#include "aotc/serialize/Archive.h"

#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <map>
#include <memory>

namespace aotc::cli {

namespace {

struct InspectOptions {
  std::string model;
  bool graph = false;
};

std::string ranges(const Graph &g) {
  std::string out;
  for (const SymbolDecl &s : g.shapeEnv().symbols()) {
    out += fmt::format("  {} in {}..{}", s.name, s.lo, s.hi);
    if (s.divisor != 1)
      out += fmt::format(", a multiple of {}", s.divisor);
    out += "\n";
  }
  for (const DerivedDim &d : g.shapeEnv().derived())
    out += fmt::format("  {} = {}\n", d.name, d.expr.str());
  return out;
}

llvm::Error inspect(const InspectOptions &o) {
  auto program = readArchive(o.model);
  if (!program)
    return program.takeError();
  const Graph &g = *program->graph;
  llvm::raw_ostream &os = llvm::outs();
  if (o.graph) {
    printGraph(g, os);
    return llvm::Error::success();
  }
  os << fmt::format("{}: model {}, written by aotc {}, format {}.{}, opset {}.{}\n", o.model,
                    g.name(), program->producer, program->formatMajor, program->formatMinor,
                    g.opsetMajor(), g.opsetMinor());
  std::string dims = ranges(g);
  os << "dims:\n" << (dims.empty() ? "  (all static)\n" : dims);
  for (const auto &e : g.entries()) {
    os << fmt::format("entry {}:\n", e->name());
    for (size_t i = 0; i < e->inputs().size(); ++i)
      if (e->inputs()[i].kind == InputKind::User)
        os << fmt::format("  input  {} : {}\n", e->inputs()[i].name,
                          e->body().argument(i)->type().str());
    for (size_t i = 0; i < e->outputs().size(); ++i)
      os << fmt::format("  {} {} : {}\n",
                        e->outputs()[i].kind == OutputKind::User ? "output" : "mutates",
                        e->outputs()[i].name, e->body().returns()[i]->type().str());
    std::map<std::string, unsigned> ops;
    unsigned state = 0;
    e->body().walk([&](const Node &n) { ++ops[n.name().str()]; });
    for (const InputSpec &in : e->inputs())
      state += in.kind != InputKind::User;
    std::string opList;
    for (const auto &[name, count] : ops)
      opList += fmt::format("{}{} x{}", opList.empty() ? "" : ", ", name, count);
    os << fmt::format("  {} state tensors; ops: {}\n", state, opList.empty() ? "none" : opList);
  }
  uint64_t bytes = 0;
  for (const Weight &w : program->weights)
    bytes += w.bytes().size();
  os << fmt::format("weights: {} tensors, {} bytes\n", program->weights.size(), bytes);
  return llvm::Error::success();
}

} // namespace

Subcommand addInspectCommand(CLI::App &parent) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App *app = parent.add_subcommand(
      "inspect", "Show the entries, inputs (symbolic shapes, dim ranges) and weights of a .aotp");
  app->add_option("model", o->model, "Exported program (.aotp)")->required();
  app->add_flag("--graph", o->graph, "Print the graph in the IR's text form");
  return {app, [o] {
            if (llvm::Error e = inspect(*o))
              return reportError("inspect", std::move(e));
            return 0;
          }};
}

} // namespace aotc::cli
