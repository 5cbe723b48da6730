// aotc_gpu_check: the device half of tools/gpu-check.sh. It travels to a machine with a GPU, so
// it needs nothing but libc (libstdc++ linked statically, artifacts dlopened through
// runtime.hpp, .npy files read here). For each case directory of a prepared suite (MODEL.so,
// inputs/*.npy, expected/*.npy from the reference interpreter, a `case` file naming the entry
// and, for an artifact exported with --precision, its tolerance) it runs the entry on the device
// and checks:
//   - every output within the tolerance of the reference (max |got - want| / max |want|);
//   - 8 threads on one model handle, 2 runs each, bitwise equal to the serial run;
//   - CUDA graphs (a model with cuda_graphs on, outputs at fixed addresses): 3 runs, the last two
//     replaying the captured graph, bitwise equal to the plain launches;
//   - a caller's stream (aotc_run_options.stream, a non-blocking CUstream of the device's primary
//     context, libcuda opened here): 2 runs each of the plain and the graph model, bitwise equal
//     to the serial run.
// One table line per case; exit 1 when any check fails.
//
//   aotc_gpu_check [--device cuda:N|cpu] [--tolerance T] [--quick] [--trace] SUITE_DIR...
// --quick runs each case once (for compute-sanitizer, which is slow); --trace names each phase
// on stderr before it starts (where a crash happened); --device cpu runs the same
// checks on the CPU code of cpu,cuda artifacts (how CI tests this program without a GPU).
#include "aotc/runtime.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Npy {
  int32_t dtype = 0; // AOTC_DTYPE_*
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

bool fail(std::string *why, const std::string &text) {
  *why = text;
  return false;
}

/// A little-endian, C-order .npy of f32, f64, i64, i32 or bool (version 1 or 2 headers).
bool readNpy(const std::string &path, Npy &out, std::string *why) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return fail(why, "cannot read " + path);
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0)
    return fail(why, path + ": not a .npy file");
  size_t headerLen, start;
  if (data[6] == 1) {
    headerLen = uint8_t(data[8]) | size_t(uint8_t(data[9])) << 8;
    start = 10;
  } else {
    if (data.size() < 12)
      return fail(why, path + ": truncated");
    headerLen = uint8_t(data[8]) | size_t(uint8_t(data[9])) << 8 | size_t(uint8_t(data[10])) << 16 |
                size_t(uint8_t(data[11])) << 24;
    start = 12;
  }
  if (start + headerLen > data.size())
    return fail(why, path + ": truncated header");
  std::string header = data.substr(start, headerLen);
  auto field = [&](const std::string &key) -> std::string {
    size_t at = header.find("'" + key + "'");
    if (at == std::string::npos)
      return "";
    at = header.find(':', at);
    size_t end = key == "shape" ? header.find(')', at) + 1 : header.find(',', at);
    return header.substr(at + 1, end - at - 1);
  };
  std::string descr = field("descr"), order = field("fortran_order"), shape = field("shape");
  size_t elem = 0;
  if (descr.find("<f4") != std::string::npos)
    out.dtype = AOTC_DTYPE_F32, elem = 4;
  else if (descr.find("<f8") != std::string::npos)
    out.dtype = AOTC_DTYPE_F64, elem = 8;
  else if (descr.find("<i8") != std::string::npos)
    out.dtype = AOTC_DTYPE_I64, elem = 8;
  else if (descr.find("<i4") != std::string::npos)
    out.dtype = AOTC_DTYPE_I32, elem = 4;
  else if (descr.find("|b1") != std::string::npos)
    out.dtype = AOTC_DTYPE_BOOL, elem = 1;
  else
    return fail(why, path + ": unsupported dtype " + descr);
  if (order.find("True") != std::string::npos)
    return fail(why, path + ": Fortran order");
  out.shape.clear();
  int64_t numel = 1;
  for (const char *p = shape.c_str(); *p; ++p)
    if (*p >= '0' && *p <= '9') {
      char *end;
      out.shape.push_back(std::strtoll(p, &end, 10));
      numel *= out.shape.back();
      p = end - 1;
    }
  size_t body = start + headerLen;
  if (data.size() - body != size_t(numel) * elem)
    return fail(why, path + ": the data is not the header's size");
  out.bytes.assign(data.begin() + long(body), data.end());
  return true;
}

/// max |got - want| / max |want| over f32 outputs; NaN or Inf in `got` is infinite error.
double relativeError(const Npy &want, const void *got) {
  const auto *w = reinterpret_cast<const float *>(want.bytes.data());
  const auto *g = static_cast<const float *>(got);
  size_t n = want.bytes.size() / 4;
  double maxDiff = 0, maxWant = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(g[i]))
      return INFINITY;
    maxDiff = std::max(maxDiff, std::fabs(double(g[i]) - double(w[i])));
    maxWant = std::max(maxWant, std::fabs(double(w[i])));
  }
  return maxDiff == 0 ? 0 : maxDiff / std::max(maxWant, 1e-30);
}

/// The few driver calls that make a caller's stream: libcuda, opened here as the runtime opens it.
class CallerStream {
public:
  /// A non-blocking stream in the primary context of device `index`; throws with the call that
  /// failed.
  explicit CallerStream(int index) {
    Lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!Lib)
      throw aotc::rt::Error(AOTC_ERROR_INTERNAL,
                            std::string("caller stream: cannot open libcuda.so.1: ") + dlerror());
    using Init = int (*)(unsigned);
    using DeviceGet = int (*)(int *, int);
    using Retain = int (*)(void **, int);
    using SetCurrent = int (*)(void *);
    using Create = int (*)(void **, unsigned);
    int device = 0;
    void *ctx = nullptr;
    call("cuInit", fn<Init>("cuInit")(0));
    call("cuDeviceGet", fn<DeviceGet>("cuDeviceGet")(&device, index));
    call("cuDevicePrimaryCtxRetain", fn<Retain>("cuDevicePrimaryCtxRetain")(&ctx, device));
    call("cuCtxSetCurrent", fn<SetCurrent>("cuCtxSetCurrent")(ctx));
    call("cuStreamCreate", fn<Create>("cuStreamCreate")(&Stream, 1 /* CU_STREAM_NON_BLOCKING */));
    Sync = fn<int (*)(void *)>("cuStreamSynchronize");
    Destroy = fn<int (*)(void *)>("cuStreamDestroy_v2");
  }
  ~CallerStream() {
    if (Stream)
      Destroy(Stream);
  }
  CallerStream(const CallerStream &) = delete;
  CallerStream &operator=(const CallerStream &) = delete;
  void *get() const { return Stream; }
  void synchronize() const { call("cuStreamSynchronize", Sync(Stream)); }

private:
  template <typename F> F fn(const char *name) {
    void *f = dlsym(Lib, name);
    if (!f)
      throw aotc::rt::Error(AOTC_ERROR_INTERNAL,
                            std::string("caller stream: libcuda has no ") + name);
    return reinterpret_cast<F>(f);
  }
  static void call(const char *what, int result) {
    if (result != 0)
      throw aotc::rt::Error(AOTC_ERROR_INTERNAL, "caller stream: " + std::string(what) +
                                                     " failed with CUresult " +
                                                     std::to_string(result));
  }
  void *Lib = nullptr; // never closed: the runtime holds libcuda open too
  void *Stream = nullptr;
  int (*Sync)(void *) = nullptr;
  int (*Destroy)(void *) = nullptr;
};

struct Options {
  bool cuda = true;
  int index = 0;
  double tolerance = 1e-4;
  bool quick = false;
  bool trace = false; // each phase of each case on stderr, before it starts
};

struct Case {
  std::string dir, entry;
  double tolerance = 0; // the case file's `tolerance T` (an artifact exported with --precision)
};

bool readCase(const std::string &dir, Case &c, std::string *why) {
  std::ifstream f(dir + "/case");
  if (!f)
    return fail(why, "no case file in " + dir);
  c.dir = dir;
  std::string key, line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    if (!(in >> key))
      continue;
    if (key == "entry")
      in >> c.entry;
    else if (key == "tolerance" && !(in >> c.tolerance && c.tolerance > 0))
      return fail(why, dir + "/case: tolerance must be a positive number");
  }
  if (c.entry.empty())
    return fail(why, dir + "/case names no entry");
  return true;
}

/// One model on the device, with its inputs there.
class Runner {
public:
  Runner(const std::string &so, const Options &o, uint32_t graphs = 0)
      : Lib(so), Api(Lib.api()), O(o) {
    aotc_model_options opts;
    Api.model_options_init(&opts);
    if (O.cuda) {
      opts.device_type = AOTC_DEVICE_CUDA;
      opts.device_index = O.index;
      opts.cuda_graphs = graphs;
    }
    Api.check(Api.model_create(&opts, &M));
  }
  ~Runner() {
    for (void *p : Device)
      Api.model_device_free(M, p);
    Api.model_destroy(M);
  }
  /// The entry's input or output names, in order.
  std::vector<std::string> names(const std::string &entry, bool inputs) {
    int32_t e = 0, n = 0;
    Api.check(Api.model_find_entry(M, entry.c_str(), &e));
    Api.check(inputs ? Api.model_num_inputs(M, e, &n) : Api.model_num_outputs(M, e, &n));
    std::vector<std::string> out;
    for (int32_t i = 0; i < n; ++i) {
      aotc_tensor_info info;
      Api.check(inputs ? Api.model_input_info(M, e, i, &info)
                       : Api.model_output_info(M, e, i, &info));
      out.push_back(info.name);
    }
    return out;
  }
  std::string deviceName() {
    const char *name = "";
    Api.check(Api.model_device_name(M, &name));
    return name;
  }
  void setInputs(const std::vector<Npy> &inputs) {
    for (const Npy &n : inputs) {
      void *d = nullptr;
      Api.check(Api.model_device_alloc(M, n.bytes.size(), &d));
      Device.push_back(d);
      Api.check(Api.model_copy(M, d, n.bytes.data(), n.bytes.size(), AOTC_COPY_HOST_TO_DEVICE));
      aotc_tensor t;
      std::memset(&t, 0, sizeof t);
      t.data = d;
      t.dtype = n.dtype;
      t.rank = int32_t(n.shape.size());
      std::copy(n.shape.begin(), n.shape.end(), t.shape);
      t.size_bytes = n.bytes.size();
      t.device_type = O.cuda ? AOTC_DEVICE_CUDA : AOTC_DEVICE_CPU;
      t.device_index = O.cuda ? O.index : 0;
      Tensors.push_back(t);
    }
  }
  /// Runs `entry`; returns each output's bytes on the host. With `sizes`, into output buffers
  /// of those sizes allocated once (the same addresses every run, as CUDA graphs need).
  /// With `stream`, the run is enqueued on that caller's stream, synchronized before the copies.
  std::vector<std::vector<uint8_t>> run(const std::string &entry,
                                        const std::vector<size_t> *sizes = nullptr,
                                        const CallerStream *stream = nullptr) {
    int32_t e = 0, n = 0;
    Api.check(Api.model_find_entry(M, entry.c_str(), &e));
    Api.check(Api.model_num_outputs(M, e, &n));
    aotc_tensor out;
    std::memset(&out, 0, sizeof out);
    out.device_type = O.cuda ? AOTC_DEVICE_CUDA : AOTC_DEVICE_CPU;
    out.device_index = O.cuda ? O.index : 0;
    std::vector<aotc_tensor> outs(size_t(n), out);
    if (sizes && Fixed.empty())
      for (size_t bytes : *sizes) {
        void *p = nullptr;
        Api.check(Api.model_device_alloc(M, bytes, &p));
        Device.push_back(p);
        Fixed.push_back(p);
      }
    for (size_t i = 0; sizes && i < outs.size(); ++i) {
      outs[i].data = Fixed[i];
      outs[i].size_bytes = (*sizes)[i];
    }
    aotc_run_options options;
    Api.run_options_init(&options);
    options.stream = stream ? stream->get() : nullptr;
    Api.check(
        Api.model_run_v2(M, e, Tensors.data(), Tensors.size(), outs.data(), outs.size(), &options));
    if (stream)
      stream->synchronize();
    std::vector<std::vector<uint8_t>> host;
    for (aotc_tensor &t : outs) {
      host.emplace_back(t.size_bytes);
      Api.check(
          Api.model_copy(M, host.back().data(), t.data, t.size_bytes, AOTC_COPY_DEVICE_TO_HOST));
      Api.tensor_release(&t);
    }
    return host;
  }

private:
  aotc::rt::Library Lib;
  const aotc::rt::Api &Api;
  Options O;
  aotc_model *M = nullptr;
  std::vector<void *> Device, Fixed;
  std::vector<aotc_tensor> Tensors;
};

/// Checks one case; prints its table line. Returns whether every check passed.
bool checkCase(const Case &c, const std::string &so, const Options &o) {
  std::string why;
  auto phase = [&](const char *what) {
    if (o.trace)
      std::fprintf(stderr, "aotc_gpu_check: %s: %s\n", c.dir.c_str(), what);
  };
  phase("serial run");
  try {
    Runner r(so, o);
    std::vector<Npy> inputs;
    for (const std::string &name : r.names(c.entry, true)) {
      inputs.emplace_back();
      if (!readNpy(c.dir + "/inputs/" + name + ".npy", inputs.back(), &why)) {
        std::printf("%-40s FAILED: %s\n", c.dir.c_str(), why.c_str());
        return false;
      }
    }
    // Outputs without a reference file (a mutated buffer's new value) are not compared.
    std::vector<std::optional<Npy>> expected;
    for (const std::string &name : r.names(c.entry, false)) {
      expected.emplace_back();
      std::string path = c.dir + "/expected/" + name + ".npy";
      if (!std::ifstream(path))
        continue;
      expected.back().emplace();
      if (!readNpy(path, *expected.back(), &why)) {
        std::printf("%-40s FAILED: %s\n", c.dir.c_str(), why.c_str());
        return false;
      }
    }
    r.setInputs(inputs);
    std::vector<std::vector<uint8_t>> serial = r.run(c.entry);
    double err = 0;
    bool ok = serial.size() == expected.size();
    for (size_t i = 0; ok && i < serial.size(); ++i) {
      if (!expected[i])
        continue;
      const Npy &want = *expected[i];
      ok = serial[i].size() == want.bytes.size();
      if (ok && want.dtype == AOTC_DTYPE_F32)
        err = std::max(err, relativeError(want, serial[i].data()));
      else if (ok)
        ok = serial[i] == want.bytes;
    }
    ok = ok && err <= (c.tolerance > 0 ? c.tolerance : o.tolerance);
    std::string threads = "-";
    if (!o.quick) {
      phase("8 threads");
      std::vector<int> same(8, 0);
      std::vector<std::thread> pool;
      for (int t = 0; t < 8; ++t)
        pool.emplace_back([&, t] {
          for (int k = 0; k < 2; ++k)
            same[size_t(t)] += r.run(c.entry) == serial;
        });
      for (std::thread &t : pool)
        t.join();
      int total = 0;
      for (int s : same)
        total += s;
      threads = std::to_string(total) + "/16";
      ok = ok && total == 16;
    }
    std::string graphs = "-", streams = "-";
    if (!o.quick && o.cuda) {
      phase("CUDA graphs");
      Runner g(so, o, 4);
      g.setInputs(inputs);
      std::vector<size_t> sizes;
      for (const std::vector<uint8_t> &b : serial)
        sizes.push_back(std::max<size_t>(b.size(), 1));
      int equal = 0;
      for (int k = 0; k < 3; ++k)
        equal += g.run(c.entry, &sizes) == serial;
      graphs = std::to_string(equal) + "/3";
      ok = ok && equal == 3;
      phase("caller stream");
      CallerStream stream(o.index);
      int same = 0;
      for (int k = 0; k < 2; ++k)
        same += (r.run(c.entry, nullptr, &stream) == serial) +
                (g.run(c.entry, &sizes, &stream) == serial);
      streams = std::to_string(same) + "/4";
      ok = ok && same == 4;
    }
    std::printf("%-40s %-10s %10.3g %8s %7s %7s %s  (%s)\n", c.dir.c_str(), c.entry.c_str(), err,
                threads.c_str(), graphs.c_str(), streams.c_str(), ok ? "ok" : "FAILED",
                r.deviceName().c_str());
    return ok;
  } catch (const aotc::rt::Error &e) {
    std::printf("%-40s FAILED: %s\n", c.dir.c_str(), e.what());
    return false;
  }
}

} // namespace

int main(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0); // each case's line out before the next case starts
  Options o;
  std::vector<std::string> suites;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      std::string d = argv[++i];
      o.cuda = d != "cpu";
      if (o.cuda && (d.rfind("cuda:", 0) != 0 || d.size() == 5)) {
        std::fprintf(stderr, "aotc_gpu_check: --device %s: expected cpu or cuda:N\n", d.c_str());
        return 2;
      }
      o.index = o.cuda ? std::atoi(d.c_str() + 5) : 0;
    } else if (a == "--tolerance" && i + 1 < argc) {
      o.tolerance = std::atof(argv[++i]);
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--trace") {
      o.trace = true;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "usage: aotc_gpu_check [--device cuda:N|cpu] [--tolerance T] "
                           "[--quick] [--trace] SUITE_DIR...\n");
      return 2;
    } else {
      suites.push_back(a);
    }
  }
  if (suites.empty()) {
    std::fprintf(stderr, "aotc_gpu_check: no suite directory given\n");
    return 2;
  }
  std::printf("%-40s %-10s %10s %8s %7s %7s %s\n", "case", "entry", "rel err", "threads", "graphs",
              "stream", "result");
  bool all = true;
  for (const std::string &suite : suites) {
    // SUITE/MODEL.so beside SUITE/MODEL/<case>/...
    std::vector<std::string> cases;
    if (DIR *d = opendir(suite.c_str())) {
      while (dirent *e = readdir(d)) {
        std::string model = e->d_name;
        if (model.size() < 4 || model.compare(model.size() - 3, 3, ".so") != 0)
          continue;
        std::string dir = suite + "/" + model.substr(0, model.size() - 3);
        if (DIR *m = opendir(dir.c_str())) {
          while (dirent *c = readdir(m))
            if (c->d_name[0] != '.')
              cases.push_back(dir + "/" + c->d_name);
          closedir(m);
        }
      }
      closedir(d);
    }
    std::sort(cases.begin(), cases.end());
    if (cases.empty()) {
      std::printf("%-40s FAILED: no cases\n", suite.c_str());
      all = false;
    }
    for (const std::string &dir : cases) {
      Case c;
      std::string why;
      if (!readCase(dir, c, &why)) {
        std::printf("%-40s FAILED: %s\n", dir.c_str(), why.c_str());
        all = false;
        continue;
      }
      std::string so = dir.substr(0, dir.rfind('/')) + ".so";
      all = checkCase(c, so, o) && all;
    }
  }
  return all ? 0 : 1;
}
