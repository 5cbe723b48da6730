// `aotc verify`: runs an artifact and the reference interpreter on the same inputs (random, or
// read from .npy files) at points across every dynamic dim's range and reports the worst
// relative error of each output.
#include "Artifact.h"
#include "Subcommand.h"

#include "aotc/interp/Interpreter.h"
#include "aotc/serialize/Npy.h"
#include "kernel/Kernel.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <set>

namespace aotc::cli {

namespace {

struct VerifyArgs {
  std::string model;
  int samples = 3;
  double tolerance = 0;  // 0: the precision's default
  std::string precision; // empty: that of the artifact's code for the device
  uint64_t seed = 0;
  int threads = 0;
  std::string device = "cpu";
  std::vector<std::string> inputs; // NAME=FILE.npy
};

llvm::Error error(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The default tolerance of an artifact exported at `precision` (docs/cli.md): 1e-4 at fp32;
/// where GEMMs round their operands to 10 mantissa bits (tf32, fp16) errors of a few 2^-11
/// relative per layer add up over a deep model's layers, and to 7 bits (bf16) 8x more.
double defaultTolerance(kir::Precision precision) {
  switch (precision) {
  case kir::Precision::FP32:
    return 1e-4;
  case kir::Precision::TF32:
  case kir::Precision::FP16:
    return 1e-2;
  case kir::Precision::BF16:
    return 5e-2;
  }
  return 1e-4;
}

/// The tolerance a program that computes in bf16 or fp16 values needs whatever the export's
/// precision: every op rounds its result to the dtype (0 when every value is wider).
double dtypeTolerance(const Graph &g) {
  double tolerance = 0;
  for (const std::unique_ptr<Entry> &e : g.entries())
    e->body().walk([&](const Node &n) {
      for (const Value *v : n.results()) {
        DType t = v->type().dtype();
        if (t == DType::BF16)
          tolerance = std::max(tolerance, defaultTolerance(kir::Precision::BF16));
        else if (t == DType::F16)
          tolerance = std::max(tolerance, defaultTolerance(kir::Precision::FP16));
      }
    });
  return tolerance;
}

/// `count` values spread evenly over [lo, hi], rounded down to multiples of `divisor` (but not
/// below lo): the first is lo, the last hi.
std::vector<int64_t> samplePoints(const SymbolDecl &s, int count) {
  std::set<int64_t> points;
  for (int i = 0; i < count; ++i) {
    long double t = count == 1 ? 0.0L : static_cast<long double>(i) / (count - 1);
    int64_t v = s.lo + static_cast<int64_t>(t * static_cast<long double>(s.hi - s.lo));
    if (s.divisor > 1)
      v = std::max(s.lo, v / s.divisor * s.divisor);
    points.insert(v);
  }
  return {points.begin(), points.end()};
}

/// How many values each integer user input of `entry` may take (indexed by argument): where the
/// input, or a view of it, is the ids of aten.embedding or the index of aten.index_select or
/// aten.gather, the smallest size the indexed dim can have over every such use (its ids are then
/// 0..size-1); otherwise 10, as `aotc run` draws them.
std::vector<int64_t> integerInputValues(const Graph &g, const Entry &entry) {
  constexpr int64_t Fallback = 10;
  const Block &body = entry.body();
  std::vector<int64_t> bound(body.numArguments(), INT64_MAX);
  // The user arguments each value is a view of (or a reordering of, or a concatenation of).
  llvm::DenseMap<const Value *, llvm::SmallVector<unsigned, 1>> origins;
  for (unsigned i = 0; i < body.numArguments(); ++i)
    if (entry.inputs()[i].kind == InputKind::User &&
        !isFloating(body.argument(i)->type().dtype()) &&
        body.argument(i)->type().dtype() != DType::Bool)
      origins[body.argument(i)] = {i};
  SymbolFactsMap facts = g.shapeEnv().facts();
  auto restrict = [&](const Value *index, const Value *table, const SymExpr &dimAttr) {
    auto it = origins.find(index);
    if (it == origins.end() || !table)
      return;
    auto dim = dimAttr.constant();
    int64_t rank = static_cast<int64_t>(table->type().shape().size());
    if (!dim || *dim < -rank || *dim >= rank)
      return;
    const SymExpr &size = table->type().shape()[*dim < 0 ? *dim + rank : *dim];
    int64_t lo = rangeOf(g.shapeEnv().expand(size), facts).lo;
    for (unsigned arg : it->second)
      bound[arg] = std::min(bound[arg], std::max<int64_t>(lo, 1));
  };
  body.walk([&](const Node &n) {
    switch (n.kind()) {
    case OpKind::Embedding:
      restrict(n.operand("indices"), n.operand("weight"), 0);
      return;
    case OpKind::IndexSelect:
    case OpKind::Gather:
      restrict(n.operand("index"), n.operand("self"), n.attr("dim")->getInt());
      return;
    default:
      break;
    }
    OpTrait trait = n.schema().trait;
    if (trait != OpTrait::View && trait != OpTrait::Layout)
      return;
    llvm::SmallVector<unsigned, 1> from;
    for (const Value *v : n.operands())
      if (auto it = origins.find(v); it != origins.end())
        from.append(it->second.begin(), it->second.end());
    if (from.empty())
      return;
    for (const Value *r : n.results())
      origins[r] = from;
  });
  for (int64_t &b : bound)
    if (b == INT64_MAX)
      b = Fallback;
  return bound;
}

/// How an output compares with the reference.
struct Comparison {
  /// For floating outputs the largest |got - want| over the largest |want| (normwise, so that
  /// values near zero do not dominate); for integers and bools the fraction of elements that
  /// differ; infinite when dtypes or shapes differ or `got` is not finite where `want` is.
  double error = 0;
  /// NaN or Inf in the reference: the comparison proves nothing there (an artifact with NaN
  /// weights matches a reference that is NaN everywhere), so it fails however close `got` is.
  int64_t wantNonFinite = 0;
  /// NaN or Inf in `got` where the reference is finite.
  int64_t gotNonFinite = 0;
};

Comparison compare(const HostTensor &got, const HostTensor &want) {
  Comparison c;
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    c.error = INFINITY;
    return c;
  }
  if (!isFloating(want.dtype())) {
    int64_t wrong = 0;
    for (int64_t i = 0; i < want.numel(); ++i)
      wrong += got.getInt(i) != want.getInt(i);
    c.error = want.numel() ? static_cast<double>(wrong) / static_cast<double>(want.numel()) : 0;
    return c;
  }
  double maxDiff = 0, maxWant = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.getDouble(i), w = want.getDouble(i);
    if (!std::isfinite(w)) {
      ++c.wantNonFinite;
      continue;
    }
    if (!std::isfinite(g)) {
      ++c.gotNonFinite;
      continue;
    }
    maxDiff = std::max(maxDiff, std::fabs(g - w));
    maxWant = std::max(maxWant, std::fabs(w));
  }
  c.error = c.gotNonFinite ? INFINITY : maxDiff == 0 ? 0 : maxDiff / std::max(maxWant, 1e-30);
  return c;
}

llvm::Error verify(const VerifyArgs &a, bool &allPassed, bool &nonFiniteReference) {
  std::optional<kir::Precision> precision;
  if (!a.precision.empty()) {
    auto p = kir::parsePrecision(a.precision);
    if (!p)
      return error("--precision: " + llvm::toString(p.takeError()));
    precision = *p;
  }
  auto device = parseDevice(a.device);
  if (!device)
    return device.takeError();
  auto artifact = Artifact::open(a.model, a.threads, *device);
  if (!artifact)
    return artifact.takeError();
  // Each device's code rounds as it was exported: the CPU's fp32 or bf16 (tf32 computes in f32
  // there), a CUDA device's the export's --precision.
  if (!precision)
    precision = cantFail(kir::parsePrecision(device->cuda ? (*artifact)->info().cudaPrecision
                                                          : (*artifact)->info().cpuPrecision));
  const Graph &g = (*artifact)->graph();
  double tolerance =
      a.tolerance > 0 ? a.tolerance : std::max(defaultTolerance(*precision), dtypeTolerance(g));
  // Creating the model checked a weights file; embedded weights are checked here only, since
  // create leaves them unread until used.
  if (llvm::Error e = (*artifact)->checkWeights())
    return e;
  const ShapeEnv &env = g.shapeEnv();
  // --input NAME=FILE.npy: that input of every entry that has one is the file's.
  std::map<std::string, HostTensor, std::less<>> files;
  for (llvm::StringRef text : a.inputs) {
    auto [name, file] = text.split('=');
    if (name.empty() || name.size() == text.size() || !file.ends_with(".npy"))
      return error(fmt::format("--input \"{}\": expected NAME=FILE.npy", text.str()));
    bool used = false;
    for (const auto &entry : g.entries())
      for (const InputSpec &in : entry->inputs())
        used |= in.kind == InputKind::User && in.name == name;
    if (!used)
      return error(
          fmt::format("--input \"{}\": no entry has an input \"{}\"", text.str(), name.str()));
    auto t = readNpy(file);
    if (!t)
      return error(fmt::format("input \"{}\": {}", name.str(), llvm::toString(t.takeError())));
    if (!files.try_emplace(name.str(), std::move(*t)).second)
      return error(fmt::format("input \"{}\" is given twice", name.str()));
  }
  std::mt19937_64 rng(a.seed);
  allPassed = true;
  // Entry names padded to the longest, so that the columns line up across entries.
  size_t nameWidth = 0;
  for (const auto &entry : g.entries())
    nameWidth = std::max(nameWidth, entry->name().size());
  for (const auto &entry : g.entries()) {
    // The root dims of the user inputs, each sampled across its range (all at the same step),
    // or fixed by the shape of an input given as a file.
    std::vector<const SymbolDecl *> dims;
    std::map<std::string, int64_t, std::less<>> fixed;
    std::vector<unsigned> userArgs;
    for (unsigned i = 0; i < entry->inputs().size(); ++i) {
      if (entry->inputs()[i].kind != InputKind::User)
        continue;
      userArgs.push_back(i);
      auto file = files.find(entry->inputs()[i].name);
      llvm::ArrayRef<SymExpr> shape = entry->body().argument(i)->type().shape();
      for (size_t k = 0; k < shape.size(); ++k) {
        SymExpr d = env.expand(shape[k]);
        if (auto name = d.symbolName();
            name && file != files.end() && k < file->second.shape().size())
          fixed.try_emplace(name->str(), file->second.shape()[k]);
        std::set<std::string, std::less<>> names;
        d.collectSymbols(names);
        for (const std::string &n : names)
          if (const SymbolDecl *s = env.findSymbol(n); s && !llvm::is_contained(dims, s))
            dims.push_back(s);
      }
    }
    std::vector<std::vector<int64_t>> points;
    for (const SymbolDecl *s : dims) {
      auto it = fixed.find(s->name);
      points.push_back(it != fixed.end() ? std::vector<int64_t>{it->second}
                                         : samplePoints(*s, a.samples));
    }
    std::vector<int64_t> intValues = integerInputValues(g, *entry);
    size_t steps = 1;
    for (const auto &p : points)
      steps = std::max(steps, p.size());
    for (size_t step = 0; step < steps; ++step) {
      std::map<std::string, int64_t, std::less<>> values;
      std::vector<std::string> shown;
      for (size_t d = 0; d < dims.size(); ++d) {
        int64_t v = points[d][std::min(step, points[d].size() - 1)];
        values[dims[d]->name] = v;
        shown.push_back(fmt::format("{}={}", dims[d]->name, v));
      }
      std::vector<HostTensor> inputs;
      for (unsigned i : userArgs) {
        if (auto file = files.find(entry->inputs()[i].name); file != files.end()) {
          inputs.push_back(file->second);
          continue;
        }
        const Type &t = entry->body().argument(i)->type();
        std::vector<int64_t> shape;
        for (const SymExpr &d : t.shape()) {
          auto v = env.expand(d).evaluate(values);
          if (!v)
            return error(fmt::format("entry \"{}\": cannot evaluate dim {} of input \"{}\"",
                                     entry->name(), d.str(), entry->inputs()[i].name));
          shape.push_back(*v);
        }
        inputs.push_back(randomTensor(t.dtype(), shape, rng, intValues[i]));
      }
      // A file that does not fit the entry is the user's to fix, not a failure of either side.
      if (!files.empty())
        if (auto bound = bindInputs(g, *entry, inputs); !bound)
          return error(
              fmt::format("entry \"{}\": {}", entry->name(), llvm::toString(bound.takeError())));
      std::string point = shown.empty() ? "static shapes" : llvm::join(shown, " ");
      auto want = interpret(g, entry->name(), inputs,
                            [&](llvm::StringRef name) { return (*artifact)->weight(name); });
      if (!want)
        return error(fmt::format("entry \"{}\" at {}: the reference interpreter failed: {}",
                                 entry->name(), point, llvm::toString(want.takeError())));
      auto got = (*artifact)->run(entry->name(), inputs);
      if (!got)
        return error(fmt::format("entry \"{}\" at {}: {}", entry->name(), point,
                                 llvm::toString(got.takeError())));
      for (size_t o = 0; o < want->size(); ++o) {
        Comparison c = compare((*got)[o], (*want)[o]);
        bool ok = c.error <= tolerance && c.wantNonFinite == 0;
        allPassed &= ok;
        std::string verdict = ok ? "ok" : "MISMATCH";
        int64_t numel = (*want)[o].numel();
        if (c.gotNonFinite)
          verdict += fmt::format(" ({} of {} values NaN or Inf where the reference is finite)",
                                 c.gotNonFinite, numel);
        if (c.wantNonFinite) {
          verdict = fmt::format("REFERENCE NOT FINITE ({} of {} values NaN or Inf)",
                                c.wantNonFinite, numel);
          nonFiniteReference = true;
        }
        llvm::outs() << fmt::format("{:<{}} {:<28} {:<16} max rel err {:.3g}  {}\n", entry->name(),
                                    nameWidth, point, entry->outputs()[o].name, c.error, verdict);
      }
    }
  }
  return llvm::Error::success();
}

} // namespace

Subcommand addVerifyCommand(CLI::App &parent) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App *app = parent.add_subcommand(
      "verify", "Compare an artifact (.so) with the reference interpreter across the dims' ranges");
  app->add_option("model", args->model, "Artifact (.so)")->required();
  app->add_option("--samples", args->samples,
                  "Points per dynamic dim, spread from its minimum to its maximum (default 3)")
      ->check(CLI::Range(1, 1000));
  app->add_option("--tolerance", args->tolerance,
                  "Largest accepted max|got - want| / max|want| per output (default: that of the "
                  "precision: 1e-4 at fp32, 1e-2 at tf32 and fp16, 5e-2 at bf16)")
      ->check(CLI::PositiveNumber);
  app->add_option("--precision", args->precision,
                  "The precision whose tolerance applies: fp32, tf32, bf16 or fp16 (default: the "
                  "artifact's --precision for the device: bf16 or fp32 on the CPU)");
  app->add_option("--seed", args->seed, "Seed of the random inputs (default 0)");
  app->add_option("--threads", args->threads, "Threads of the artifact (default: one per CPU)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--device", args->device,
                  "cpu, cuda, cuda:N or cuda-emu (the emulated CUDA device; docs/cuda.md)");
  app->add_option("--input", args->inputs,
                  "NAME=FILE.npy: that input of every entry that has it, instead of random values "
                  "(its dims then stay at the file's sizes); repeatable")
      ->allow_extra_args(false);
  return {app, [args] {
            bool passed = false, nonFiniteReference = false;
            if (llvm::Error e = verify(*args, passed, nonFiniteReference))
              return reportError("verify", std::move(e));
            if (!passed) {
              llvm::outs().flush();
              llvm::errs() << (nonFiniteReference
                                   ? "aotc verify: error: the reference interpreter gives NaN or "
                                     "Inf, so the artifact cannot be verified (are the weights "
                                     "finite?)\n"
                                   : "aotc verify: error: the artifact does not match the "
                                     "reference interpreter\n");
              return 1;
            }
            return 0;
          }};
}

} // namespace aotc::cli
