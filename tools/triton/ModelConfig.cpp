// config.pbtxt against an aotc entry: see ModelConfig.h. The server hands the config over as the
// JSON form of its ModelConfig protobuf, where 64-bit integers (dims) are strings.
#include "ModelConfig.h"

#include "Error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>

namespace aotc::triton {

using nlohmann::json;

namespace {

struct TypeRow {
  int32_t aotc;
  TRITONSERVER_DataType triton;
  const char *config, *wire;
  size_t size;
};

// Every aotc dtype has a Triton type of the same layout.
constexpr TypeRow Types[] = {
    {AOTC_DTYPE_F32, TRITONSERVER_TYPE_FP32, "TYPE_FP32", "FP32", 4},
    {AOTC_DTYPE_F64, TRITONSERVER_TYPE_FP64, "TYPE_FP64", "FP64", 8},
    {AOTC_DTYPE_F16, TRITONSERVER_TYPE_FP16, "TYPE_FP16", "FP16", 2},
    {AOTC_DTYPE_BF16, TRITONSERVER_TYPE_BF16, "TYPE_BF16", "BF16", 2},
    {AOTC_DTYPE_I64, TRITONSERVER_TYPE_INT64, "TYPE_INT64", "INT64", 8},
    {AOTC_DTYPE_I32, TRITONSERVER_TYPE_INT32, "TYPE_INT32", "INT32", 4},
    {AOTC_DTYPE_I16, TRITONSERVER_TYPE_INT16, "TYPE_INT16", "INT16", 2},
    {AOTC_DTYPE_I8, TRITONSERVER_TYPE_INT8, "TYPE_INT8", "INT8", 1},
    {AOTC_DTYPE_U8, TRITONSERVER_TYPE_UINT8, "TYPE_UINT8", "UINT8", 1},
    {AOTC_DTYPE_BOOL, TRITONSERVER_TYPE_BOOL, "TYPE_BOOL", "BOOL", 1},
};

const TypeRow *typeRow(int32_t aotcDtype) {
  for (const TypeRow &row : Types)
    if (row.aotc == aotcDtype)
      return &row;
  return nullptr;
}

constexpr const char *Parameters[] = {"entry", "num_threads", "cuda_graphs",
                                      "emulated_cuda_device"};

TensorSig tensorSig(const aotc_tensor_info &info, int32_t index) {
  TensorSig t;
  t.index = index;
  t.name = info.name;
  t.dtype = info.dtype;
  for (int32_t d = 0; d < info.rank; ++d) {
    const aotc_dim_info &dim = info.dims[d];
    t.dims.push_back(
        Dim{dim.expr ? dim.expr : "", dim.value, dim.lo, dim.hi, dim.symbol ? dim.symbol : ""});
  }
  return t;
}

// Whether `expr` names `symbol` as a whole word ("batch" in "2 * batch", not in "batches").
bool mentions(const std::string &expr, const std::string &symbol) {
  auto isWord = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = expr.find(symbol); at != std::string::npos; at = expr.find(symbol, at + 1)) {
    const size_t end = at + symbol.size();
    if ((at == 0 || !isWord(expr[at - 1])) && (end == expr.size() || !isWord(expr[end])))
      return true;
  }
  return false;
}

// The dims config.pbtxt should show: -1 where the artifact's dim is dynamic, without dim 0 when
// the model batches (Triton's dims leave the batch dim out).
std::vector<int64_t> configDims(const TensorSig &t, bool batched) {
  std::vector<int64_t> dims;
  for (size_t d = batched ? 1 : 0; d < t.dims.size(); ++d)
    dims.push_back(t.dims[d].value);
  return dims;
}

int64_t asInt(const json &value, const std::string &what) {
  if (value.is_number_integer())
    return value.get<int64_t>();
  if (value.is_string()) {
    const std::string &s = value.get_ref<const std::string &>();
    size_t used = 0;
    try {
      const int64_t v = std::stoll(s, &used);
      if (used == s.size())
        return v;
    } catch (const std::exception &) {
    }
  }
  throw error(TRITONSERVER_ERROR_INVALID_ARG, "config.pbtxt: {} is not an integer: {}", what,
              value.dump());
}

std::vector<int64_t> dimsOf(const json &tensor, const std::string &what) {
  std::vector<int64_t> dims;
  if (auto it = tensor.find("dims"); it != tensor.end() && it->is_array())
    for (const json &d : *it)
      dims.push_back(asInt(d, what + " dims"));
  return dims;
}

std::string stringOf(const json &object, const char *key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

int64_t maxBatchSize(const json &config) {
  auto it = config.find("max_batch_size");
  return it == config.end() || it->is_null() ? 0 : asInt(*it, "max_batch_size");
}

const json *findTensor(const json &list, const std::string &name) {
  for (const json &t : list)
    if (stringOf(t, "name") == name)
      return &t;
  return nullptr;
}

json &tensorList(json &config, const char *key) {
  json &list = config[key];
  if (!list.is_array())
    list = json::array();
  return list;
}

// Adds the entry's tensors config.pbtxt lacks, and the data_type and dims of those it names
// without them.
bool completeTensors(json &list, const std::vector<TensorSig> &tensors, bool batched) {
  bool changed = false;
  for (const TensorSig &t : tensors) {
    auto it = std::find_if(list.begin(), list.end(),
                           [&](const json &c) { return stringOf(c, "name") == t.name; });
    if (it == list.end()) {
      list.push_back(json{{"name", t.name}});
      it = std::prev(list.end());
    }
    const std::string type = stringOf(*it, "data_type");
    if ((type.empty() || type == "TYPE_INVALID") && configTypeName(t.dtype)) {
      (*it)["data_type"] = configTypeName(t.dtype);
      changed = true;
    }
    const std::vector<int64_t> dims = configDims(t, batched);
    if (!dims.empty() && (!it->contains("dims") || (*it)["dims"].empty())) {
      (*it)["dims"] = dims;
      changed = true;
    }
  }
  return changed;
}

std::string names(const std::vector<TensorSig> &tensors) {
  std::vector<std::string> n;
  for (const TensorSig &t : tensors)
    n.push_back(t.name);
  return fmt::format("{}", fmt::join(n, ", "));
}

void checkTensors(const json &config, const char *key, const char *kind,
                  const std::vector<TensorSig> &tensors, const EntrySig &sig, int64_t batch) {
  const std::string where = fmt::format("entry \"{}\" of {}", sig.entry, sig.artifact);
  const json empty = json::array();
  auto it = config.find(key);
  const json &list = it != config.end() && it->is_array() ? *it : empty;
  for (const json &c : list) {
    const std::string name = stringOf(c, "name");
    auto t = std::find_if(tensors.begin(), tensors.end(),
                          [&](const TensorSig &s) { return s.name == name; });
    if (t == tensors.end())
      throw error(TRITONSERVER_ERROR_INVALID_ARG,
                  "config.pbtxt {} \"{}\" is not an {} of {} (its {}s: {})", kind, name, kind,
                  where, kind, names(tensors));
    if (c.contains("reshape") && !c["reshape"].is_null())
      throw error(TRITONSERVER_ERROR_INVALID_ARG,
                  "config.pbtxt {} \"{}\": reshape is not supported by the aotc backend (export "
                  "the model with the shape to serve)",
                  kind, name);
    const std::string type = stringOf(c, "data_type");
    if (type != configTypeName(t->dtype))
      throw error(TRITONSERVER_ERROR_INVALID_ARG,
                  "config.pbtxt {} \"{}\" has data_type {}, but {} has {}", kind, name,
                  type.empty() ? "none" : type, where, configTypeName(t->dtype));
    const std::vector<int64_t> dims = dimsOf(c, fmt::format("{} \"{}\"", kind, name));
    const std::vector<int64_t> want = configDims(*t, batch > 0);
    bool same = dims.size() == want.size();
    for (size_t d = 0; same && d < dims.size(); ++d) {
      const Dim &a = t->dims[d + (batch > 0 ? 1 : 0)];
      same =
          a.isStatic() ? dims[d] == a.value : dims[d] == -1 || (dims[d] >= a.lo && dims[d] <= a.hi);
    }
    if (!same)
      throw error(TRITONSERVER_ERROR_INVALID_ARG,
                  "config.pbtxt {} \"{}\" has dims {}, but {} has {}{}", kind, name,
                  formatShape(dims), where, formatShape(want),
                  batch > 0 ? fmt::format(" (the batch dim left out: max_batch_size is {})", batch)
                  : dims.size() + 1 == want.size()
                      ? std::string(" (with max_batch_size 0 the dims include the batch dim)")
                      : std::string());
  }
  // Every input must be listed (aotc has no optional inputs); outputs may be a subset.
  if (std::strcmp(kind, "input") == 0)
    for (const TensorSig &t : tensors)
      if (!findTensor(list, t.name))
        throw error(TRITONSERVER_ERROR_INVALID_ARG,
                    "config.pbtxt lists no input \"{}\", which {} takes ({} {})", t.name, where,
                    configTypeName(t.dtype), formatShape(configDims(t, batch > 0)));
}

} // namespace

EntrySig describeEntry(const rt::Model &model, int32_t entry, const std::string &artifact,
                       const std::vector<std::string> &bufferUpdates) {
  EntrySig sig;
  sig.artifact = artifact;
  sig.index = entry;
  const char *name = nullptr;
  model.api().check(model.api().model_entry_name(model.get(), entry, &name));
  sig.entry = name;
  const std::vector<aotc_tensor_info> inputs = model.inputs(entry), outputs = model.outputs(entry);
  for (size_t i = 0; i < inputs.size(); ++i)
    sig.inputs.push_back(tensorSig(inputs[i], static_cast<int32_t>(i)));
  for (size_t i = 0; i < outputs.size(); ++i)
    if (std::find(bufferUpdates.begin(), bufferUpdates.end(), outputs[i].name) ==
        bufferUpdates.end())
      sig.outputs.push_back(tensorSig(outputs[i], static_cast<int32_t>(i)));
  for (const std::vector<TensorSig> *list : {&sig.inputs, &sig.outputs})
    for (const TensorSig &t : *list) {
      if (!configTypeName(t.dtype))
        throw error(TRITONSERVER_ERROR_UNSUPPORTED,
                    "{}: tensor \"{}\" of entry \"{}\" has dtype {}, which Triton cannot carry",
                    artifact, t.name, sig.entry, t.dtype);
      // Triton's dims cannot be empty (a scalar is dims [1] with a reshape, which aotc's
      // backend does not do).
      if (t.dims.empty())
        throw error(TRITONSERVER_ERROR_UNSUPPORTED,
                    "{}: tensor \"{}\" of entry \"{}\" is a scalar, which the aotc backend cannot "
                    "serve yet; return it with shape [1]",
                    artifact, t.name, sig.entry);
    }
  sig.batch = findBatchDim(sig.inputs, sig.outputs);
  return sig;
}

std::optional<BatchDim> findBatchDim(const std::vector<TensorSig> &inputs,
                                     const std::vector<TensorSig> &outputs) {
  if (inputs.empty() || inputs[0].dims.empty())
    return std::nullopt;
  const Dim &first = inputs[0].dims[0];
  if (first.symbol.empty() || first.lo > 1 || first.hi < 2)
    return std::nullopt;
  for (const std::vector<TensorSig> *list : {&inputs, &outputs})
    for (const TensorSig &t : *list) {
      if (t.dims.empty() || t.dims[0].symbol != first.symbol)
        return std::nullopt;
      for (size_t d = 1; d < t.dims.size(); ++d)
        if (mentions(t.dims[d].expr, first.symbol))
          return std::nullopt;
    }
  return BatchDim{first.symbol, first.hi};
}

namespace {

/// A parameter's decimal value in [0, hi], or the error naming it and `expected`.
int64_t countParameter(const char *key, const std::string &text, int64_t hi, const char *expected) {
  size_t used = 0;
  int64_t n = -1;
  try {
    n = std::stoll(text, &used);
  } catch (const std::exception &) {
  }
  if (used != text.size() || text.empty() || n < 0 || n > hi)
    throw error(TRITONSERVER_ERROR_INVALID_ARG,
                "config.pbtxt parameter \"{}\" is \"{}\"; expected {}", key, text, expected);
  return n;
}

} // namespace

BackendParams readParameters(const json &config) {
  BackendParams params;
  auto it = config.find("parameters");
  if (it == config.end() || !it->is_object())
    return params;
  for (const auto &[key, value] : it->items()) {
    const std::string text = value.is_object() ? stringOf(value, "string_value") : "";
    if (key == "entry") {
      if (text.empty())
        throw error(TRITONSERVER_ERROR_INVALID_ARG,
                    "config.pbtxt parameter \"entry\" needs a string_value naming an entry");
      params.entry = text;
    } else if (key == "num_threads") {
      params.numThreads = static_cast<int32_t>(
          countParameter("num_threads", text, 1024, "0 (one per CPU) to 1024"));
    } else if (key == "cuda_graphs") {
      params.cudaGraphs = static_cast<uint32_t>(countParameter(
          "cuda_graphs", text, 4096, "0 (none) to 4096 CUDA graphs per concurrent run"));
    } else if (key == "emulated_cuda_device") {
      if (text.empty())
        throw error(TRITONSERVER_ERROR_INVALID_ARG,
                    "config.pbtxt parameter \"emulated_cuda_device\" needs a string_value naming "
                    "a library");
      params.emulatedCudaDevice = text;
    } else {
      throw error(TRITONSERVER_ERROR_INVALID_ARG,
                  "config.pbtxt parameter \"{}\" is unknown to the aotc backend (it reads: {})",
                  key, fmt::join(Parameters, ", "));
    }
  }
  return params;
}

std::string placementLabel(Placement placement) {
  return placement.deviceType == AOTC_DEVICE_CPU ? std::string("cpu")
                                                 : fmt::format("cuda:{}", placement.deviceIndex);
}

Placement checkInstanceGroups(const json &config, const BackendParams &params) {
  std::optional<Placement> first;
  auto it = config.find("instance_group");
  if (it != config.end() && it->is_array())
    for (const json &group : *it) {
      const std::string kind = stringOf(group, "kind");
      if (kind == "KIND_MODEL")
        throw error(TRITONSERVER_ERROR_UNSUPPORTED,
                    "config.pbtxt instance_group KIND_MODEL: the aotc backend places its models "
                    "itself; use kind: KIND_CPU or KIND_GPU");
      if (first)
        continue;
      first = Placement{};
      if (kind == "KIND_GPU") {
        first->deviceType = AOTC_DEVICE_CUDA;
        auto gpus = group.find("gpus");
        if (gpus != group.end() && gpus->is_array() && !gpus->empty() &&
            gpus->front().is_number_integer())
          first->deviceIndex = gpus->front().get<int32_t>();
      }
    }
  if (!params.emulatedCudaDevice.empty())
    return Placement{AOTC_DEVICE_CUDA, 0};
  return first.value_or(Placement{});
}

bool completeConfig(json &config, const EntrySig &sig) {
  bool changed = false;
  json &inputs = tensorList(config, "input");
  json &outputs = tensorList(config, "output");
  int64_t batch = maxBatchSize(config);
  if (batch == 0 && inputs.empty() && outputs.empty() && sig.batch) {
    batch = sig.batch->hi;
    config["max_batch_size"] = batch;
    changed = true;
    if (!config.contains("dynamic_batching") && !config.contains("sequence_batching") &&
        !config.contains("ensemble_scheduling"))
      config["dynamic_batching"] = json::object();
  }
  changed |= completeTensors(inputs, sig.inputs, batch > 0);
  changed |= completeTensors(outputs, sig.outputs, batch > 0);
  return changed;
}

int64_t checkConfig(const json &config, const EntrySig &sig) {
  const int64_t batch = maxBatchSize(config);
  const std::string where = fmt::format("entry \"{}\" of {}", sig.entry, sig.artifact);
  if (batch < 0)
    throw error(TRITONSERVER_ERROR_INVALID_ARG, "config.pbtxt: max_batch_size {} is negative",
                batch);
  if (batch > 0 && !sig.batch)
    throw error(TRITONSERVER_ERROR_INVALID_ARG,
                "config.pbtxt sets max_batch_size {}, but {} has no batch dim (dim 0 of every "
                "input and output, one dynamic dim whose range starts at 1): set max_batch_size: "
                "0 and give the full dims",
                batch, where);
  if (batch > 0 && batch > sig.batch->hi)
    throw error(TRITONSERVER_ERROR_INVALID_ARG,
                "config.pbtxt sets max_batch_size {}, but the batch dim \"{}\" of {} ranges up "
                "to {}",
                batch, sig.batch->symbol, where, sig.batch->hi);
  checkTensors(config, "input", "input", sig.inputs, sig, batch);
  checkTensors(config, "output", "output", sig.outputs, sig, batch);
  return batch;
}

const char *configTypeName(int32_t aotcDtype) {
  const TypeRow *row = typeRow(aotcDtype);
  return row ? row->config : nullptr;
}

TRITONSERVER_DataType tritonType(int32_t aotcDtype) {
  const TypeRow *row = typeRow(aotcDtype);
  return row ? row->triton : TRITONSERVER_TYPE_INVALID;
}

std::string wireTypeName(TRITONSERVER_DataType type) {
  for (const TypeRow &row : Types)
    if (row.triton == type)
      return row.wire;
  return type == TRITONSERVER_TYPE_BYTES ? "BYTES" : fmt::format("type {}", static_cast<int>(type));
}

size_t elementSize(int32_t aotcDtype) {
  const TypeRow *row = typeRow(aotcDtype);
  return row ? row->size : 0;
}

std::string formatShape(const std::vector<int64_t> &dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

} // namespace aotc::triton
