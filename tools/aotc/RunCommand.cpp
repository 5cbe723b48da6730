// `aotc run`: runs an entry of an artifact (.so) or of an exported program (.aotp, in the
// reference interpreter) on inputs read from .npy files or drawn at random, prints a summary of
// each output, optionally writes the outputs as .npy files and measures latency.
#include "Artifact.h"
#include "Subcommand.h"

#include "aotc/interp/Interpreter.h"
#include "aotc/serialize/Archive.h"
#include "aotc/serialize/Npy.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace aotc::cli {
namespace {

struct RunOptions {
  std::string model;
  std::string entry;
  std::vector<std::string> inputs;
  uint64_t seed = 0;
  std::string outputDir;
  std::string saveInputsDir;
  int bench = 0;
  int threads = 0;
  std::string device = "cpu";
};

llvm::Error makeError(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// One `--input NAME=VALUE`: a .npy file, or a shape to fill with random values.
struct InputArg {
  std::string name;
  std::string file;                          // set for NAME=FILE.npy
  std::optional<std::vector<int64_t>> shape; // set for NAME=8x784 (empty for NAME=scalar)
};

llvm::Expected<InputArg> parseInputSpec(llvm::StringRef text) {
  auto [name, value] = text.split('=');
  if (name.empty() || name.size() == text.size())
    return makeError(fmt::format("--input \"{}\": expected NAME=FILE.npy or NAME=SHAPE "
                                 "(e.g. x=8x784)",
                                 text.str()));
  InputArg spec;
  spec.name = name.str();
  if (value.empty())
    return makeError(fmt::format("--input \"{}\": expected a .npy file or a shape such as 8x784 "
                                 "after \"=\"",
                                 text.str()));
  if (value.ends_with(".npy")) {
    spec.file = value.str();
    return spec;
  }
  spec.shape.emplace();
  if (value == "scalar")
    return spec;
  llvm::SmallVector<llvm::StringRef, 4> dims;
  value.split(dims, 'x');
  for (llvm::StringRef d : dims) {
    uint64_t n;
    // getAsInteger alone would accept "0x10" or "+3"; a dim is plain decimal digits.
    if (d.empty() || !llvm::all_of(d, llvm::isDigit) || d.getAsInteger(10, n) ||
        n > static_cast<uint64_t>(INT64_MAX))
      return makeError(fmt::format(
          "--input \"{}\": bad shape \"{}\": {} (a shape is dims joined by x, e.g. 8x784, or "
          "scalar)",
          text.str(), value.str(),
          d.empty() ? "a dim is empty"
                    : fmt::format("\"{}\" is not a non-negative integer", d.str())));
    spec.shape->push_back(static_cast<int64_t>(n));
  }
  return spec;
}

/// Whether `shape` has more elements than argument `arg` of `entry` can have: the product of
/// the upper bounds of its dims over their ranges.
bool exceedsLargestInput(const Graph &g, const Entry &entry, unsigned arg,
                         llvm::ArrayRef<int64_t> shape) {
  const ShapeEnv &env = g.shapeEnv();
  SymbolFactsMap facts = env.facts();
  uint64_t largest = 1, requested = 1;
  for (const SymExpr &d : entry.body().argument(arg)->type().shape()) {
    int64_t hi = rangeOf(env.expand(d), facts).hi;
    if (hi == INT64_MAX || hi < 0 ||
        __builtin_mul_overflow(largest, static_cast<uint64_t>(hi), &largest))
      return false; // no bound known
  }
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(requested, static_cast<uint64_t>(d), &requested))
      return true;
  return requested > largest;
}

/// The user inputs of `entry` in its order, from files or random (one generator, drawn in the
/// entry's input order, so the values do not depend on the order of the --input flags). Shapes
/// are checked against the entry before a random input is allocated (for an artifact, only
/// shapes larger than the entry takes: its runtime reports the rest).
llvm::Expected<std::vector<HostTensor>>
loadInputs(const Graph &g, const Entry &entry, llvm::ArrayRef<std::string> texts, uint64_t seed,
           bool forArtifact) {
  llvm::StringMap<InputArg> specs;
  std::vector<std::string> names;
  for (unsigned i = 0; i < entry.inputs().size(); ++i)
    if (entry.inputs()[i].kind == InputKind::User)
      names.push_back(entry.inputs()[i].name);
  for (const std::string &text : texts) {
    auto spec = parseInputSpec(text);
    if (!spec)
      return spec.takeError();
    if (!llvm::is_contained(names, spec->name))
      return makeError(fmt::format("entry \"{}\" has no input \"{}\" (inputs: {})", entry.name(),
                                   spec->name, llvm::join(names, ", ")));
    std::string name = spec->name;
    if (!specs.try_emplace(name, std::move(*spec)).second)
      return makeError(fmt::format("input \"{}\" is given twice", name));
  }
  // Files first (their size is the file's); nullopt marks an input still to draw.
  std::vector<std::optional<HostTensor>> loaded;
  std::vector<InputShape> shapes;
  std::vector<unsigned> args;
  for (unsigned i = 0; i < entry.inputs().size(); ++i) {
    const aotc::InputSpec &in = entry.inputs()[i];
    if (in.kind != InputKind::User)
      continue;
    auto it = specs.find(in.name);
    if (it == specs.end())
      return makeError(fmt::format("entry \"{}\" needs input \"{}\": give --input {}=FILE.npy or "
                                   "--input {}=SHAPE",
                                   entry.name(), in.name, in.name, in.name));
    args.push_back(i);
    const InputArg &spec = it->second;
    if (spec.shape) {
      loaded.emplace_back();
      continue;
    }
    auto t = readNpy(spec.file);
    if (!t)
      return makeError(fmt::format("input \"{}\": {}", in.name, llvm::toString(t.takeError())));
    loaded.emplace_back(std::move(*t));
  }
  for (size_t k = 0; k < args.size(); ++k) {
    const InputArg &spec = specs.find(entry.inputs()[args[k]].name)->second;
    if (loaded[k])
      shapes.push_back({loaded[k]->dtype(), loaded[k]->shape()});
    else
      shapes.push_back({entry.body().argument(args[k])->type().dtype(), *spec.shape});
  }
  // The interpreter checks everything again, so for it this only comes earlier. An artifact's
  // runtime has checks (and messages) of its own, the ones a host sees; for it only inputs that
  // would cost time to fill (16 MiB and more) and that are larger than the entry could ever take
  // stop here.
  if (auto bound = bindInputShapes(g, entry, shapes); !bound) {
    constexpr size_t Costly = size_t(16) << 20;
    bool oversized = false;
    for (size_t k = 0; k < args.size(); ++k) {
      auto bytes = checkedByteSize(shapes[k].dtype, shapes[k].shape);
      oversized |= !loaded[k] && (!bytes || *bytes >= Costly) &&
                   exceedsLargestInput(g, entry, args[k], shapes[k].shape);
      if (!bytes)
        llvm::consumeError(bytes.takeError());
    }
    if (!forArtifact || oversized)
      return bound.takeError();
    llvm::consumeError(bound.takeError());
  }
  std::mt19937_64 rng(seed);
  std::vector<HostTensor> out;
  for (size_t k = 0; k < args.size(); ++k) {
    if (loaded[k]) {
      out.push_back(std::move(*loaded[k]));
      continue;
    }
    const aotc::InputSpec &in = entry.inputs()[args[k]];
    DType dtype = shapes[k].dtype;
    // Within the entry's ranges the size may still not fit in 63 bits.
    if (auto t = checkedByteSize(dtype, shapes[k].shape); !t)
      return makeError(fmt::format("input \"{}\": {}", in.name, llvm::toString(t.takeError())));
    out.push_back(randomTensor(dtype, shapes[k].shape, rng));
  }
  return out;
}

std::string formatValue(const HostTensor &t, int64_t i) {
  if (t.dtype() == DType::Bool)
    return t.getInt(i) ? "true" : "false";
  if (!isFloating(t.dtype()))
    return std::to_string(t.getInt(i));
  return fmt::format("{:.6g}", t.getDouble(i));
}

/// `output "y": f32[2, 3]`, the first values, then min, max and mean (NaNs counted apart).
void printSummary(llvm::raw_ostream &os, const OutputSpec &spec, const HostTensor &t) {
  os << fmt::format("{} \"{}\": {}\n", toString(spec.kind).str(), spec.name,
                    describe(t.dtype(), t.shape()));
  if (t.numel() == 0) {
    os << "  (empty)\n";
    return;
  }
  constexpr int64_t Shown = 8;
  std::vector<std::string> first;
  for (int64_t i = 0; i < std::min(t.numel(), Shown); ++i)
    first.push_back(formatValue(t, i));
  os << "  [" << llvm::join(first, ", ") << (t.numel() > Shown ? ", ...]\n" : "]\n");
  if (t.dtype() == DType::Bool) {
    int64_t count = 0;
    for (int64_t i = 0; i < t.numel(); ++i)
      count += t.getInt(i);
    os << fmt::format("  true {} of {}\n", count, t.numel());
    return;
  }
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t nans = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.getDouble(i);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    lo = std::min(lo, v), hi = std::max(hi, v), sum += v;
  }
  if (nans < t.numel())
    os << fmt::format("  min {:.6g}  max {:.6g}  mean {:.6g}", lo, hi,
                      sum / static_cast<double>(t.numel() - nans));
  if (nans)
    os << fmt::format("  nan {}", nans);
  os << "\n";
}

/// Output files are named after the outputs, so a name must be a plain file name.
bool isPlainFileName(llvm::StringRef name) {
  return !name.empty() && name != "." && name != ".." && llvm::all_of(name, [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '-' || c == '.';
  });
}

llvm::Error writeOutputs(const Entry &entry, llvm::ArrayRef<HostTensor> outputs,
                         llvm::StringRef dir) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const OutputSpec &spec = entry.outputs()[i];
    if (spec.kind == OutputKind::User && !isPlainFileName(spec.name))
      return makeError(
          fmt::format("output \"{}\" cannot be written to a file of that name", spec.name));
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return makeError(fmt::format("cannot create '{}': {}", dir.str(), ec.message()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const OutputSpec &spec = entry.outputs()[i];
    if (spec.kind != OutputKind::User)
      continue;
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, spec.name + ".npy");
    const HostTensor *t = &outputs[i];
    // numpy has no bfloat16; f32 holds every bf16 value exactly.
    HostTensor widened;
    if (t->dtype() == DType::BF16) {
      widened = HostTensor(DType::F32, t->shape());
      for (int64_t j = 0; j < t->numel(); ++j)
        widened.setDouble(j, t->getDouble(j));
      t = &widened;
      llvm::errs() << fmt::format("note: output \"{}\" is bf16 and is written as f32\n", spec.name);
    }
    if (llvm::Error err = writeNpy(*t, path))
      return makeError(
          fmt::format("cannot write '{}': {}", path.str().str(), llvm::toString(std::move(err))));
  }
  return llvm::Error::success();
}

/// --save-inputs: the user inputs of the run (given or drawn) as NAME.npy in `dir`.
llvm::Error writeInputs(const Entry &entry, llvm::ArrayRef<HostTensor> inputs,
                        llvm::StringRef dir) {
  std::vector<std::string> names;
  for (const InputSpec &spec : entry.inputs())
    if (spec.kind == InputKind::User)
      names.push_back(spec.name);
  for (const std::string &name : names)
    if (!isPlainFileName(name))
      return makeError(fmt::format("input \"{}\" cannot be written to a file of that name", name));
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return makeError(fmt::format("cannot create '{}': {}", dir.str(), ec.message()));
  for (size_t i = 0; i < inputs.size() && i < names.size(); ++i) {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, names[i] + ".npy");
    if (llvm::Error err = writeNpy(inputs[i], path))
      return makeError(
          fmt::format("cannot write '{}': {}", path.str().str(), llvm::toString(std::move(err))));
  }
  return llvm::Error::success();
}

llvm::Expected<const Entry *> chooseEntry(const Graph &g, llvm::StringRef model,
                                          llvm::StringRef name) {
  if (!name.empty()) {
    auto e = findEntry(g, name);
    if (!e)
      return makeError(fmt::format("{}: {}", model.str(), llvm::toString(e.takeError())));
    return e;
  }
  if (g.entries().size() == 1)
    return g.entries()[0].get();
  std::vector<std::string> names;
  for (const auto &e : g.entries())
    names.push_back(e->name());
  return makeError(fmt::format("{} has {} entries ({}); choose one with --entry", model.str(),
                               names.size(), llvm::join(names, ", ")));
}

/// Runs the entry `bench` more times into the same output buffers (Artifact::time) and prints the
/// median latency and the spread.
llvm::Error benchmark(Artifact &artifact, llvm::StringRef entry, llvm::ArrayRef<HostTensor> inputs,
                      int runs) {
  auto times = artifact.time(entry, inputs, runs);
  if (!times)
    return times.takeError();
  std::vector<double> &ms = *times;
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[static_cast<size_t>(q * (ms.size() - 1) + 0.5)]; };
  llvm::outs() << fmt::format(
      "latency over {} runs: median {:.4f} ms, p10 {:.4f}, p90 {:.4f}, "
      "min {:.4f}, max {:.4f} ({} threads, {})\n",
      runs, at(0.5), at(0.1), at(0.9), ms.front(), ms.back(), artifact.info().threads,
      artifact.info().device == "cpu" ? artifact.info().cpuVariant : artifact.info().device);
  return llvm::Error::success();
}

llvm::Error runArtifact(const RunOptions &opts) {
  auto device = parseDevice(opts.device);
  if (!device)
    return device.takeError();
  auto artifact = Artifact::open(opts.model, opts.threads, *device);
  if (!artifact)
    return artifact.takeError();
  const Graph &g = (*artifact)->graph();
  auto entry = chooseEntry(g, opts.model, opts.entry);
  if (!entry)
    return entry.takeError();
  auto inputs = loadInputs(g, **entry, opts.inputs, opts.seed, /*forArtifact=*/true);
  if (!inputs)
    return inputs.takeError();
  if (!opts.saveInputsDir.empty())
    if (llvm::Error e = writeInputs(**entry, *inputs, opts.saveInputsDir))
      return e;
  auto outputs = (*artifact)->run((*entry)->name(), *inputs);
  if (!outputs)
    return outputs.takeError();
  for (size_t i = 0; i < outputs->size(); ++i)
    printSummary(llvm::outs(), (*entry)->outputs()[i], (*outputs)[i]);
  if (opts.bench > 0)
    if (llvm::Error e = benchmark(**artifact, (*entry)->name(), *inputs, opts.bench))
      return e;
  if (!opts.outputDir.empty())
    return writeOutputs(**entry, *outputs, opts.outputDir);
  return llvm::Error::success();
}

llvm::Error runModel(const RunOptions &opts) {
  if (isArtifactPath(opts.model))
    return runArtifact(opts);
  if (opts.bench > 0)
    return makeError("--bench needs a compiled artifact (.so); the reference interpreter is not "
                     "meant to be timed");
  if (opts.device != "cpu")
    return makeError(fmt::format("--device {}: an exported program (.aotp) runs on the reference "
                                 "interpreter; --device needs a compiled artifact (.so)",
                                 opts.device));
  auto program = readArchive(opts.model);
  if (!program)
    return program.takeError();
  const Graph &g = *program->graph;
  auto entry = chooseEntry(g, opts.model, opts.entry);
  if (!entry)
    return entry.takeError();
  auto inputs = loadInputs(g, **entry, opts.inputs, opts.seed, /*forArtifact=*/false);
  if (!inputs)
    return inputs.takeError();
  if (!opts.saveInputsDir.empty())
    if (llvm::Error e = writeInputs(**entry, *inputs, opts.saveInputsDir))
      return e;

  // The weights stay views of the archive's mapping, which `program` keeps alive.
  llvm::StringMap<HostTensor> state;
  for (const Weight &w : program->weights) {
    auto t = HostTensor::view(w.dtype(), w.shape(), w.bytes(), nullptr);
    if (!t)
      return makeError(fmt::format("weight \"{}\": {}", w.name(), llvm::toString(t.takeError())));
    state.try_emplace(w.name(), std::move(*t));
  }
  auto outputs = interpret(g, (*entry)->name(), *inputs, [&](llvm::StringRef name) {
    auto it = state.find(name);
    return it == state.end() ? nullptr : &it->second;
  });
  if (!outputs)
    return outputs.takeError();

  for (size_t i = 0; i < outputs->size(); ++i)
    printSummary(llvm::outs(), (*entry)->outputs()[i], (*outputs)[i]);
  if (!opts.outputDir.empty())
    return writeOutputs(**entry, *outputs, opts.outputDir);
  return llvm::Error::success();
}

} // namespace

Subcommand addRunCommand(CLI::App &parent) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App *app = parent.add_subcommand(
      "run", "Run an entry of an artifact (.so), or of an exported program (.aotp) in the "
             "reference interpreter");
  app->add_option("model", opts->model, "Artifact (.so) or exported program (.aotp)")->required();
  app->add_option("--entry", opts->entry, "The entry to run (required if there are several)");
  app->add_option("--input", opts->inputs,
                  "NAME=FILE.npy, or NAME=SHAPE (e.g. x=8x784, or x=scalar) for random values: "
                  "floats standard normal, integers in [0, 10), bools fair; repeatable")
      ->allow_extra_args(false);
  app->add_option("--seed", opts->seed, "Seed of the random inputs (default 0)");
  app->add_option("--save-inputs", opts->saveInputsDir,
                  "Write the inputs of the run (given or random) as NAME.npy into DIR");
  app->add_option("--output", opts->outputDir,
                  "Write each user output to DIR/<output>.npy (DIR is created if needed)");
  app->add_option("--bench", opts->bench,
                  "Then run N more times and print the median latency and spread (.so only)")
      ->check(CLI::Range(0, 1000000));
  app->add_option("--threads", opts->threads, "Threads of the artifact (default: one per CPU)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--device", opts->device,
                  "cpu, cuda, cuda:N or cuda-emu (the emulated CUDA device; docs/cuda.md)");
  return {app, [opts] {
            if (llvm::Error err = runModel(*opts))
              return reportError("run", std::move(err));
            return 0;
          }};
}

} // namespace aotc::cli
