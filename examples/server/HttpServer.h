// httplib::Server with what a server facing untrusted clients needs and Debian's cpp-httplib 0.11
// lacks: a deadline for each request to arrive and for each answer to leave (its timeouts are per
// recv and send, so a client sending a byte a second holds a thread forever), connections served by
// a pool of their own, and a stop that answers every request it accepted.
#ifndef AOTC_SERVER_HTTPSERVER_H
#define AOTC_SERVER_HTTPSERVER_H

#include <httplib.h>

#include <atomic>
#include <chrono>

namespace aotc::server {

struct Timeouts {
  /// From a request's first byte until its headers and body have all arrived.
  std::chrono::milliseconds read{30000};
  /// From an answer's first byte until the client has taken all of it.
  std::chrono::milliseconds write{30000};
  /// How long a connection may wait for its next request (keep-alive).
  std::chrono::milliseconds idle{5000};
};

/// The error of the 408 a request gets when it has not arrived within Timeouts::read.
constexpr const char *kReadTimeoutMessage =
    "the request did not arrive in full within --read-timeout seconds of its first byte";

/// What a handler knows of the connection its request came on (the one this thread serves).
struct ConnectionState {
  bool readTimedOut = false; // the request did not arrive within Timeouts::read
  bool closeAfterAnswer = false;
};

class HttpServer : public httplib::Server {
public:
  /// `connections` threads serve connections, one each: waiting for a slow client holds one of
  /// them, never a worker of the handlers' own pool.
  HttpServer(Timeouts timeouts, size_t connections);
  ~HttpServer() override;

  /// The connection of the request this thread handles; null outside a handler.
  static ConnectionState *connection();

  bool stopping() const { return stopping_; }

  /// A graceful stop, safe from any thread: no new connections; the ones the kernel completed
  /// already (the listen queue) are still taken; every request already sent is answered, with
  /// "Connection: close"; idle keep-alive connections are closed. listen() returns when the last
  /// answer is out.
  void drainAndStop();

private:
  bool process_and_close_socket(socket_t sock) override;
  bool waitForRequest(int fd, bool buffered);

  Timeouts timeouts_;
  std::atomic<bool> stopping_{false};
  int stopPipe_[2] = {-1, -1}; // readable once stopping: wakes every idle connection at once
};

} // namespace aotc::server

#endif
