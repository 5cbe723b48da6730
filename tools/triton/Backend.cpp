// libtriton_aotc.so: Triton Inference Server's TRITONBACKEND_* entry points over aotc artifacts.
// A model directory's <version>/model.so is dlopened once per Triton model; KIND_CPU instances run
// it on the CPU, KIND_GPU instances on their CUDA device; instances on one device share one model
// handle unless the entry updates mutable buffers; an execution concatenates its requests along
// the batch dim (Batch.h), runs the entry once per group and splits the outputs.
#include "Batch.h"
#include "Error.h"
#include "ModelConfig.h"
#include "ProgramScan.h"
#include "TritonApi.h"

#include "aotc/runtime.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace aotc::triton {

using nlohmann::json;

namespace {

uint64_t nowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

void log(TRITONSERVER_LogLevel level, int line, const std::string &message) {
  if (TRITONSERVER_Error *e = TRITONSERVER_LogMessage(level, __FILE__, line, message.c_str()))
    TRITONSERVER_ErrorDelete(e);
}

/// Throws a server error as a BackendError (its message, prefixed with what failed).
void check(TRITONSERVER_Error *e, const char *what) {
  if (!e)
    return;
  BackendError failure(TRITONSERVER_ERROR_INTERNAL,
                       fmt::format("{}: {}", what, TRITONSERVER_ErrorMessage(e)));
  TRITONSERVER_ErrorDelete(e);
  throw failure;
}

TRITONSERVER_Error_Code codeOf(aotc_status status) {
  switch (status) {
  case AOTC_ERROR_INVALID_ARGUMENT:
    return TRITONSERVER_ERROR_INVALID_ARG;
  case AOTC_ERROR_NOT_FOUND:
    return TRITONSERVER_ERROR_NOT_FOUND;
  case AOTC_ERROR_UNSUPPORTED:
    return TRITONSERVER_ERROR_UNSUPPORTED;
  case AOTC_ERROR_RESOURCE:
    return TRITONSERVER_ERROR_UNAVAILABLE;
  default:
    return TRITONSERVER_ERROR_INTERNAL;
  }
}

/// The current exception as a server error; every message starts with "aotc: " so that users
/// see which backend answered.
TRITONSERVER_Error *currentError() {
  try {
    throw;
  } catch (const BackendError &e) {
    return TRITONSERVER_ErrorNew(e.code(), fmt::format("aotc: {}", e.what()).c_str());
  } catch (const rt::Error &e) {
    return TRITONSERVER_ErrorNew(codeOf(e.status()), fmt::format("aotc: {}", e.what()).c_str());
  } catch (const std::exception &e) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 fmt::format("aotc: {}", e.what()).c_str());
  } catch (...) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "aotc: unknown error");
  }
}

/// Runs `fn`, turning what it throws into the server error that a TRITONBACKEND_* function
/// returns: no exception crosses into the server.
template <typename Fn> TRITONSERVER_Error *guard(Fn &&fn) noexcept {
  try {
    fn();
    return nullptr;
  } catch (...) {
    return currentError();
  }
}

json readConfig(TRITONBACKEND_Model *model) {
  TRITONSERVER_Message *message = nullptr;
  check(TRITONBACKEND_ModelConfig(model, 1, &message), "reading the model config");
  std::unique_ptr<TRITONSERVER_Message, decltype(&TRITONSERVER_MessageDelete)> owner(
      message, TRITONSERVER_MessageDelete);
  const char *base = nullptr;
  size_t size = 0;
  check(TRITONSERVER_MessageSerializeToJson(message, &base, &size), "reading the model config");
  return json::parse(base, base + size);
}

void setConfig(TRITONBACKEND_Model *model, const json &config) {
  const std::string text = config.dump();
  TRITONSERVER_Message *message = nullptr;
  check(TRITONSERVER_MessageNewFromSerializedJson(&message, text.data(), text.size()),
        "auto-completing the model config");
  std::unique_ptr<TRITONSERVER_Message, decltype(&TRITONSERVER_MessageDelete)> owner(
      message, TRITONSERVER_MessageDelete);
  check(TRITONBACKEND_ModelSetConfig(model, 1, message), "auto-completing the model config");
}

std::string stringOr(const json &object, const char *key, const std::string &otherwise) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() && !it->get_ref<const std::string &>().empty()
             ? it->get<std::string>()
             : otherwise;
}

/// The driver table of the emulated CUDA device in the library `path` (config.pbtxt's
/// emulated_cuda_device, for tests). The library stays loaded for the life of the process: the
/// device it emulates is the process's one.
const void *loadEmulatedCudaDevice(const std::string &path) {
  void *library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    throw error(TRITONSERVER_ERROR_NOT_FOUND, "config.pbtxt parameter \"emulated_cuda_device\": {}",
                ::dlerror());
  using DriverFn = const void *(*)();
  auto driver = reinterpret_cast<DriverFn>(::dlsym(library, "aotc_emulated_cuda_driver"));
  if (!driver)
    throw error(TRITONSERVER_ERROR_INVALID_ARG,
                "config.pbtxt parameter \"emulated_cuda_device\": {} has no "
                "aotc_emulated_cuda_driver",
                path);
  return driver();
}

/// One Triton model: a loaded artifact and the entry it serves.
struct ModelState {
  std::string name;
  std::string artifact;
  std::unique_ptr<rt::Library> library;
  BackendParams params;
  const void *cudaDriver = nullptr; // the emulated device's driver table; null: libcuda
  EntrySig sig;
  int64_t maxBatch = 0;
  // Whether instances on one device may share a model handle: not when the entry updates
  // mutable buffers, which each handle holds.
  bool shareable = false;
  std::mutex lock; // guards `shared`: instances may be created concurrently
  std::map<Placement, std::shared_ptr<rt::Model>> shared;

  std::shared_ptr<rt::Model> createModel(Placement at) const {
    aotc_model_options options;
    library->api().model_options_init(&options);
    options.num_threads = params.numThreads;
    options.device_type = at.deviceType;
    options.device_index = at.deviceIndex;
    if (at.deviceType == AOTC_DEVICE_CUDA) {
      options.cuda_graphs = params.cudaGraphs;
      options.cuda_driver = cudaDriver;
    }
    return std::make_shared<rt::Model>(*library, &options);
  }

  /// The handle an instance at `at` runs on: the device's shared one when sharing is safe.
  std::shared_ptr<rt::Model> handleFor(Placement at) {
    if (!shareable)
      return createModel(at);
    std::lock_guard<std::mutex> hold(lock);
    std::shared_ptr<rt::Model> &handle = shared[at];
    if (!handle)
      handle = createModel(at);
    return handle;
  }
};

/// "x FP32 [-1, 784]" for each tensor, -1 for dynamic dims.
std::string describe(const std::vector<TensorSig> &tensors) {
  std::string out;
  for (const TensorSig &t : tensors) {
    std::vector<int64_t> dims;
    for (const Dim &d : t.dims)
      dims.push_back(d.value);
    out += fmt::format("{}{} {} {}", out.empty() ? "" : ", ", t.name,
                       wireTypeName(tritonType(t.dtype)), formatShape(dims));
  }
  return out;
}

std::unique_ptr<ModelState> initializeModel(TRITONBACKEND_Model *model) {
  auto state = std::make_unique<ModelState>();
  const char *name = nullptr, *location = nullptr;
  uint64_t version = 0;
  TRITONBACKEND_ArtifactType type;
  check(TRITONBACKEND_ModelName(model, &name), "reading the model name");
  check(TRITONBACKEND_ModelVersion(model, &version), "reading the model version");
  check(TRITONBACKEND_ModelRepository(model, &type, &location), "reading the model location");
  state->name = name;

  json config = readConfig(model);
  state->params = readParameters(config);
  const Placement first = checkInstanceGroups(config, state->params);

  const std::string file = stringOr(config, "default_model_filename", "model.so");
  state->artifact = fmt::format("{}/{}/{}", location, version, file);
  struct stat st;
  if (::stat(state->artifact.c_str(), &st) != 0)
    throw error(TRITONSERVER_ERROR_NOT_FOUND,
                "{} does not exist: a model version holds the artifact `aotc export` wrote, "
                "named {} (or config.pbtxt's default_model_filename)",
                state->artifact, file);
  state->library = std::make_unique<rt::Library>(state->artifact);
  if (!state->params.emulatedCudaDevice.empty())
    state->cudaDriver = loadEmulatedCudaDevice(state->params.emulatedCudaDevice);

  // One handle to read the entry from, where the first instance runs; it becomes that device's
  // shared one when sharing is safe.
  std::shared_ptr<rt::Model> handle = state->createModel(first);
  int32_t entry = 0;
  if (!state->params.entry.empty()) {
    try {
      entry = handle->entry(state->params.entry);
    } catch (const rt::Error &e) {
      throw error(TRITONSERVER_ERROR_INVALID_ARG, "config.pbtxt parameter \"entry\": {}", e.what());
    }
  }
  const void *program = nullptr;
  uint64_t programSize = 0;
  handle->api().check(handle->api().model_program(handle->get(), &program, &programSize));
  const std::optional<BufferUpdates> updates =
      program ? readBufferUpdates(static_cast<const uint8_t *>(program), programSize)
              : std::nullopt;
  const char *entryName = nullptr;
  handle->api().check(handle->api().model_entry_name(handle->get(), entry, &entryName));
  std::vector<std::string> entryUpdates;
  if (updates)
    if (auto it = updates->byEntry.find(entryName); it != updates->byEntry.end())
      entryUpdates = it->second;
  state->sig = describeEntry(*handle, entry, state->artifact, entryUpdates);

  bool autoComplete = false;
  check(TRITONBACKEND_ModelAutoCompleteConfig(model, &autoComplete),
        "reading the auto-complete setting");
  if (autoComplete && completeConfig(config, state->sig)) {
    setConfig(model, config);
    config = readConfig(model);
  }
  state->maxBatch = checkConfig(config, state->sig);

  // Only this entry runs on this Triton model's handles (another entry is another Triton model,
  // with handles of its own), so only its own buffer updates could race.
  state->shareable = updates && entryUpdates.empty();
  if (state->shareable)
    state->shared[first] = std::move(handle);

  log(TRITONSERVER_LOG_INFO, __LINE__,
      fmt::format("aotc: model '{}' serves entry \"{}\" of {}: inputs {}; outputs {}; "
                  "max_batch_size {}; {}",
                  state->name, state->sig.entry, state->artifact, describe(state->sig.inputs),
                  describe(state->sig.outputs), state->maxBatch,
                  state->shareable ? "instances on one device share one model handle"
                  : updates        ? "one model handle per instance (the entry updates buffers)"
                                   : "one model handle per instance (no embedded program says "
                                     "whether the entry updates buffers)"));
  return state;
}

/// Device memory that one instance's runs reuse (Triton runs an instance's executions one at a
/// time), so that a run of sizes seen before has the same addresses: what a CUDA graph replays.
class DeviceBuffers {
public:
  explicit DeviceBuffers(std::shared_ptr<rt::Model> handle) : handle_(std::move(handle)) {
    const rt::Api &api = handle_->api();
    if (!api.model_device_alloc || !api.model_device_free || !api.model_copy)
      throw error(TRITONSERVER_ERROR_UNSUPPORTED,
                  "the artifact's runtime has no device memory functions; export it again with "
                  "this aotc");
  }
  ~DeviceBuffers() {
    for (std::vector<Buffer> *list : {&inputs_, &outputs_})
      for (Buffer &b : *list)
        handle_->api().model_device_free(handle_->get(), b.data);
  }
  DeviceBuffers(const DeviceBuffers &) = delete;
  DeviceBuffers &operator=(const DeviceBuffers &) = delete;

  /// Input or output i's buffer, at least `bytes` large.
  void *input(size_t i, uint64_t bytes) { return reserve(inputs_, i, bytes); }
  void *output(size_t i, uint64_t bytes) { return reserve(outputs_, i, bytes); }

  void copy(void *dst, const void *src, uint64_t bytes, int32_t direction) {
    if (bytes)
      handle_->api().check(handle_->api().model_copy(handle_->get(), dst, src, bytes, direction));
  }

  /// The byte sizes of the outputs of the runs seen, by their input shapes.
  std::map<InputShapes, std::vector<uint64_t>> outputBytes;

private:
  struct Buffer {
    void *data = nullptr;
    uint64_t capacity = 0;
  };
  /// Grows by doubling at least, so that the addresses settle after a few sizes.
  void *reserve(std::vector<Buffer> &list, size_t i, uint64_t bytes) {
    if (list.size() <= i)
      list.resize(i + 1);
    Buffer &b = list[i];
    if (b.capacity < bytes) {
      const rt::Api &api = handle_->api();
      const uint64_t capacity = std::max(bytes, 2 * b.capacity);
      api.check(api.model_device_free(handle_->get(), b.data));
      b = Buffer{};
      api.check(api.model_device_alloc(handle_->get(), capacity, &b.data));
      b.capacity = capacity;
    }
    return b.data;
  }

  std::shared_ptr<rt::Model> handle_;
  std::vector<Buffer> inputs_, outputs_;
};

/// One model instance: the handle its executions run on, and where.
struct InstanceState {
  ModelState *model = nullptr;
  TRITONBACKEND_ModelInstance *instance = nullptr;
  Placement placement;
  std::shared_ptr<rt::Model> handle;
  std::unique_ptr<DeviceBuffers> device; // CUDA instances: inputs and outputs on the device
};

/// Where an instance runs: its GPU for KIND_GPU, the CPU for KIND_CPU; every instance on the
/// emulated CUDA device when config.pbtxt names one.
Placement placementOf(const ModelState &m, TRITONBACKEND_ModelInstance *instance) {
  if (m.cudaDriver)
    return Placement{AOTC_DEVICE_CUDA, 0};
  TRITONSERVER_InstanceGroupKind kind;
  check(TRITONBACKEND_ModelInstanceKind(instance, &kind), "reading the instance kind");
  if (kind == TRITONSERVER_INSTANCEGROUPKIND_CPU)
    return Placement{};
  if (kind != TRITONSERVER_INSTANCEGROUPKIND_GPU)
    throw error(TRITONSERVER_ERROR_UNSUPPORTED,
                "the aotc backend runs instances of kind KIND_CPU or KIND_GPU; set one in "
                "config.pbtxt's instance_group");
  int32_t device = 0;
  check(TRITONBACKEND_ModelInstanceDeviceId(instance, &device), "reading the instance's GPU");
  return Placement{AOTC_DEVICE_CUDA, device};
}

/// One request of an execution, its inputs read and checked.
struct Pending {
  TRITONBACKEND_Request *request = nullptr;
  TRITONBACKEND_Response *response = nullptr; // null once sent
  InputShapes shapes;
  // Per input, the request's buffers in order.
  std::vector<std::vector<std::pair<const void *, uint64_t>>> buffers;
  int64_t rows = 1;
  bool ok = false;
  uint64_t computeStart = 0, computeEnd = 0;
};

void readInputs(const ModelState &m, Pending &p) {
  const EntrySig &sig = m.sig;
  for (const TensorSig &t : sig.inputs) {
    TRITONBACKEND_Input *input = nullptr;
    if (TRITONSERVER_Error *e = TRITONBACKEND_RequestInput(p.request, t.name.c_str(), &input)) {
      TRITONSERVER_ErrorDelete(e);
      throw error(TRITONSERVER_ERROR_INVALID_ARG,
                  "the request has no input \"{}\" (entry \"{}\" takes: {})", t.name, sig.entry,
                  describe(sig.inputs));
    }
    TRITONSERVER_DataType type;
    const int64_t *shape = nullptr;
    uint32_t rank = 0, count = 0;
    uint64_t bytes = 0;
    check(TRITONBACKEND_InputProperties(input, nullptr, &type, &shape, &rank, &bytes, &count),
          "reading an input");
    std::vector<int64_t> dims(shape, shape + rank);
    if (type != tritonType(t.dtype))
      throw error(TRITONSERVER_ERROR_INVALID_ARG, "input \"{}\" is {}, but entry \"{}\" takes {}",
                  t.name, wireTypeName(type), sig.entry, wireTypeName(tritonType(t.dtype)));
    if (rank != t.dims.size()) {
      std::vector<int64_t> want;
      for (const Dim &d : t.dims)
        want.push_back(d.value);
      throw error(TRITONSERVER_ERROR_INVALID_ARG,
                  "input \"{}\" has shape {}, but entry \"{}\" takes {} (-1: any size in range)",
                  t.name, formatShape(dims), sig.entry, formatShape(want));
    }
    uint64_t numel = 1;
    for (int64_t d : dims)
      numel *= static_cast<uint64_t>(d < 0 ? 0 : d);
    if (bytes != numel * elementSize(t.dtype))
      throw error(TRITONSERVER_ERROR_INVALID_ARG, "input \"{}\" holds {} bytes, but {} {} needs {}",
                  t.name, bytes, wireTypeName(type), formatShape(dims),
                  numel * elementSize(t.dtype));
    std::vector<std::pair<const void *, uint64_t>> pieces;
    for (uint32_t b = 0; b < count; ++b) {
      const void *data = nullptr;
      uint64_t size = 0;
      TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
      int64_t memoryId = 0;
      check(TRITONBACKEND_InputBuffer(input, b, &data, &size, &memory, &memoryId),
            "reading an input buffer");
      if (memory == TRITONSERVER_MEMORY_GPU)
        throw error(TRITONSERVER_ERROR_UNSUPPORTED,
                    "input \"{}\" is in GPU memory (CUDA shared memory), which the aotc backend "
                    "does not read yet; send it in the request or in system shared memory",
                    t.name);
      pieces.emplace_back(data, size);
    }
    // Rows are what requests are joined by: every input must agree on them.
    if (m.maxBatch > 0 && !p.shapes.empty() && dims[0] != p.rows)
      throw error(TRITONSERVER_ERROR_INVALID_ARG,
                  "input \"{}\" has {} rows along the batch dim, input \"{}\" has {}", t.name,
                  dims[0], sig.inputs[0].name, p.rows);
    if (m.maxBatch > 0)
      p.rows = dims[0];
    p.shapes.push_back(std::move(dims));
    p.buffers.push_back(std::move(pieces));
  }
}

void sendError(Pending &p, TRITONSERVER_Error *e) {
  if (!p.response) {
    TRITONSERVER_ErrorDelete(e);
    return;
  }
  if (TRITONSERVER_Error *sent =
          TRITONBACKEND_ResponseSend(p.response, AOTC_TRITONSERVER_RESPONSE_COMPLETE_FINAL, e)) {
    log(TRITONSERVER_LOG_ERROR, __LINE__,
        fmt::format("aotc: sending an error response: {}", TRITONSERVER_ErrorMessage(sent)));
    TRITONSERVER_ErrorDelete(sent);
  }
  TRITONSERVER_ErrorDelete(e);
  p.response = nullptr;
  p.ok = false;
}

/// A run's outputs: where they are (host or device memory) and the runtime's buffers to free.
struct Results {
  std::vector<aotc_tensor> tensors;
  std::vector<rt::OwnedTensor> owned;
  DeviceBuffers *device = nullptr; // set: the tensors are device memory, copied out through it
};

/// Copies rows [row, row + p.rows) of each requested output into p's response and sends it.
void sendOutputs(const ModelState &m, Pending &p, const Results &outputs, int64_t row,
                 int64_t totalRows) {
  uint32_t count = 0;
  check(TRITONBACKEND_RequestOutputCount(p.request, &count), "reading the requested outputs");
  for (uint32_t i = 0; i < count; ++i) {
    const char *name = nullptr;
    check(TRITONBACKEND_RequestOutputName(p.request, i, &name), "reading the requested outputs");
    size_t k = 0;
    while (k < m.sig.outputs.size() && m.sig.outputs[k].name != name)
      ++k;
    if (k == m.sig.outputs.size())
      throw error(TRITONSERVER_ERROR_INVALID_ARG, "entry \"{}\" has no output \"{}\"", m.sig.entry,
                  name);
    const aotc_tensor &t = outputs.tensors[static_cast<size_t>(m.sig.outputs[k].index)];
    std::vector<int64_t> shape(t.shape, t.shape + t.rank);
    uint64_t bytes = elementSize(t.dtype);
    for (int64_t d : shape)
      bytes *= static_cast<uint64_t>(d);
    uint64_t offset = 0, size = bytes;
    if (m.maxBatch > 0) {
      if (shape.empty() || shape[0] != totalRows)
        throw error(TRITONSERVER_ERROR_INTERNAL,
                    "output \"{}\" has shape {}, not {} rows along the batch dim", name,
                    formatShape(shape), totalRows);
      const uint64_t rowBytes = totalRows ? bytes / static_cast<uint64_t>(totalRows) : 0;
      shape[0] = p.rows;
      offset = rowBytes * static_cast<uint64_t>(row);
      size = rowBytes * static_cast<uint64_t>(p.rows);
    }
    TRITONBACKEND_Output *output = nullptr;
    check(TRITONBACKEND_ResponseOutput(p.response, &output, name, tritonType(t.dtype), shape.data(),
                                       static_cast<uint32_t>(shape.size())),
          "creating an output");
    void *buffer = nullptr;
    TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
    int64_t memoryId = 0;
    check(TRITONBACKEND_OutputBuffer(output, &buffer, size, &memory, &memoryId),
          "allocating an output");
    if (memory == TRITONSERVER_MEMORY_GPU)
      throw error(TRITONSERVER_ERROR_UNSUPPORTED,
                  "the server gave output \"{}\" GPU memory, which the aotc backend does not "
                  "write yet",
                  name);
    const char *from = static_cast<const char *>(t.data) + offset;
    if (outputs.device)
      outputs.device->copy(buffer, from, size, AOTC_COPY_DEVICE_TO_HOST);
    else if (size)
      std::memcpy(buffer, from, size);
  }
  check(TRITONBACKEND_ResponseSend(p.response, AOTC_TRITONSERVER_RESPONSE_COMPLETE_FINAL, nullptr),
        "sending a response");
  p.response = nullptr;
}

/// Runs the requests `group` (sharing every dim but the batch dim) as one aotc run. When the
/// run fails for a group of several, each request runs alone so that an error answers only the
/// request that caused it.
void runGroupOrFail(InstanceState &is, std::vector<Pending> &pending,
                    const std::vector<size_t> &group, uint64_t execStart);

void runGroup(InstanceState &is, std::vector<Pending> &pending, const std::vector<size_t> &group,
              uint64_t execStart) {
  const ModelState &m = *is.model;
  const Pending &first = pending[group[0]];
  int64_t totalRows = 0;
  for (size_t r : group)
    totalRows += pending[r].rows;

  DeviceBuffers *device = is.device.get();
  std::vector<std::vector<char>> scratch;
  std::vector<aotc_tensor> inputs;
  InputShapes shapes;
  for (size_t i = 0; i < m.sig.inputs.size(); ++i) {
    std::vector<int64_t> shape = first.shapes[i];
    if (m.maxBatch > 0)
      shape[0] = totalRows;
    const void *data = nullptr;
    uint64_t bytes = 0;
    for (size_t r : group)
      for (const auto &piece : pending[r].buffers[i])
        bytes += piece.second;
    if (device) { // each piece straight to its place in the device buffer
      char *at = static_cast<char *>(device->input(i, bytes));
      data = at;
      for (size_t r : group)
        for (const auto &piece : pending[r].buffers[i]) {
          device->copy(at, piece.first, piece.second, AOTC_COPY_HOST_TO_DEVICE);
          at += piece.second;
        }
    } else if (group.size() == 1 && first.buffers[i].size() == 1) {
      data = first.buffers[i][0].first; // one contiguous buffer: no copy
    } else {
      std::vector<char> &joined = scratch.emplace_back(bytes);
      char *at = joined.data();
      for (size_t r : group)
        for (const auto &piece : pending[r].buffers[i]) {
          std::memcpy(at, piece.first, piece.second);
          at += piece.second;
        }
      data = joined.data();
    }
    aotc_tensor t = rt::tensor(data, m.sig.inputs[i].dtype, shape);
    t.size_bytes = bytes;
    t.device_type = is.placement.deviceType;
    t.device_index = is.placement.deviceIndex;
    inputs.push_back(t);
    shapes.push_back(std::move(shape));
  }

  const uint64_t computeStart = nowNs();
  Results outputs;
  outputs.device = device;
  try {
    const std::vector<uint64_t> *known = nullptr;
    if (device)
      if (auto it = device->outputBytes.find(shapes); it != device->outputBytes.end())
        known = &it->second;
    if (known) {
      // Sizes seen before: into the instance's own buffers, at the addresses of last time.
      outputs.tensors.resize(known->size());
      for (size_t o = 0; o < known->size(); ++o) {
        aotc_tensor &t = outputs.tensors[o];
        std::memset(&t, 0, sizeof t);
        t.data = device->output(o, (*known)[o]);
        t.size_bytes = (*known)[o];
        t.device_type = is.placement.deviceType;
        t.device_index = is.placement.deviceIndex;
      }
      is.handle->run_into(m.sig.index, inputs, outputs.tensors);
    } else {
      outputs.owned = is.handle->run(m.sig.index, inputs);
      std::vector<uint64_t> sizes;
      for (const rt::OwnedTensor &t : outputs.owned) {
        outputs.tensors.push_back(t.raw());
        sizes.push_back(static_cast<uint64_t>(t.numel()) * elementSize(t.dtype()));
      }
      // An empty output would have no buffer, which asks the runtime for one: such runs keep
      // runtime-allocated outputs.
      if (device && std::find(sizes.begin(), sizes.end(), 0) == sizes.end())
        device->outputBytes.emplace(shapes, std::move(sizes));
    }
  } catch (const rt::Error &e) {
    if (group.size() > 1) {
      log(TRITONSERVER_LOG_VERBOSE, __LINE__,
          fmt::format("aotc: a run of {} requests joined along the batch dim failed ({}); "
                      "running each alone",
                      group.size(), e.what()));
      for (size_t r : group)
        runGroupOrFail(is, pending, {r}, execStart);
      return;
    }
    sendError(pending[group[0]], currentError());
    return;
  }
  const uint64_t computeEnd = nowNs();

  int64_t row = 0;
  for (size_t r : group) {
    Pending &p = pending[r];
    try {
      sendOutputs(m, p, outputs, row, totalRows);
      p.ok = true;
      p.computeStart = computeStart;
      p.computeEnd = computeEnd;
    } catch (...) {
      sendError(p, currentError());
    }
    row += p.rows;
  }
  if (TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceReportBatchStatistics(
          is.instance, static_cast<uint64_t>(totalRows), execStart, computeStart, computeEnd,
          nowNs()))
    TRITONSERVER_ErrorDelete(e);
}

/// runGroup, with whatever it throws (memory) answering the group's unanswered requests.
void runGroupOrFail(InstanceState &is, std::vector<Pending> &pending,
                    const std::vector<size_t> &group, uint64_t execStart) {
  try {
    runGroup(is, pending, group, execStart);
  } catch (...) {
    for (size_t r : group)
      if (pending[r].response)
        sendError(pending[r], currentError());
  }
}

void execute(InstanceState &is, TRITONBACKEND_Request **requests, uint32_t count) {
  const uint64_t execStart = nowNs();
  const ModelState &m = *is.model;
  std::vector<Pending> pending(count);
  std::vector<InputShapes> shapes;
  std::vector<size_t> valid; // indices into pending of the requests that read well
  for (uint32_t r = 0; r < count; ++r) {
    Pending &p = pending[r];
    p.request = requests[r];
    if (TRITONSERVER_Error *e = TRITONBACKEND_ResponseNew(&p.response, p.request)) {
      log(TRITONSERVER_LOG_ERROR, __LINE__,
          fmt::format("aotc: creating a response: {}", TRITONSERVER_ErrorMessage(e)));
      TRITONSERVER_ErrorDelete(e);
      p.response = nullptr;
      continue;
    }
    try {
      readInputs(m, p);
      shapes.push_back(p.shapes);
      valid.push_back(r);
    } catch (...) {
      sendError(p, currentError());
    }
  }

  for (const std::vector<size_t> &group : groupRequests(shapes, m.maxBatch)) {
    std::vector<size_t> members;
    for (size_t g : group)
      members.push_back(valid[g]);
    runGroupOrFail(is, pending, members, execStart);
  }

  const uint64_t execEnd = nowNs();
  for (Pending &p : pending) {
    if (p.response) // not answered: a bug, but the client must not wait forever
      sendError(p, TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "aotc: no response made"));
    if (TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceReportStatistics(
            is.instance, p.request, p.ok, execStart, p.computeStart, p.computeEnd, execEnd))
      TRITONSERVER_ErrorDelete(e);
    if (TRITONSERVER_Error *e =
            TRITONBACKEND_RequestRelease(p.request, AOTC_TRITONSERVER_REQUEST_RELEASE_ALL)) {
      log(TRITONSERVER_LOG_ERROR, __LINE__,
          fmt::format("aotc: releasing a request: {}", TRITONSERVER_ErrorMessage(e)));
      TRITONSERVER_ErrorDelete(e);
    }
  }
}

} // namespace

} // namespace aotc::triton

using namespace aotc::triton;

extern "C" {

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *) {
  return guard([] {
    uint32_t major = 0, minor = 0;
    check(TRITONBACKEND_ApiVersion(&major, &minor), "reading the backend API version");
    if (major != AOTC_TRITONBACKEND_API_MAJOR || minor < AOTC_TRITONBACKEND_API_MINOR)
      throw error(TRITONSERVER_ERROR_UNSUPPORTED,
                  "the server's TRITONBACKEND API is {}.{}; the aotc backend needs {}.{} or a "
                  "later 1.x",
                  major, minor, AOTC_TRITONBACKEND_API_MAJOR, AOTC_TRITONBACKEND_API_MINOR);
  });
}

// Without an instance_group in config.pbtxt, instances go on CPU even on a machine with GPUs.
TRITONSERVER_Error *TRITONBACKEND_GetBackendAttribute(TRITONBACKEND_Backend *,
                                                      TRITONBACKEND_BackendAttribute *attributes) {
  return guard([&] {
    check(TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup(
              attributes, TRITONSERVER_INSTANCEGROUPKIND_CPU, 0, nullptr, 0),
          "setting the preferred instance group");
  });
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  return guard([&] {
    std::unique_ptr<ModelState> state = initializeModel(model);
    check(TRITONBACKEND_ModelSetState(model, state.get()), "setting the model state");
    state.release();
  });
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
  return guard([&] {
    void *state = nullptr;
    check(TRITONBACKEND_ModelState(model, &state), "reading the model state");
    delete static_cast<ModelState *>(state);
  });
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance *instance) {
  return guard([&] {
    TRITONBACKEND_Model *model = nullptr;
    check(TRITONBACKEND_ModelInstanceModel(instance, &model), "reading the instance's model");
    void *modelState = nullptr;
    check(TRITONBACKEND_ModelState(model, &modelState), "reading the model state");
    auto state = std::make_unique<InstanceState>();
    state->model = static_cast<ModelState *>(modelState);
    state->instance = instance;
    state->placement = placementOf(*state->model, instance);
    state->handle = state->model->handleFor(state->placement);
    if (state->placement.deviceType == AOTC_DEVICE_CUDA)
      state->device = std::make_unique<DeviceBuffers>(state->handle);
    const char *name = nullptr, *device = "";
    check(TRITONBACKEND_ModelInstanceName(instance, &name), "reading the instance name");
    const aotc::rt::Api &api = state->handle->api();
    if (api.model_device_name)
      api.check(api.model_device_name(state->handle->get(), &device));
    log(TRITONSERVER_LOG_INFO, __LINE__,
        fmt::format("aotc: instance {} runs on {} ({})", name, placementLabel(state->placement),
                    device));
    check(TRITONBACKEND_ModelInstanceSetState(instance, state.get()), "setting the instance state");
    state.release();
  });
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance *instance) {
  return guard([&] {
    void *state = nullptr;
    check(TRITONBACKEND_ModelInstanceState(instance, &state), "reading the instance state");
    delete static_cast<InstanceState *>(state);
  });
}

// Every request is answered and released here, so this returns success unless the instance
// itself is unusable (the requests then stay with the server, which answers them).
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance *instance,
                                                       TRITONBACKEND_Request **requests,
                                                       uint32_t request_count) {
  void *state = nullptr;
  if (TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(instance, &state))
    return e;
  try {
    execute(*static_cast<InstanceState *>(state), requests, request_count);
  } catch (...) {
    // execute answers every request before anything can throw past it (allocation aside).
    log(TRITONSERVER_LOG_ERROR, __LINE__, "aotc: an execution failed unexpectedly");
  }
  return nullptr;
}

} // extern "C"
