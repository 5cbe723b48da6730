// The weights hash (runtime/src/hash.h), the one C definition the runtime and the compiler share:
// it is XXH64, it does not depend on how the bytes are fed, and hashBlob() hashes exactly the
// bytes writeBlob() writes. Also prints its speed (a rough figure; benchmarks own timings).
#include "package/BlobObject.h"
#include "runtime/src/hash.h"

#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

using namespace aotc;

namespace {

std::vector<uint8_t> randomBytes(size_t n, std::mt19937_64 &rng) {
  std::vector<uint8_t> out(n);
  for (uint8_t &b : out)
    b = static_cast<uint8_t>(rng());
  return out;
}

TEST(WeightsHash, IsXXH64) {
  EXPECT_EQ(aotc_hash64("", 0), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(aotc_hash64("abc", 3), 0x44BC2CF5AD770999ull);
  std::mt19937_64 rng(1);
  // Every tail length and a few stripes, against LLVM's own XXH64.
  for (size_t n = 0; n < 300; ++n) {
    std::vector<uint8_t> bytes = randomBytes(n, rng);
    EXPECT_EQ(aotc_hash64(bytes.data(), n), llvm::xxHash64(bytes)) << n << " bytes";
  }
}

TEST(WeightsHash, PiecesDoNotMatter) {
  std::mt19937_64 rng(2);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint8_t> bytes = randomBytes(rng() % 2000, rng);
    aotc_hash_state s;
    aotc_hash_init(&s);
    for (size_t at = 0; at < bytes.size();) {
      size_t n = std::min<size_t>(rng() % 70, bytes.size() - at);
      aotc_hash_update(&s, bytes.data() + at, n);
      at += n;
    }
    EXPECT_EQ(aotc_hash_final(&s), aotc_hash64(bytes.data(), bytes.size()));
  }
}

TEST(WeightsHash, HashBlobHashesWhatWriteBlobWrites) {
  std::mt19937_64 rng(3);
  std::vector<uint8_t> a = randomBytes(1000, rng), b = randomBytes(77, rng);
  std::vector<BlobPiece> pieces = {{64, a}, {1088, b}};
  std::string written;
  llvm::raw_string_ostream os(written);
  writeBlob(os, pieces, 4096);
  os.flush();
  ASSERT_EQ(written.size(), 4096u);
  EXPECT_EQ(hashBlob(pieces, 4096), aotc_hash64(written.data(), written.size()));
  // One byte of one weight changes it.
  a[500] ^= 1;
  EXPECT_NE(hashBlob(pieces, 4096), aotc_hash64(written.data(), written.size()));
}

TEST(WeightsHash, Speed) {
  std::mt19937_64 rng(4);
  std::vector<uint8_t> bytes = randomBytes(64 << 20, rng);
  uint64_t h = aotc_hash64(bytes.data(), bytes.size()); // warm
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i)
    h ^= aotc_hash64(bytes.data(), bytes.size());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("aotc_hash64: %.1f GB/s over 64 MiB (h %016llx)\n", 4 * 64.0 * (1 << 20) / s / 1e9,
              static_cast<unsigned long long>(h));
}

} // namespace
