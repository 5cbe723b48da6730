// config.pbtxt (in the JSON form the server hands over) completed from an entry and checked
// against it: each refusal is one line naming the field, the artifact's value and config's.
#include "ModelConfig.h"
#include "Error.h"

#include <gtest/gtest.h>

using namespace aotc::triton;
using nlohmann::json;

namespace {

Dim fixed(int64_t n) { return Dim{std::to_string(n), n, n, n, ""}; }
Dim dynamic(const std::string &symbol, int64_t lo, int64_t hi) {
  return Dim{symbol, -1, lo, hi, symbol};
}

TensorSig tensor(const std::string &name, std::vector<Dim> dims, int32_t index = 0) {
  return TensorSig{index, name, AOTC_DTYPE_F32, std::move(dims)};
}

// examples/mlp: x f32[batch, 784] -> logits f32[batch, 10], batch in 1..512.
EntrySig mlp() {
  EntrySig sig;
  sig.artifact = "mlp/1/model.so";
  sig.entry = "forward";
  sig.inputs = {tensor("x", {dynamic("batch", 1, 512), fixed(784)})};
  sig.outputs = {tensor("logits", {dynamic("batch", 1, 512), fixed(10)})};
  sig.batch = findBatchDim(sig.inputs, sig.outputs);
  return sig;
}

// The tiny ResNet's second entry: x f32[batch, 3, h, w], h and w in 32..96.
EntrySig anySize() {
  EntrySig sig;
  sig.artifact = "resnet/1/model.so";
  sig.entry = "forward_any_size";
  sig.inputs = {
      tensor("x", {dynamic("batch", 1, 16), fixed(3), dynamic("h", 32, 96), dynamic("w", 32, 96)})};
  sig.outputs = {tensor("logits", {dynamic("batch", 1, 16), fixed(10)})};
  sig.batch = findBatchDim(sig.inputs, sig.outputs);
  return sig;
}

template <typename Fn> std::string errorOf(Fn fn) {
  try {
    fn();
  } catch (const BackendError &e) {
    return e.what();
  }
  return "<no error>";
}

std::string checkError(const json &config, const EntrySig &sig) {
  return errorOf([&] { checkConfig(config, sig); });
}

TEST(BatchDim, DimZeroOfEveryTensor) {
  ASSERT_TRUE(mlp().batch);
  EXPECT_EQ(mlp().batch->symbol, "batch");
  EXPECT_EQ(mlp().batch->hi, 512);
  EXPECT_EQ(anySize().batch->hi, 16);
}

TEST(BatchDim, NoneWhenTensorsDisagree) {
  EntrySig sig = mlp();
  // An output whose dim 0 is not the batch.
  sig.outputs.push_back(tensor("total", {fixed(10)}));
  EXPECT_FALSE(findBatchDim(sig.inputs, sig.outputs));
  // The batch dim inside another dim: rows cannot be split by concatenation.
  sig = mlp();
  sig.outputs[0].dims.push_back(Dim{"2 * batch", -1, 0, INT64_MAX, ""});
  EXPECT_FALSE(findBatchDim(sig.inputs, sig.outputs));
  // A range that does not start at 1: a single request could not run.
  sig = mlp();
  sig.inputs[0].dims[0].lo = sig.outputs[0].dims[0].lo = 8;
  EXPECT_FALSE(findBatchDim(sig.inputs, sig.outputs));
  // A static dim 0.
  sig = mlp();
  sig.inputs[0].dims[0] = sig.outputs[0].dims[0] = fixed(4);
  EXPECT_FALSE(findBatchDim(sig.inputs, sig.outputs));
}

// A config naming only the backend gets everything from the artifact.
TEST(Complete, EmptyConfigGetsTheEntry) {
  json config = {{"name", "mlp"}, {"backend", "aotc"}};
  EXPECT_TRUE(completeConfig(config, mlp()));
  EXPECT_EQ(config["max_batch_size"], 512);
  EXPECT_TRUE(config.contains("dynamic_batching"));
  EXPECT_EQ(config["input"], json::parse(R"([{"name":"x","data_type":"TYPE_FP32","dims":[784]}])"));
  EXPECT_EQ(config["output"],
            json::parse(R"([{"name":"logits","data_type":"TYPE_FP32","dims":[10]}])"));
  EXPECT_EQ(checkConfig(config, mlp()), 512);
  // Completing again changes nothing.
  EXPECT_FALSE(completeConfig(config, mlp()));
}

TEST(Complete, DynamicDimsAreMinusOne) {
  json config = json::object();
  completeConfig(config, anySize());
  EXPECT_EQ(config["input"][0]["dims"], json::parse("[3, -1, -1]"));
  EXPECT_EQ(checkConfig(config, anySize()), 16);
}

// A config that lists tensors chose its batching: no max_batch_size is added, and with 0 the
// dims include the batch dim.
TEST(Complete, ListedTensorsKeepTheirBatching) {
  json config = json::parse(R"({"max_batch_size": 0, "input": [{"name": "x"}]})");
  EXPECT_TRUE(completeConfig(config, mlp()));
  EXPECT_EQ(config["max_batch_size"], 0);
  EXPECT_FALSE(config.contains("dynamic_batching"));
  EXPECT_EQ(config["input"][0]["dims"], json::parse("[-1, 784]"));
  EXPECT_EQ(config["output"][0]["dims"], json::parse("[-1, 10]"));
  EXPECT_EQ(checkConfig(config, mlp()), 0);
}

// The scheduler is the config's when it names one.
TEST(Complete, SchedulerIsKept) {
  json config = json::parse(R"({"sequence_batching": {}})");
  completeConfig(config, mlp());
  EXPECT_EQ(config["max_batch_size"], 512);
  EXPECT_FALSE(config.contains("dynamic_batching"));
}

// The server writes 64-bit integers as strings.
TEST(Check, DimsAsStrings) {
  json config = json::parse(R"({"max_batch_size": "8",
    "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": ["784"]}],
    "output": [{"name": "logits", "data_type": "TYPE_FP32", "dims": ["10"]}]})");
  EXPECT_EQ(checkConfig(config, mlp()), 8);
}

// A fixed size within a dynamic dim's range narrows what Triton accepts; outside, it is an error.
TEST(Check, FixedSizeForADynamicDim) {
  json config = json::parse(R"({"max_batch_size": 4,
    "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [3, 64, -1]}]})");
  EXPECT_EQ(checkConfig(config, anySize()), 4);
  config["input"][0]["dims"] = json::parse("[3, 128, -1]");
  EXPECT_EQ(checkError(config, anySize()),
            "config.pbtxt input \"x\" has dims [3, 128, -1], but entry \"forward_any_size\" of "
            "resnet/1/model.so has [3, -1, -1] (the batch dim left out: max_batch_size is 4)");
}

TEST(Check, Mismatches) {
  auto config = [](const char *text) { return json::parse(text); };
  EXPECT_EQ(checkError(config(R"({"max_batch_size": 8, "input": [
                {"name": "x", "data_type": "TYPE_FP32", "dims": [700]}]})"),
                       mlp()),
            "config.pbtxt input \"x\" has dims [700], but entry \"forward\" of mlp/1/model.so has "
            "[784] (the batch dim left out: max_batch_size is 8)");
  EXPECT_EQ(checkError(config(R"({"input": [
                {"name": "x", "data_type": "TYPE_FP32", "dims": [784]}]})"),
                       mlp()),
            "config.pbtxt input \"x\" has dims [784], but entry \"forward\" of mlp/1/model.so has "
            "[-1, 784] (with max_batch_size 0 the dims include the batch dim)");
  EXPECT_EQ(checkError(config(R"({"max_batch_size": 8, "input": [
                {"name": "x", "data_type": "TYPE_FP16", "dims": [784]}]})"),
                       mlp()),
            "config.pbtxt input \"x\" has data_type TYPE_FP16, but entry \"forward\" of "
            "mlp/1/model.so has TYPE_FP32");
  EXPECT_EQ(checkError(config(R"({"max_batch_size": 8, "input": [
                {"name": "image", "data_type": "TYPE_FP32", "dims": [784]}]})"),
                       mlp()),
            "config.pbtxt input \"image\" is not an input of entry \"forward\" of mlp/1/model.so "
            "(its inputs: x)");
  EXPECT_EQ(checkError(config(R"({"max_batch_size": 8, "output": [
                {"name": "logits", "data_type": "TYPE_FP32", "dims": [10]}]})"),
                       mlp()),
            "config.pbtxt lists no input \"x\", which entry \"forward\" of mlp/1/model.so takes "
            "(TYPE_FP32 [784])");
  EXPECT_EQ(checkError(config(R"({"max_batch_size": 1024})"), mlp()),
            "config.pbtxt sets max_batch_size 1024, but the batch dim \"batch\" of entry "
            "\"forward\" of mlp/1/model.so ranges up to 512");
  EXPECT_EQ(checkError(config(R"({"max_batch_size": -1})"), mlp()),
            "config.pbtxt: max_batch_size -1 is negative");
  EXPECT_EQ(checkError(config(R"({"max_batch_size": 8, "input": [{"name": "x",
                "data_type": "TYPE_FP32", "dims": [784], "reshape": {"shape": [28, 28]}}]})"),
                       mlp()),
            "config.pbtxt input \"x\": reshape is not supported by the aotc backend (export the "
            "model with the shape to serve)");
  EXPECT_EQ(checkError(config(R"({"max_batch_size": 8, "input": [
                {"name": "x", "data_type": "TYPE_FP32", "dims": ["many"]}]})"),
                       mlp()),
            "config.pbtxt: input \"x\" dims is not an integer: \"many\"");
  EntrySig noBatch = mlp();
  noBatch.batch.reset();
  EXPECT_EQ(checkError(config(R"({"max_batch_size": 8})"), noBatch),
            "config.pbtxt sets max_batch_size 8, but entry \"forward\" of mlp/1/model.so has no "
            "batch dim (dim 0 of every input and output, one dynamic dim whose range starts at "
            "1): set max_batch_size: 0 and give the full dims");
}

// Outputs may be a subset: Triton then never asks for the others.
TEST(Check, OutputsMayBeASubset) {
  EntrySig sig = mlp();
  sig.outputs.push_back(tensor("hidden", {dynamic("batch", 1, 512), fixed(1024)}, 1));
  json config = json::parse(R"({"max_batch_size": 8,
    "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [784]}],
    "output": [{"name": "hidden", "data_type": "TYPE_FP32", "dims": [1024]}]})");
  EXPECT_EQ(checkConfig(config, sig), 8);
}

TEST(Parameters, EntryAndThreads) {
  BackendParams p = readParameters(json::parse(R"({"parameters": {
    "entry": {"string_value": "decode"}, "num_threads": {"string_value": "4"},
    "cuda_graphs": {"string_value": "16"},
    "emulated_cuda_device": {"string_value": "/x/libaotc_cuda_emu.so"}}})"));
  EXPECT_EQ(p.entry, "decode");
  EXPECT_EQ(p.numThreads, 4);
  EXPECT_EQ(p.cudaGraphs, 16u);
  EXPECT_EQ(p.emulatedCudaDevice, "/x/libaotc_cuda_emu.so");
  p = readParameters(json::object());
  EXPECT_EQ(p.entry, "");
  EXPECT_EQ(p.numThreads, 0);
  EXPECT_EQ(p.cudaGraphs, 0u);
  EXPECT_EQ(p.emulatedCudaDevice, "");
}

TEST(Parameters, BadOnesAreRefused) {
  auto error = [](const char *text) { return errorOf([&] { readParameters(json::parse(text)); }); };
  EXPECT_EQ(error(R"({"parameters": {"entree": {"string_value": "decode"}}})"),
            "config.pbtxt parameter \"entree\" is unknown to the aotc backend (it reads: entry, "
            "num_threads, cuda_graphs, emulated_cuda_device)");
  EXPECT_EQ(error(R"({"parameters": {"entry": {"string_value": ""}}})"),
            "config.pbtxt parameter \"entry\" needs a string_value naming an entry");
  EXPECT_EQ(error(R"({"parameters": {"num_threads": {"string_value": "four"}}})"),
            "config.pbtxt parameter \"num_threads\" is \"four\"; expected 0 (one per CPU) to 1024");
  EXPECT_EQ(error(R"({"parameters": {"num_threads": {"string_value": "-2"}}})"),
            "config.pbtxt parameter \"num_threads\" is \"-2\"; expected 0 (one per CPU) to 1024");
  EXPECT_EQ(error(R"({"parameters": {"cuda_graphs": {"string_value": "5000"}}})"),
            "config.pbtxt parameter \"cuda_graphs\" is \"5000\"; expected 0 (none) to 4096 CUDA "
            "graphs per concurrent run");
  EXPECT_EQ(error(R"({"parameters": {"cuda_graphs": {"string_value": "8 "}}})"),
            "config.pbtxt parameter \"cuda_graphs\" is \"8 \"; expected 0 (none) to 4096 CUDA "
            "graphs per concurrent run");
  EXPECT_EQ(error(R"({"parameters": {"emulated_cuda_device": {"string_value": ""}}})"),
            "config.pbtxt parameter \"emulated_cuda_device\" needs a string_value naming a "
            "library");
}

TEST(InstanceGroups, KindModelIsRefused) {
  EXPECT_EQ(errorOf([] {
              checkInstanceGroups(json::parse(R"({"instance_group": [{"kind": "KIND_CPU"},
                                                  {"kind": "KIND_MODEL"}]})"),
                                  BackendParams{});
            }),
            "config.pbtxt instance_group KIND_MODEL: the aotc backend places its models itself; "
            "use kind: KIND_CPU or KIND_GPU");
}

TEST(InstanceGroups, TheEntryIsReadWhereTheFirstInstanceRuns) {
  auto first = [](const char *text, BackendParams params = {}) {
    return placementLabel(checkInstanceGroups(json::parse(text), params));
  };
  EXPECT_EQ(first(R"({})"), "cpu");
  EXPECT_EQ(first(R"({"instance_group": [{"kind": "KIND_CPU", "count": 4}]})"), "cpu");
  EXPECT_EQ(first(R"({"instance_group": [{"kind": "KIND_GPU"}, {"kind": "KIND_CPU"}]})"), "cuda:0");
  EXPECT_EQ(first(R"({"instance_group": [{"kind": "KIND_GPU", "gpus": [2, 3]}]})"), "cuda:2");
  EXPECT_EQ(first(R"({"instance_group": [{"kind": "KIND_CPU"}, {"kind": "KIND_GPU"}]})"), "cpu");
  // The emulated device is cuda:0, whatever the kinds.
  BackendParams emulated;
  emulated.emulatedCudaDevice = "libaotc_cuda_emu.so";
  EXPECT_EQ(first(R"({"instance_group": [{"kind": "KIND_CPU"}]})", emulated), "cuda:0");
}

TEST(Types, EveryAotcDtypeHasATritonType) {
  for (int32_t d = AOTC_DTYPE_F32; d <= AOTC_DTYPE_BOOL; ++d) {
    EXPECT_NE(configTypeName(d), nullptr) << d;
    EXPECT_NE(tritonType(d), TRITONSERVER_TYPE_INVALID) << d;
    EXPECT_GT(elementSize(d), 0u) << d;
  }
  EXPECT_EQ(wireTypeName(tritonType(AOTC_DTYPE_BF16)), "BF16");
  EXPECT_EQ(configTypeName(0), nullptr);
}

} // namespace
