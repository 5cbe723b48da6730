// The CUDA target description: arch facts, the default list, and --cuda-arch parsing.
#include "codegen/cuda/CudaTarget.h"

#include <gtest/gtest.h>

namespace aotc::cuda {
namespace {

TEST(CudaTarget, ArchFacts) {
  for (const ArchInfo &a : cudaArchs()) {
    EXPECT_EQ(&archInfo(a.arch), &a);
    EXPECT_EQ(a.warpSize, 32u);
    EXPECT_EQ(a.maxThreadsPerBlock, 1024u);
    EXPECT_GE(a.sharedPerBlockOptIn, a.sharedPerBlock);
  }
  EXPECT_EQ(archInfo(CudaArch::SM90a).computeCapability, 90u);
  EXPECT_EQ(archInfo(CudaArch::SM90a).ptxVersion, 80u);
  EXPECT_EQ(loweringTarget().backend, "CUDA");
  EXPECT_EQ(loweringTarget().winogradMinOutChannels, 0);
}

TEST(CudaTarget, ParseArchs) {
  auto two = parseCudaArchs("sm_90,sm_80,sm_90");
  ASSERT_TRUE(static_cast<bool>(two)) << llvm::toString(two.takeError());
  EXPECT_EQ(*two, (llvm::SmallVector<CudaArch, 5>{CudaArch::SM80, CudaArch::SM90}));
  EXPECT_EQ(defaultCudaArchs(), (llvm::SmallVector<CudaArch, 5>{CudaArch::SM80, CudaArch::SM86,
                                                                CudaArch::SM89, CudaArch::SM90}));
  for (const char *bad : {"sm_10", "foo", "sm_80,", ""}) {
    auto r = parseCudaArchs(bad);
    ASSERT_FALSE(static_cast<bool>(r)) << bad;
    std::string msg = llvm::toString(r.takeError());
    EXPECT_NE(msg.find("valid: sm_80, sm_86, sm_89, sm_90, sm_90a"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
}

// StaticSharedLimit and OptInSharedLimit are the least of every arch's (the tiles' checks hold
// on each), and every tensor-core GEMM's stages fit the second, the static ones the first.
TEST(CudaTarget, SharedLimitsHoldOnEveryArch) {
  unsigned fixed = ~0u, optIn = ~0u;
  for (const ArchInfo &a : cudaArchs()) {
    fixed = std::min(fixed, a.sharedPerBlock);
    optIn = std::min(optIn, a.sharedPerBlockOptIn);
  }
  EXPECT_EQ(fixed, StaticSharedLimit);
  EXPECT_EQ(optIn, OptInSharedLimit);
  for (const MmaGemmTiles &t : {TensorCoreGemmTiles, HalfTensorCoreGemmTiles, AsyncHalfGemmTiles,
                                AsyncHalfFewGemmTiles, ConvTensorCoreGemmTiles}) {
    EXPECT_LE(t.sharedBytes(), t.dynamicShared() ? OptInSharedLimit : StaticSharedLimit);
    EXPECT_LE(t.threads(), 1024u);
  }
  EXPECT_TRUE(AsyncHalfGemmTiles.dynamicShared());
  EXPECT_FALSE(TensorCoreGemmTiles.dynamicShared());
}

// The GEMM tiles fit every arch's block (threads, static shared memory) and the block's threads
// load whole tiles: the kernel assumes both.
TEST(CudaTarget, GemmTilesFitEveryArch) {
  std::vector<GemmTiles> tiles(std::begin(CudaCoreGemmTiles), std::end(CudaCoreGemmTiles));
  tiles.insert(tiles.end(), std::begin(CudaCoreConvTiles), std::end(CudaCoreConvTiles));
  for (const GemmTiles &t : tiles) {
    EXPECT_EQ(t.blockM % t.threadM, 0u);
    EXPECT_EQ(t.blockN % t.threadN, 0u);
    EXPECT_EQ(t.blockM * t.blockK % t.threads(), 0u);
    EXPECT_EQ(t.blockK * t.blockN % t.threads(), 0u);
    EXPECT_EQ(t.threads() % 32, 0u);
    // Whole 16-byte vectors of a thread's rows and columns, each group a whole number of them.
    EXPECT_TRUE(t.threadM <= 4 || t.threadM % 4 == 0);
    EXPECT_TRUE(t.threadN <= 4 || t.threadN % 4 == 0);
    for (const ArchInfo &a : cudaArchs()) {
      EXPECT_LE(t.threads(), a.maxThreadsPerBlock) << a.name.str();
      EXPECT_LE(t.sharedBytes(), a.sharedPerBlock) << a.name.str();
    }
  }
}

} // namespace
} // namespace aotc::cuda
