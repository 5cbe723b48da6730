// aotc_server: serves aotc artifacts over the Open Inference Protocol (KServe v2 REST), loading
// each .so through the runtime header alone (aotc/runtime.hpp, dlopen):
//   aotc_server --model NAME=PATH.so [--model ...] [--port 8000] [--host 127.0.0.1] [--threads N]
//               [--model-threads N] [--max-body-bytes N] [--max-connections N]
//               [--read-timeout S] [--write-timeout S] [--idle-timeout S]
#include "HttpServer.h"
#include "Protocol.h"
#include "Request.h"

#include <aotc/runtime.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <regex>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

namespace {

using aotc::server::HttpError;
using nlohmann::json;

constexpr const char *kVersion = "0.1.0";

struct Options {
  std::vector<std::pair<std::string, std::string>> models; // name, path
  std::string host = "127.0.0.1";
  int port = 8000;
  int threads = std::max(8, static_cast<int>(std::thread::hardware_concurrency()) - 1);
  int modelThreads = 0; // 0: one per online CPU
  size_t maxBodyBytes = size_t{64} << 20;
  // Connections wait on clients, workers compute: a thread per connection up to this many, so
  // that slow clients hold connection threads and never the workers (--threads).
  int maxConnections = 256;
  aotc::server::Timeouts timeouts;
};

[[noreturn]] void usage(const std::string &message) {
  std::fprintf(stderr,
               "aotc_server: %s\nusage: aotc_server --model NAME=PATH.so [--model ...] "
               "[--port 8000] [--host 127.0.0.1] [--threads N] [--model-threads N] "
               "[--max-body-bytes N] [--max-connections N] [--read-timeout S] [--write-timeout S] "
               "[--idle-timeout S]\n",
               message.c_str());
  std::exit(2);
}

long long parseCount(const std::string &option, const std::string &text, long long lo) {
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || value < lo || value > (1ll << 40))
    usage(option + " expects an integer >= " + std::to_string(lo) + ", got \"" + text + "\"");
  return value;
}

Options parseOptions(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--model") {
      std::string spec = value();
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
        usage("--model expects NAME=PATH.so, got \"" + spec + "\"");
      std::string name = spec.substr(0, eq);
      if (name.find('/') != std::string::npos || name.find('.') != std::string::npos)
        usage("model name \"" + name + "\" may not contain '/' or '.' (NAME.ENTRY names entries)");
      o.models.emplace_back(name, spec.substr(eq + 1));
    } else if (arg == "--port") {
      o.port = static_cast<int>(parseCount(arg, value(), 0));
      if (o.port > 65535)
        usage("--port must be at most 65535");
    } else if (arg == "--host") {
      o.host = value();
    } else if (arg == "--threads") {
      o.threads = static_cast<int>(parseCount(arg, value(), 1));
    } else if (arg == "--model-threads") {
      o.modelThreads = static_cast<int>(parseCount(arg, value(), 0));
    } else if (arg == "--max-body-bytes") {
      o.maxBodyBytes = static_cast<size_t>(parseCount(arg, value(), 1));
    } else if (arg == "--max-connections") {
      o.maxConnections = static_cast<int>(parseCount(arg, value(), 1));
    } else if (arg == "--read-timeout") {
      o.timeouts.read = std::chrono::seconds(parseCount(arg, value(), 1));
    } else if (arg == "--write-timeout") {
      o.timeouts.write = std::chrono::seconds(parseCount(arg, value(), 1));
    } else if (arg == "--idle-timeout") {
      o.timeouts.idle = std::chrono::seconds(parseCount(arg, value(), 1));
    } else if (arg == "--help" || arg == "-h") {
      usage("serves aotc artifacts over KServe v2 REST");
    } else {
      usage("unknown argument " + arg);
    }
  }
  if (o.models.empty())
    usage("no --model given");
  return o;
}

/// One servable name: an entry of a loaded model, with its metadata computed once.
struct Endpoint {
  std::shared_ptr<aotc::rt::Model> model;
  int32_t entry = 0;
  std::vector<aotc_tensor_info> inputs, outputs;
  json metadata;
};

json tensorMetadata(const aotc_tensor_info &info) {
  json shape = json::array();
  for (int32_t d = 0; d < info.rank; ++d)
    shape.push_back(info.dims[d].value >= 0 ? info.dims[d].value : -1);
  const char *datatype = aotc::server::kserveDatatype(info.dtype);
  return {{"name", info.name}, {"datatype", datatype ? datatype : "UNKNOWN"}, {"shape", shape}};
}

/// Debian's cpp-httplib is a compiled library that listens with a backlog of 5: clients connecting
/// at once (a load balancer opening its pool, the load test's 16 under load) overflowed the
/// accept queue and lost their first request ("no response: Read"). listen() again on the bound
/// socket raises the backlog.
void raiseListenBacklog(int port) {
  for (int fd = 0; fd < 1024; ++fd) {
    int listening = 0;
    socklen_t size = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || !listening)
      continue;
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) != 0)
      continue;
    int bound = address.ss_family == AF_INET
                    ? ntohs(reinterpret_cast<sockaddr_in *>(&address)->sin_port)
                : address.ss_family == AF_INET6
                    ? ntohs(reinterpret_cast<sockaddr_in6 *>(&address)->sin6_port)
                    : -1;
    if (bound == port)
      listen(fd, SOMAXCONN);
  }
}

/// Every endpoint, built before the server starts and read-only afterwards, so request threads
/// share it without locks. The models are shared by their endpoints and by all threads.
class Registry {
public:
  void add(const std::string &name, const std::string &path, int modelThreads) {
    aotc::rt::Library library(path.find('/') == std::string::npos ? "./" + path : path);
    aotc_model_options options;
    library.api().model_options_init(&options);
    options.num_threads = modelThreads;
    auto model = std::make_shared<aotc::rt::Model>(library, &options);
    std::vector<std::string> entries = model->entries();
    for (int32_t e = 0; e < static_cast<int32_t>(entries.size()); ++e) {
      Endpoint endpoint;
      endpoint.model = model;
      endpoint.entry = e;
      endpoint.inputs = model->inputs(e);
      endpoint.outputs = model->outputs(e);
      json inputs = json::array(), outputs = json::array();
      for (const aotc_tensor_info &info : endpoint.inputs)
        inputs.push_back(tensorMetadata(info));
      for (const aotc_tensor_info &info : endpoint.outputs)
        outputs.push_back(tensorMetadata(info));
      endpoint.metadata = {{"platform", "aotc"}, {"inputs", inputs}, {"outputs", outputs}};
      if (e == 0)
        insert(name, endpoint);
      insert(name + "." + entries[static_cast<size_t>(e)], endpoint);
    }
  }

  const Endpoint &find(const std::string &name) const {
    auto it = endpoints_.find(name);
    if (it == endpoints_.end()) {
      std::string served;
      for (const auto &[known, endpoint] : endpoints_)
        served += (served.empty() ? "" : ", ") + known;
      throw HttpError(404, "unknown model \"" + name + "\" (served: " + served + ")");
    }
    return it->second;
  }

  std::vector<std::string> names() const {
    std::vector<std::string> result;
    for (const auto &[name, endpoint] : endpoints_)
      result.push_back(name);
    return result;
  }

private:
  void insert(const std::string &name, Endpoint endpoint) {
    endpoint.metadata["name"] = name;
    if (!endpoints_.emplace(name, std::move(endpoint)).second)
      throw std::runtime_error("model name \"" + name + "\" is given twice");
  }

  std::map<std::string, Endpoint> endpoints_;
};

std::string quoteJoin(const std::vector<aotc_tensor_info> &infos) {
  std::string names;
  for (const aotc_tensor_info &info : infos)
    names += (names.empty() ? "\"" : ", \"") + std::string(info.name) + "\"";
  return names;
}

/// POST /v2/models/{name}/infer: matches the inputs to the entry's, runs it, encodes the outputs.
json infer(const Endpoint &endpoint, const std::string &name, aotc::server::InferRequest request) {
  using aotc::server::shortQuote;
  std::vector<aotc::server::RequestInput *> byPosition(endpoint.inputs.size(), nullptr);
  for (aotc::server::RequestInput &input : request.inputs) {
    size_t position = 0;
    while (position < endpoint.inputs.size() && input.name != endpoint.inputs[position].name)
      ++position;
    if (position == endpoint.inputs.size())
      throw HttpError(400, "unknown input " + shortQuote(input.name) + " (model \"" + name +
                               "\" takes " + quoteJoin(endpoint.inputs) + ")");
    if (byPosition[position])
      throw HttpError(400, "input " + shortQuote(input.name) + " is given twice");
    byPosition[position] = &input;
  }

  std::vector<aotc_tensor> tensors;
  for (size_t i = 0; i < endpoint.inputs.size(); ++i) {
    if (!byPosition[i])
      throw HttpError(400, "missing input \"" + std::string(endpoint.inputs[i].name) +
                               "\" (model \"" + name + "\" takes " + quoteJoin(endpoint.inputs) +
                               ")");
    aotc::server::RequestInput &input = *byPosition[i];
    // The runtime checks dtype, rank and every dim against the entry: its message is the answer.
    aotc_tensor tensor = aotc::rt::tensor(input.data.data(), input.dtype, input.shape);
    tensor.size_bytes = input.data.size();
    tensors.push_back(tensor);
  }

  // No "outputs", or an empty list, asks for all of them.
  std::vector<bool> wanted(endpoint.outputs.size(), request.outputs.empty());
  for (const std::string &output : request.outputs) {
    size_t position = 0;
    while (position < endpoint.outputs.size() && output != endpoint.outputs[position].name)
      ++position;
    if (position == endpoint.outputs.size())
      throw HttpError(400, "unknown requested output " + shortQuote(output) + " (model \"" + name +
                               "\" gives " + quoteJoin(endpoint.outputs) + ")");
    wanted[position] = true;
  }

  std::vector<aotc::rt::OwnedTensor> results = endpoint.model->run(endpoint.entry, tensors);
  json outputs = json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    if (!wanted[i])
      continue;
    const aotc::rt::OwnedTensor &result = results[i];
    const char *datatype = aotc::server::kserveDatatype(result.dtype());
    outputs.push_back(
        {{"name", endpoint.outputs[i].name},
         {"datatype", datatype ? datatype : "UNKNOWN"},
         {"shape", result.shape()},
         {"data", aotc::server::encodeData(result.raw().data, result.dtype(), result.numel())}});
  }
  return {{"model_name", name}, {"outputs", std::move(outputs)}, {"id", std::move(request.id)}};
}

void reply(httplib::Response &res, int status, const json &body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void replyError(httplib::Response &res, int status, const std::string &message) {
  reply(res, status, {{"error", message}});
}

int statusOf(const aotc::rt::Error &e) {
  switch (e.status()) {
  case AOTC_ERROR_INVALID_ARGUMENT:
    return 400;
  case AOTC_ERROR_NOT_FOUND:
    return 404;
  case AOTC_ERROR_RESOURCE:
    return 503;
  default:
    return 500;
  }
}

/// Runs a handler, turning every failure into a JSON error with its status.
template <typename Fn> void guarded(httplib::Response &res, Fn &&fn) {
  try {
    fn();
  } catch (const HttpError &e) {
    replyError(res, e.status(), e.what());
  } catch (const aotc::rt::Error &e) {
    replyError(res, statusOf(e), e.what());
  } catch (const json::exception &e) { // a value of the request of another JSON type than read
    replyError(res, 400, e.what());
  } catch (const std::bad_alloc &) {
    replyError(res, 503, "out of memory");
  } catch (const std::exception &e) {
    replyError(res, 500, e.what());
  }
}

/// The methods a path of the protocol accepts, or "" when the path is none of its.
std::string allowedMethods(const std::string &path) {
  static const std::regex get(R"(/v2|/v2/health/(live|ready)|/v2/models/[^/]+(/ready)?)");
  static const std::regex post(R"(/v2/models/[^/]+/infer)");
  if (std::regex_match(path, get))
    return "GET, HEAD";
  if (std::regex_match(path, post))
    return "POST";
  return "";
}

/// The request body, read up to `limit` bytes however it is framed (Content-Length or chunked):
/// httplib 0.11 bounds only bodies with a Content-Length, and only when it reads them itself.
/// A refused body is left unread, so its connection closes after the answer.
std::string readBody(const httplib::Request &req, const httplib::ContentReader &reader,
                     size_t limit) {
  aotc::server::ConnectionState *connection = aotc::server::HttpServer::connection();
  auto refuse = [&](int status, const std::string &message) {
    connection->closeAfterAnswer = true;
    return HttpError(status, message);
  };
  auto tooLarge = [&] {
    return refuse(413, "request body larger than " + std::to_string(limit) +
                           " bytes (the limit set by --max-body-bytes)");
  };
  if (req.is_multipart_form_data())
    throw refuse(400, "multipart bodies are not read: send the JSON as the body itself");
  std::string body;
  if (req.has_header("Content-Length")) {
    unsigned long long length =
        std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10);
    if (length > limit)
      throw tooLarge();
    body.reserve(length);
  }
  bool over = false;
  bool complete = reader([&](const char *data, size_t size) {
    over = size > limit - body.size();
    if (!over)
      body.append(data, size);
    return !over;
  });
  if (over)
    throw tooLarge();
  if (connection->readTimedOut)
    throw refuse(408, aotc::server::kReadTimeoutMessage);
  if (!complete)
    throw refuse(400, "the request body is cut short or its chunked framing is malformed");
  return body;
}

void routes(aotc::server::HttpServer &server, const Registry &registry, size_t maxBodyBytes,
            std::counting_semaphore<> &workers) {
  server.Get("/v2/health/live", [](const httplib::Request &, httplib::Response &res) {
    reply(res, 200, {{"live", true}});
  });
  server.Get("/v2/health/ready", [](const httplib::Request &, httplib::Response &res) {
    reply(res, 200, {{"ready", true}});
  });
  server.Get("/v2", [](const httplib::Request &, httplib::Response &res) {
    reply(res, 200,
          {{"name", "aotc_server"}, {"version", kVersion}, {"extensions", json::array()}});
  });
  server.Get(R"(/v2/models/([^/]+))", [&](const httplib::Request &req, httplib::Response &res) {
    guarded(res, [&] { reply(res, 200, registry.find(req.matches[1]).metadata); });
  });
  server.Get(R"(/v2/models/([^/]+)/ready)",
             [&](const httplib::Request &req, httplib::Response &res) {
               guarded(res, [&] {
                 std::string name = req.matches[1];
                 registry.find(name);
                 reply(res, 200, {{"name", name}, {"ready", true}});
               });
             });
  server.Post(R"(/v2/models/([^/]+)/infer)",
              [&registry, maxBodyBytes, &workers](const httplib::Request &req,
                                                  httplib::Response &res,
                                                  const httplib::ContentReader &reader) {
                guarded(res, [&] {
                  // The body arrives on the connection's thread; decoding, the run and
                  // encoding wait for one of the --threads workers.
                  std::string body = readBody(req, reader, maxBodyBytes);
                  std::string name = req.matches[1];
                  const Endpoint &endpoint = registry.find(name);
                  workers.acquire();
                  struct Release {
                    std::counting_semaphore<> &workers;
                    ~Release() { workers.release(); }
                  } release{workers};
                  aotc::server::InferRequest request = aotc::server::parseInferRequest(body);
                  body = std::string(); // the decoded tensors replace it
                  reply(res, 200, infer(endpoint, name, std::move(request)));
                });
              });

  // Anything else: 405 on a path of the protocol, 404 elsewhere. Methods with a body get the
  // answer without it being read, and their connection closes after it.
  auto fallback = [](const httplib::Request &req, httplib::Response &res) {
    std::string allowed = allowedMethods(req.path);
    if (allowed.empty())
      return replyError(res, 404, "no such endpoint: " + req.path);
    res.set_header("Allow", allowed);
    replyError(res, 405,
               "method " + req.method + " is not allowed on " + req.path + " (allowed: " + allowed +
                   ")");
  };
  auto unread = [fallback](const httplib::Request &req, httplib::Response &res,
                           const httplib::ContentReader &) {
    aotc::server::HttpServer::connection()->closeAfterAnswer = true;
    fallback(req, res);
  };
  server.Get(".*", fallback);
  server.Options(".*", fallback);
  server.Post(".*", unread);
  server.Put(".*", unread);
  server.Patch(".*", unread);
  server.Delete(".*", unread);

  server.set_post_routing_handler([&server](const httplib::Request &, httplib::Response &res) {
    aotc::server::ConnectionState *connection = aotc::server::HttpServer::connection();
    if (server.stopping() || (connection && connection->closeAfterAnswer))
      res.set_header("Connection", "close");
  });

  // httplib's own refusals (400 for an unparsable request, 408 when it did not arrive within
  // --read-timeout, 414) get a JSON body too; ours already have one.
  server.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request &, httplib::Response &res) {
        if (!res.body.empty())
          return httplib::Server::HandlerResponse::Unhandled;
        aotc::server::ConnectionState *connection = aotc::server::HttpServer::connection();
        if (connection && connection->readTimedOut) {
          res.status = 408;
          replyError(res, 408, aotc::server::kReadTimeoutMessage);
        } else if (res.status == 414) {
          replyError(res, 414, "request URI too long");
        } else {
          replyError(res, res.status, "HTTP error " + std::to_string(res.status));
        }
        return httplib::Server::HandlerResponse::Handled;
      }));
  server.set_exception_handler([](const httplib::Request &, httplib::Response &res,
                                  std::exception_ptr) { replyError(res, 500, "internal error"); });
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseOptions(argc, argv);

  // SIGINT and SIGTERM stop the server from a thread of their own, so that listen() returns and
  // everything is torn down in order; blocked here, before any thread exists, so all inherit it.
  // A shell starts background jobs with SIGINT ignored, which sigwait would never see.
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGINT);
  sigaddset(&stopSignals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  Registry registry;
  try {
    for (const auto &[name, path] : options.models)
      registry.add(name, path, options.modelThreads);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "aotc_server: %s\n", e.what());
    return 1;
  }

  aotc::server::HttpServer server(options.timeouts, static_cast<size_t>(options.maxConnections));
  std::counting_semaphore<> workers(options.threads);
  routes(server, registry, options.maxBodyBytes, workers);

  int port = options.port;
  bool bound = port == 0 ? (port = server.bind_to_any_port(options.host)) > 0
                         : server.bind_to_port(options.host, port);
  if (!bound) {
    std::fprintf(stderr, "aotc_server: cannot listen on %s:%d\n", options.host.c_str(),
                 options.port);
    return 1;
  }
  raiseListenBacklog(port);
  std::string served;
  for (const std::string &name : registry.names())
    served += (served.empty() ? "" : ", ") + name;
  // The one line on stdout: scripts and tests read the port from it (--port 0 picks one).
  std::printf("aotc_server: listening on http://%s:%d (models: %s)\n", options.host.c_str(), port,
              served.c_str());
  std::fflush(stdout);

  std::thread stopper([&] {
    int signal = 0;
    sigwait(&stopSignals, &signal);
    server.drainAndStop();
  });
  bool ok = server.listen_after_bind();
  // Wakes the stopper when listen ended for another reason than a signal; harmless otherwise.
  pthread_kill(stopper.native_handle(), SIGTERM);
  stopper.join();
  return ok ? 0 : 1;
}
