// `aotc verify`: runs an artifact and the reference interpreter on the same random inputs at
// points across every dynamic dim's range and reports the worst relative error of each output.
#include "Artifact.h"
#include "Subcommand.h"

#include "aotc/interp/Interpreter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <set>

namespace aotc::cli {

namespace {

struct VerifyArgs {
  std::string model;
  int samples = 3;
  double tolerance = 1e-4;
  uint64_t seed = 0;
  int threads = 0;
};

llvm::Error error(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
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

/// How far `got` is from `want`: for floating outputs the largest |got - want| over the largest
/// |want| (normwise, so that values near zero do not dominate), infinite when NaNs or infinities
/// differ; for integers and bools the fraction of elements that differ.
double relativeError(const HostTensor &got, const HostTensor &want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return INFINITY;
  if (!isFloating(want.dtype())) {
    int64_t wrong = 0;
    for (int64_t i = 0; i < want.numel(); ++i)
      wrong += got.getInt(i) != want.getInt(i);
    return want.numel() ? static_cast<double>(wrong) / static_cast<double>(want.numel()) : 0;
  }
  double maxDiff = 0, maxWant = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.getDouble(i), w = want.getDouble(i);
    if (std::isnan(g) || std::isnan(w) || std::isinf(g) || std::isinf(w)) {
      if (!(std::isnan(g) && std::isnan(w)) && g != w)
        return INFINITY;
      continue;
    }
    maxDiff = std::max(maxDiff, std::fabs(g - w));
    maxWant = std::max(maxWant, std::fabs(w));
  }
  return maxDiff == 0 ? 0 : maxDiff / std::max(maxWant, 1e-30);
}

llvm::Error verify(const VerifyArgs &a, bool &allPassed) {
  auto artifact = Artifact::open(a.model, a.threads);
  if (!artifact)
    return artifact.takeError();
  const Graph &g = (*artifact)->graph();
  const ShapeEnv &env = g.shapeEnv();
  std::mt19937_64 rng(a.seed);
  allPassed = true;
  // Entry names padded to the longest, so that the columns line up across entries.
  size_t nameWidth = 0;
  for (const auto &entry : g.entries())
    nameWidth = std::max(nameWidth, entry->name().size());
  for (const auto &entry : g.entries()) {
    // The root dims of the user inputs, each sampled across its range; all at the same step.
    std::vector<const SymbolDecl *> dims;
    std::vector<unsigned> userArgs;
    for (unsigned i = 0; i < entry->inputs().size(); ++i) {
      if (entry->inputs()[i].kind != InputKind::User)
        continue;
      userArgs.push_back(i);
      for (const SymExpr &d : entry->body().argument(i)->type().shape()) {
        std::set<std::string, std::less<>> names;
        env.expand(d).collectSymbols(names);
        for (const std::string &n : names)
          if (const SymbolDecl *s = env.findSymbol(n); s && !llvm::is_contained(dims, s))
            dims.push_back(s);
      }
    }
    std::vector<std::vector<int64_t>> points;
    for (const SymbolDecl *s : dims)
      points.push_back(samplePoints(*s, a.samples));
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
        const Type &t = entry->body().argument(i)->type();
        std::vector<int64_t> shape;
        for (const SymExpr &d : t.shape()) {
          auto v = env.expand(d).evaluate(values);
          if (!v)
            return error(fmt::format("entry \"{}\": cannot evaluate dim {} of input \"{}\"",
                                     entry->name(), d.str(), entry->inputs()[i].name));
          shape.push_back(*v);
        }
        inputs.push_back(randomTensor(t.dtype(), shape, rng));
      }
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
        double err = relativeError((*got)[o], (*want)[o]);
        bool ok = err <= a.tolerance;
        allPassed &= ok;
        llvm::outs() << fmt::format("{:<{}} {:<28} {:<16} max rel err {:.3g}  {}\n",
                                    entry->name(), nameWidth, point, entry->outputs()[o].name,
                                    err, ok ? "ok" : "MISMATCH");
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
                  "Largest accepted max|got - want| / max|want| per output (default 1e-4)")
      ->check(CLI::PositiveNumber);
  app->add_option("--seed", args->seed, "Seed of the random inputs (default 0)");
  app->add_option("--threads", args->threads, "Threads of the artifact (default: one per CPU)")
      ->check(CLI::NonNegativeNumber);
  return {app, [args] {
            bool passed = false;
            if (llvm::Error e = verify(*args, passed))
              return reportError("verify", std::move(e));
            if (!passed) {
              llvm::outs().flush();
              llvm::errs() << "aotc verify: error: the artifact does not match the reference "
                              "interpreter\n";
              return 1;
            }
            return 0;
          }};
}

} // namespace aotc::cli
