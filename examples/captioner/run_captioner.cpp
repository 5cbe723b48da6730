// Greedy image captioning over a captioner artifact (examples/captioner), with nothing but the
// runtime's header: `encode` once on the image, then `decode` once per token in a C++ loop.
//   run_captioner MODEL.so [--image IMAGE.npy] [--start ID] [--eos ID] [--max-length N]
//                 [--output-ids IDS.npy] [--threads N]
#include <aotc/runtime.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

struct Args {
  std::string model, image, outputIds;
  int64_t start = -1, eos = -1, maxLength = -1;
  int threads = 0;
};

[[noreturn]] void usage(const std::string &message) {
  std::fprintf(stderr,
               "run_captioner: %s\nusage: run_captioner MODEL.so [--image IMAGE.npy] [--start ID] "
               "[--eos ID] [--max-length N] [--output-ids IDS.npy] [--threads N]\n",
               message.c_str());
  std::exit(2);
}

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "run_captioner: %s\n", message.c_str());
  std::exit(1);
}

int64_t number(const std::string &option, const std::string &text) {
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || v < 0)
    usage(option + " expects a non-negative integer, not '" + text + "'");
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
    if (arg == "--image")
      a.image = value();
    else if (arg == "--output-ids")
      a.outputIds = value();
    else if (arg == "--start")
      a.start = number(arg, value());
    else if (arg == "--eos")
      a.eos = number(arg, value());
    else if (arg == "--max-length")
      a.maxLength = number(arg, value());
    else if (arg == "--threads")
      a.threads = static_cast<int>(number(arg, value()));
    else if (!arg.empty() && arg[0] == '-')
      usage("unknown option " + arg);
    else if (a.model.empty())
      a.model = arg;
    else
      usage("more than one model given");
  }
  if (a.model.empty())
    usage("no model given");
  return a;
}

struct Image {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

/// Reads a .npy of float32 in C order (what numpy.save writes for a float32 array); shapes and
/// sizes are left to the runtime's input checks.
Image readImage(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail("cannot open " + path);
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    fail(path + " is not a .npy file");
  uint32_t headerLen = 0;
  unsigned char len[4] = {0, 0, 0, 0};
  in.read(reinterpret_cast<char *>(len), magic[6] == 1 ? 2 : 4);
  headerLen = len[0] | len[1] << 8 | len[2] << 16 | static_cast<uint32_t>(len[3]) << 24;
  std::string header(headerLen, '\0');
  if (!in.read(header.data(), headerLen))
    fail(path + ": truncated header");
  if (header.find("'descr': '<f4'") == std::string::npos ||
      header.find("'fortran_order': False") == std::string::npos)
    fail(path + ": only float32 arrays in C order are read (descr '<f4', fortran_order False)");
  size_t open = header.find('(', header.find("'shape'")), close = header.find(')', open);
  if (open == std::string::npos || close == std::string::npos)
    fail(path + ": no shape in the header");
  Image image;
  int64_t numel = 1;
  for (size_t pos = open + 1; pos < close;) {
    size_t comma = header.find(',', pos);
    std::string dim = header.substr(pos, std::min(comma, close) - pos);
    if (dim.find_first_not_of(' ') != std::string::npos) {
      image.shape.push_back(std::strtoll(dim.c_str(), nullptr, 10));
      numel *= image.shape.back();
    }
    pos = std::min(comma, close) + 1;
  }
  image.data.resize(static_cast<size_t>(numel));
  if (!in.read(reinterpret_cast<char *>(image.data.data()), numel * 4))
    fail(path + ": fewer values than its shape holds");
  return image;
}

/// Writes int64 ids [rows, cols] as a .npy (version 1.0, header padded to 64 bytes).
void writeIds(const std::string &path, const std::vector<std::vector<int64_t>> &ids) {
  std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (" +
                       std::to_string(ids.size()) + ", " + std::to_string(ids[0].size()) + "), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  uint16_t len = static_cast<uint16_t>(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(static_cast<char>(len & 0xff)).put(static_cast<char>(len >> 8));
  out << header;
  for (const std::vector<int64_t> &row : ids)
    out.write(reinterpret_cast<const char *>(row.data()),
              static_cast<std::streamsize>(row.size() * 8));
  if (!out)
    fail("cannot write " + path);
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
    int32_t encode = model.entry("encode"), decode = model.entry("decode");

    // The model's signature gives the defaults: a random image of the encoder's input size
    // (batch 1), GPT-2's convention of the last token as both start and end, and as many
    // tokens as the decoder has positions.
    aotc_tensor_info imageInfo = model.inputs(encode)[0];
    aotc_tensor_info idsInfo = model.inputs(decode)[0];
    aotc_tensor_info logitsInfo = model.outputs(decode)[0];
    int64_t vocab = logitsInfo.dims[2].value;
    if (a.start < 0)
      a.start = vocab - 1;
    if (a.eos < 0)
      a.eos = vocab - 1;
    if (a.maxLength < 0)
      a.maxLength = idsInfo.dims[1].hi;

    Image image;
    if (a.image.empty()) {
      image.shape = {1};
      for (int32_t d = 1; d < imageInfo.rank; ++d)
        image.shape.push_back(imageInfo.dims[d].value);
      int64_t numel = 1;
      for (int64_t d : image.shape)
        numel *= d;
      std::mt19937_64 rng(0);
      std::normal_distribution<float> normal;
      for (int64_t i = 0; i < numel; ++i)
        image.data.push_back(normal(rng));
    } else {
      image = readImage(a.image);
    }

    auto start = std::chrono::steady_clock::now();
    std::vector<aotc::rt::OwnedTensor> encoded =
        model.run(encode, {aotc::rt::tensor(image.data.data(), AOTC_DTYPE_F32, image.shape)});
    double encodeMs = msSince(start);
    const aotc::rt::OwnedTensor &memory = encoded[0];
    int64_t batch = memory.shape()[0];
    std::printf("encode: image [");
    for (size_t d = 0; d < image.shape.size(); ++d)
      std::printf("%s%lld", d ? ", " : "", static_cast<long long>(image.shape[d]));
    std::printf("] in %.3f ms\n", encodeMs);

    // No KV cache: each step runs the decoder over the whole prefix, as a model without cache
    // entries must. Rows that reached eos are padded with eos (transformers' pad = eos).
    std::vector<std::vector<int64_t>> ids(static_cast<size_t>(batch), {a.start});
    std::vector<bool> done(static_cast<size_t>(batch), false);
    aotc_tensor memoryIn = aotc::rt::tensor(memory.data<float>(), AOTC_DTYPE_F32, memory.shape());
    for (int64_t len = 1, step = 1; len < a.maxLength; ++len, ++step) {
      std::vector<int64_t> flat;
      for (const std::vector<int64_t> &row : ids)
        flat.insert(flat.end(), row.begin(), row.end());
      start = std::chrono::steady_clock::now();
      std::vector<aotc::rt::OwnedTensor> out = model.run(
          decode, {aotc::rt::tensor(flat.data(), AOTC_DTYPE_I64, {batch, len}), memoryIn});
      double stepMs = msSince(start);
      const float *logits = out[0].data<float>();
      std::printf("step %lld (%.3f ms):", static_cast<long long>(step), stepMs);
      bool allDone = true;
      for (int64_t b = 0; b < batch; ++b) {
        const float *last = logits + (b * len + len - 1) * vocab;
        int64_t best = 0;
        for (int64_t v = 1; v < vocab; ++v)
          if (last[v] > last[best])
            best = v;
        int64_t next = done[b] ? a.eos : best;
        done[b] = done[b] || next == a.eos;
        allDone = allDone && done[b];
        ids[b].push_back(next);
        std::printf(" %lld", static_cast<long long>(next));
      }
      std::printf("\n");
      if (allDone)
        break;
    }
    for (int64_t b = 0; b < batch; ++b) {
      std::printf("ids[%lld]:", static_cast<long long>(b));
      for (int64_t id : ids[b])
        std::printf(" %lld", static_cast<long long>(id));
      std::printf("\n");
    }
    if (!a.outputIds.empty())
      writeIds(a.outputIds, ids);
  } catch (const aotc::rt::Error &e) {
    fail(e.what());
  }
  return 0;
}
