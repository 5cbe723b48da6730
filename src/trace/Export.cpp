// The export driver inside compiled model programs: builds the shape environment from the
// declared dims and --dyn, traces each entry, binds weights and writes the archive or the IR.
#include "Export.h"

#include "Tracer.h"

#include "aotc/ir/Printer.h"
#include "aotc/ir/Verifier.h"
#include "aotc/serialize/Archive.h"
#include "aotc/serialize/AtomicFile.h"
#include "aotc/serialize/Safetensors.h"
#include "aotc/tensor/HostTensor.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

namespace aotc {

namespace {

llvm::Error error(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string locPrefix(const SourceLoc &loc) {
  return loc.isKnown() ? fmt::format("{}:{}: ", loc.file, loc.line) : "";
}

} // namespace

llvm::Expected<DynSpec> parseDynSpec(llvm::StringRef text) {
  auto bad = [&](llvm::StringRef why) {
    return error(fmt::format("--dyn {}: {}", text.str(), why.str()));
  };
  auto [name, range] = text.split('=');
  if (name.empty() || range.empty() || text.find('=') == llvm::StringRef::npos)
    return bad("expected NAME=LO..HI, e.g. batch=1..512");
  auto [loText, hiText] = range.split("..");
  DynSpec d;
  d.name = name.str();
  if (range.find("..") == llvm::StringRef::npos || loText.getAsInteger(10, d.lo) ||
      hiText.getAsInteger(10, d.hi))
    return bad("expected NAME=LO..HI with integer bounds, e.g. batch=1..512");
  if (d.lo < 0)
    return bad("sizes cannot be negative");
  if (d.lo > d.hi)
    return bad(fmt::format("the range {}..{} is empty", d.lo, d.hi));
  return d;
}

namespace {

class Exporter {
public:
  Exporter(const ModelDecl &decl, const ExportOptions &options)
      : Decl(decl), Options(options), G(decl.name) {}

  llvm::Error run() {
    if (auto e = buildShapeEnv())
      return e;
    try {
      Module = Decl.make();
    } catch (const DslError &e) {
      return error(e.what());
    }
    if (auto e = collectState())
      return e;
    if (auto e = traceEntries())
      return e;
    if (auto e = verifyGraph(G))
      return error("internal error: the traced graph does not verify:\n" +
                   llvm::toString(std::move(e)));
    if (auto e = bindWeights())
      return e;
    return write();
  }

private:
  llvm::Error buildShapeEnv() {
    std::map<std::string, DynSpec> dyn;
    for (const std::string &text : Options.dyn) {
      auto d = parseDynSpec(text);
      if (!d)
        return d.takeError();
      dyn[d->name] = *d;
    }
    // Every dim named by a declaration or an input.
    std::vector<std::string> used;
    std::set<std::string> declared;
    for (const DimDecl &d : Decl.dims)
      declared.insert(d.name);
    for (const EntryDecl &e : Decl.entries)
      for (const InputDecl &in : e.inputs)
        for (const DimSpec &s : in.shape)
          if (!s.name.empty() && !declared.count(s.name) &&
              std::find(used.begin(), used.end(), s.name) == used.end())
            used.push_back(s.name);

    ShapeEnv &env = G.shapeEnv();
    for (const DimDecl &d : Decl.dims) {
      if (!d.expr.empty())
        continue;
      SymbolDecl s{d.name, d.lo, d.hi, d.divisor};
      if (auto it = dyn.find(d.name); it != dyn.end())
        s.lo = it->second.lo, s.hi = it->second.hi;
      if (auto e = env.addSymbol(s))
        return error(locPrefix(toSourceLoc(d.loc)) + llvm::toString(std::move(e)));
    }
    for (const std::string &name : used) {
      auto it = dyn.find(name);
      if (it == dyn.end())
        continue; // reported with the input that uses it
      if (auto e = env.addSymbol({name, it->second.lo, it->second.hi, 1}))
        return error(llvm::toString(std::move(e)));
    }
    for (const DimDecl &d : Decl.dims) {
      if (d.expr.empty())
        continue;
      if (dyn.count(d.name))
        return error(fmt::format("--dyn {}: {} is derived ({}); set the ranges of the dims it is "
                                 "made of instead",
                                 d.name, d.name, d.expr));
      auto expr = parseSymExpr(d.expr);
      if (!expr)
        return error(locPrefix(toSourceLoc(d.loc)) + fmt::format("derived dim \"{}\": {}", d.name,
                                                                 llvm::toString(expr.takeError())));
      if (auto e = env.addDerived(d.name, *expr))
        return error(locPrefix(toSourceLoc(d.loc)) + llvm::toString(std::move(e)));
    }
    for (const auto &[name, spec] : dyn) {
      if (env.findSymbol(name) || env.findDerived(name))
        continue;
      std::string names;
      for (const SymbolDecl &s : env.symbols())
        names += (names.empty() ? "" : ", ") + s.name;
      for (const std::string &u : used)
        if (!env.findSymbol(u))
          names += (names.empty() ? "" : ", ") + u;
      return error(fmt::format("--dyn {}={}..{}: the model has no dim \"{}\" (its dims: {})", name,
                               spec.lo, spec.hi, name, names.empty() ? "none" : names));
    }
    return llvm::Error::success();
  }

  llvm::Error collectState() {
    for (auto &[name, tensor] : Module->named_state()) {
      detail::TensorImpl &impl = *tensor.impl();
      impl.stateName = name;
      State.push_back(tensor);
      if (auto e = G.addState({impl.stateKind, name, impl.type}))
        return error(llvm::toString(std::move(e)));
    }
    return llvm::Error::success();
  }

  llvm::Expected<Type> inputType(const InputDecl &in) {
    Shape shape;
    for (const DimSpec &d : in.shape) {
      if (d.name.empty()) {
        if (d.size < 0)
          return error(locPrefix(toSourceLoc(in.loc)) +
                       fmt::format("input \"{}\" has a negative size {}", in.name, d.size));
        shape.push_back(d.size);
        continue;
      }
      if (!G.shapeEnv().findSymbol(d.name) && !G.shapeEnv().findDerived(d.name))
        return error(locPrefix(toSourceLoc(in.loc)) +
                     fmt::format("input \"{}\" uses dim \"{}\", which has no range; declare "
                                 "aotc::dim(\"{}\", LO, HI) or export with --dyn {}=LO..HI",
                                 in.name, d.name, d.name, d.name));
      shape.push_back(SymExpr::symbol(d.name));
    }
    return Type::tensor(in.dtype, shape);
  }

  llvm::Error traceEntries() {
    for (const std::string &name : Options.entries) {
      bool found = false;
      for (const EntryDecl &e : Decl.entries)
        found |= e.name == name;
      if (!found) {
        std::string names;
        for (const EntryDecl &e : Decl.entries)
          names += (names.empty() ? "" : ", ") + e.name;
        return error(fmt::format("--entry {}: the model has no entry \"{}\" (its entries: {})",
                                 name, name, names));
      }
    }
    if (Decl.entries.empty())
      return error(fmt::format("model {} declares no entries; add AOTC_ENTRY(method, inputs...) "
                               "to AOTC_MODEL",
                               Decl.name));
    Tracer tracer(G, Options.report);
    for (const EntryDecl &decl : Decl.entries) {
      if (!Options.entries.empty() && std::find(Options.entries.begin(), Options.entries.end(),
                                                decl.name) == Options.entries.end())
        continue;
      if (auto e = traceEntry(tracer, decl))
        return e;
      if (!Options.report && !tracer.problems().empty())
        break;
    }
    // Constants made while tracing are weights the model file provides.
    State.insert(State.end(), tracer.constants().begin(), tracer.constants().end());
    if (tracer.problems().empty())
      return llvm::Error::success();
    std::vector<std::string> lines;
    for (const TraceProblem &p : tracer.problems())
      if (std::find(lines.begin(), lines.end(), p.str()) == lines.end())
        lines.push_back(p.str());
    std::string all;
    for (const std::string &l : lines)
      all += (all.empty() ? "" : "\n") + l;
    if (Options.report)
      all = fmt::format("{} problem{} found:\n{}", lines.size(), lines.size() == 1 ? "" : "s", all);
    return error(all);
  }

  llvm::Error traceEntry(Tracer &tracer, const EntryDecl &decl) {
    std::string where = locPrefix(toSourceLoc(decl.loc));
    if (decl.inputs.size() != decl.arity)
      return error(where + fmt::format("entry \"{}\" declares {} inputs but {} takes {}", decl.name,
                                       decl.inputs.size(), decl.name, decl.arity));
    Entry &entry = G.addEntry(decl.name);
    tracer.beginEntry(entry);
    std::vector<Tensor> args;
    for (const InputDecl &in : decl.inputs) {
      auto type = inputType(in);
      if (!type)
        return type.takeError();
      for (const InputSpec &s : entry.inputs())
        if (s.name == in.name)
          return error(locPrefix(toSourceLoc(in.loc)) +
                       fmt::format("entry \"{}\" has two inputs named \"{}\"", decl.name, in.name));
      args.push_back(
          tracer.wrap(entry.addInput({InputKind::User, in.name}, *type), toSourceLoc(in.loc)));
    }
    std::vector<Tensor> outputs;
    try {
      outputs = decl.run(*Module, args);
    } catch (const TraceAbort &) {
      return llvm::Error::success(); // recorded by the tracer
    } catch (const DslError &e) {
      // fail() throws TraceAbort unless problems are being collected for --report.
      try {
        tracer.fail({}, e.what());
      } catch (const TraceAbort &) {
      }
      return llvm::Error::success();
    }
    std::vector<std::string> names = decl.outputNames;
    if (names.empty()) {
      for (size_t i = 0; i < outputs.size(); ++i)
        names.push_back(outputs.size() == 1 ? "output" : fmt::format("output{}", i));
    } else if (names.size() != outputs.size()) {
      return error(where + fmt::format("entry \"{}\" names {} outputs but returns {}", decl.name,
                                       names.size(), outputs.size()));
    }
    try {
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (!outputs[i].defined())
          return error(where + fmt::format("entry \"{}\" returns an undefined tensor as output {}",
                                           decl.name, i));
        entry.addOutput({OutputKind::User, names[i]}, tracer.valueOf(outputs[i], decl.loc));
      }
      for (const auto &buffer : tracer.writtenBuffers())
        entry.addOutput({OutputKind::BufferMutation, buffer->stateName}, buffer->value);
    } catch (const TraceAbort &) {
    }
    return llvm::Error::success();
  }

  // Parameters and buffers: from the weights file by PyTorch name, else initialized.
  llvm::Error bindWeights() {
    std::optional<SafetensorsFile> file;
    if (!Options.weights.empty()) {
      auto f = SafetensorsFile::open(Options.weights);
      if (!f)
        return f.takeError();
      file = std::move(*f);
    }
    std::vector<std::string> missing, mismatched, unexpected;
    std::set<std::string> known;
    // (index in Weights, tensor) of each one drawn from its initializer, below.
    std::vector<std::pair<size_t, const detail::TensorImpl *>> drawn;
    for (const Tensor &t : State) {
      const detail::TensorImpl &impl = *t.impl();
      known.insert(impl.stateName);
      std::vector<int64_t> shape;
      for (const SymExpr &d : impl.type.shape())
        shape.push_back(*d.constant());
      if (impl.init.kind == InitSpec::Kind::Data) {
        Weights.emplace_back(impl.stateName, *impl.init.data);
        continue;
      }
      const SafetensorsFile::Entry *entry = file ? file->find(impl.stateName) : nullptr;
      if (entry) {
        const HostTensor &w = entry->tensor;
        if (w.dtype() != impl.type.dtype() ||
            !std::equal(w.shape().begin(), w.shape().end(), shape.begin(), shape.end())) {
          mismatched.push_back(fmt::format("\"{}\" is {} in the file but the model has {}",
                                           impl.stateName, describe(w.dtype(), w.shape()),
                                           impl.type.str()));
          continue;
        }
        Weights.emplace_back(impl.stateName, w);
        continue;
      }
      // PyTorch's BatchNorm loads a state dict without its num_batches_tracked (checkpoints
      // older than the buffer) and sets it to 0; inference does not read it.
      llvm::StringRef name = impl.stateName;
      bool optional = name == "num_batches_tracked" || name.ends_with(".num_batches_tracked");
      if (file && !optional)
        missing.push_back(impl.stateName);
      drawn.emplace_back(Weights.size(), &impl);
      Weights.emplace_back(impl.stateName, HostTensor(impl.type.dtype(), shape));
    }
    // Each tensor has its own generator, so drawing them in parallel gives the same values; for a
    // model of hundreds of megabytes this was most of the export's time before compilation.
    llvm::parallelFor(0, drawn.size(), [&](size_t i) {
      initialize(*drawn[i].second, Weights[drawn[i].first].second);
    });
    if (file)
      for (const SafetensorsFile::Entry &e : file->entries())
        if (!known.count(e.name))
          unexpected.push_back(e.name);
    std::string problems;
    auto list = [&](const char *what, const std::vector<std::string> &names, bool allowed) {
      if (names.empty() || allowed)
        return;
      problems += fmt::format("\n  {}:", what);
      for (const std::string &n : names)
        problems += fmt::format("\n    {}", n);
    };
    list("missing from the file (--allow-missing initializes them)", missing, Options.allowMissing);
    list("unexpected in the file (--allow-unexpected ignores them)", unexpected,
         Options.allowUnexpected);
    list("wrong dtype or shape", mismatched, false);
    if (!problems.empty())
      return error(fmt::format("{}: the weights do not match the model {}:{}", Options.weights,
                               Decl.name, problems));
    if (!file && Options.emit != "weights")
      llvm::errs() << fmt::format("aotc: no --weights given; parameters and buffers are "
                                  "initialized with seed {}\n",
                                  Options.seed);
    return llvm::Error::success();
  }

  // PyTorch-style default values, drawn from a generator seeded by the export seed and the
  // tensor's name, so that adding a module does not change the others' values.
  void initialize(const detail::TensorImpl &impl, HostTensor &t) const {
    uint64_t h = 1469598103934665603ull;
    for (char c : impl.stateName)
      h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    std::mt19937_64 rng(Options.seed ^ h);
    auto uniform01 = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
    const InitSpec &s = impl.init;
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = 0;
      switch (s.kind) {
      case InitSpec::Kind::Zeros:
        v = 0;
        break;
      case InitSpec::Kind::Constant:
        v = s.a;
        break;
      case InitSpec::Kind::Data: // bindWeights copies these values instead
        break;
      case InitSpec::Kind::Uniform:
        v = s.a + (s.b - s.a) * uniform01();
        break;
      case InitSpec::Kind::Normal: {
        // Box-Muller, written out so the values do not depend on the standard library.
        double u1 = 1.0 - uniform01(), u2 = uniform01();
        v = s.a + s.b * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2);
        break;
      }
      }
      t.setDouble(i, v);
    }
  }

  llvm::Error write() {
    if (Options.emit == "ir") {
      std::string text = printGraph(G);
      if (Options.output == "-") {
        llvm::outs() << text;
        return llvm::Error::success();
      }
      return writeFileAtomically(Options.output, [&](llvm::raw_ostream &os) { os << text; });
    }
    if (Options.emit == "weights")
      return writeSafetensors(Options.output, Weights, {{"format", "pt"}});
    std::vector<WeightRef> refs;
    std::vector<std::vector<int64_t>> shapes;
    shapes.reserve(Weights.size());
    for (const auto &[name, t] : Weights) {
      shapes.emplace_back(t.shape().begin(), t.shape().end());
      refs.push_back({name, t.dtype(), shapes.back(), t.bytes()});
    }
    return writeArchive(G, refs, Options.output);
  }

  const ModelDecl &Decl;
  const ExportOptions &Options;
  Graph G;
  std::shared_ptr<nn::Module> Module;
  std::vector<Tensor> State;
  std::vector<std::pair<std::string, HostTensor>> Weights;
};

} // namespace

llvm::Error runExport(const ModelDecl &decl, const ExportOptions &options) {
  return Exporter(decl, options).run();
}

} // namespace aotc
