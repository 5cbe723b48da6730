// Not a test: GF/s of the generated f32 GEMM at 1024^3 and 4096^3 (2 threads) for each variant
// the host runs, with B row-major and B transposed (nn.Linear's weight).
#include "CodegenTestUtil.h"

#include <chrono>
#include <cstdio>
#include <random>

using namespace aotc;
using namespace aotc::cpu;
using namespace aotc::cpu::test;

static kir::Program program(int64_t n, bool transposedB) {
  kir::Program p;
  p.name = "probe";
  kir::EntryKernels e;
  e.name = "forward";
  e.inputs = {{"a", DType::F32, {n, n}}, {"b", DType::F32, {n, n}}};
  e.outputs = {{"y", DType::F32, {n, n}}};
  for (auto [kind, i] : {std::pair{kir::Buffer::Kind::Input, 0u},
                         {kir::Buffer::Kind::Input, 1u},
                         {kir::Buffer::Kind::Output, 0u}}) {
    kir::Buffer b;
    b.kind = kind;
    b.index = i;
    b.numel = n * n;
    e.buffers.push_back(b);
  }
  kir::GemmCall g;
  g.name = "probe";
  g.m = g.n = g.k = n;
  g.a = {0, 0, 0, n, 1};
  g.b = transposedB ? kir::MatrixOperand{1, 0, 0, 1, n} : kir::MatrixOperand{1, 0, 0, n, 1};
  g.out = 2;
  e.steps.push_back(g);
  p.entries.push_back(e);
  return p;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  std::printf("%-10s %6s %4s %10s\n", "variant", "n", "B", "GF/s");
  for (Variant v : {Variant::X86_64_V3, Variant::X86_64_V4}) {
    if (!hostSupports(v))
      continue;
    for (int64_t n : {1024, 4096}) {
      for (bool bt : {false, true}) {
        auto c = Compiled::create(program(n, bt), v);
        if (!c) {
          std::fprintf(stderr, "%s\n", llvm::toString(c.takeError()).c_str());
          return 1;
        }
        std::vector<float> a(n * n), b(n * n), y(n * n);
        std::mt19937 g(1);
        for (float &x : a)
          x = std::uniform_real_distribution<float>(-1, 1)(g);
        b = a;
        TestExec ex(threads);
        const void *in[] = {a.data(), b.data()};
        void *out[] = {y.data()};
        int reps = n == 1024 ? 20 : 2;
        (*c)->run(0)(&ex.exec, in, out, nullptr);
        auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r)
          (*c)->run(0)(&ex.exec, in, out, nullptr);
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("%-10s %6lld %4s %10.1f\n", variantName(v).str().c_str(), (long long)n,
                    bt ? "T" : "N", 2.0 * n * n * n * reps / s / 1e9);
      }
    }
  }
}
