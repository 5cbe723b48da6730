// Not a test: GF/s of the generated f32 GEMM (x86-64-v4) per CPU-second used, so that runs on a
// machine shared with builds still compare: `gemm_cpu_probe THREADS M N K [T]` (T: B transposed,
// nn.Linear's weight). Prints the median over repeats of flops / process CPU time, times the
// thread count, and the wall-clock GF/s.
#include "CodegenTestUtil.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>

using namespace aotc;
using namespace aotc::cpu;
using namespace aotc::cpu::test;

static kir::Program program(int64_t m, int64_t n, int64_t k, bool transposedB) {
  kir::Program p;
  p.name = "probe";
  kir::EntryKernels e;
  e.name = "forward";
  e.inputs = {{"a", DType::F32, {m, k}}, {"b", DType::F32, {k, n}}};
  e.outputs = {{"y", DType::F32, {m, n}}};
  for (auto [kind, i, numel] : {std::tuple{kir::Buffer::Kind::Input, 0u, m * k},
                                {kir::Buffer::Kind::Input, 1u, k * n},
                                {kir::Buffer::Kind::Output, 0u, m * n}}) {
    kir::Buffer b;
    b.kind = kind;
    b.index = i;
    b.numel = numel;
    e.buffers.push_back(b);
  }
  kir::GemmCall g;
  g.name = "probe";
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = {0, 0, 0, k, 1};
  g.b = transposedB ? kir::MatrixOperand{1, 0, 0, 1, k} : kir::MatrixOperand{1, 0, 0, n, 1};
  g.out = 2;
  e.steps.push_back(g);
  p.entries.push_back(e);
  return p;
}

static double cpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: gemm_cpu_probe THREADS M N K [T]\n");
    return 2;
  }
  int threads = std::atoi(argv[1]);
  int64_t m = std::atoll(argv[2]), n = std::atoll(argv[3]), k = std::atoll(argv[4]);
  bool bt = argc > 5 && argv[5][0] == 'T';
  if (!hostSupports(Variant::X86_64_V4)) {
    std::fprintf(stderr, "the host cannot run x86-64-v4\n");
    return 1;
  }
  auto c = Compiled::create(program(m, n, k, bt), Variant::X86_64_V4);
  if (!c) {
    std::fprintf(stderr, "%s\n", llvm::toString(c.takeError()).c_str());
    return 1;
  }
  std::vector<float> a(m * k), b(k * n), y(m * n);
  std::mt19937 g(1);
  for (float &x : a)
    x = std::uniform_real_distribution<float>(-1, 1)(g);
  for (float &x : b)
    x = std::uniform_real_distribution<float>(-1, 1)(g);
  TestExec ex(threads);
  const void *in[] = {a.data(), b.data()};
  void *out[] = {y.data()};
  double flops = 2.0 * m * n * k;
  int reps = std::max<int>(1, int(2e9 / flops));
  (*c)->run(0)(&ex.exec, in, out, nullptr);
  std::vector<double> perCpu, wall;
  for (int r = 0; r < 7; ++r) {
    double c0 = cpuSeconds();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i)
      (*c)->run(0)(&ex.exec, in, out, nullptr);
    double w = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    perCpu.push_back(flops * reps * threads / (cpuSeconds() - c0) / 1e9);
    wall.push_back(flops * reps / w / 1e9);
  }
  std::sort(perCpu.begin(), perCpu.end());
  std::sort(wall.begin(), wall.end());
  std::printf("%lld %lld %lld %s  cpu-GF/s %.1f  wall-GF/s %.1f\n", (long long)m, (long long)n,
              (long long)k, bt ? "T" : "N", perCpu[3], wall[3]);
}
