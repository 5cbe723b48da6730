// Runs an entry of an aotc artifact on random inputs and prints its outputs and latency, using
// nothing but the runtime's header (aotc/runtime.hpp over the C ABI):
//   run_model MODEL.so --input x=8x784 [--entry NAME] [--iters N] [--threads N] [--median-only]
//             [--device cpu|cuda[:N]] [--cuda-graphs] [--weights FILE [--map-weights-unchecked]]
// (--iters 0: one run, no timing: what a fresh process pays to its first answer). On a CUDA
// device the inputs are uploaded once and the outputs written into device buffers allocated
// once; a timed run returns when its outputs are ready (the model's own stream). --cuda-graphs
// replays each run as one captured graph after two warm-up runs. --map-weights-unchecked maps a
// weights file of the right size without checking its hash (a benchmark's random weights).
#include <aotc/runtime.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
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
  std::string weights;
  int iters = 100, threads = 0, deviceIndex = 0;
  bool medianOnly = false, cuda = false, graphs = false, unchecked = false;
};

[[noreturn]] void usage(const char *message) {
  std::fprintf(stderr,
               "run_model: %s\nusage: run_model MODEL.so --input NAME=8x784 [--input ...] "
               "[--entry NAME] [--iters N] [--threads N] [--median-only] [--device cpu|cuda[:N]] "
               "[--cuda-graphs] [--weights FILE [--map-weights-unchecked]]\n",
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
    } else if (arg == "--device") {
      std::string d = value();
      char *end = nullptr;
      if (d == "cpu") {
        a.cuda = false;
      } else if (d == "cuda") {
        a.cuda = true;
      } else if (d.rfind("cuda:", 0) == 0 && d.size() > 5 &&
                 (a.deviceIndex = int(std::strtol(d.c_str() + 5, &end, 10)), !*end) &&
                 a.deviceIndex >= 0) {
        a.cuda = true;
      } else {
        usage(("--device " + d + ": expected cpu, cuda or cuda:N").c_str());
      }
    } else if (arg == "--cuda-graphs") {
      a.graphs = true;
    } else if (arg == "--weights") {
      a.weights = value();
    } else if (arg == "--map-weights-unchecked") {
      a.unchecked = true;
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
  if (a.graphs && !a.cuda)
    usage("--cuda-graphs needs --device cuda");
  if (a.unchecked && a.weights.empty())
    usage("--map-weights-unchecked needs --weights FILE");
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

/// `v` (|v| < 65504) as an IEEE half, rounded to nearest even (to a subnormal below 2^-14).
uint16_t toHalf(float v) {
  uint32_t f;
  std::memcpy(&f, &v, 4);
  uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000);
  float a = std::fabs(v);
  // Below 2^-14 a half is a multiple of 2^-24 (subnormal): the nearest one.
  if (a < 6.103515625e-05f) {
    uint16_t m = static_cast<uint16_t>(std::nearbyint(a * 16777216.0f)); // a / 2^-24
    return sign | m;
  }
  uint32_t bits;
  std::memcpy(&bits, &a, 4);
  uint32_t lsb = (bits >> 13) & 1;
  bits += 0xfff + lsb; // round to nearest even on the 13 dropped bits
  uint32_t exp = (bits >> 23) - 127 + 15;
  return sign | static_cast<uint16_t>((exp << 10) | ((bits >> 13) & 0x3ff));
}

/// Random values for an input: floats standard normal (bf16 and f16 rounded to nearest even),
/// integers in [0, 10).
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
    } else if (dtype == AOTC_DTYPE_BF16) {
      float v = normal(rng);
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      uint16_t h = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
      std::memcpy(p, &h, 2);
    } else if (dtype == AOTC_DTYPE_F16) {
      uint16_t h = toHalf(normal(rng));
      std::memcpy(p, &h, 2);
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
    const aotc::rt::Api &api = library.api();
    api.model_options_init(&options);
    options.num_threads = a.threads;
    if (a.cuda) {
      options.device_type = AOTC_DEVICE_CUDA;
      options.device_index = a.deviceIndex;
      options.cuda_graphs = a.graphs ? 4 : 0;
    }
    if (!a.weights.empty())
      options.weights_path = a.weights.c_str();
    if (a.unchecked)
      options.flags |= AOTC_MODEL_MAP_WEIGHTS_UNCHECKED;
    aotc::rt::Model model(library, &options);
    std::vector<std::string> entries = model.entries();
    int32_t entry = a.entry.empty() ? 0 : model.entry(a.entry);
    if (a.entry.empty() && entries.size() > 1)
      usage("the model has several entries; choose one with --entry");

    // Device memory for the inputs and output buffers of a CUDA model, freed at the end.
    std::vector<void *> deviceMemory;
    auto freeDeviceMemory = [&] {
      for (void *p : deviceMemory)
        api.model_device_free(model.get(), p);
    };
    auto onDevice = [&](const void *host, uint64_t bytes) {
      void *d = nullptr;
      api.check(api.model_device_alloc(model.get(), std::max<uint64_t>(bytes, 1), &d));
      deviceMemory.push_back(d);
      if (host)
        api.check(api.model_copy(model.get(), d, host, bytes, AOTC_COPY_HOST_TO_DEVICE));
      return d;
    };

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
      if (a.cuda) {
        aotc_tensor &t = inputs.back();
        t.data = onDevice(storage.back().data(), storage.back().size());
        t.device_type = AOTC_DEVICE_CUDA;
        t.device_index = a.deviceIndex;
      }
    }

    // The first run allocates the outputs; the timed runs write into buffers of their sizes
    // (the same addresses every run, as a CUDA graph replay needs).
    std::vector<aotc::rt::OwnedTensor> outputs = model.run(entry, inputs);
    std::vector<aotc_tensor> buffers;
    for (const aotc::rt::OwnedTensor &o : outputs) {
      aotc_tensor t = o.raw();
      t.size_bytes = static_cast<uint64_t>(o.numel() * elementSize(o.dtype()));
      t.flags = 0;
      if (a.cuda) // on the device the runtime allocated the output on, which t names
        t.data = onDevice(nullptr, t.size_bytes);
      buffers.push_back(t);
    }
    for (int i = 0; a.cuda && i < 3 && a.iters > 0; ++i)
      model.run_into(entry, inputs, buffers); // seen, captured, replayed once
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
      freeDeviceMemory();
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
        std::vector<float> head(static_cast<size_t>(std::min<int64_t>(o.numel(), 8)));
        if (a.cuda)
          api.check(api.model_copy(model.get(), head.data(), o.raw().data, head.size() * 4,
                                   AOTC_COPY_DEVICE_TO_HOST));
        else
          std::copy_n(o.data<float>(), head.size(), head.begin());
        std::printf("  [");
        for (size_t j = 0; j < head.size(); ++j)
          std::printf("%s%.6g", j ? ", " : "", head[j]);
        std::printf("%s]\n", o.numel() > 8 ? ", ..." : "");
      }
    }
    const char *device = "cpu";
    api.check(api.model_device_name(model.get(), &device));
    if (!ms.empty())
      std::printf("latency: median %.4f ms, min %.4f ms, max %.4f ms over %d runs (%d threads, "
                  "%s, %s%s)\n",
                  median, ms.front(), ms.back(), a.iters, model.num_threads(),
                  model.cpu_variant().c_str(), device, a.graphs ? ", CUDA graphs" : "");
    freeDeviceMemory();
  } catch (const aotc::rt::Error &e) {
    std::fprintf(stderr, "run_model: %s\n", e.what());
    return 1;
  }
  return 0;
}
