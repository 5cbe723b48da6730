// A hand-written forward of examples/mlp (three Linear layers, ReLU between) in double, the
// oracle of the MLP end-to-end test:
//   mlp_reference input OUT.npy BATCH SEED      writes a random f32[BATCH, 784] input
//   mlp_reference check W.safetensors IN.npy OUT.npy
//                                               checks OUT against the forward within 1e-6
#include "aotc/serialize/Npy.h"
#include "aotc/serialize/Safetensors.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

using namespace aotc;

namespace {

int fail(const std::string &message) {
  llvm::errs() << "mlp_reference: " << message << "\n";
  return 1;
}

// y[b, o] = sum_i x[b, i] * w[o, i] + bias[o]
std::vector<double> linear(const std::vector<double> &x, int64_t batch, const HostTensor &w,
                           const HostTensor &bias, bool relu) {
  int64_t out = w.shape()[0], in = w.shape()[1];
  std::vector<double> y(batch * out);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t o = 0; o < out; ++o) {
      double acc = bias.getDouble(o);
      for (int64_t i = 0; i < in; ++i)
        acc += x[b * in + i] * w.getDouble(o * in + i);
      y[b * out + o] = relu ? std::max(acc, 0.0) : acc;
    }
  return y;
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "input" && argc == 5) {
    int64_t batch = std::atoll(argv[3]);
    std::mt19937_64 rng(std::strtoull(argv[4], nullptr, 10));
    HostTensor x(DType::F32, {batch, 784});
    for (int64_t i = 0; i < x.numel(); ++i)
      x.setDouble(i, static_cast<double>(rng() >> 11) * 0x1.0p-53 * 2 - 1);
    if (auto e = writeNpy(x, argv[2]))
      return fail(llvm::toString(std::move(e)));
    return 0;
  }
  if (mode != "check" || argc != 5)
    return fail(
        "usage: mlp_reference input OUT.npy BATCH SEED | check W.safetensors IN.npy OUT.npy");
  auto weights = SafetensorsFile::open(argv[2]);
  if (!weights)
    return fail(llvm::toString(weights.takeError()));
  auto x = readNpy(argv[3]);
  auto got = readNpy(argv[4]);
  if (!x || !got)
    return fail(llvm::toString(llvm::joinErrors(x.takeError(), got.takeError())));
  auto tensor = [&](const char *name) -> const HostTensor & {
    const SafetensorsFile::Entry *e = weights->find(name);
    if (!e) {
      fail(std::string("no tensor ") + name);
      std::exit(1);
    }
    return e->tensor;
  };
  int64_t batch = x->shape()[0];
  std::vector<double> h(x->numel());
  for (int64_t i = 0; i < x->numel(); ++i)
    h[i] = x->getDouble(i);
  h = linear(h, batch, tensor("fc1.weight"), tensor("fc1.bias"), true);
  h = linear(h, batch, tensor("fc2.weight"), tensor("fc2.bias"), true);
  h = linear(h, batch, tensor("fc3.weight"), tensor("fc3.bias"), false);
  if (got->numel() != static_cast<int64_t>(h.size()))
    return fail("the output has " + std::to_string(got->numel()) + " values, expected " +
                std::to_string(h.size()));
  double worst = 0, scale = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    double v = got->getDouble(i);
    if (std::isnan(v))
      return fail("NaN in the output at " + std::to_string(i));
    worst = std::max(worst, std::fabs(v - h[i]));
    scale = std::max(scale, std::fabs(h[i]));
  }
  double rel = worst / scale;
  llvm::outs() << "max abs error " << worst << ", relative to the largest output " << rel << "\n";
  return rel <= 1e-6 ? 0 : fail("the output differs from the reference by more than 1e-6");
}
