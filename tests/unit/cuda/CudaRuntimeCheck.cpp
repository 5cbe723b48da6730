// Checks of the runtime's CUDA device through the C ABI, on the emulated device (CI) or a GPU (the
// GPU suite): aotc_cuda_runtime_check MODEL.so cuda-emu|cuda:N [DIM]. The artifact's entry 0 must
// take f32 inputs (and i64 ones, filled with 0) over one dynamic dim, DIM (default 5) in every run.
// Prints one line per check and exits 1 when one fails.
#include "aotc/runtime.hpp"
#include "codegen/cuda/emu/Driver.h"
#include "runtime/src/cuda_driver.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

int Failures = 0;

void report(bool ok, const std::string &what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  Failures += !ok;
}

struct Setup {
  aotc::rt::Library lib;
  const aotc::rt::Api &api;
  const void *driver;
  int index;
  Setup(const std::string &path, const void *driver, int index)
      : lib(path), api(lib.api()), driver(driver), index(index) {}

  aotc_status create(aotc_model **out, int deviceIndex, uint32_t graphs = 0) const {
    aotc_model_options o;
    api.model_options_init(&o);
    o.device_type = AOTC_DEVICE_CUDA;
    o.device_index = deviceIndex;
    o.cuda_driver = driver;
    o.cuda_graphs = graphs;
    return api.model_create(&o, out);
  }
};

/// Host data for entry 0's inputs at `batch` (the first dynamic dim), on the device.
struct Inputs {
  std::vector<std::vector<uint8_t>> host;
  std::vector<void *> device;
  std::vector<aotc_tensor> tensors;
};

Inputs makeInputs(const Setup &s, aotc_model *m, int64_t batch, int deviceIndex) {
  Inputs in;
  int32_t n = 0;
  s.api.check(s.api.model_num_inputs(m, 0, &n));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int32_t i = 0; i < n; ++i) {
    aotc_tensor_info info;
    s.api.check(s.api.model_input_info(m, 0, i, &info));
    aotc_tensor t;
    std::memset(&t, 0, sizeof t);
    t.dtype = info.dtype;
    t.rank = info.rank;
    int64_t numel = 1;
    for (int32_t d = 0; d < info.rank; ++d) {
      t.shape[d] = info.dims[d].value >= 0 ? info.dims[d].value : batch;
      numel *= t.shape[d];
    }
    bool half = info.dtype == AOTC_DTYPE_BF16 || info.dtype == AOTC_DTYPE_F16;
    size_t elem = info.dtype == AOTC_DTYPE_I64 ? 8 : half ? 2 : 4;
    std::vector<uint8_t> bytes(static_cast<size_t>(numel) * elem, 0);
    for (int64_t k = 0; k < numel; ++k) {
      float v = dist(rng);
      uint32_t f;
      std::memcpy(&f, &v, 4);
      if (info.dtype == AOTC_DTYPE_F32)
        std::memcpy(bytes.data() + k * 4, &v, 4);
      // bf16: v truncated; f16: a random sign, exponent 2^-2..2^1 and mantissa.
      uint16_t h = info.dtype == AOTC_DTYPE_BF16
                       ? uint16_t(f >> 16)
                       : uint16_t((f >> 31) << 15 | (13u + (f >> 10) % 4u) << 10 | f % 1024u);
      if (half)
        std::memcpy(bytes.data() + k * 2, &h, 2);
    }
    void *d = nullptr;
    s.api.check(s.api.model_device_alloc(m, bytes.size(), &d));
    s.api.check(s.api.model_copy(m, d, bytes.data(), bytes.size(), AOTC_COPY_HOST_TO_DEVICE));
    t.data = d;
    t.size_bytes = bytes.size();
    t.device_type = AOTC_DEVICE_CUDA;
    t.device_index = deviceIndex;
    in.host.push_back(std::move(bytes));
    in.device.push_back(d);
    in.tensors.push_back(t);
  }
  return in;
}

/// Runs entry 0 with runtime-allocated outputs; returns output 0's bytes on the host.
std::vector<uint8_t> run(const Setup &s, aotc_model *m, const Inputs &in, void *stream,
                         bool releaseAfterDestroy = false) {
  aotc_tensor out;
  std::memset(&out, 0, sizeof out);
  out.device_type = AOTC_DEVICE_CUDA;
  out.device_index = s.index;
  int32_t numOutputs = 0;
  s.api.check(s.api.model_num_outputs(m, 0, &numOutputs));
  std::vector<aotc_tensor> outs(static_cast<size_t>(numOutputs), out);
  aotc_run_options o;
  s.api.run_options_init(&o);
  o.stream = stream;
  s.api.check(
      s.api.model_run_v2(m, 0, in.tensors.data(), in.tensors.size(), outs.data(), outs.size(), &o));
  if (stream) {
    auto *drv = static_cast<const aotc_cuda_driver *>(s.driver);
    if (drv)
      drv->cuStreamSynchronize(static_cast<CUstream>(stream));
  }
  std::vector<uint8_t> bytes(outs[0].size_bytes);
  s.api.check(
      s.api.model_copy(m, bytes.data(), outs[0].data, bytes.size(), AOTC_COPY_DEVICE_TO_HOST));
  if (!releaseAfterDestroy)
    for (aotc_tensor &t : outs)
      s.api.tensor_release(&t);
  return bytes;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: aotc_cuda_runtime_check MODEL.so cuda-emu|cuda:N [DIM]\n");
    return 2;
  }
  std::string device = argv[2];
  int64_t dim = 5;
  if (argc == 4) {
    char *end = nullptr;
    dim = std::strtoll(argv[3], &end, 10);
    if (end == argv[3] || *end || dim < 1) {
      std::fprintf(stderr, "aotc_cuda_runtime_check: DIM '%s' is not a positive integer\n",
                   argv[3]);
      return 2;
    }
  }
  const void *driver = nullptr;
  int index = 0;
  if (device == "cuda-emu")
    driver = aotc::cuda::emu::emulatedDriver();
  else if (device.rfind("cuda:", 0) == 0)
    index = std::stoi(device.substr(5));
  try {
    Setup s(argv[1], driver, index);
    aotc_model *m = nullptr;
    s.api.check(s.create(&m, index));
    const char *name = nullptr;
    s.api.check(s.api.model_device_name(m, &name));
    std::printf("device: %s\n", name);

    // A device index past the last one names the devices there are.
    aotc_model *bad = nullptr;
    aotc_status st = s.create(&bad, 64);
    report(st == AOTC_ERROR_INVALID_ARGUMENT && !bad &&
               std::strstr(s.api.last_error(), "device index 64 is past the last CUDA device"),
           std::string("device index 64: ") + s.api.last_error());

    Inputs in = makeInputs(s, m, dim, index);
    std::vector<uint8_t> serial = run(s, m, in, nullptr);

    // Outputs left all zero (as runtime.hpp's Model::run leaves them) are allocated on the
    // model's device and say so: device_type and device_index are filled in.
    {
      int32_t n = 0;
      s.api.check(s.api.model_num_outputs(m, 0, &n));
      std::vector<aotc_tensor> zeroed(static_cast<size_t>(n));
      std::memset(zeroed.data(), 0, zeroed.size() * sizeof(aotc_tensor));
      aotc_status zst = s.api.model_run_v2(m, 0, in.tensors.data(), in.tensors.size(),
                                           zeroed.data(), zeroed.size(), nullptr);
      std::vector<uint8_t> got(serial.size());
      if (zst == AOTC_OK)
        s.api.check(
            s.api.model_copy(m, got.data(), zeroed[0].data, got.size(), AOTC_COPY_DEVICE_TO_HOST));
      report(zst == AOTC_OK && zeroed[0].device_type == AOTC_DEVICE_CUDA &&
                 zeroed[0].device_index == index && got == serial,
             std::string("zeroed outputs are allocated on the device and say so: ") +
                 (zst == AOTC_OK ? "ok" : s.api.last_error()));
      for (aotc_tensor &t : zeroed)
        s.api.tensor_release(&t);
    }

    // A host tensor given to a CUDA model is an error naming it; nothing runs.
    Inputs host = in;
    host.tensors[0].device_type = AOTC_DEVICE_CPU;
    host.tensors[0].device_index = 0;
    aotc_tensor out;
    std::memset(&out, 0, sizeof out);
    out.device_type = AOTC_DEVICE_CUDA;
    out.device_index = index;
    std::vector<aotc_tensor> outs(8, out);
    int32_t numOutputs = 0;
    s.api.check(s.api.model_num_outputs(m, 0, &numOutputs));
    st = s.api.model_run_v2(m, 0, host.tensors.data(), host.tensors.size(), outs.data(),
                            static_cast<size_t>(numOutputs), nullptr);
    report(st == AOTC_ERROR_INVALID_ARGUMENT && std::strstr(s.api.last_error(), "is on cpu") &&
               outs[0].data == nullptr,
           std::string("host input: ") + s.api.last_error());

    // A 16-bit CUDA tensor starts on a 16-byte boundary (the GEMMs copy 16 bytes at a time).
    for (size_t i = 0; i < in.tensors.size(); ++i) {
      if (in.tensors[i].dtype != AOTC_DTYPE_BF16 && in.tensors[i].dtype != AOTC_DTYPE_F16)
        continue;
      Inputs shifted = in;
      shifted.tensors[i].data = static_cast<char *>(shifted.tensors[i].data) + 2;
      shifted.tensors[i].size_bytes -= 2;
      std::vector<aotc_tensor> none(8, out);
      st = s.api.model_run_v2(m, 0, shifted.tensors.data(), shifted.tensors.size(), none.data(),
                              static_cast<size_t>(numOutputs), nullptr);
      report(st == AOTC_ERROR_INVALID_ARGUMENT &&
                 std::strstr(s.api.last_error(), "does not start on a 16-byte boundary"),
             std::string("16-bit input off a 16-byte boundary: ") + s.api.last_error());
    }

    // Runs on a caller stream give the same bytes.
    if (driver) {
      auto *drv = static_cast<const aotc_cuda_driver *>(driver);
      CUstream stream = nullptr;
      drv->cuStreamCreate(&stream, 0);
      report(run(s, m, in, stream) == serial, "a caller stream gives the serial run's bytes");
      drv->cuStreamDestroy(stream);
    }

    // 8 threads on one handle, 4 runs each: every result bitwise equal to the serial one.
    std::vector<int> same(8, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        for (int r = 0; r < 4; ++r)
          same[t] += run(s, m, in, nullptr) == serial;
      });
    for (std::thread &t : threads)
      t.join();
    int total = 0;
    for (int v : same)
      total += v;
    report(total == 32, "8 threads x 4 runs on one handle equal the serial run bitwise (" +
                            std::to_string(total) + "/32)");

    // CUDA graphs: with caller outputs at fixed addresses, the second run is captured and it and
    // every later one replay the graph; each result equals the plain launches' bitwise. Runs at
    // other addresses first fill the table with runs seen once, which give their slots up.
    {
      aotc_model *g = nullptr;
      s.api.check(s.create(&g, index, 2));
      Inputs gin = makeInputs(s, g, dim, index);
      std::vector<void *> outMem;
      auto outputsAt = [&](std::vector<aotc_tensor> &fixed) {
        for (int32_t o = 0; o < numOutputs; ++o) {
          aotc_tensor t;
          std::memset(&t, 0, sizeof t);
          void *p = nullptr;
          s.api.check(s.api.model_device_alloc(g, 1 << 20, &p));
          outMem.push_back(p);
          t.data = p;
          t.size_bytes = 1 << 20;
          t.device_type = AOTC_DEVICE_CUDA;
          t.device_index = index;
          fixed.push_back(t);
        }
      };
      auto runAt = [&](const std::vector<aotc_tensor> &fixed) {
        std::vector<aotc_tensor> outs = fixed;
        s.api.check(s.api.model_run_v2(g, 0, gin.tensors.data(), gin.tensors.size(), outs.data(),
                                       outs.size(), nullptr));
        std::vector<uint8_t> got(serial.size());
        s.api.check(
            s.api.model_copy(g, got.data(), outs[0].data, got.size(), AOTC_COPY_DEVICE_TO_HOST));
        return got == serial;
      };
      int equal = 0;
      for (int r = 0; r < 3; ++r) {
        std::vector<aotc_tensor> once;
        outputsAt(once);
        equal += runAt(once);
      }
      std::vector<aotc_tensor> fixed;
      outputsAt(fixed);
      uint64_t before = aotc::cuda::emu::graphLaunches();
      for (int r = 0; r < 3; ++r)
        equal += runAt(fixed);
      uint64_t replays = aotc::cuda::emu::graphLaunches() - before;
      report(equal == 6 && (!driver || replays == 2),
             "CUDA graphs: 6 runs equal the plain launches bitwise (" + std::to_string(equal) +
                 "/6), the last 2 replayed a graph (" + std::to_string(replays) + ")");
      for (void *p : outMem)
        s.api.model_device_free(g, p);
      for (void *p : gin.device)
        s.api.model_device_free(g, p);
      s.api.model_destroy(g);
    }

    // A runtime-owned output stays valid after its model is destroyed, and is released then.
    aotc_model *second = nullptr;
    s.api.check(s.create(&second, index));
    aotc_tensor kept;
    std::memset(&kept, 0, sizeof kept);
    kept.device_type = AOTC_DEVICE_CUDA;
    kept.device_index = index;
    std::vector<aotc_tensor> keptOuts(static_cast<size_t>(numOutputs), kept);
    Inputs in2 = makeInputs(s, second, dim, index);
    s.api.check(s.api.model_run_v2(second, 0, in2.tensors.data(), in2.tensors.size(),
                                   keptOuts.data(), keptOuts.size(), nullptr));
    for (void *p : in2.device)
      s.api.model_device_free(second, p);
    s.api.model_destroy(second);
    bool owned = keptOuts[0].flags & AOTC_TENSOR_RUNTIME_OWNED;
    for (aotc_tensor &t : keptOuts)
      s.api.tensor_release(&t);
    report(owned && keptOuts[0].data == nullptr,
           "a runtime-owned output is released after its model is destroyed");

    for (void *p : in.device)
      s.api.model_device_free(m, p);
    s.api.model_destroy(m);
  } catch (const aotc::rt::Error &e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
  return Failures ? 1 : 0;
}
