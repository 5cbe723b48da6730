// Runs an entry of an aotc artifact on random inputs and prints its outputs and latency, using
// nothing but the runtime's header (aotc/runtime.hpp over the C ABI):
//   run_model MODEL.so --input x=8x784 [--entry NAME] [--iters N] [--threads N] [--median-only]
// (--iters 0: one run, no timing: what a fresh process pays to its first answer)
#include <aotc/runtime.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

struct Args {
  std::string model, entry;
  std::map<std::string, std::vector<int64_t>> shapes;
  int iters = 100, threads = 0;
  bool medianOnly = false;
};

[[noreturn]] void usage(const char *message) {
  std::fprintf(stderr,
               "run_model: %s\nusage: run_model MODEL.so --input NAME=8x784 [--input ...] "
               "[--entry NAME] [--iters N] [--threads N] [--median-only]\n",
               message);
  std::exit(2);
}

Args parse(int argc, char **argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage((arg + " needs a value").c_str());
      return argv[++i];
    };
    if (arg == "--input") {
      std::string spec = value();
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0)
        usage("--input expects NAME=SHAPE, e.g. x=8x784");
      std::vector<int64_t> shape;
      std::string dims = spec.substr(eq + 1);
      for (size_t pos = 0; pos <= dims.size();) {
        size_t x = dims.find('x', pos);
        std::string d = dims.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
        char *end = nullptr;
        long long v = std::strtoll(d.c_str(), &end, 10);
        if (d.empty() || *end || v < 0)
          usage(("bad shape in --input " + spec).c_str());
        shape.push_back(v);
        if (x == std::string::npos)
          break;
        pos = x + 1;
      }
      a.shapes[spec.substr(0, eq)] = shape;
    } else if (arg == "--entry") {
      a.entry = value();
    } else if (arg == "--iters") {
      a.iters = std::atoi(value().c_str());
    } else if (arg == "--threads") {
      a.threads = std::atoi(value().c_str());
    } else if (arg == "--median-only") {
      a.medianOnly = true;
    } else if (!arg.empty() && arg[0] == '-') {
      usage(("unknown option " + arg).c_str());
    } else if (a.model.empty()) {
      a.model = arg;
    } else {
      usage("more than one model given");
    }
  }
  if (a.model.empty())
    usage("no model given");
  if (a.iters < 0)
    usage("--iters must not be negative");
  return a;
}

int64_t elementSize(int32_t dtype) {
  switch (dtype) {
  case AOTC_DTYPE_F64:
  case AOTC_DTYPE_I64:
    return 8;
  case AOTC_DTYPE_F32:
  case AOTC_DTYPE_I32:
    return 4;
  case AOTC_DTYPE_F16:
  case AOTC_DTYPE_BF16:
  case AOTC_DTYPE_I16:
    return 2;
  default:
    return 1;
  }
}

/// Random values for an input: floats standard normal, integers in [0, 10).
std::vector<unsigned char> randomData(int32_t dtype, int64_t numel, std::mt19937_64 &rng) {
  std::vector<unsigned char> bytes(static_cast<size_t>(numel * elementSize(dtype)));
  std::normal_distribution<float> normal;
  for (int64_t i = 0; i < numel; ++i) {
    unsigned char *p = bytes.data() + i * elementSize(dtype);
    if (dtype == AOTC_DTYPE_F32) {
      float v = normal(rng);
      std::memcpy(p, &v, 4);
    } else if (dtype == AOTC_DTYPE_F64) {
      double v = normal(rng);
      std::memcpy(p, &v, 8);
    } else if (dtype == AOTC_DTYPE_I64) {
      int64_t v = static_cast<int64_t>(rng() % 10);
      std::memcpy(p, &v, 8);
    } else if (dtype == AOTC_DTYPE_I32) {
      int32_t v = static_cast<int32_t>(rng() % 10);
      std::memcpy(p, &v, 4);
    } else {
      *p = static_cast<unsigned char>(rng() % 2);
    }
  }
  return bytes;
}

} // namespace

int main(int argc, char **argv) {
  Args a = parse(argc, argv);
  try {
    aotc::rt::Library library(a.model.find('/') == std::string::npos ? "./" + a.model : a.model);
    aotc_model_options options;
    library.api().model_options_init(&options);
    options.num_threads = a.threads;
    aotc::rt::Model model(library, &options);
    std::vector<std::string> entries = model.entries();
    int32_t entry = a.entry.empty() ? 0 : model.entry(a.entry);
    if (a.entry.empty() && entries.size() > 1)
      usage("the model has several entries; choose one with --entry");

    std::mt19937_64 rng(0);
    std::vector<std::vector<unsigned char>> storage;
    std::vector<aotc_tensor> inputs;
    for (const aotc_tensor_info &info : model.inputs(entry)) {
      auto it = a.shapes.find(info.name);
      if (it == a.shapes.end())
        usage((std::string("missing --input ") + info.name + "=SHAPE").c_str());
      int64_t numel = 1;
      for (int64_t d : it->second)
        numel *= d;
      storage.push_back(randomData(info.dtype, numel, rng));
      inputs.push_back(aotc::rt::tensor(storage.back().data(), info.dtype, it->second));
    }

    // The first run allocates the outputs; the timed runs reuse them as caller buffers.
    std::vector<aotc::rt::OwnedTensor> outputs = model.run(entry, inputs);
    std::vector<aotc_tensor> buffers;
    for (const aotc::rt::OwnedTensor &o : outputs) {
      aotc_tensor t = o.raw();
      t.size_bytes = static_cast<uint64_t>(o.numel() * elementSize(o.dtype()));
      t.flags = 0;
      buffers.push_back(t);
    }
    std::vector<double> ms;
    for (int i = 0; i < a.iters; ++i) {
      auto start = std::chrono::steady_clock::now();
      model.run_into(entry, inputs, buffers);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    std::sort(ms.begin(), ms.end());
    double median = ms.empty() ? 0 : ms[ms.size() / 2];
    if (a.medianOnly) {
      std::printf("%.6f\n", median);
      return 0;
    }
    std::vector<aotc_tensor_info> infos = model.outputs(entry);
    for (size_t i = 0; i < outputs.size(); ++i) {
      const aotc::rt::OwnedTensor &o = outputs[i];
      std::printf("output \"%s\": %s[", infos[i].name, library.api().dtype_name(o.dtype()));
      for (int32_t d = 0; d < o.raw().rank; ++d)
        std::printf("%s%lld", d ? ", " : "", static_cast<long long>(o.raw().shape[d]));
      std::printf("]\n");
      if (o.dtype() == AOTC_DTYPE_F32) {
        std::printf("  [");
        for (int64_t j = 0; j < std::min<int64_t>(o.numel(), 8); ++j)
          std::printf("%s%.6g", j ? ", " : "", o.data<float>()[j]);
        std::printf("%s]\n", o.numel() > 8 ? ", ..." : "");
      }
    }
    if (!ms.empty())
      std::printf("latency: median %.4f ms, min %.4f ms, max %.4f ms over %d runs (%d threads, "
                  "%s)\n",
                  median, ms.front(), ms.back(), a.iters, model.num_threads(),
                  model.cpu_variant().c_str());
  } catch (const aotc::rt::Error &e) {
    std::fprintf(stderr, "run_model: %s\n", e.what());
    return 1;
  }
  return 0;
}
