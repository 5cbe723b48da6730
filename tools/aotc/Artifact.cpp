// Loading an artifact through runtime.hpp (dlopen, one runtime per artifact) and converting
// between the CLI's HostTensors and the ABI's tensors.
#include "Artifact.h"

#include "package/Package.h"

#include "aotc/runtime.hpp"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <fmt/format.h>

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

bool isArtifactPath(llvm::StringRef path) { return llvm::sys::path::extension(path) == ".so"; }

Artifact::~Artifact() = default;

llvm::Expected<std::unique_ptr<Artifact>> Artifact::open(llvm::StringRef path, int threads) {
  std::unique_ptr<Artifact> a(new Artifact());
  a->Path = path.str();
  try {
    // dlopen searches the library path for a name without a slash; a file name means a file.
    std::string file = path.contains('/') ? path.str() : "./" + path.str();
    a->H = std::make_unique<Handles>(file);
    aotc_model_options options;
    a->H->library.api().model_options_init(&options);
    options.num_threads = threads;
    a->H->model.emplace(a->H->library, &options);
    rt::Model &m = *a->H->model;
    const rt::Api &api = m.api();

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
    for (int32_t i = 0; i < count; ++i) {
      aotc_weight_info w;
      api.check(api.model_weight_info(m.get(), i, &w));
      auto dtype = fromRuntime(w.dtype);
      if (!dtype)
        return error(
            fmt::format("{}: weight \"{}\" has an unknown dtype {}", path.str(), w.name, w.dtype));
      auto t = HostTensor::view(
          *dtype, llvm::ArrayRef<int64_t>(w.shape, w.rank),
          llvm::ArrayRef<uint8_t>(static_cast<const uint8_t *>(w.data), w.size_bytes), nullptr);
      if (!t)
        return error(fmt::format("{}: weight \"{}\": {}", path.str(), w.name,
                                 llvm::toString(t.takeError())));
      a->Weights.try_emplace(w.name, std::move(*t));
    }
    uint32_t mask = 0;
    api.check(api.model_cpu_variants(m.get(), &mask));
    if (mask & 1)
      a->Info.variants.push_back("x86-64-v3");
    if (mask & 2)
      a->Info.variants.push_back("x86-64-v4");
    a->Info.cpuVariant = m.cpu_variant();
    a->Info.threads = m.num_threads();
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

llvm::Expected<std::vector<HostTensor>> Artifact::run(llvm::StringRef entry,
                                                      llvm::ArrayRef<HostTensor> inputs) {
  rt::Model &m = *H->model;
  try {
    std::vector<aotc_tensor> raw;
    for (const HostTensor &t : inputs) {
      if (t.shape().size() > AOTC_MAX_RANK)
        return error(fmt::format("an input has rank {}, more than the ABI's {}", t.shape().size(),
                                 AOTC_MAX_RANK));
      std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
      aotc_tensor in = rt::tensor(t.data(), runtimeDType(t.dtype()), shape);
      in.size_bytes = t.nbytes();
      raw.push_back(in);
    }
    std::vector<rt::OwnedTensor> outs = m.run(entry.str(), raw);
    std::vector<HostTensor> result;
    for (const rt::OwnedTensor &o : outs) {
      auto dtype = fromRuntime(o.dtype());
      if (!dtype)
        return error(fmt::format("an output has an unknown dtype {}", o.dtype()));
      HostTensor t(*dtype, o.shape());
      if (t.nbytes())
        std::memcpy(t.mutableData(), o.raw().data, t.nbytes());
      result.push_back(std::move(t));
    }
    return result;
  } catch (const rt::Error &e) {
    return error(e.what());
  }
}

} // namespace aotc::cli
