// An entry of an aotc artifact as Triton sees it (tensors, dtypes, dims, the batch dim), and the
// model's config.pbtxt, in the server's JSON form, completed from the entry and checked against it.
#ifndef AOTC_TRITON_MODELCONFIG_H
#define AOTC_TRITON_MODELCONFIG_H

#include "TritonApi.h"

#include "aotc/runtime.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace aotc::triton {

/// One dim of an entry's tensor (aotc_dim_info with owned strings).
struct Dim {
  std::string expr;   // "784", "batch", "seq + 1"
  int64_t value = -1; // the size when static, else -1
  int64_t lo = 0, hi = 0;
  std::string symbol; // the root dim's name when the dim is exactly one, else ""
  bool isStatic() const { return value >= 0; }
};

struct TensorSig {
  int32_t index = 0; // in the C ABI's list of the entry's inputs or outputs
  std::string name;
  int32_t dtype = 0; // AOTC_DTYPE_*
  std::vector<Dim> dims;
};

/// The dim that Triton's batching concatenates along: dim 0 of every input and output, one root
/// symbol whose range starts at 1 and that no other dim mentions.
struct BatchDim {
  std::string symbol;
  int64_t hi = 0;
};

struct EntrySig {
  std::string artifact; // the model.so path, for messages
  std::string entry;
  int32_t index = 0;
  std::vector<TensorSig> inputs, outputs;
  std::optional<BatchDim> batch;
};

/// The entry's signature from the artifact's introspection, without the outputs named in
/// `bufferUpdates` (new values of mutable buffers: the model's state, not answers).
EntrySig describeEntry(const rt::Model &model, int32_t entry, const std::string &artifact,
                       const std::vector<std::string> &bufferUpdates);
std::optional<BatchDim> findBatchDim(const std::vector<TensorSig> &inputs,
                                     const std::vector<TensorSig> &outputs);

/// What config.pbtxt's `parameters` may set (docs/serving.md lists them).
struct BackendParams {
  std::string entry;      // "" = the artifact's first entry
  int32_t numThreads = 0; // aotc_model_options.num_threads of each model handle
  uint32_t cudaGraphs = 0; // aotc_model_options.cuda_graphs of each GPU model handle
  // For tests: a library exporting aotc_emulated_cuda_driver(); every instance then runs on
  // that emulated CUDA device, whatever its kind.
  std::string emulatedCudaDevice;
};
BackendParams readParameters(const nlohmann::json &config);

/// Where a model handle runs: the CPU, or a CUDA device.
struct Placement {
  int32_t deviceType = AOTC_DEVICE_CPU;
  int32_t deviceIndex = 0;
  auto operator<=>(const Placement &) const = default;
};
std::string placementLabel(Placement placement); // "cpu", "cuda:1"

/// KIND_MODEL instance groups are refused (aotc places its models itself); KIND_CPU and
/// KIND_GPU are served. Returns where the first group's first instance runs, which is where the
/// backend reads the entry (an artifact exported for CUDA only has no CPU code to read it on).
Placement checkInstanceGroups(const nlohmann::json &config, const BackendParams &params);

/// Fills in what config.pbtxt leaves out: every input and output (name, data_type, dims with -1
/// for dynamic dims), and for a config that names no tensor and no max_batch_size, batching up
/// to the top of the batch dim's range with a default dynamic_batching when no scheduler is set.
/// Returns whether anything changed.
bool completeConfig(nlohmann::json &config, const EntrySig &sig);

/// Checks the config against the entry: the same inputs, data types and dims (-1 where the
/// artifact's dim is dynamic, or a size within its range), max_batch_size within the batch dim's
/// range. Returns max_batch_size; throws BackendError naming the first mismatch.
int64_t checkConfig(const nlohmann::json &config, const EntrySig &sig);

/// Data types: config.pbtxt's name ("TYPE_FP32"), the server's enum, the wire name ("FP32").
/// Null / TRITONSERVER_TYPE_INVALID for a dtype Triton lacks.
const char *configTypeName(int32_t aotcDtype);
TRITONSERVER_DataType tritonType(int32_t aotcDtype);
std::string wireTypeName(TRITONSERVER_DataType type);
size_t elementSize(int32_t aotcDtype);

/// "[-1, 784]".
std::string formatShape(const std::vector<int64_t> &dims);

} // namespace aotc::triton

#endif
