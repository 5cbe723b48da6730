// Loading an artifact through runtime.hpp (dlopen, one runtime per artifact) and converting
// between the CLI's HostTensors and the ABI's tensors.
#include "Artifact.h"

#include "codegen/cuda/emu/Driver.h"
#include "kernel/Kernel.h"
#include "package/Package.h"

#include "aotc/runtime.hpp"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <optional>

namespace aotc::cli {

struct Artifact::Handles {
  explicit Handles(const std::string &path) : library(path) {}
  rt::Library library;
  std::optional<rt::Model> model;
};

namespace {

llvm::Error error(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::optional<DType> fromRuntime(int32_t dtype) {
  for (DType d : AllDTypes)
    if (runtimeDType(d) == dtype)
      return d;
  return std::nullopt;
}

} // namespace

llvm::Expected<Device> parseDevice(llvm::StringRef text) {
  Device d;
  if (text == "cpu")
    return d;
  d.cuda = true;
  if (text == "cuda-emu") {
    d.emulated = true;
    return d;
  }
  if (text == "cuda")
    return d;
  llvm::StringRef index = text;
  if (index.consume_front("cuda:") && !index.getAsInteger(10, d.index) && d.index >= 0)
    return d;
  return error(fmt::format("--device {}: expected cpu, cuda, cuda:N (N = 0, 1, ...) or cuda-emu "
                           "(the emulated CUDA device)",
                           text.str()));
}

bool isArtifactPath(llvm::StringRef path) { return llvm::sys::path::extension(path) == ".so"; }

Artifact::~Artifact() = default;

llvm::Expected<std::unique_ptr<Artifact>> Artifact::open(llvm::StringRef path, int threads,
                                                         Device device) {
  std::unique_ptr<Artifact> a(new Artifact());
  a->Path = path.str();
  a->Dev = device;
  try {
    // dlopen searches the library path for a name without a slash; a file name means a file.
    std::string file = path.contains('/') ? path.str() : "./" + path.str();
    a->H = std::make_unique<Handles>(file);
    aotc_model_options options;
    a->H->library.api().model_options_init(&options);
    options.num_threads = threads;
    const rt::Api &lib = a->H->library.api();
    if (device.cuda) {
      if (!lib.model_run_v2)
        return error(fmt::format("{}: the artifact's runtime has no CUDA device (built by an older "
                                 "aotc; re-export it)",
                                 path.str()));
      options.device_type = AOTC_DEVICE_CUDA;
      options.device_index = device.index;
      if (device.emulated)
        options.cuda_driver = cuda::emu::emulatedDriver();
    }
    a->H->model.emplace(a->H->library, &options);
    rt::Model &m = *a->H->model;
    const rt::Api &api = m.api();
    const char *deviceName = "cpu";
    if (api.model_device_name)
      api.check(api.model_device_name(m.get(), &deviceName));
    a->Info.device = deviceName;

    const void *blob = nullptr;
    uint64_t size = 0;
    api.check(api.model_program(m.get(), &blob, &size));
    if (!blob || size == 0)
      return error(fmt::format("{}: the artifact does not embed its exported program", path.str()));
    auto buffer = llvm::MemoryBuffer::getMemBuffer(
        llvm::StringRef(static_cast<const char *>(blob), size), path, false);
    auto program = readArchiveFromBuffer(std::move(buffer));
    if (!program)
      return error(fmt::format("{}: the embedded program: {}", path.str(),
                               llvm::toString(program.takeError())));
    a->Program = std::move(*program);

    int32_t count = 0;
    api.check(api.model_weights(m.get(), &count, &a->Info.weightBytes));
    a->Info.numWeights = count;
    // Weights stored as themselves first: the others are recovered from those holding them.
    std::vector<std::pair<int32_t, aotc_weight_layout>> held;
    std::vector<std::string> names(count);
    for (int32_t i = 0; i < count; ++i) {
      aotc_weight_info w;
      api.check(api.model_weight_info(m.get(), i, &w));
      names[i] = w.name;
      aotc_weight_layout layout{};
      layout.held_by = -1;
      if (api.model_weight_layout)
        api.check(api.model_weight_layout(m.get(), i, &layout));
      // A weight the runtime derives at load, which a CUDA model leaves out (no data, no bytes,
      // yet elements): only the CPU code reads it, and the embedded graph never names it.
      int64_t elements = 1;
      for (int32_t d = 0; d < w.rank; ++d)
        elements *= w.shape[d];
      if (!w.data && w.size_bytes == 0 && layout.held_by < 0 && elements > 0)
        continue;
      auto dtype = fromRuntime(w.dtype);
      if (!dtype)
        return error(
            fmt::format("{}: weight \"{}\" has an unknown dtype {}", path.str(), w.name, w.dtype));
      auto t = layout.held_by >= 0
                   ? HostTensor::create(*dtype, llvm::ArrayRef<int64_t>(w.shape, w.rank))
                   : HostTensor::view(*dtype, llvm::ArrayRef<int64_t>(w.shape, w.rank),
                                      llvm::ArrayRef<uint8_t>(static_cast<const uint8_t *>(w.data),
                                                              w.size_bytes),
                                      nullptr);
      if (!t)
        return error(fmt::format("{}: weight \"{}\": {}", path.str(), w.name,
                                 llvm::toString(t.takeError())));
      a->Weights.try_emplace(w.name, std::move(*t));
      if (layout.held_by >= 0)
        held.emplace_back(i, layout);
    }
    std::vector<bool> isHeld(count);
    for (auto &[i, layout] : held)
      isHeld[i] = true;
    for (auto &[i, layout] : held)
      if (llvm::Error e = a->unpackHeld(names, isHeld, i, layout))
        return e;
    uint32_t mask = 0;
    api.check(api.model_cpu_variants(m.get(), &mask));
    if (mask & 1)
      a->Info.variants.push_back("x86-64-v3");
    if (mask & 2)
      a->Info.variants.push_back("x86-64-v4");
    a->Info.cpuVariant = m.cpu_variant();
    a->Info.threads = m.num_threads();
    int32_t images = 0, kernels = 0;
    if (api.artifact_cuda_images)
      api.check(api.artifact_cuda_images(&images, &kernels));
    a->Info.cudaKernels = kernels;
    auto precisionName = [](int32_t p) {
      return kir::toString(static_cast<kir::Precision>(p)).str();
    };
    int32_t cpuPrecision = AOTC_PRECISION_FP32;
    if (api.artifact_cpu_precision)
      api.check(api.artifact_cpu_precision(&cpuPrecision));
    if (cpuPrecision >= AOTC_PRECISION_FP32 && cpuPrecision <= AOTC_PRECISION_FP16)
      a->Info.cpuPrecision = precisionName(cpuPrecision);
    for (int32_t i = 0; i < images; ++i) {
      aotc_cuda_image_info im;
      api.check(api.artifact_cuda_image(i, &im));
      if (im.precision >= AOTC_PRECISION_FP32 && im.precision <= AOTC_PRECISION_FP16)
        a->Info.cudaPrecision = precisionName(im.precision);
      const char *kind = im.kind == AOTC_CUDA_IMAGE_KIND_CUBIN ? "cubin"
                         : im.kind == AOTC_CUDA_IMAGE_KIND_PTX ? "ptx"
                                                               : "llvm-bitcode";
      a->Info.cudaImages.push_back(
          {kind, fmt::format("sm_{}{}", im.arch, im.arch_specific ? "a" : ""), im.size_bytes});
    }
    for (size_t e = 0; e < m.entries().size(); ++e) {
      int32_t kernels = -1;
      api.check(api.model_entry_kernels(m.get(), static_cast<int32_t>(e), &kernels));
      a->Info.kernelsPerEntry.push_back(kernels);
    }
  } catch (const rt::Error &e) {
    return error(fmt::format("{}: {}", path.str(), e.what()));
  }
  return a;
}

llvm::Error Artifact::unpackHeld(llvm::ArrayRef<std::string> names, const std::vector<bool> &held,
                                 int32_t index, const aotc_weight_layout &layout) {
  HostTensor &out = Weights.find(names[index])->second;
  auto bad = [&](llvm::StringRef why) {
    return error(fmt::format("{}: weight \"{}\" is held by weight {} in a layout that does not "
                             "fit it ({}); the artifact is damaged",
                             Path, names[index], layout.held_by, why));
  };
  if (layout.held_by >= static_cast<int32_t>(names.size()))
    return bad("no such weight");
  const HostTensor &holder = Weights.find(names[layout.held_by])->second;
  kir::HeldWeight h{static_cast<uint32_t>(layout.held_by),
                    layout.rows,
                    layout.cols,
                    static_cast<unsigned>(layout.panel_rows),
                    layout.winograd_tile,
                    static_cast<unsigned>(layout.pair_cols),
                    layout.pair_transposed != 0};
  // A bf16 or fp16 holder is a copy, rounded (bf16-weights, half-weights), dense or (bf16) as
  // k-pair panels: recovered widened.
  bool bf16 = isHalfFloat(holder.dtype());
  if (out.dtype() != DType::F32 || (holder.dtype() != DType::F32 && !bf16) || held[layout.held_by])
    return bad("not an f32 weight stored as itself");
  if (bf16 && (h.winogradTile || h.panelRows))
    return bad("a 16-bit holder is dense or k-pair panels");
  if (layout.pair_cols && (holder.dtype() != DType::BF16 || layout.pair_cols < 2 ||
                           layout.pair_cols > 64 || layout.pair_cols % 2))
    return bad("k-pair panels");
  if (layout.pair_transposed != 0 &&
      (layout.pair_transposed != 1 ||
       (!layout.pair_cols && (!layout.panel_rows || h.winogradTile))))
    return bad("a transposed layout that is not panels");
  if ((h.winogradTile != 0 && h.winogradTile != 2 && h.winogradTile != 4) || h.m < 1 || h.k < 1 ||
      layout.panel_rows < 0 || layout.panel_rows > 64 || h.m * h.k * h.taps() != out.numel() ||
      layout.component_stride != h.componentStride() ||
      h.components() * h.componentStride() > holder.numel())
    return bad("sizes");
  if (bf16) {
    for (int64_t r = 0; r < h.m; ++r)
      for (int64_t c = 0; c < h.k; ++c)
        out.setDouble(r * h.k + c, holder.getDouble(h.position(r, c)));
    return llvm::Error::success();
  }
  kir::unpackHeldWeight(h, reinterpret_cast<const float *>(holder.data()),
                        reinterpret_cast<float *>(out.mutableData()));
  return llvm::Error::success();
}

const HostTensor *Artifact::weight(llvm::StringRef name) const {
  auto it = Weights.find(name);
  return it == Weights.end() ? nullptr : &it->second;
}

llvm::Error Artifact::checkWeights() const {
  const rt::Api &api = H->model->api();
  if (!api.model_check_weights)
    return error(fmt::format("{}: the artifact cannot check its weights (built by an older aotc; "
                             "re-export it)",
                             Path));
  if (api.model_check_weights(H->model->get()) != AOTC_OK)
    return error(fmt::format("{}: {}", Path, api.last_error()));
  return llvm::Error::success();
}

namespace {

/// An entry's inputs and outputs as the runtime takes them: the host tensors themselves, or on a
/// CUDA device copies in device memory; outputs for the runtime to allocate, on the model's
/// device. What the device or the runtime allocated goes with this.
struct Bound {
  Bound(rt::Model &model, const Device &dev) : M(model), Dev(dev) {}
  ~Bound() {
    for (void *p : DeviceInputs)
      M.api().model_device_free(M.get(), p);
    for (aotc_tensor &t : Outputs)
      M.api().tensor_release(&t);
  }
  Bound(const Bound &) = delete;
  Bound &operator=(const Bound &) = delete;

  /// Binds `inputs` and runs `entry` once into Outputs, which the runtime allocates.
  llvm::Error runOnce(int32_t entry, llvm::ArrayRef<HostTensor> inputs) {
    const rt::Api &api = M.api();
    for (const HostTensor &t : inputs) {
      if (t.shape().size() > AOTC_MAX_RANK)
        return error(fmt::format("an input has rank {}, more than the ABI's {}", t.shape().size(),
                                 AOTC_MAX_RANK));
      std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
      void *data = const_cast<uint8_t *>(t.data());
      if (Dev.cuda) {
        api.check(api.model_device_alloc(M.get(), t.nbytes(), &data));
        DeviceInputs.push_back(data);
        api.check(api.model_copy(M.get(), data, t.data(), t.nbytes(), AOTC_COPY_HOST_TO_DEVICE));
      }
      aotc_tensor in = rt::tensor(data, runtimeDType(t.dtype()), shape);
      in.size_bytes = t.nbytes();
      if (Dev.cuda) {
        in.device_type = AOTC_DEVICE_CUDA;
        in.device_index = Dev.index;
      }
      Inputs.push_back(in);
    }
    int32_t n = 0;
    api.check(api.model_num_outputs(M.get(), entry, &n));
    Outputs.resize(static_cast<size_t>(n));
    for (aotc_tensor &o : Outputs) {
      std::memset(&o, 0, sizeof o);
      if (Dev.cuda) {
        o.device_type = AOTC_DEVICE_CUDA;
        o.device_index = Dev.index;
      }
    }
    run(entry, Outputs.data());
    return llvm::Error::success();
  }

  /// Runs `entry` into `outputs` (Outputs, or caller buffers); returns when they are ready.
  void run(int32_t entry, aotc_tensor *outputs) {
    M.api().check(M.api().model_run_v2(M.get(), entry, Inputs.data(), Inputs.size(), outputs,
                                       Outputs.size(), nullptr));
  }

  rt::Model &M;
  const Device &Dev;
  std::vector<void *> DeviceInputs;
  std::vector<aotc_tensor> Inputs, Outputs;
};

/// Runs `entry` of `m` once on `inputs` into outputs the runtime allocates, then returns
/// `then(bound, entry's index)`; an error of the runtime's, there or in `then`, is the error.
template <typename T>
llvm::Expected<T> afterOneRun(rt::Model &m, const Device &dev, llvm::StringRef entry,
                              llvm::ArrayRef<HostTensor> inputs,
                              llvm::function_ref<llvm::Expected<T>(Bound &, int32_t)> then) {
  try {
    int32_t index = m.entry(entry.str());
    Bound bound(m, dev);
    if (llvm::Error e = bound.runOnce(index, inputs))
      return e;
    return then(bound, index);
  } catch (const rt::Error &e) {
    return error(e.what());
  }
}

} // namespace

llvm::Expected<std::vector<HostTensor>> Artifact::run(llvm::StringRef entry,
                                                      llvm::ArrayRef<HostTensor> inputs) {
  rt::Model &m = *H->model;
  return afterOneRun<std::vector<HostTensor>>(
      m, Dev, entry, inputs, [&](Bound &bound, int32_t) -> llvm::Expected<std::vector<HostTensor>> {
        std::vector<HostTensor> result;
        for (const aotc_tensor &o : bound.Outputs) {
          auto dtype = fromRuntime(o.dtype);
          if (!dtype)
            return error(fmt::format("an output has an unknown dtype {}", o.dtype));
          HostTensor t(*dtype, llvm::ArrayRef<int64_t>(o.shape, o.rank));
          if (t.nbytes())
            m.api().check(m.api().model_copy(m.get(), t.mutableData(), o.data, t.nbytes(),
                                             AOTC_COPY_DEVICE_TO_HOST));
          result.push_back(std::move(t));
        }
        return result;
      });
}

llvm::Expected<std::vector<double>> Artifact::time(llvm::StringRef entry,
                                                   llvm::ArrayRef<HostTensor> inputs, int runs) {
  // The untimed run allocates the outputs (the runtime's, released with `bound`); the timed runs
  // write them again as the caller's buffers.
  return afterOneRun<std::vector<double>>(
      *H->model, Dev, entry, inputs,
      [&](Bound &bound, int32_t index) -> llvm::Expected<std::vector<double>> {
        std::vector<aotc_tensor> outs = bound.Outputs;
        for (aotc_tensor &o : outs)
          o.flags &= ~uint32_t(AOTC_TENSOR_RUNTIME_OWNED);
        std::vector<double> ms;
        for (int i = 0; i < runs; ++i) {
          auto start = std::chrono::steady_clock::now();
          bound.run(index, outs.data());
          auto end = std::chrono::steady_clock::now();
          ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
        }
        return ms;
      });
}

} // namespace aotc::cli
