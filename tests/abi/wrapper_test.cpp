// aotc/runtime.hpp: the fake artifact loaded with dlopen through aotc::rt::Library, introspected
// and run with RAII outputs; errors arrive as aotc::rt::Error with the C message.
#include "aotc/runtime.hpp"

#include <gtest/gtest.h>

#include <random>
#include <thread>

namespace {

using aotc::rt::Error;
using aotc::rt::Library;
using aotc::rt::Model;
using aotc::rt::OwnedTensor;

const float kWeights[4] = {0.5f, -1.25f, 2.0f, 3.5f};

std::vector<float> randomInputs(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(0.25f, 2.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = std::bernoulli_distribution(0.5)(gen) ? dist(gen) : -dist(gen);
  return v;
}

TEST(RuntimeWrapper, LoadsIntrospectsAndRuns) {
  Library library(AOTC_FAKE_MODEL);
  Model model(library);
  EXPECT_EQ(model.entries(),
            (std::vector<std::string>{"forward", "pair", "blocks", "cover", "scaled", "lookup"}));
  const int32_t forward = model.entry("forward");
  EXPECT_EQ(forward, 0);
  auto inputs = model.inputs(forward);
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_STREQ(inputs[0].name, "x");
  EXPECT_EQ(inputs[0].dims[0].hi, 512);
  EXPECT_STREQ(inputs[0].dims[0].symbol, "batch");
  auto outputs = model.outputs(forward);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_STREQ(outputs[0].name, "y");

  for (int64_t batch : {1, 17, 512}) {
    std::vector<float> x = randomInputs(static_cast<size_t>(batch) * 4, 7);
    std::vector<OwnedTensor> y =
        model.run("forward", {aotc::rt::tensor(x.data(), AOTC_DTYPE_F32, {batch, 4})});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{batch, 4}));
    EXPECT_EQ(y[0].dtype(), AOTC_DTYPE_F32);
    ASSERT_EQ(y[0].numel(), batch * 4);
    for (int64_t i = 0; i < batch * 4; ++i) {
      const double want = double(x[size_t(i)]) * kWeights[i % 4] + 1.0;
      EXPECT_NEAR(y[0].data<float>()[i], want, 1e-5 * std::max(1.0, std::abs(want))) << i;
    }
  }
}

TEST(RuntimeWrapper, ErrorsCarryStatusAndMessage) {
  Library library(AOTC_FAKE_MODEL);
  Model model(library);
  std::vector<float> x(600 * 4, 1.0f);
  try {
    model.run(0, {aotc::rt::tensor(x.data(), AOTC_DTYPE_F32, {600, 4})});
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), AOTC_ERROR_INVALID_ARGUMENT);
    EXPECT_STREQ(e.what(), "entry \"forward\": input \"x\" dim 0 (batch) = 600 is outside 1..512");
  }
  try {
    model.entry("nope");
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), AOTC_ERROR_NOT_FOUND);
  }
  try {
    Library missing("/nonexistent/model.so");
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), AOTC_ERROR_RESOURCE);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.so"), std::string::npos);
  }
  // A shared library that is not an artifact: the message names the missing symbol.
  try {
    Library notArtifact("libm.so.6");
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), AOTC_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("aotc_abi_version"), std::string::npos);
  }
}

// Runtime-owned outputs stay valid after their model and Library object are gone.
TEST(RuntimeWrapper, OutputsOutliveModelAndLibrary) {
  std::vector<float> x = randomInputs(8, 3);
  std::vector<OwnedTensor> y;
  {
    Library library(AOTC_FAKE_MODEL);
    Model model(library);
    y = model.run(0, {aotc::rt::tensor(x.data(), AOTC_DTYPE_F32, {2, 4})});
  }
  ASSERT_EQ(y.size(), 1u);
  EXPECT_NE(y[0].raw().flags & AOTC_TENSOR_RUNTIME_OWNED, 0u);
  for (int i = 0; i < 8; ++i)
    EXPECT_NEAR(y[0].data<float>()[i], double(x[size_t(i)]) * kWeights[i % 4] + 1.0, 1e-5 * 8);
}

// Programs that link the artifact directly use the linked symbols.
TEST(RuntimeWrapper, LinkedApi) {
  Model model(aotc::rt::Api::linked());
  EXPECT_EQ(model.entries().size(), 6u);
  std::vector<float> u = randomInputs(16, 5), v = randomInputs(16, 6);
  std::vector<OwnedTensor> s =
      model.run("blocks", {aotc::rt::tensor(u.data(), AOTC_DTYPE_F32, {16}),
                           aotc::rt::tensor(v.data(), AOTC_DTYPE_F32, {16})});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].dtype(), AOTC_DTYPE_F64);
  ASSERT_EQ(s[0].numel(), 2);
  for (int j = 0; j < 2; ++j) {
    double want = 0;
    for (int i = 8 * j; i < 8 * j + 8; ++i)
      want += double(u[size_t(i)]) * v[size_t(i)];
    EXPECT_NEAR(s[0].data<double>()[j], want, 1e-12 * std::max(1.0, std::abs(want)));
  }
}

TEST(RuntimeWrapper, ConcurrentRunsThroughOneModel) {
  Library library(AOTC_FAKE_MODEL);
  aotc_model_options options;
  library.api().model_options_init(&options);
  options.num_threads = 3;
  Model model(library, &options);
  EXPECT_EQ(model.num_threads(), 3);
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < 200; ++iter) {
        const int64_t batch = 1 + (t * 131 + iter * 17) % 512;
        std::vector<float> x = randomInputs(size_t(batch) * 4, unsigned(t * 1000 + iter));
        std::vector<float> y(size_t(batch) * 4);
        std::vector<aotc_tensor> outs{aotc::rt::tensor(y.data(), AOTC_DTYPE_F32, {})};
        outs[0].size_bytes = y.size() * sizeof(float);
        model.run_into(0, {aotc::rt::tensor(x.data(), AOTC_DTYPE_F32, {batch, 4})}, outs);
        for (size_t i = 0; i < y.size(); ++i)
          if (std::abs(y[i] - (x[i] * kWeights[i % 4] + 1.0f)) > 1e-5f * 8)
            ++bad;
      }
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(bad.load(), 0);
}

} // namespace
