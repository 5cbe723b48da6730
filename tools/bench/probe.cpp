// The machine's limits that the benchmark table is read against: the f32 FMA peak (AVX-512 and
// AVX2, on N threads) and the memory bandwidth of a copy and of a read, in one short run. With
// --core-to-core: the round trip of a cache line between the first two CPUs this process may
// run on, which tells where a VM's host put its vCPUs (the same core complex or far apart).
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

// Independent FMA chains: more than latency x throughput, fewer than the registers (AVX2 has 16
// ymm registers, two of them taken by the operands: 16 chains would spill and halve its peak).
constexpr int Accumulators = 16, Accumulators256 = 12;

__attribute__((target("avx512f"))) float fmaLoop512(long iterations) {
  __m512 acc[Accumulators];
  for (int i = 0; i < Accumulators; ++i)
    acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long n = 0; n < iterations; ++n) {
    // Fully unrolled so that the accumulators live in registers, not on the stack.
#pragma GCC unroll 16
    for (int i = 0; i < Accumulators; ++i)
      acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < Accumulators; ++i)
    sum = _mm512_add_ps(sum, acc[i]);
  // Not _mm512_reduce_add_ps: g++ 12's header trips -Wuninitialized on it.
  float out[16];
  _mm512_storeu_ps(out, sum);
  return out[0] + out[15];
}

__attribute__((target("avx2,fma"))) float fmaLoop256(long iterations) {
  __m256 acc[Accumulators256];
  for (int i = 0; i < Accumulators256; ++i)
    acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long n = 0; n < iterations; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < Accumulators256; ++i)
      acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  float out[8];
  __m256 sum = acc[0];
  for (int i = 1; i < Accumulators256; ++i)
    sum = _mm256_add_ps(sum, acc[i]);
  _mm256_storeu_ps(out, sum);
  return out[0] + out[7];
}

__attribute__((target("avx512f"))) void copy512(const float *in, float *out, size_t n) {
  for (size_t i = 0; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_loadu_ps(in + i));
}

template <typename Fn> double seconds(Fn fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Runs `work(thread)` on `threads` threads and returns the wall time, best of `repeats`.
template <typename Fn> double bestParallel(int threads, int repeats, Fn work) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r)
    best = std::min(best, seconds([&] {
                      std::vector<std::thread> pool;
                      for (int t = 0; t < threads; ++t)
                        pool.emplace_back([&, t] { work(t); });
                      for (auto &th : pool)
                        th.join();
                    }));
  return best;
}

volatile float Sink;

bool pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// Nanoseconds for one line to go to the other CPU and back, median of 5 runs; negative where the
// process may not run on two CPUs.
double coreToCore() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2)
    return -1;
  int cpus[2], found = 0;
  for (int c = 0; c < CPU_SETSIZE && found < 2; ++c)
    if (CPU_ISSET(c, &allowed))
      cpus[found++] = c;
  constexpr long Trips = 100'000;
  std::vector<double> runs;
  for (int r = 0; r < 5; ++r) {
    alignas(64) std::atomic<long> flag{0};
    std::thread other([&] {
      pinTo(cpus[1]);
      for (long i = 1; i < 2 * Trips; i += 2) {
        while (flag.load(std::memory_order_acquire) != i)
          ;
        flag.store(i + 1, std::memory_order_release);
      }
    });
    pinTo(cpus[0]);
    double s = seconds([&] {
      for (long i = 0; i < 2 * Trips; i += 2) {
        flag.store(i + 1, std::memory_order_release);
        while (flag.load(std::memory_order_acquire) != i + 2)
          ;
      }
    });
    other.join();
    runs.push_back(s / Trips * 1e9);
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "--core-to-core") == 0) {
    std::printf("core_to_core_ns %.1f\n", coreToCore());
    return 0;
  }
  int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const long iterations = 20'000'000;
  double flopsPerRun = 2.0 * 16 * Accumulators * iterations * threads;
  double t512 = bestParallel(threads, 5, [&](int) { Sink = fmaLoop512(iterations); });
  double flops256 = 2.0 * 8 * Accumulators256 * iterations * threads;
  double t256 = bestParallel(threads, 5, [&](int) { Sink = fmaLoop256(iterations); });

  const size_t bytes = size_t(256) << 20; // per array, far past the caches
  char *src = static_cast<char *>(std::aligned_alloc(64, bytes));
  char *dst = static_cast<char *>(std::aligned_alloc(64, bytes));
  std::memset(src, 1, bytes);
  std::memset(dst, 0, bytes);
  size_t chunk = bytes / threads;
  // The better of memcpy (non-temporal stores for large sizes) and a copy with AVX-512 loads and
  // stores, which is what generated kernels do (a plain loop would be turned into memcpy).
  double tCopy = bestParallel(threads, 5,
                              [&](int t) { std::memcpy(dst + t * chunk, src + t * chunk, chunk); });
  tCopy = std::min(tCopy, bestParallel(threads, 5, [&](int t) {
                     copy512(reinterpret_cast<const float *>(src + t * chunk),
                             reinterpret_cast<float *>(dst + t * chunk), chunk / sizeof(float));
                   }));
  double tRead = bestParallel(threads, 5, [&](int t) {
    const long *p = reinterpret_cast<const long *>(src + t * chunk);
    long s = 0;
    for (size_t i = 0; i < chunk / sizeof(long); i += 8)
      s += p[i] + p[i + 1] + p[i + 2] + p[i + 3] + p[i + 4] + p[i + 5] + p[i + 6] + p[i + 7];
    Sink = static_cast<float>(s);
  });
  std::printf("threads %d\n", threads);
  std::printf("fma_peak_avx512_gflops %.1f\n", flopsPerRun / t512 / 1e9);
  std::printf("fma_peak_avx2_gflops %.1f\n", flops256 / t256 / 1e9);
  std::printf("copy_bandwidth_gbs %.2f\n", 2.0 * bytes / tCopy / 1e9);
  std::printf("read_bandwidth_gbs %.2f\n", 1.0 * bytes / tRead / 1e9);
  std::free(src);
  std::free(dst);
  return 0;
}
