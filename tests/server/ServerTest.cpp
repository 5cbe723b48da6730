// End-to-end tests of aotc_server: a real artifact (examples/mlp, batch 1..8) served on a free
// loopback port, driven by httplib clients, every answer checked bitwise against the same .so
// run in-process; bad requests, and a clean shutdown after each test.
#include <aotc/runtime.hpp>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

extern char **environ;

namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr int64_t kFeatures = 784, kClasses = 10, kMaxBatch = 8;
constexpr size_t kMaxBody = 1000000;

/// The artifact run in-process on one thread: the reference every served answer must equal.
aotc::rt::Model &reference() {
  static aotc::rt::Library library(AOTC_SERVER_MLP);
  static aotc::rt::Model model = [] {
    aotc_model_options options;
    library.api().model_options_init(&options);
    options.num_threads = 1;
    return aotc::rt::Model(library, &options);
  }();
  return model;
}

std::vector<float> referenceLogits(const std::vector<float> &x, int64_t batch) {
  std::vector<aotc::rt::OwnedTensor> out =
      reference().run(0, {aotc::rt::tensor(x.data(), AOTC_DTYPE_F32, {batch, kFeatures})});
  return std::vector<float>(out[0].data<float>(), out[0].data<float>() + out[0].numel());
}

/// The runtime's own message for an input it refuses.
std::string runtimeMessage(int32_t dtype, const std::vector<int64_t> &shape) {
  int64_t numel = 1;
  for (int64_t d : shape)
    numel *= d;
  std::vector<unsigned char> bytes(static_cast<size_t>(numel) * 8);
  try {
    reference().run(0, {aotc::rt::tensor(bytes.data(), dtype, shape)});
  } catch (const aotc::rt::Error &e) {
    return e.what();
  }
  return "(the runtime accepted it)";
}

std::vector<float> randomInput(int64_t batch, std::mt19937 &rng) {
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(batch * kFeatures));
  for (float &v : x)
    v = normal(rng);
  return x;
}

/// One infer request for `x`; `nested` sends "data" as one array per row.
std::string inferBody(const std::vector<float> &x, int64_t batch, const std::string &id,
                      bool nested = false, const std::string &datatype = "FP32") {
  json data = json::array();
  for (int64_t b = 0; b < batch; ++b) {
    json row = json::array();
    json &target = nested ? row : data;
    for (int64_t f = 0; f < kFeatures; ++f)
      target.push_back(x[static_cast<size_t>(b * kFeatures + f)]);
    if (nested)
      data.push_back(std::move(row));
  }
  json input = {{"name", "x"},
                {"shape", {batch, kFeatures}},
                {"datatype", datatype},
                {"data", std::move(data)}};
  json body = {{"id", id}, {"inputs", json::array({std::move(input)})}};
  return body.dump();
}

std::string mismatchOrThrow(const httplib::Result &result, const std::string &model,
                            const std::string &id, const std::vector<float> &want, int64_t batch);

std::string exact(float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

/// Why a served answer differs from the reference, or "" when it is bitwise equal.
std::string mismatch(const httplib::Result &result, const std::string &model, const std::string &id,
                     const std::vector<float> &want, int64_t batch) {
  try {
    return mismatchOrThrow(result, model, id, want, batch);
  } catch (const std::exception &e) {
    return std::string("unreadable answer: ") + e.what();
  }
}

std::string mismatchOrThrow(const httplib::Result &result, const std::string &model,
                            const std::string &id, const std::vector<float> &want, int64_t batch) {
  if (!result)
    return "no response: " + httplib::to_string(result.error());
  if (result->status != 200)
    return "status " + std::to_string(result->status) + ": " + result->body;
  json answer = json::parse(result->body, nullptr, false);
  if (answer.is_discarded() || answer.value("model_name", "") != model ||
      answer.value("id", "") != id || !answer.contains("outputs") || answer["outputs"].size() != 1)
    return "bad answer envelope: " + result->body.substr(0, 200);
  json out = answer["outputs"][0];
  if (out.value("name", "") != "logits" || out.value("datatype", "") != "FP32" ||
      out["shape"] != json{batch, kClasses} || !out["data"].is_array() ||
      out["data"].size() != want.size())
    return "bad output header: " + out.dump().substr(0, 200);
  for (size_t i = 0; i < want.size(); ++i) {
    if (!out["data"][i].is_number())
      return "logits[" + std::to_string(i) + "] is " + out["data"][i].dump();
    float got = static_cast<float>(out["data"][i].get<double>());
    if (std::memcmp(&got, &want[i], sizeof got) != 0)
      return "logits[" + std::to_string(i) + "] = " + exact(got) + ", want " + exact(want[i]);
  }
  return "";
}

/// aotc_server as a child process on a port it picks (--port 0), read from its first line.
class ServerTest : public ::testing::Test {
protected:
  void SetUp() override {
    int out[2];
    ASSERT_EQ(pipe(out), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    std::string mlp = std::string("mlp=") + AOTC_SERVER_MLP;
    std::string other = std::string("other=") + AOTC_SERVER_MLP;
    std::string maxBody = std::to_string(kMaxBody);
    std::vector<const char *> argv = {AOTC_SERVER,
                                      "--model",
                                      mlp.c_str(),
                                      "--model",
                                      other.c_str(),
                                      "--port",
                                      "0",
                                      "--threads",
                                      "8",
                                      "--model-threads",
                                      "2",
                                      "--max-body-bytes",
                                      maxBody.c_str(),
                                      nullptr};
    int spawned = posix_spawn(&pid_, AOTC_SERVER, &actions, nullptr,
                              const_cast<char *const *>(argv.data()), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    ASSERT_EQ(spawned, 0) << "cannot start " << AOTC_SERVER;

    std::string line;
    auto deadline = std::chrono::steady_clock::now() + 60s;
    char c;
    while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd fd = {out[0], POLLIN, 0};
      if (poll(&fd, 1, 100) > 0) {
        if (read(out[0], &c, 1) != 1)
          break;
        line += c;
      }
    }
    close(out[0]);
    size_t colon = line.find("127.0.0.1:");
    ASSERT_NE(colon, std::string::npos) << "aotc_server did not report its port: " << line;
    port_ = std::stoi(line.substr(colon + 10));
    ASSERT_NE(line.find("models: mlp, mlp.forward, other, other.forward"), std::string::npos)
        << line;
  }

  void TearDown() override {
    if (pid_ <= 0)
      return;
    kill(pid_, SIGTERM);
    int status = 0;
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        ADD_FAILURE() << "aotc_server did not stop within 20 s of SIGTERM";
        return;
      }
      std::this_thread::sleep_for(10ms);
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "aotc_server did not exit cleanly (wait status " << status << ")";
  }

  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_connection_timeout(10);
    c->set_read_timeout(60);
    c->set_write_timeout(60);
    return c;
  }

  httplib::Result post(const std::string &path, const std::string &body) const {
    return client()->Post(path.c_str(), body, "application/json");
  }

  /// Expects `status` and {"error": ...}; returns the message.
  static std::string error(const httplib::Result &result, int status) {
    if (!result) {
      ADD_FAILURE() << "no response: " << httplib::to_string(result.error());
      return "";
    }
    EXPECT_EQ(result->status, status) << result->body;
    json body = json::parse(result->body, nullptr, false);
    EXPECT_TRUE(body.is_object() && body.contains("error") && body["error"].is_string())
        << result->body;
    return body.is_object() ? body.value("error", "") : "";
  }

  pid_t pid_ = 0;
  int port_ = 0;
};

TEST_F(ServerTest, HealthAndMetadata) {
  auto c = client();
  for (const char *path : {"/v2/health/live", "/v2/health/ready", "/v2/models/mlp/ready",
                           "/v2/models/mlp.forward/ready", "/v2/models/other/ready"}) {
    auto r = c->Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path << ": " << r->body;
  }
  auto server = c->Get("/v2");
  ASSERT_TRUE(server);
  EXPECT_EQ(json::parse(server->body).value("name", ""), "aotc_server");

  auto metadata = c->Get("/v2/models/mlp");
  ASSERT_TRUE(metadata);
  EXPECT_EQ(json::parse(metadata->body), json::parse(R"({"name": "mlp", "platform": "aotc",
              "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 784]}],
              "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, 10]}]})"));
  auto entry = c->Get("/v2/models/mlp.forward");
  ASSERT_TRUE(entry);
  EXPECT_EQ(json::parse(entry->body).value("name", ""), "mlp.forward");
}

// The load test: 16 clients for 3 s with random batches, each answer equal to the reference.
TEST_F(ServerTest, ConcurrentRequestsMatchTheReferenceBitwise) {
  constexpr int kClients = 16;
  const char *models[] = {"mlp", "mlp.forward", "other"};
  std::atomic<int> answered{0}, failed{0};
  std::mutex firstFailureLock;
  std::string firstFailure;
  auto deadline = std::chrono::steady_clock::now() + 3s;
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      std::mt19937 rng(1234 + t);
      auto c = client();
      c->set_keep_alive(true);
      for (int n = 0; std::chrono::steady_clock::now() < deadline || n == 0; ++n) {
        int64_t batch = std::uniform_int_distribution<int64_t>(1, kMaxBatch)(rng);
        std::vector<float> x = randomInput(batch, rng);
        std::string model = models[(t + n) % 3];
        std::string id = std::to_string(t) + "-" + std::to_string(n);
        auto result = c->Post(("/v2/models/" + model + "/infer").c_str(),
                              inferBody(x, batch, id, /*nested=*/n % 2 == 1), "application/json");
        std::string why = mismatch(result, model, id, referenceLogits(x, batch), batch);
        ++answered;
        if (!why.empty()) {
          ++failed;
          std::lock_guard<std::mutex> lock(firstFailureLock);
          if (firstFailure.empty())
            firstFailure = "request " + id + " to " + model + ": " + why;
        }
      }
    });
  }
  for (std::thread &t : clients)
    t.join();
  EXPECT_EQ(failed.load(), 0) << failed.load() << " of " << answered.load()
                              << " answers wrong; first: " << firstFailure;
  EXPECT_GE(answered.load(), kClients);
  std::printf("%d requests answered by 16 clients in 3 s\n", answered.load());
}

TEST_F(ServerTest, RequestedOutputsAndEmptyId) {
  std::mt19937 rng(7);
  std::vector<float> x = randomInput(3, rng);
  json body = json::parse(inferBody(x, 3, "ignored"));
  body.erase("id");
  body["outputs"] = {{{"name", "logits"}}};
  auto r = post("/v2/models/mlp/infer", body.dump());
  EXPECT_EQ(mismatch(r, "mlp", "", referenceLogits(x, 3), 3), "");

  body["outputs"] = {{{"name", "probabilities"}}};
  EXPECT_NE(error(post("/v2/models/mlp/infer", body.dump()), 400).find("probabilities"),
            std::string::npos);
}

TEST_F(ServerTest, BadRequestsGetTheRuntimesMessage) {
  std::mt19937 rng(11);
  std::vector<float> x = randomInput(9, rng);

  // Dims out of range, a wrong static dim, a wrong dtype: the runtime's checks answer.
  EXPECT_EQ(error(post("/v2/models/mlp/infer", inferBody(x, 9, "b9")), 400),
            runtimeMessage(AOTC_DTYPE_F32, {9, kFeatures}));
  EXPECT_EQ(runtimeMessage(AOTC_DTYPE_F32, {9, kFeatures}),
            "entry \"forward\": input \"x\" dim 0 (batch) = 9 is outside 1..8");
  json wrongDim = json::parse(inferBody(x, 2, "d"));
  wrongDim["inputs"][0]["shape"] = {4, 392};
  EXPECT_EQ(error(post("/v2/models/mlp/infer", wrongDim.dump()), 400),
            runtimeMessage(AOTC_DTYPE_F32, {4, 392}));
  json wrongRank = json::parse(inferBody(x, 2, "r"));
  wrongRank["inputs"][0]["shape"] = {2, 28, 28};
  EXPECT_EQ(error(post("/v2/models/mlp/infer", wrongRank.dump()), 400),
            runtimeMessage(AOTC_DTYPE_F32, {2, 28, 28}));
  json wrongType = json::parse(inferBody(x, 2, "t"));
  wrongType["inputs"][0]["datatype"] = "INT64";
  wrongType["inputs"][0]["data"] = std::vector<int64_t>(2 * kFeatures, 3);
  EXPECT_EQ(error(post("/v2/models/mlp/infer", wrongType.dump()), 400),
            runtimeMessage(AOTC_DTYPE_I64, {2, kFeatures}));

  // What the server refuses before the runtime sees it.
  EXPECT_NE(error(post("/v2/models/mlp/infer", R"({"inputs": [{"name": "x", )"), 400)
                .find("malformed JSON"),
            std::string::npos);
  json tooBig = json::parse(inferBody(x, 1, "o"));
  tooBig["inputs"][0]["data"][0] = 1e300;
  std::string beyondDouble = tooBig.dump();
  beyondDouble.replace(beyondDouble.find("1e+300"), 6, "1e+400");
  EXPECT_NE(error(post("/v2/models/mlp/infer", beyondDouble), 400).find("malformed JSON"),
            std::string::npos);
  json overflow = json::parse(inferBody(x, 1, "f"));
  overflow["inputs"][0]["shape"] = {int64_t{1} << 32, int64_t{1} << 32, 8};
  EXPECT_NE(error(post("/v2/models/mlp/infer", overflow.dump()), 400).find("64-bit"),
            std::string::npos);
  json shortData = json::parse(inferBody(x, 2, "s"));
  shortData["inputs"][0]["shape"] = {3, kFeatures};
  EXPECT_EQ(error(post("/v2/models/mlp/infer", shortData.dump()), 400),
            "input \"x\": \"data\" holds 1568 values, its shape needs 2352");
  json badValue = json::parse(inferBody(x, 1, "v"));
  badValue["inputs"][0]["data"][5] = "five";
  EXPECT_EQ(error(post("/v2/models/mlp/infer", badValue.dump()), 400),
            "input \"x\": data[5] = \"five\" is not a valid FP32 value");
  json unknownType = json::parse(inferBody(x, 1, "u"));
  unknownType["inputs"][0]["datatype"] = "BYTES";
  EXPECT_NE(error(post("/v2/models/mlp/infer", unknownType.dump()), 400).find("\"BYTES\""),
            std::string::npos);
  json renamed = json::parse(inferBody(x, 1, "n"));
  renamed["inputs"][0]["name"] = "image";
  EXPECT_EQ(error(post("/v2/models/mlp/infer", renamed.dump()), 400),
            "unknown input \"image\" (model \"mlp\" takes \"x\")");
  EXPECT_EQ(error(post("/v2/models/mlp/infer", R"({"inputs": []})"), 400),
            "missing input \"x\" (model \"mlp\" takes \"x\")");
  EXPECT_EQ(error(post("/v2/models/mlp/infer", R"([1, 2])"), 400),
            "the request body must be a JSON object");

  // Unknown models, wrong methods, a body over --max-body-bytes.
  EXPECT_NE(error(post("/v2/models/resnet/infer", inferBody(x, 1, "m")), 404).find("\"resnet\""),
            std::string::npos);
  auto c = client();
  error(c->Get("/v2/models/resnet"), 404);
  error(c->Get("/v2/models/mlp.backward/ready"), 404);
  error(c->Get("/v2/models/mlp/infer"), 405);
  error(c->Put("/v2/models/mlp/infer", inferBody(x, 1, "p"), "application/json"), 405);
  error(c->Post("/v2/models/mlp", "{}", "application/json"), 405);
  error(c->Delete("/v2/models/mlp"), 405);
  error(c->Get("/v1/models/mlp"), 404);
  std::string huge(kMaxBody + 1, ' ');
  EXPECT_NE(error(post("/v2/models/mlp/infer", huge), 413).find("--max-body-bytes"),
            std::string::npos);

  // Still serving after all of that.
  std::vector<float> ok = randomInput(8, rng);
  EXPECT_EQ(mismatch(post("/v2/models/mlp/infer", inferBody(ok, 8, "ok")), "mlp", "ok",
                     referenceLogits(ok, 8), 8),
            "");
}

} // namespace
