// The soak test of aotc_server: 64 clients on 127.0.0.1 for AOTC_SERVER_SOAK_SECONDS (10 by
// default, as ctest runs it; 60 for the release check), 48 sending good requests whose answers
// must equal the in-process reference bitwise, 16 sending hostile ones (deep JSON, oversized
// chunked and declared bodies, a byte at a time, malformed framing) that must get their refusal,
// while the server's RSS stays bounded and it stops cleanly afterwards.
#include "ServerHarness.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>

namespace {

using namespace aotc_server_test;

constexpr int kGoodClients = 48, kHostileClients = 16;
// Generous next to what this load needs (about 100 MB): a server that reads an oversized body
// whole, or builds a DOM of deep JSON, passes it within seconds.
constexpr long kMaxRssKiB = 512 * 1024;

enum Hostile { DeepJson, ChunkedFlood, Trickle, DeclaredTooLarge, BadFraming, kHostileKinds };
constexpr const char *kHostileNames[] = {"deep JSON", "chunked over the limit", "a byte at a time",
                                         "declared over the limit", "bad chunk framing"};

/// One hostile request of `kind`; "" when the server refused it as it should, else what happened.
std::string hostile(Hostile kind, int port) {
  switch (kind) {
  case DeepJson: {
    std::string deep = std::string(100000, '[') + std::string(100000, ']');
    std::string body =
        R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": )" + deep + "}]}";
    int fd = connectLoopback(port);
    sendAll(fd, rawPost("/v2/models/mlp/infer", body));
    std::string response = readUntilClosed(fd, 20s);
    close(fd);
    return statusOf(response) == 400 ? "" : "deep JSON got " + response.substr(0, 200);
  }
  case ChunkedFlood: {
    size_t sent = 0;
    std::string response = chunkedFlood(port, 32 * kMaxBody, &sent);
    if (statusOf(response) != 413)
      return "chunked flood got " + response.substr(0, 200);
    return sent < 32 * kMaxBody ? "" : "the chunked flood was read whole";
  }
  case Trickle: {
    int fd = connectLoopback(port);
    std::string request = rawPost("/v2/models/mlp/infer", std::string(100, ' '));
    std::string response;
    std::thread reader([&] { response = readUntilClosed(fd, 10s); });
    auto start = Clock::now();
    for (size_t i = 0; i < request.size() && Clock::now() - start < 5s; ++i) {
      if (send(fd, &request[i], 1, MSG_NOSIGNAL) != 1)
        break;
      std::this_thread::sleep_for(100ms);
    }
    reader.join();
    close(fd);
    return statusOf(response) == 408 ? "" : "a trickle got " + response.substr(0, 200);
  }
  case DeclaredTooLarge: {
    int fd = connectLoopback(port);
    sendAll(fd, "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Length: 300000000\r\n\r\n" +
                    std::string(65536, ' '));
    std::string response = readUntilClosed(fd, 20s);
    close(fd);
    return statusOf(response) == 413 ? "" : "a declared 300 MB got " + response.substr(0, 200);
  }
  case BadFraming: {
    int fd = connectLoopback(port);
    sendAll(fd, "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n");
    std::string response = readUntilClosed(fd, 20s);
    close(fd);
    return statusOf(response) == 400 ? "" : "bad framing got " + response.substr(0, 200);
  }
  default:
    return "no such kind";
  }
}

TEST(ServerSoak, GoodAnswersStayCorrectAmongHostileClients) {
  const char *env = std::getenv("AOTC_SERVER_SOAK_SECONDS");
  int seconds = env ? std::atoi(env) : 10;
  ASSERT_GT(seconds, 0) << "AOTC_SERVER_SOAK_SECONDS=" << env;
  ServerProcess server;
  ASSERT_EQ(server.start({"--read-timeout", "2", "--idle-timeout", "2"}), "");
  long startRss = server.rssKiB().first;

  std::atomic<bool> running{true};
  std::atomic<long> peakRss{0};
  std::thread sampler([&] {
    while (running) {
      peakRss = std::max(peakRss.load(), server.rssKiB().first);
      std::this_thread::sleep_for(100ms);
    }
  });

  std::atomic<int> good{0}, wrong{0}, refused{0}, unrefused{0};
  std::atomic<int> byKind[kHostileKinds] = {};
  std::mutex firstLock;
  std::string firstWrong, firstUnrefused;
  auto deadline = Clock::now() + std::chrono::seconds(seconds);
  std::vector<std::thread> clients;
  for (int t = 0; t < kGoodClients; ++t) {
    clients.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      auto c = server.client();
      c->set_keep_alive(true);
      for (int n = 0; Clock::now() < deadline; ++n) {
        int64_t batch = std::uniform_int_distribution<int64_t>(1, kMaxBatch)(rng);
        std::vector<float> x = randomInput(batch, rng);
        std::string id = std::to_string(t) + "-" + std::to_string(n);
        auto result = c->Post("/v2/models/mlp/infer", inferBody(x, batch, id, n % 2 == 1),
                              "application/json");
        std::string why = mismatch(result, "mlp", id, referenceLogits(x, batch), batch);
        ++(why.empty() ? good : wrong);
        if (!why.empty()) {
          std::lock_guard<std::mutex> lock(firstLock);
          if (firstWrong.empty())
            firstWrong = "request " + id + ": " + why;
        }
      }
    });
  }
  for (int t = 0; t < kHostileClients; ++t) {
    clients.emplace_back([&, t] {
      for (int n = 0; Clock::now() < deadline; ++n) {
        auto kind = static_cast<Hostile>((t + n) % kHostileKinds);
        std::string why = hostile(kind, server.port());
        ++byKind[kind];
        ++(why.empty() ? refused : unrefused);
        if (!why.empty()) {
          std::lock_guard<std::mutex> lock(firstLock);
          if (firstUnrefused.empty())
            firstUnrefused = why;
        }
      }
    });
  }
  for (std::thread &client : clients)
    client.join();
  running = false;
  sampler.join();
  bool alive = server.alive();
  long endRss = server.rssKiB().first;
  int status = server.stop();

  std::string kinds;
  for (int k = 0; k < kHostileKinds; ++k)
    kinds += std::string(k ? ", " : "") + kHostileNames[k] + " " + std::to_string(byKind[k]);
  std::printf("soak: %d clients (%d good, %d hostile) for %d s: %d good answers, %d wrong; "
              "%d hostile requests (%s), %d not refused as they should be; RSS %ld MiB at "
              "start, %ld MiB peak, %ld MiB at the end\n",
              kGoodClients + kHostileClients, kGoodClients, kHostileClients, seconds, good.load(),
              wrong.load(), refused + unrefused, kinds.c_str(), unrefused.load(), startRss / 1024,
              peakRss.load() / 1024, endRss / 1024);
  EXPECT_TRUE(alive);
  EXPECT_EQ(wrong.load(), 0) << firstWrong;
  EXPECT_EQ(unrefused.load(), 0) << firstUnrefused;
  EXPECT_GT(good.load(), kGoodClients);
#ifndef AOTC_SERVER_SANITIZED
  EXPECT_LT(peakRss.load(), kMaxRssKiB);
#endif
  EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "wait status " << status;
}

} // namespace
