// Greedy text generation over a GPT-2 artifact (examples/gpt2) with nothing but the runtime's
// header: `prefill` once on the prompt, then `decode` once per new token, each taking the
// key/value cache the step before returned (runtime-owned, passed on without a copy). With
// --no-cache every step runs `forward` over the whole sequence instead, as a model without cache
// entries must; both print the same ids.
//   generate MODEL.so --prompt ID[,ID...] [--new N] [--no-cache] [--threads N]
#include <aotc/runtime.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct Args {
  std::string model;
  std::vector<int64_t> prompt;
  int64_t newTokens = 8;
  bool cache = true;
  int threads = 0;
};

[[noreturn]] void usage(const std::string &message) {
  std::fprintf(stderr,
               "generate: %s\nusage: generate MODEL.so --prompt ID[,ID...] [--new N] [--no-cache] "
               "[--threads N]\n",
               message.c_str());
  std::exit(2);
}

int64_t number(const std::string &option, const std::string &text) {
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || v < 0)
    usage(option + " expects non-negative integers, not '" + text + "'");
  return v;
}

Args parse(int argc, char **argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--prompt") {
      std::string list = value();
      for (size_t pos = 0; pos <= list.size();) {
        size_t comma = std::min(list.find(',', pos), list.size());
        a.prompt.push_back(number(arg, list.substr(pos, comma - pos)));
        pos = comma + 1;
      }
    } else if (arg == "--new") {
      a.newTokens = number(arg, value());
    } else if (arg == "--threads") {
      a.threads = static_cast<int>(number(arg, value()));
    } else if (arg == "--no-cache") {
      a.cache = false;
    } else if (!arg.empty() && arg[0] == '-') {
      usage("unknown option " + arg);
    } else if (a.model.empty()) {
      a.model = arg;
    } else {
      usage("more than one model given");
    }
  }
  if (a.model.empty())
    usage("no model given");
  if (a.prompt.empty())
    usage("no --prompt given");
  return a;
}

/// The id of the largest of the last position's logits ([1, positions, vocab]).
int64_t argmaxLast(const aotc::rt::OwnedTensor &logits) {
  std::vector<int64_t> shape = logits.shape();
  int64_t vocab = shape[2];
  const float *last = logits.data<float>() + (shape[1] - 1) * vocab;
  return std::max_element(last, last + vocab) - last;
}

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

int main(int argc, char **argv) {
  Args a = parse(argc, argv);
  try {
    aotc::rt::Library library(a.model.find('/') == std::string::npos ? "./" + a.model : a.model);
    aotc_model_options options;
    library.api().model_options_init(&options);
    options.num_threads = a.threads;
    aotc::rt::Model model(library, &options);

    std::vector<int64_t> ids = a.prompt;
    std::vector<double> stepMs;
    if (a.cache) {
      int32_t prefill = model.entry("prefill"), decode = model.entry("decode");
      auto start = std::chrono::steady_clock::now();
      std::vector<aotc::rt::OwnedTensor> out = model.run(
          prefill, {aotc::rt::tensor(ids.data(), AOTC_DTYPE_I64,
                                     {1, static_cast<int64_t>(ids.size())})});
      double prefillMs = msSince(start);
      std::printf("prefill: %zu tokens in %.3f ms\n", ids.size(), prefillMs);
      for (int64_t step = 0; step < a.newTokens; ++step) {
        ids.push_back(argmaxLast(out[0]));
        if (step + 1 == a.newTokens)
          break;
        // The ids past the decode entry's range of cached positions are refused by the runtime.
        int64_t token = ids.back();
        const aotc::rt::OwnedTensor &present = out[1];
        start = std::chrono::steady_clock::now();
        out = model.run(decode, {aotc::rt::tensor(&token, AOTC_DTYPE_I64, {1, 1}),
                                 aotc::rt::tensor(present.data<float>(), AOTC_DTYPE_F32,
                                                  present.shape())});
        stepMs.push_back(msSince(start));
      }
    } else {
      int32_t forward = model.entry("forward");
      for (int64_t step = 0; step < a.newTokens; ++step) {
        auto start = std::chrono::steady_clock::now();
        std::vector<aotc::rt::OwnedTensor> out = model.run(
            forward, {aotc::rt::tensor(ids.data(), AOTC_DTYPE_I64,
                                       {1, static_cast<int64_t>(ids.size())})});
        stepMs.push_back(msSince(start));
        ids.push_back(argmaxLast(out[0]));
      }
    }
    if (!stepMs.empty()) {
      std::vector<double> sorted = stepMs;
      std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
      std::printf("%s: %zu steps, median %.3f ms per token\n", a.cache ? "decode" : "forward",
                  stepMs.size(), sorted[sorted.size() / 2]);
    }
    std::printf("ids:");
    for (int64_t id : ids)
      std::printf(" %lld", static_cast<long long>(id));
    std::printf("\n");
  } catch (const aotc::rt::Error &e) {
    std::fprintf(stderr, "generate: %s\n", e.what());
    return 1;
  }
  return 0;
}
