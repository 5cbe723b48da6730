// Connections served with deadlines on a socket stream of our own, since httplib 0.11's
// SocketStream and its keep-alive loop bound each recv and send but never a whole request.
#include "HttpServer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace aotc::server {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

thread_local ConnectionState *currentConnection = nullptr;

/// Waits for `events` on `fd` until `deadline`, or until `stopFd` is readable when given: the
/// poll's revents for fd, 0 at the deadline, -1 on error or stop.
int waitFor(int fd, short events, Clock::time_point deadline, int stopFd = -1) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      return 0;
    pollfd fds[2] = {{fd, events, 0}, {stopFd, POLLIN, 0}};
    int ready =
        poll(fds, stopFd >= 0 ? 2 : 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready < 0)
      return -1;
    if (ready == 0)
      continue; // the deadline check above ends the wait
    if (fds[0].revents)
      return fds[0].revents;
    return -1; // stopping
  }
}

void addressOf(const sockaddr_storage &address, std::string &ip, int &port) {
  char text[INET6_ADDRSTRLEN] = "";
  if (address.ss_family == AF_INET) {
    auto *in = reinterpret_cast<const sockaddr_in *>(&address);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    port = ntohs(in->sin_port);
  } else if (address.ss_family == AF_INET6) {
    auto *in6 = reinterpret_cast<const sockaddr_in6 *>(&address);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    port = ntohs(in6->sin6_port);
  }
  ip = text;
}

/// A connection's socket under two deadlines: a request must arrive within Timeouts::read of
/// its first byte, and an answer must leave within Timeouts::write of its first byte. Reads go
/// through a buffer, because httplib reads header lines a byte at a time.
class DeadlineStream final : public httplib::Stream {
public:
  DeadlineStream(int fd, const Timeouts &timeouts, ConnectionState &state)
      : fd_(fd), timeouts_(timeouts), state_(state) {}

  void startRequest() {
    readDeadline_ = Clock::now() + timeouts_.read;
    writing_ = false;
    wrote_ = false;
  }

  /// Whether any of an answer to the current request went out.
  bool wrote() const { return wrote_; }

  bool buffered() const { return begin_ < end_; }

  bool is_readable() const override {
    return buffered() || waitFor(fd_, POLLIN, readDeadline_) > 0;
  }

  bool is_writable() const override {
    return waitFor(fd_, POLLOUT, writing_ ? writeDeadline_ : Clock::now() + timeouts_.write) > 0;
  }

  ssize_t read(char *out, size_t size) override {
    writing_ = false;
    if (!buffered()) {
      if (size >= sizeof buffer_)
        return receive(out, size);
      ssize_t got = receive(buffer_, sizeof buffer_);
      if (got <= 0)
        return got;
      begin_ = 0;
      end_ = static_cast<size_t>(got);
    }
    size_t n = std::min(size, end_ - begin_);
    std::memcpy(out, buffer_ + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char *data, size_t size) override {
    wrote_ = true;
    if (!writing_) {
      writing_ = true;
      writeDeadline_ = Clock::now() + timeouts_.write;
    }
    for (;;) {
      ssize_t sent = send(fd_, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent >= 0)
        return sent;
      if (errno == EINTR)
        continue;
      if ((errno != EAGAIN && errno != EWOULDBLOCK) || waitFor(fd_, POLLOUT, writeDeadline_) <= 0)
        return -1;
    }
  }

  void get_remote_ip_and_port(std::string &ip, int &port) const override {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (getpeername(fd_, reinterpret_cast<sockaddr *>(&address), &length) == 0)
      addressOf(address, ip, port);
  }

  void get_local_ip_and_port(std::string &ip, int &port) const override {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (getsockname(fd_, reinterpret_cast<sockaddr *>(&address), &length) == 0)
      addressOf(address, ip, port);
  }

  socket_t socket() const override { return fd_; }

private:
  ssize_t receive(char *out, size_t size) {
    for (;;) {
      ssize_t got = recv(fd_, out, size, MSG_DONTWAIT);
      if (got >= 0)
        return got;
      if (errno == EINTR)
        continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        return -1;
      int ready = waitFor(fd_, POLLIN, readDeadline_);
      if (ready == 0)
        state_.readTimedOut = true;
      if (ready <= 0)
        return -1;
    }
  }

  int fd_;
  const Timeouts &timeouts_;
  ConnectionState &state_;
  Clock::time_point readDeadline_, writeDeadline_;
  bool writing_ = false, wrote_ = false;
  char buffer_[4096];
  size_t begin_ = 0, end_ = 0;
};

/// Closes after the client has seen our answer: shutting down our side first and draining what
/// it still sends (for a second at most) keeps close() from resetting the connection, which
/// would throw away an answer the client has not read yet (a 413 sent mid-upload).
void closeGracefully(int fd) {
  shutdown(fd, SHUT_WR);
  auto deadline = Clock::now() + 1s;
  char sink[16384];
  while (waitFor(fd, POLLIN, deadline) > 0) {
    ssize_t got = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
      break;
  }
  close(fd);
}

} // namespace

HttpServer::HttpServer(Timeouts timeouts, size_t connections) : timeouts_(timeouts) {
  if (pipe2(stopPipe_, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe");
  new_task_queue = [connections] { return new httplib::ThreadPool(connections); };
  // Only for the Keep-Alive header of answers: waitForRequest enforces the idle timeout.
  set_keep_alive_timeout(
      std::max<time_t>(1, std::chrono::duration_cast<std::chrono::seconds>(timeouts.idle).count()));
}

HttpServer::~HttpServer() {
  close(stopPipe_[0]);
  close(stopPipe_[1]);
}

ConnectionState *HttpServer::connection() { return currentConnection; }

bool HttpServer::waitForRequest(int fd, bool buffered) {
  if (buffered)
    return true;
  if (!stopping_)
    return waitFor(fd, POLLIN, Clock::now() + timeouts_.idle, stopPipe_[0]) > 0;
  // Stopping: a request on its way (sent after an answer that said keep-alive, just before
  // the stop) still gets a moment to arrive; an idle connection is closed.
  return waitFor(fd, POLLIN, Clock::now() + 200ms) > 0;
}

bool HttpServer::process_and_close_socket(socket_t sock) {
  ConnectionState state;
  DeadlineStream stream(sock, timeouts_, state);
  currentConnection = &state;
  bool ok = true;
  for (size_t left = keep_alive_max_count_; left > 0; --left) {
    if (!waitForRequest(sock, stream.buffered()))
      break;
    stream.startRequest();
    bool closeConnection = left == 1 || stopping_;
    bool closed = false;
    ok = process_request(stream, closeConnection, closed, nullptr);
    if (state.readTimedOut && !stream.wrote()) {
      // Cut within its request line, which httplib answers with silence.
      std::string body = std::string(R"({"error":")") + kReadTimeoutMessage + "\"}";
      std::string answer = "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\n"
                           "Connection: close\r\nContent-Length: " +
                           std::to_string(body.size()) + "\r\n\r\n" + body;
      stream.write(answer.data(), answer.size());
    }
    if (!ok || closed || closeConnection || state.readTimedOut || state.closeAfterAnswer)
      break;
    // An answer that went out saying keep-alive while the stop began: serve what follows it.
  }
  currentConnection = nullptr;
  closeGracefully(sock);
  return ok;
}

void HttpServer::drainAndStop() {
  if (stopping_.exchange(true))
    return;
  char byte = 1;
  (void)!::write(stopPipe_[1], &byte, 1);
  // Clients whose connection the kernel completed wait in the listen queue: closing the socket
  // now would reset them, although they may have sent a whole request. httplib's accept loop
  // takes them; the socket closes once the queue has stayed empty for a moment.
  int fd = svr_sock_;
  auto deadline = Clock::now() + 2s;
  int quiet = 0;
  while (fd >= 0 && quiet < 3 && Clock::now() < deadline) {
    pollfd p = {fd, POLLIN, 0};
    quiet = poll(&p, 1, 0) == 0 ? quiet + 1 : 0;
    std::this_thread::sleep_for(10ms);
  }
  stop();
}

} // namespace aotc::server
