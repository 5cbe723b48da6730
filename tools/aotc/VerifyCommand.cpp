// `aotc verify`: runs an artifact and the reference interpreter on the same random inputs at
// points across every dynamic dim's range and reports the worst relative error of each output.
#include "Artifact.h"
#include "Subcommand.h"

#include "aotc/interp/Interpreter.h"
#include "kernel/Kernel.h"

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
  double tolerance = 0;  // 0: the precision's default
  std::string precision; // empty: the artifact's on a CUDA device, fp32 on the CPU
  uint64_t seed = 0;
  int threads = 0;
  std::string device = "cpu";
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

llvm::Error verify(const VerifyArgs &args, bool &allPassed, bool &nonFiniteReference) {
  auto device = parseDevice(args.device);
  if (!device)
    return device.takeError();
  auto artifact = Artifact::open(args.model, args.threads, *device);
  if (!artifact)
    return artifact.takeError();
  // The CPU computes every GEMM in f32 (tf32 ones too); a CUDA device rounds as exported.
  VerifyArgs a = args;
  if (a.tolerance == 0) {
    std::string precision = !a.precision.empty() ? a.precision
                            : device->cuda       ? (*artifact)->info().cudaPrecision
                                                 : "fp32";
    a.tolerance = defaultTolerance(cantFail(kir::parsePrecision(precision)));
  }
  // Creating the model checked a weights file; embedded weights are checked here only, since
  // create leaves them unread until used.
  if (llvm::Error e = (*artifact)->checkWeights())
    return e;
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
        Comparison c = compare((*got)[o], (*want)[o]);
        bool ok = c.error <= a.tolerance && c.wantNonFinite == 0;
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
                  "artifact's --precision on a CUDA device, fp32 on the CPU)");
  app->add_option("--seed", args->seed, "Seed of the random inputs (default 0)");
  app->add_option("--threads", args->threads, "Threads of the artifact (default: one per CPU)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--device", args->device,
                  "cpu, cuda, cuda:N or cuda-emu (the emulated CUDA device; docs/cuda.md)");
  return {app, [args] {
            bool passed = false, nonFiniteReference = false;
            if (!args->precision.empty())
              if (auto precision = kir::parsePrecision(args->precision); !precision)
                return reportError("verify",
                                   error("--precision: " + llvm::toString(precision.takeError())));
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
