// End-to-end tests of aotc_server: a real artifact (examples/mlp, batch 1..8) served on a free
// loopback port, driven by httplib clients and raw sockets, every answer checked bitwise against
// the same .so run in-process; bad and hostile requests, slow clients, SIGTERM mid-load, and a
// clean shutdown after each test.
#include "ServerHarness.h"

#include <atomic>
#include <mutex>

namespace {

using namespace aotc_server_test;

class ServerTest : public ::testing::Test {
protected:
  void SetUp() override { ASSERT_EQ(server_.start(extraOptions()), ""); }

  void TearDown() override {
    int status = server_.stop();
    EXPECT_NE(status, -1) << "aotc_server did not stop within 20 s of SIGTERM";
    EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "aotc_server did not exit cleanly (wait status " << status << ")";
  }

  virtual std::vector<std::string> extraOptions() const { return {}; }

  std::unique_ptr<httplib::Client> client() const { return server_.client(); }

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

  ServerProcess server_;
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

// A 0.2 MB request nesting 100,000 arrays in "outputs", "shape" or "data" killed the server with
// SIGSEGV (nlohmann's recursive parse and dump). Now each gets 400, and the server goes on.
TEST_F(ServerTest, DeeplyNestedJsonGets400) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::mt19937 rng(3);
  std::vector<float> x = randomInput(1, rng);
  for (const char *where : {"outputs", "shape", "data"}) {
    json body = json::parse(inferBody(x, 1, "deep"));
    if (std::string(where) == "outputs")
      body["outputs"] = "@";
    else
      body["inputs"][0][where] = "@";
    std::string text = body.dump();
    text.replace(text.find("\"@\""), 3, deep);
    std::string message = error(post("/v2/models/mlp/infer", text), 400);
    EXPECT_LT(message.size(), 200u) << where;
    ASSERT_TRUE(server_.alive()) << "aotc_server died on deep \"" << where << "\"";
  }
  EXPECT_EQ(mismatch(post("/v2/models/mlp/infer", inferBody(x, 1, "ok")), "mlp", "ok",
                     referenceLogits(x, 1), 1),
            "");
}

// --max-body-bytes held only for bodies with a Content-Length: a chunked one was read whole (a
// 300 MB body got 200 and 850 MB of RSS). A chunked body 32 times the limit now gets 413 once the
// limit is passed, before the client has sent it all; one within the limit is served.
TEST_F(ServerTest, ChunkedBodiesAreBoundedByMaxBodyBytes) {
  size_t sent = 0;
  std::string response = chunkedFlood(server_.port(), 32 * kMaxBody, &sent);
  EXPECT_EQ(statusOf(response), 413) << response.substr(0, 300);
  EXPECT_NE(bodyOf(response).find("--max-body-bytes"), std::string::npos) << response;
  EXPECT_LT(sent, 32 * kMaxBody) << "the server read the whole oversized body";

  // Within the limit, chunked framing is served like any other.
  std::mt19937 rng(5);
  std::vector<float> x = randomInput(4, rng);
  std::string body = inferBody(x, 4, "chunked");
  auto c = client();
  auto result = c->Post(
      "/v2/models/mlp/infer",
      [&](size_t offset, httplib::DataSink &sink) {
        size_t n = std::min<size_t>(1000, body.size() - offset);
        sink.write(body.data() + offset, n);
        if (offset + n == body.size())
          sink.done();
        return true;
      },
      "application/json");
  EXPECT_EQ(mismatch(result, "mlp", "chunked", referenceLogits(x, 4), 4), "");
}

// Slow clients, one byte every 2 s, as many as twice the workers (--threads 8): they held every
// worker and no other request was answered, ever. Now they hold connection threads only.
TEST_F(ServerTest, SlowClientsDoNotStarveOthers) {
  constexpr int kSlow = 16;
  std::vector<int> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(connectLoopback(server_.port()));
    ASSERT_GE(slow.back(), 0);
  }
  std::atomic<bool> stop{false};
  std::thread dripper([&] {
    std::string request = rawPost("/v2/models/mlp/infer", std::string(1000, ' '));
    for (size_t i = 0; i < request.size() && !stop; ++i) {
      for (int fd : slow)
        send(fd, &request[i], 1, MSG_NOSIGNAL);
      for (int t = 0; t < 20 && !stop; ++t)
        std::this_thread::sleep_for(100ms);
    }
  });
  std::this_thread::sleep_for(1s); // every slow connection accepted and reading

  std::mt19937 rng(9);
  auto start = Clock::now();
  for (int i = 0; i < 8; ++i) {
    std::vector<float> x = randomInput(2, rng);
    auto c = server_.client(/*readTimeout=*/8);
    std::string id = "fast-" + std::to_string(i);
    std::string why =
        mismatch(c->Post("/v2/models/mlp/infer", inferBody(x, 2, id), "application/json"), "mlp",
                 id, referenceLogits(x, 2), 2);
    ASSERT_EQ(why, "") << "request " << i << " while " << kSlow << " clients trickle";
  }
  EXPECT_LT(Clock::now() - start, 5s);
  stop = true;
  dripper.join();
  for (int fd : slow)
    close(fd);
}

// SIGTERM while requests are queued: every request sent in full before the signal is answered.
// Connections accepted but not yet served were closed unread (a reset), and the listen queue was
// closed under those not yet accepted. 64 clients on 8 workers, each request slowed by 0.3 MB of
// "parameters" so that most still wait at the signal; three rounds, each a fresh server.
TEST(ServerStop, SigtermAnswersEveryRequestSentBeforeIt) {
  constexpr int kClients = 64;
  std::mt19937 rng(13);
  std::string padding = ", \"parameters\": {\"padding\": [" + std::string(300000, '1') + "]}}";
  for (size_t i = 1; i + 1 < 300000; i += 2)
    padding[padding.find('[') + 1 + i] = ',';
  for (int round = 0; round < 3; ++round) {
    ServerProcess server;
    ASSERT_EQ(server.start(), "");
    std::vector<int> fds;
    std::vector<std::vector<float>> inputs;
    for (int i = 0; i < kClients; ++i) {
      inputs.push_back(randomInput(8, rng));
      fds.push_back(connectLoopback(server.port()));
      ASSERT_GE(fds.back(), 0);
    }
    for (int i = 0; i < kClients; ++i) {
      std::string body = inferBody(inputs[i], 8, std::to_string(i));
      body.replace(body.size() - 1, 1, padding);
      ASSERT_TRUE(sendAll(fds[i], rawPost("/v2/models/mlp/infer", body)));
    }
    int status = server.stop();
    int answered = 0;
    std::string firstFailure;
    for (int i = 0; i < kClients; ++i) {
      bool reset = false;
      std::string response = readUntilClosed(fds[i], 10s, &reset);
      close(fds[i]);
      std::string why = answerMismatch(statusOf(response), bodyOf(response), "mlp",
                                       std::to_string(i), referenceLogits(inputs[i], 8), 8);
      if (why.empty())
        ++answered;
      else if (firstFailure.empty())
        firstFailure = "client " + std::to_string(i) + (reset ? " (reset): " : ": ") + why;
    }
    EXPECT_EQ(answered, kClients) << "round " << round << ": " << firstFailure;
    EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "round " << round << ": wait status " << status;
  }
}

/// A server with short timeouts: a request must arrive within 2 s, the next one within 1 s.
class ServerTimeoutTest : public ServerTest {
protected:
  std::vector<std::string> extraOptions() const override {
    return {"--read-timeout", "2", "--idle-timeout", "1"};
  }
};

// A request trickling in gets 408 at --read-timeout and its connection closes; a connection
// that sends nothing is closed at --idle-timeout.
TEST_F(ServerTimeoutTest, SlowRequestsAndIdleConnectionsAreCut) {
  int trickle = connectLoopback(server_.port());
  int idle = connectLoopback(server_.port());
  ASSERT_GE(trickle, 0);
  ASSERT_GE(idle, 0);
  auto start = Clock::now();
  std::string request = rawPost("/v2/models/mlp/infer", "{}");
  std::string response;
  std::thread reader([&] { response = readUntilClosed(trickle, 10s); });
  for (size_t i = 0; i < request.size() && Clock::now() - start < 5s; ++i) {
    if (send(trickle, &request[i], 1, MSG_NOSIGNAL) != 1)
      break;
    std::this_thread::sleep_for(250ms);
  }
  reader.join();
  auto trickleTime = Clock::now() - start;
  EXPECT_EQ(statusOf(response), 408) << response;
  EXPECT_NE(bodyOf(response).find("--read-timeout"), std::string::npos) << response;
  EXPECT_LT(trickleTime, 4s);
  EXPECT_EQ(readUntilClosed(idle, 5s), "");
  EXPECT_LT(Clock::now() - start, 5s);
  close(trickle);
  close(idle);
}

// The connection and timeout flags are checked like the others: one line naming the flag and
// what it expects, the usage, exit 2, before anything is loaded.
TEST(ServerFlags, BadValuesAreOneLineErrors) {
  struct Case {
    std::string args, first;
  };
  const Case cases[] = {
      {"--read-timeout 0", "aotc_server: --read-timeout expects an integer >= 1, got \"0\""},
      {"--write-timeout -5", "aotc_server: --write-timeout expects an integer >= 1, got \"-5\""},
      {"--idle-timeout soon", "aotc_server: --idle-timeout expects an integer >= 1, got \"soon\""},
      {"--max-connections 0", "aotc_server: --max-connections expects an integer >= 1, got \"0\""},
      {"--read-timeout", "aotc_server: --read-timeout needs a value"},
  };
  for (const Case &c : cases) {
    std::string command =
        std::string(AOTC_SERVER) + " --model mlp=" + AOTC_SERVER_MLP + " " + c.args + " 2>&1";
    FILE *p = popen(command.c_str(), "r");
    ASSERT_TRUE(p) << command;
    std::string out;
    char buf[512];
    while (size_t n = fread(buf, 1, sizeof buf, p))
      out.append(buf, n);
    int status = pclose(p);
    ASSERT_TRUE(WIFEXITED(status)) << command;
    EXPECT_EQ(WEXITSTATUS(status), 2) << command;
    EXPECT_EQ(out.substr(0, out.find('\n')), c.first) << command;
    EXPECT_NE(out.find("\nusage: aotc_server --model NAME=PATH.so"), std::string::npos) << out;
  }
}

} // namespace
