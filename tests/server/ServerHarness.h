// What the server's end-to-end tests share: the reference run of the served artifact, request
// bodies and answer checks, aotc_server as a child process on a free loopback port, and raw
// sockets for what httplib's client cannot do (a byte at a time, chunked uploads, SIGTERM races).
#ifndef AOTC_TESTS_SERVER_SERVERHARNESS_H
#define AOTC_TESTS_SERVER_SERVERHARNESS_H

#include <aotc/runtime.hpp>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

extern char **environ;

namespace aotc_server_test {

using nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int64_t kFeatures = 784, kClasses = 10, kMaxBatch = 8;
constexpr size_t kMaxBody = 1000000;

/// The artifact run in-process on one thread: the reference every served answer must equal.
inline aotc::rt::Model &reference() {
  static aotc::rt::Library library(AOTC_SERVER_MLP);
  static aotc::rt::Model model = [] {
    aotc_model_options options;
    library.api().model_options_init(&options);
    options.num_threads = 1;
    return aotc::rt::Model(library, &options);
  }();
  return model;
}

inline std::vector<float> referenceLogits(const std::vector<float> &x, int64_t batch) {
  std::vector<aotc::rt::OwnedTensor> out =
      reference().run(0, {aotc::rt::tensor(x.data(), AOTC_DTYPE_F32, {batch, kFeatures})});
  return std::vector<float>(out[0].data<float>(), out[0].data<float>() + out[0].numel());
}

/// The runtime's own message for an input it refuses.
inline std::string runtimeMessage(int32_t dtype, const std::vector<int64_t> &shape) {
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

inline std::vector<float> randomInput(int64_t batch, std::mt19937 &rng) {
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(batch * kFeatures));
  for (float &v : x)
    v = normal(rng);
  return x;
}

/// One infer request for `x`; `nested` sends "data" as one array per row.
inline std::string inferBody(const std::vector<float> &x, int64_t batch, const std::string &id,
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

inline std::string exact(float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

/// Why an answer (status and body) differs from the reference, or "" when it is bitwise equal.
inline std::string answerMismatch(int status, const std::string &body, const std::string &model,
                                  const std::string &id, const std::vector<float> &want,
                                  int64_t batch) {
  try {
    if (status != 200)
      return "status " + std::to_string(status) + ": " + body.substr(0, 300);
    json answer = json::parse(body, nullptr, false);
    if (answer.is_discarded() || answer.value("model_name", "") != model ||
        answer.value("id", "") != id || !answer.contains("outputs") ||
        answer["outputs"].size() != 1)
      return "bad answer envelope: " + body.substr(0, 200);
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
  } catch (const std::exception &e) {
    return std::string("unreadable answer: ") + e.what();
  }
}

/// Why a served answer differs from the reference, or "" when it is bitwise equal.
inline std::string mismatch(const httplib::Result &result, const std::string &model,
                            const std::string &id, const std::vector<float> &want, int64_t batch) {
  if (!result)
    return "no response: " + httplib::to_string(result.error());
  return answerMismatch(result->status, result->body, model, id, want, batch);
}

/// aotc_server as a child process serving the test artifact as "mlp" and "other" on a port it
/// picks (--port 0), read from its first line.
class ServerProcess {
public:
  ~ServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  /// Starts it with the default options and `extra` ones; "" when it listens, else why not.
  std::string start(const std::vector<std::string> &extra = {}) {
    int out[2];
    if (pipe(out) != 0)
      return "pipe failed";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    std::vector<std::string> args = {AOTC_SERVER,
                                     "--model",
                                     std::string("mlp=") + AOTC_SERVER_MLP,
                                     "--model",
                                     std::string("other=") + AOTC_SERVER_MLP,
                                     "--port",
                                     "0",
                                     "--threads",
                                     "8",
                                     "--model-threads",
                                     "2",
                                     "--max-body-bytes",
                                     std::to_string(kMaxBody)};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char *> argv;
    for (std::string &arg : args)
      argv.push_back(arg.data());
    argv.push_back(nullptr);
    int spawned = posix_spawn(&pid_, AOTC_SERVER, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    if (spawned != 0) {
      close(out[0]);
      pid_ = 0;
      return std::string("cannot start ") + AOTC_SERVER;
    }
    std::string line;
    auto deadline = Clock::now() + 60s;
    char c;
    while (line.find('\n') == std::string::npos && Clock::now() < deadline) {
      pollfd fd = {out[0], POLLIN, 0};
      if (poll(&fd, 1, 100) > 0) {
        if (read(out[0], &c, 1) != 1)
          break;
        line += c;
      }
    }
    close(out[0]);
    size_t colon = line.find("127.0.0.1:");
    if (colon == std::string::npos)
      return "aotc_server did not report its port: " + line;
    port_ = std::stoi(line.substr(colon + 10));
    if (line.find("models: mlp, mlp.forward, other, other.forward") == std::string::npos)
      return "unexpected first line: " + line;
    return "";
  }

  /// SIGTERM, then its wait status once it exits; -1 when it has not within `limit` (then it is
  /// killed).
  int stop(std::chrono::seconds limit = 20s) {
    if (pid_ <= 0)
      return -1;
    kill(pid_, SIGTERM);
    int status = 0;
    auto deadline = Clock::now() + limit;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        pid_ = 0;
        return -1;
      }
      std::this_thread::sleep_for(10ms);
    }
    pid_ = 0;
    return status;
  }

  bool alive() const {
    return pid_ > 0 && kill(pid_, 0) == 0 && waitpid(pid_, nullptr, WNOHANG) == 0;
  }

  /// Resident set size now and at its peak, in KiB (VmRSS, VmHWM).
  std::pair<long, long> rssKiB() const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    long now = 0, peak = 0;
    while (std::getline(status, line)) {
      if (line.rfind("VmRSS:", 0) == 0)
        now = std::stol(line.substr(6));
      if (line.rfind("VmHWM:", 0) == 0)
        peak = std::stol(line.substr(6));
    }
    return {now, peak};
  }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }

  std::unique_ptr<httplib::Client> client(time_t readTimeout = 60) const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_connection_timeout(10);
    c->set_read_timeout(readTimeout);
    c->set_write_timeout(60);
    return c;
  }

private:
  pid_t pid_ = 0;
  int port_ = 0;
};

/// A blocking TCP connection to 127.0.0.1:port, or -1.
inline int connectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0)
    return fd;
  if (fd >= 0)
    close(fd);
  return -1;
}

inline bool sendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t sent = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (sent <= 0)
      return false;
    data.remove_prefix(static_cast<size_t>(sent));
  }
  return true;
}

/// Everything the peer sends until it closes, or until `limit`; `reset` tells whether the
/// connection ended with a reset rather than a close.
inline std::string readUntilClosed(int fd, std::chrono::milliseconds limit, bool *reset = nullptr) {
  std::string got;
  auto deadline = Clock::now() + limit;
  char buffer[65536];
  if (reset)
    *reset = false;
  while (Clock::now() < deadline) {
    pollfd p = {fd, POLLIN, 0};
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (poll(&p, 1, std::max(left, 1)) <= 0)
      continue;
    ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && reset)
      *reset = errno == ECONNRESET;
    if (n <= 0)
      break;
    got.append(buffer, static_cast<size_t>(n));
  }
  return got;
}

/// The status code of a raw HTTP response, or 0 when there is none.
inline int statusOf(const std::string &response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12)
    return 0;
  return std::atoi(response.c_str() + 9);
}

/// Uploads a chunked infer request of 64 KiB chunks of spaces to `port` until the server answers
/// or `limit` bytes are sent, reading meanwhile: the raw answer, and in `sent` how much went.
inline std::string chunkedFlood(int port, size_t limit, size_t *sent) {
  int fd = connectLoopback(port);
  if (fd < 0)
    return "";
  std::atomic<size_t> bytes{0};
  std::atomic<bool> done{false};
  std::thread sender([&] {
    std::string head = "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    std::string chunk = "10000\r\n" + std::string(65536, ' ') + "\r\n";
    if (!sendAll(fd, head))
      return;
    while (!done && bytes < limit && sendAll(fd, chunk))
      bytes += 65536;
    sendAll(fd, "0\r\n\r\n");
  });
  std::string response = readUntilClosed(fd, std::chrono::seconds(20));
  done = true;
  shutdown(fd, SHUT_RDWR);
  sender.join();
  close(fd);
  *sent = bytes;
  return response;
}

/// The body of a raw HTTP response (after its headers).
inline std::string bodyOf(const std::string &response) {
  size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

/// A complete HTTP/1.1 request for `body` on `path`, asking the server to close after answering.
inline std::string rawPost(const std::string &path, const std::string &body) {
  return "POST " + path +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

} // namespace aotc_server_test

#endif
