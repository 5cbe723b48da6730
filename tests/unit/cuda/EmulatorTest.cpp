// The emulated CUDA device on hand-written NVPTX IR kernels, checked against known values: block
// reductions through shared memory and barriers (in loops), the caller's rounding mode in
// fibers, warp shuffles and votes (a partial last warp included), dynamic shared memory, atomics
// on global and shared memory across blocks, the tensor cores (mma.sync on tf32, bf16 and f16
// with ldmatrix and cp.async, whose copies land only when waited for); and malformed kernels: an
// unknown intrinsic, a barrier some threads never reach, a mask that leaves its caller out, an
// mma in a partial warp, each one line of error instead of a crash or a hang.
#include "codegen/cuda/emu/Emulator.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <bit>
#include <cfenv>
#include <numeric>
#include <string>
#include <vector>

namespace aotc::cuda::emu {
namespace {

const char *Prelude = R"(
target triple = "nvptx64-nvidia-cuda"
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.laneid()
declare void @llvm.nvvm.barrier0()
declare void @llvm.nvvm.barrier.sync(i32)
declare float @llvm.nvvm.shfl.sync.down.f32(i32, float, i32, i32)
declare i32 @llvm.nvvm.shfl.sync.bfly.i32(i32, i32, i32, i32)
declare i32 @llvm.nvvm.shfl.sync.idx.i32(i32, i32, i32, i32)
declare i32 @llvm.nvvm.shfl.sync.up.i32(i32, i32, i32, i32)
declare i32 @llvm.nvvm.vote.ballot.sync(i32, i1)
declare i1 @llvm.nvvm.vote.all.sync(i32, i1)
declare i1 @llvm.nvvm.vote.any.sync(i32, i1)
)";

/// The kernels of `body` (Prelude before it) loaded on the emulated device.
llvm::Expected<std::unique_ptr<EmulatedModule>> load(const std::string &body) {
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m = llvm::parseAssemblyString(Prelude + body, diag, ctx);
  if (!m) {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    diag.print("kernel", os);
    return llvm::createStringError(msg);
  }
  return EmulatedModule::load(*m);
}

std::unique_ptr<EmulatedModule> loadOrFail(const std::string &body) {
  auto m = load(body);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return nullptr;
  }
  return std::move(*m);
}

/// Launches with one pointer parameter per buffer.
llvm::Error launch(EmulatedModule &m, llvm::StringRef kernel, Dim3 grid, Dim3 block,
                   std::vector<void *> buffers, uint32_t dynamicShared = 0) {
  std::vector<void *> params;
  for (void *&b : buffers)
    params.push_back(&b);
  return m.launch(kernel, grid, block, params, dynamicShared);
}

// A tree sum of each block's inputs in static shared memory, a barrier in every step of the
// loop; thread 0 also counts the block's threads with atomics on a second shared variable,
// reached through a generic pointer (a constant expression over the global).
const char *BlockSum = R"(
@buf = internal addrspace(3) global [64 x float] undef, align 4
@count = internal addrspace(3) global i32 undef, align 4

define void @block_sum(ptr %in, ptr %out, ptr %counts) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %bid, %ntid
  %gi = add i32 %base, %tid
  %gi64 = zext i32 %gi to i64
  %src = getelementptr float, ptr %in, i64 %gi64
  %v = load float, ptr %src
  %tid64 = zext i32 %tid to i64
  %slot = getelementptr [64 x float], ptr addrspace(3) @buf, i64 0, i64 %tid64
  store float %v, ptr addrspace(3) %slot
  %first = icmp eq i32 %tid, 0
  br i1 %first, label %init, label %synced
init:
  store i32 0, ptr addrspace(3) @count
  br label %synced
synced:
  call void @llvm.nvvm.barrier0()
  %old = atomicrmw add ptr addrspacecast (ptr addrspace(3) @count to ptr), i32 1 monotonic
  %half0 = lshr i32 %ntid, 1
  br label %loop
loop:
  %s = phi i32 [ %half0, %synced ], [ %s.next, %cont ]
  %active = icmp ult i32 %tid, %s
  br i1 %active, label %add, label %cont
add:
  %o = add i32 %tid, %s
  %o64 = zext i32 %o to i64
  %p = getelementptr [64 x float], ptr addrspace(3) @buf, i64 0, i64 %o64
  %a = load float, ptr addrspace(3) %slot
  %b = load float, ptr addrspace(3) %p
  %sum = fadd float %a, %b
  store float %sum, ptr addrspace(3) %slot
  br label %cont
cont:
  call void @llvm.nvvm.barrier.sync(i32 0)
  %s.next = lshr i32 %s, 1
  %more = icmp ne i32 %s.next, 0
  br i1 %more, label %loop, label %done
done:
  br i1 %first, label %write, label %exit
write:
  %r = load float, ptr addrspace(3) @buf
  %bid64 = zext i32 %bid to i64
  %dst = getelementptr float, ptr %out, i64 %bid64
  store float %r, ptr %dst
  %n = load i32, ptr addrspace(3) @count
  %cdst = getelementptr i32, ptr %counts, i64 %bid64
  store i32 %n, ptr %cdst
  br label %exit
exit:
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @block_sum, !"kernel", i32 1}
)";

TEST(Emulator, BlockReductionThroughSharedMemory) {
  auto m = loadOrFail(BlockSum);
  ASSERT_TRUE(m);
  for (uint32_t threads : {64u, 16u, 1u}) {
    const uint32_t blocks = 3;
    std::vector<float> in(blocks * threads);
    for (size_t i = 0; i < in.size(); ++i)
      in[i] = float(i % 7) - 2.0f;
    std::vector<float> out(blocks, -1);
    std::vector<int32_t> counts(blocks, -1);
    ASSERT_FALSE(
        launch(*m, "block_sum", {blocks}, {threads}, {in.data(), out.data(), counts.data()}))
        << threads;
    for (uint32_t b = 0; b < blocks; ++b) {
      float want = std::accumulate(in.begin() + b * threads, in.begin() + (b + 1) * threads, 0.0f);
      EXPECT_EQ(out[b], want) << "block " << b << " of " << threads << " threads";
      EXPECT_EQ(counts[b], int32_t(threads));
    }
  }
}

// Each warp sums its lanes' floats with shfl.down (lane 0 holds the sum) and its lanes' indices
// with shfl.bfly (every lane holds it); shfl.idx broadcasts lane 3's value; shfl.up by 1 within
// segments of 8 lanes (c = (32 - 8) << 8) shifts values up, lane 0 of each segment keeping its
// own.
const char *WarpShuffles = R"(
define void @warp_sum(ptr %in, ptr %sums, ptr %xor, ptr %idx, ptr %up) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %lane = call i32 @llvm.nvvm.read.ptx.sreg.laneid()
  %base = mul i32 %bid, %ntid
  %gi = add i32 %base, %tid
  %gi64 = zext i32 %gi to i64
  %src = getelementptr float, ptr %in, i64 %gi64
  %v0 = load float, ptr %src
  %d16 = call float @llvm.nvvm.shfl.sync.down.f32(i32 -1, float %v0, i32 16, i32 31)
  %v1 = fadd float %v0, %d16
  %d8 = call float @llvm.nvvm.shfl.sync.down.f32(i32 -1, float %v1, i32 8, i32 31)
  %v2 = fadd float %v1, %d8
  %d4 = call float @llvm.nvvm.shfl.sync.down.f32(i32 -1, float %v2, i32 4, i32 31)
  %v3 = fadd float %v2, %d4
  %d2 = call float @llvm.nvvm.shfl.sync.down.f32(i32 -1, float %v3, i32 2, i32 31)
  %v4 = fadd float %v3, %d2
  %d1 = call float @llvm.nvvm.shfl.sync.down.f32(i32 -1, float %v4, i32 1, i32 31)
  %v5 = fadd float %v4, %d1
  br label %bfly
bfly:
  %x = phi i32 [ %gi, %entry ], [ %x.next, %bfly ]
  %k = phi i32 [ 16, %entry ], [ %k.next, %bfly ]
  %y = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %x, i32 %k, i32 31)
  %x.next = add i32 %x, %y
  %k.next = lshr i32 %k, 1
  %more = icmp ne i32 %k.next, 0
  br i1 %more, label %bfly, label %rest
rest:
  %i = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 -1, i32 %gi, i32 3, i32 31)
  %u = call i32 @llvm.nvvm.shfl.sync.up.i32(i32 -1, i32 %gi, i32 1, i32 6144)
  %xp = getelementptr i32, ptr %xor, i64 %gi64
  store i32 %x.next, ptr %xp
  %ip = getelementptr i32, ptr %idx, i64 %gi64
  store i32 %i, ptr %ip
  %upp = getelementptr i32, ptr %up, i64 %gi64
  store i32 %u, ptr %upp
  %first = icmp eq i32 %lane, 0
  br i1 %first, label %write, label %exit
write:
  %warp = lshr i32 %gi, 5
  %w64 = zext i32 %warp to i64
  %dst = getelementptr float, ptr %sums, i64 %w64
  store float %v5, ptr %dst
  br label %exit
exit:
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @warp_sum, !"kernel", i32 1}
)";

TEST(Emulator, WarpShuffles) {
  auto m = loadOrFail(WarpShuffles);
  ASSERT_TRUE(m);
  const uint32_t blocks = 2, threads = 64, n = blocks * threads;
  std::vector<float> in(n), sums(n / 32, -1);
  for (uint32_t i = 0; i < n; ++i)
    in[i] = float(i % 5) + 0.5f;
  std::vector<int32_t> xors(n, -1), idx(n, -1), up(n, -1);
  ASSERT_FALSE(launch(*m, "warp_sum", {blocks}, {threads},
                      {in.data(), sums.data(), xors.data(), idx.data(), up.data()}));
  for (uint32_t w = 0; w < n / 32; ++w) {
    EXPECT_EQ(sums[w], std::accumulate(in.begin() + 32 * w, in.begin() + 32 * (w + 1), 0.0f));
    int32_t indexSum = 0;
    for (uint32_t l = 0; l < 32; ++l)
      indexSum += int32_t(32 * w + l);
    for (uint32_t l = 0; l < 32; ++l) {
      uint32_t i = 32 * w + l;
      EXPECT_EQ(xors[i], indexSum) << i;
      EXPECT_EQ(idx[i], int32_t(32 * w + 3)) << i;
      EXPECT_EQ(up[i], int32_t(l % 8 == 0 ? i : i - 1)) << i;
    }
  }
}

// Ballots and votes over a block of 40 threads: the second warp has 8 lanes, and only they vote.
const char *Votes = R"(
define void @votes(ptr %ballots, ptr %flags) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %r = urem i32 %tid, 3
  %p = icmp eq i32 %r, 0
  %b = call i32 @llvm.nvvm.vote.ballot.sync(i32 -1, i1 %p)
  %small = icmp ult i32 %tid, 100
  %all = call i1 @llvm.nvvm.vote.all.sync(i32 -1, i1 %small)
  %is35 = icmp eq i32 %tid, 35
  %any = call i1 @llvm.nvvm.vote.any.sync(i32 -1, i1 %is35)
  %allp = call i1 @llvm.nvvm.vote.all.sync(i32 -1, i1 %p)
  %a = zext i1 %all to i32
  %y = zext i1 %any to i32
  %y2 = shl i32 %y, 1
  %z = zext i1 %allp to i32
  %z2 = shl i32 %z, 2
  %f0 = or i32 %a, %y2
  %f = or i32 %f0, %z2
  %t64 = zext i32 %tid to i64
  %bp = getelementptr i32, ptr %ballots, i64 %t64
  store i32 %b, ptr %bp
  %fp = getelementptr i32, ptr %flags, i64 %t64
  store i32 %f, ptr %fp
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @votes, !"kernel", i32 1}
)";

TEST(Emulator, BallotAndVotesInAPartialWarp) {
  auto m = loadOrFail(Votes);
  ASSERT_TRUE(m);
  const uint32_t threads = 40;
  std::vector<uint32_t> ballots(threads, 0), flags(threads, 9);
  ASSERT_FALSE(launch(*m, "votes", {1}, {threads}, {ballots.data(), flags.data()}));
  for (uint32_t t = 0; t < threads; ++t) {
    uint32_t base = t / 32 * 32, lanes = std::min(32u, threads - base), want = 0;
    for (uint32_t l = 0; l < lanes; ++l)
      if ((base + l) % 3 == 0)
        want |= 1u << l;
    EXPECT_EQ(ballots[t], want) << t;
    // all(tid < 100) holds; any(tid == 35) only in the second warp; all(p) nowhere.
    EXPECT_EQ(flags[t], t >= 32 ? 3u : 1u) << t;
  }
}

// Values rotate through dynamic shared memory five times, two barriers per step of the loop.
const char *Rotate = R"(
@dyn = external addrspace(3) global [0 x i32], align 16

define void @rotate(ptr %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %t64 = zext i32 %tid to i64
  %next = add i32 %tid, 1
  %wrap = urem i32 %next, %ntid
  %n64 = zext i32 %wrap to i64
  %mine = getelementptr [0 x i32], ptr addrspace(3) @dyn, i64 0, i64 %t64
  %theirs = getelementptr [0 x i32], ptr addrspace(3) @dyn, i64 0, i64 %n64
  br label %loop
loop:
  %v = phi i32 [ %tid, %entry ], [ %w, %loop ]
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  store i32 %v, ptr addrspace(3) %mine
  call void @llvm.nvvm.barrier0()
  %w = load i32, ptr addrspace(3) %theirs
  call void @llvm.nvvm.barrier0()
  %i.next = add i32 %i, 1
  %more = icmp ult i32 %i.next, 5
  br i1 %more, label %loop, label %exit
exit:
  %dst = getelementptr i32, ptr %out, i64 %t64
  store i32 %w, ptr %dst
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @rotate, !"kernel", i32 1}
)";

TEST(Emulator, BarriersInALoopOverDynamicSharedMemory) {
  auto m = loadOrFail(Rotate);
  ASSERT_TRUE(m);
  for (uint32_t threads : {7u, 96u}) {
    std::vector<int32_t> out(threads, -1);
    ASSERT_FALSE(launch(*m, "rotate", {2}, {threads}, {out.data()}, threads * 4));
    for (uint32_t t = 0; t < threads; ++t)
      EXPECT_EQ(out[t], int32_t((t + 5) % threads)) << t;
  }
}

// Each thread divides after a barrier. The fibers start with the launching thread's rounding
// mode (here toward zero, as getcontext passed it on) and their switches leave the caller's as it
// was; two blocks of 96 threads: the fibers run the first block's threads, then the second's.
const char *DivideAfterBarrier = R"(
define void @divide(ptr %num, ptr %den, ptr %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %cta = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %first = mul i32 %cta, %ntid
  %i = add i32 %first, %tid
  %idx = zext i32 %i to i64
  %pn = getelementptr float, ptr %num, i64 %idx
  %n = load float, ptr %pn
  call void @llvm.nvvm.barrier0()
  %d = load float, ptr %den
  %q = fdiv float %n, %d
  %po = getelementptr float, ptr %out, i64 %idx
  store float %q, ptr %po
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @divide, !"kernel", i32 1}
)";

TEST(Emulator, FibersRunInTheCallersRoundingMode) {
  auto m = loadOrFail(DivideAfterBarrier);
  ASSERT_TRUE(m);
  const unsigned threads = 96, n = 2 * threads;
  std::vector<float> num(n), out(n, -1);
  std::iota(num.begin(), num.end(), 1.0f);
  float den = 3;
  auto quotient = [&](unsigned i) {
    volatile float a = num[i], b = den;
    return a / b;
  };
  const float nearest = quotient(0);
  ASSERT_EQ(fesetround(FE_TOWARDZERO), 0);
  llvm::Error err = launch(*m, "divide", {2}, {threads}, {num.data(), &den, out.data()});
  const int after = fegetround();
  std::vector<float> expected(n);
  for (unsigned i = 0; i < n; ++i)
    expected[i] = quotient(i);
  fesetround(FE_TONEAREST);
  ASSERT_FALSE(err);
  EXPECT_EQ(after, FE_TOWARDZERO);
  // 1 / 3 rounds differently toward zero: the comparison below can tell the modes apart.
  EXPECT_NE(std::bit_cast<uint32_t>(expected[0]), std::bit_cast<uint32_t>(nearest));
  for (unsigned i = 0; i < n; ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(expected[i])) << i;
}

// atomicAdd of every thread of every block into one counter and one float sum, on the path
// without fibers (no barrier).
const char *Atomics = R"(
define void @count(ptr %counter, ptr %sum) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %old = atomicrmw add ptr %counter, i32 1 monotonic
  %f = uitofp i32 %tid to float
  %olds = atomicrmw fadd ptr %sum, float %f monotonic
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @count, !"kernel", i32 1}
)";

TEST(Emulator, AtomicAddAcrossBlocks) {
  auto m = loadOrFail(Atomics);
  ASSERT_TRUE(m);
  int32_t counter = 5;
  float sum = 0;
  ASSERT_FALSE(launch(*m, "count", {7, 2}, {64}, {&counter, &sum}));
  EXPECT_EQ(counter, 5 + 7 * 2 * 64);
  EXPECT_EQ(sum, 14.0f * (63 * 64 / 2));
}

TEST(Emulator, UnknownIntrinsicIsAOneLineError) {
  auto m = load(R"(
declare i32 @llvm.nvvm.read.ptx.sreg.clock()
define void @k(ptr %out) {
  %c = call i32 @llvm.nvvm.read.ptx.sreg.clock()
  store i32 %c, ptr %out
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @k, !"kernel", i32 1}
)");
  ASSERT_FALSE(m);
  EXPECT_EQ(llvm::toString(m.takeError()),
            "the emulated CUDA device does not implement llvm.nvvm.read.ptx.sreg.clock yet");
}

// Threads 32..63 return without the barrier the first warp waits at: an error, not a hang.
TEST(Emulator, BarrierSomeThreadsNeverReachIsAnError) {
  auto m = loadOrFail(R"(
define void @k(ptr %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %low = icmp ult i32 %tid, 32
  br i1 %low, label %wait, label %exit
wait:
  call void @llvm.nvvm.barrier0()
  store i32 1, ptr %out
  br label %exit
exit:
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @k, !"kernel", i32 1}
)");
  ASSERT_TRUE(m);
  int32_t out = 0;
  llvm::Error err = launch(*m, "k", {2}, {64}, {&out});
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(llvm::toString(std::move(err)),
            "kernel k, block (0, 0, 0): threads 0..31 wait at a barrier that threads 32..63 "
            "exited without reaching");
  EXPECT_EQ(out, 0);
  // The module stays usable: the next launch of a kernel runs normally.
  std::vector<int32_t> rotated(4, -1);
  auto r = loadOrFail(Rotate);
  ASSERT_TRUE(r);
  EXPECT_FALSE(launch(*r, "rotate", {1}, {4}, {rotated.data()}, 16));
  EXPECT_EQ(rotated[0], 1);
}

// A cp.async whose source or destination is not aligned to its size (a misaligned-address fault
// on a GPU) is an error naming the kernel, the block and the thread; the copy does not happen.
// Thread 0 copies 16 bytes from float 0 of the input, thread 1 from float 5 (20 bytes in).
TEST(Emulator, MisalignedCpAsyncIsAnError) {
  auto m = loadOrFail(R"(
@s = internal addrspace(3) global [8 x float] undef, align 16
declare void @llvm.nvvm.cp.async.cg.shared.global.16(ptr addrspace(3), ptr addrspace(1))
declare void @llvm.nvvm.cp.async.commit.group()
declare void @llvm.nvvm.cp.async.wait.group(i32)
define void @k(ptr %in, ptr %out) {
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %t = zext i32 %tid to i64
  %from = mul i64 %t, 5
  %src = getelementptr float, ptr %in, i64 %from
  %gsrc = addrspacecast ptr %src to ptr addrspace(1)
  %to = mul i64 %t, 4
  %dst = getelementptr float, ptr addrspace(3) @s, i64 %to
  call void @llvm.nvvm.cp.async.cg.shared.global.16(ptr addrspace(3) %dst, ptr addrspace(1) %gsrc)
  call void @llvm.nvvm.cp.async.commit.group()
  call void @llvm.nvvm.cp.async.wait.group(i32 0)
  call void @llvm.nvvm.barrier0()
  %v = load float, ptr addrspace(3) %dst
  %o = getelementptr float, ptr %out, i64 %t
  store float %v, ptr %o
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @k, !"kernel", i32 1}
)");
  ASSERT_TRUE(m);
  alignas(16) float in[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  float out[2] = {0, 0};
  llvm::Error err = launch(*m, "k", {1}, {2}, {in, out});
  ASSERT_TRUE(static_cast<bool>(err));
  std::string message = llvm::toString(std::move(err));
  EXPECT_EQ(message.rfind("kernel k, block (0, 0, 0), thread 1: cp.async of 16 bytes from ", 0), 0u)
      << message;
  EXPECT_NE(message.find(": not 16-byte aligned"), std::string::npos) << message;
  // One thread, its copy aligned: it lands.
  alignas(16) float aligned[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  EXPECT_FALSE(launch(*m, "k", {1}, {1}, {aligned, out}));
  EXPECT_EQ(out[0], 1.0f);
}

// A shuffle whose mask leaves out the lane calling it (undefined on a GPU) is an error.
TEST(Emulator, MaskWithoutTheCallerIsAnError) {
  auto m = loadOrFail(R"(
define void @k(ptr %out) {
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %v = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 1, i32 %tid, i32 0, i32 31)
  store i32 %v, ptr %out
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @k, !"kernel", i32 1}
)");
  ASSERT_TRUE(m);
  int32_t out = 0;
  llvm::Error err = launch(*m, "k", {1}, {2}, {&out});
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(llvm::toString(std::move(err)),
            "kernel k, block (0, 0, 0), warp 0: lane 1 calls shfl.sync.idx with mask 0x00000001, "
            "which leaves it out");
}

// The tensor cores, as sm_80 kernels use them: A (16 x 16) and B (16 x 8, k-major rows) of
// 16-bit values copied into shared memory by cp.async, A's fragments loaded by ldmatrix.x4, B's
// by ldmatrix.x2.trans, C's and D's by the fragment layout of PTX's mma.m16n8k16, and one mma.
// @MMA@ is the mma call, for bf16 or f16.
const char *MmaSixteen = R"(
@as = internal addrspace(3) global [256 x i16] undef, align 16
@bs = internal addrspace(3) global [128 x i16] undef, align 16
declare void @llvm.nvvm.cp.async.ca.shared.global.16(ptr addrspace(3), ptr addrspace(1))
declare void @llvm.nvvm.cp.async.cg.shared.global.16(ptr addrspace(3), ptr addrspace(1))
declare void @llvm.nvvm.cp.async.commit.group()
declare void @llvm.nvvm.cp.async.wait.group(i32)
declare {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16(ptr addrspace(3))
declare {i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16(ptr addrspace(3))
declare {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.bf16(i32, i32, i32, i32, i32, i32, float, float, float, float)
declare {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.f32.f32(<2 x half>, <2 x half>, <2 x half>, <2 x half>, <2 x half>, <2 x half>, float, float, float, float)

define void @mma16(ptr %a, ptr %b, ptr %c, ptr %d) {
entry:
  %l = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %l64 = zext i32 %l to i64
  %aoff = mul i64 %l64, 8
  %asrc = getelementptr i16, ptr %a, i64 %aoff
  %asrc1 = addrspacecast ptr %asrc to ptr addrspace(1)
  %adst = getelementptr i16, ptr addrspace(3) @as, i64 %aoff
  call void @llvm.nvvm.cp.async.ca.shared.global.16(ptr addrspace(3) %adst, ptr addrspace(1) %asrc1)
  %lb = and i64 %l64, 15
  %boff = mul i64 %lb, 8
  %bsrc = getelementptr i16, ptr %b, i64 %boff
  %bsrc1 = addrspacecast ptr %bsrc to ptr addrspace(1)
  %bdst = getelementptr i16, ptr addrspace(3) @bs, i64 %boff
  call void @llvm.nvvm.cp.async.cg.shared.global.16(ptr addrspace(3) %bdst, ptr addrspace(1) %bsrc1)
  call void @llvm.nvvm.cp.async.commit.group()
  call void @llvm.nvvm.cp.async.wait.group(i32 0)
  call void @llvm.nvvm.barrier0()
  %r0 = and i64 %l64, 7
  %h = lshr i64 %l64, 3
  %h1 = and i64 %h, 1
  %h8 = mul i64 %h1, 8
  %row = add i64 %r0, %h8
  %q = lshr i64 %l64, 4
  %col = mul i64 %q, 8
  %rowe = mul i64 %row, 16
  %ae = add i64 %rowe, %col
  %ap = getelementptr i16, ptr addrspace(3) @as, i64 %ae
  %af = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16(ptr addrspace(3) %ap)
  %bp = getelementptr i16, ptr addrspace(3) @bs, i64 %boff
  %bf = call {i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16(ptr addrspace(3) %bp)
  %a0 = extractvalue {i32, i32, i32, i32} %af, 0
  %a1 = extractvalue {i32, i32, i32, i32} %af, 1
  %a2 = extractvalue {i32, i32, i32, i32} %af, 2
  %a3 = extractvalue {i32, i32, i32, i32} %af, 3
  %b0 = extractvalue {i32, i32} %bf, 0
  %b1 = extractvalue {i32, i32} %bf, 1
  %g = lshr i64 %l64, 2
  %t = and i64 %l64, 3
  %t2 = mul i64 %t, 2
  %g8 = mul i64 %g, 8
  %o0 = add i64 %g8, %t2
  %o1 = add i64 %o0, 1
  %o2 = add i64 %o0, 64
  %o3 = add i64 %o0, 65
  %cp0 = getelementptr float, ptr %c, i64 %o0
  %cp1 = getelementptr float, ptr %c, i64 %o1
  %cp2 = getelementptr float, ptr %c, i64 %o2
  %cp3 = getelementptr float, ptr %c, i64 %o3
  %c0 = load float, ptr %cp0
  %c1 = load float, ptr %cp1
  %c2 = load float, ptr %cp2
  %c3 = load float, ptr %cp3
@MMA@
  %d0 = extractvalue {float, float, float, float} %r, 0
  %d1 = extractvalue {float, float, float, float} %r, 1
  %d2 = extractvalue {float, float, float, float} %r, 2
  %d3 = extractvalue {float, float, float, float} %r, 3
  %dp0 = getelementptr float, ptr %d, i64 %o0
  %dp1 = getelementptr float, ptr %d, i64 %o1
  %dp2 = getelementptr float, ptr %d, i64 %o2
  %dp3 = getelementptr float, ptr %d, i64 %o3
  store float %d0, ptr %dp0
  store float %d1, ptr %dp1
  store float %d2, ptr %dp2
  store float %d3, ptr %dp3
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @mma16, !"kernel", i32 1}
)";

const char *MmaBf16 = "  %r = call {float, float, float, float} "
                      "@llvm.nvvm.mma.m16n8k16.row.col.bf16(i32 %a0, i32 %a1, i32 %a2, i32 %a3, "
                      "i32 %b0, i32 %b1, float %c0, float %c1, float %c2, float %c3)";
const char *MmaF16 = R"(  %ha0 = bitcast i32 %a0 to <2 x half>
  %ha1 = bitcast i32 %a1 to <2 x half>
  %ha2 = bitcast i32 %a2 to <2 x half>
  %ha3 = bitcast i32 %a3 to <2 x half>
  %hb0 = bitcast i32 %b0 to <2 x half>
  %hb1 = bitcast i32 %b1 to <2 x half>
  %r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.f32.f32(<2 x half> %ha0, <2 x half> %ha1, <2 x half> %ha2, <2 x half> %ha3, <2 x half> %hb0, <2 x half> %hb1, float %c0, float %c1, float %c2, float %c3))";

std::string withMma(const char *call) {
  std::string ir = MmaSixteen;
  ir.replace(ir.find("@MMA@"), 5, call);
  return ir;
}

// Small integers and halves, exact in bf16 and f16: bf16 is f32's upper half; f16 has a 5-bit
// exponent biased by 15 and 10 mantissa bits.
uint16_t toBf16(float x) { return uint16_t(std::bit_cast<uint32_t>(x) >> 16); }
uint16_t toF16(float x) {
  if (x == 0)
    return 0;
  uint32_t bits = std::bit_cast<uint32_t>(x);
  uint32_t sign = bits >> 31, exp = (bits >> 23) & 0xff, man = bits & 0x7fffff;
  return uint16_t(sign << 15 | (exp - 112) << 10 | man >> 13);
}

void checkMma16(const char *call, uint16_t (*encode)(float)) {
  auto m = loadOrFail(withMma(call));
  ASSERT_TRUE(m);
  // A (16 x 16) and B (16 x 8) row-major, C and D (16 x 8) row-major.
  std::vector<float> a(256), b(128), c(128), d(128, -1);
  std::vector<uint16_t> a16(256), b16(128);
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 16; ++k)
      a[i * 16 + k] = float((i * 5 + k * 3) % 9 - 4) * 0.5f;
  for (int k = 0; k < 16; ++k)
    for (int j = 0; j < 8; ++j)
      b[k * 8 + j] = float((k * 7 + j * 2) % 5 - 2);
  for (int i = 0; i < 128; ++i)
    c[i] = float(i % 11) - 5.25f;
  for (int i = 0; i < 256; ++i)
    a16[i] = encode(a[i]);
  for (int i = 0; i < 128; ++i)
    b16[i] = encode(b[i]);
  ASSERT_FALSE(launch(*m, "mma16", {1}, {32}, {a16.data(), b16.data(), c.data(), d.data()}));
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      float want = c[i * 8 + j];
      for (int k = 0; k < 16; ++k)
        want += a[i * 16 + k] * b[k * 8 + j];
      EXPECT_EQ(d[i * 8 + j], want) << i << ", " << j;
    }
}

TEST(Emulator, TensorCoresBf16ThroughCpAsyncAndLdmatrix) { checkMma16(MmaBf16, toBf16); }
TEST(Emulator, TensorCoresF16ThroughCpAsyncAndLdmatrix) { checkMma16(MmaF16, toF16); }

// mma.m16n8k8 on tf32: every lane reads its A, B and C fragments from global memory by PTX's
// layout (A: rows g and g + 8, columns t and t + 4; B: rows t and t + 4, column g), rounds A and
// B to tf32 (cvt.rna), and stores D; its block size is a parameter of the test.
const char *MmaTf32 = R"(
declare {float, float, float, float} @llvm.nvvm.mma.m16n8k8.row.col.tf32(i32, i32, i32, i32, i32, i32, float, float, float, float)
declare i32 @llvm.nvvm.f2tf32.rna(float)

define i32 @tf32at(ptr %m, i64 %row, i64 %rowlen, i64 %col) {
  %r = mul i64 %row, %rowlen
  %o = add i64 %r, %col
  %p = getelementptr float, ptr %m, i64 %o
  %v = load float, ptr %p
  %t = call i32 @llvm.nvvm.f2tf32.rna(float %v)
  ret i32 %t
}

define void @mma_tf32(ptr %a, ptr %b, ptr %c, ptr %d, ptr %rounded) {
entry:
  %l = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %l64 = zext i32 %l to i64
  %lane = and i64 %l64, 31
  %g = lshr i64 %lane, 2
  %t = and i64 %lane, 3
  %g8 = add i64 %g, 8
  %t4 = add i64 %t, 4
  %a0 = call i32 @tf32at(ptr %a, i64 %g, i64 8, i64 %t)
  %a1 = call i32 @tf32at(ptr %a, i64 %g8, i64 8, i64 %t)
  %a2 = call i32 @tf32at(ptr %a, i64 %g, i64 8, i64 %t4)
  %a3 = call i32 @tf32at(ptr %a, i64 %g8, i64 8, i64 %t4)
  %b0 = call i32 @tf32at(ptr %b, i64 %t, i64 8, i64 %g)
  %b1 = call i32 @tf32at(ptr %b, i64 %t4, i64 8, i64 %g)
  %rp = getelementptr i32, ptr %rounded, i64 %l64
  store i32 %a0, ptr %rp
  %t2 = mul i64 %t, 2
  %row = mul i64 %g, 8
  %o0 = add i64 %row, %t2
  %o1 = add i64 %o0, 1
  %o2 = add i64 %o0, 64
  %o3 = add i64 %o0, 65
  %cp0 = getelementptr float, ptr %c, i64 %o0
  %cp1 = getelementptr float, ptr %c, i64 %o1
  %cp2 = getelementptr float, ptr %c, i64 %o2
  %cp3 = getelementptr float, ptr %c, i64 %o3
  %c0 = load float, ptr %cp0
  %c1 = load float, ptr %cp1
  %c2 = load float, ptr %cp2
  %c3 = load float, ptr %cp3
  %r = call {float, float, float, float} @llvm.nvvm.mma.m16n8k8.row.col.tf32(i32 %a0, i32 %a1, i32 %a2, i32 %a3, i32 %b0, i32 %b1, float %c0, float %c1, float %c2, float %c3)
  %d0 = extractvalue {float, float, float, float} %r, 0
  %d1 = extractvalue {float, float, float, float} %r, 1
  %d2 = extractvalue {float, float, float, float} %r, 2
  %d3 = extractvalue {float, float, float, float} %r, 3
  %dp0 = getelementptr float, ptr %d, i64 %o0
  %dp1 = getelementptr float, ptr %d, i64 %o1
  %dp2 = getelementptr float, ptr %d, i64 %o2
  %dp3 = getelementptr float, ptr %d, i64 %o3
  store float %d0, ptr %dp0
  store float %d1, ptr %dp1
  store float %d2, ptr %dp2
  store float %d3, ptr %dp3
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @mma_tf32, !"kernel", i32 1}
)";

TEST(Emulator, TensorCoresTf32RoundNearestTiesAway) {
  auto m = loadOrFail(MmaTf32);
  ASSERT_TRUE(m);
  // 1 + 2^-11 lies halfway between the tf32 values 1 and 1 + 2^-10: cvt.rna rounds it away
  // from zero; 1 + 2^-12 rounds down; the products of tf32 values are exact in f32.
  const float half = 1 + 0x1p-11f, below = 1 + 0x1p-12f;
  std::vector<float> a(128), b(64), c(128), d(128, -1);
  for (int i = 0; i < 128; ++i)
    a[i] = i % 3 == 0 ? half : i % 3 == 1 ? -below : float(i % 7 - 3);
  for (int i = 0; i < 64; ++i)
    b[i] = float(i % 5 - 2) * 0.25f;
  for (int i = 0; i < 128; ++i)
    c[i] = float(i % 4) * 0.5f;
  auto tf32 = [&](float x) { return x == half ? 1 + 0x1p-10f : x == -below ? -1.0f : x; };
  std::vector<int32_t> rounded(32);
  ASSERT_FALSE(
      launch(*m, "mma_tf32", {1}, {32}, {a.data(), b.data(), c.data(), d.data(), rounded.data()}));
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      double want = c[i * 8 + j];
      for (int k = 0; k < 8; ++k)
        want += double(tf32(a[i * 8 + k])) * tf32(b[k * 8 + j]);
      EXPECT_EQ(d[i * 8 + j], float(want)) << i << ", " << j;
    }
  // Lane 0's a0 is A[0][0] = 1 + 2^-11, lane 1's is A[0][1] = -(1 + 2^-12).
  EXPECT_EQ(std::bit_cast<float>(rounded[0]), 1 + 0x1p-10f);
  EXPECT_EQ(std::bit_cast<float>(rounded[1]), -1.0f);
}

// An mma needs all 32 lanes of its warp: in a block of 40 threads the second warp has 8.
TEST(Emulator, TensorCoresInAPartialWarpAreAnError) {
  auto m = loadOrFail(MmaTf32);
  ASSERT_TRUE(m);
  std::vector<float> a(128, 1), b(64, 1), c(128, 0), d(128);
  std::vector<int32_t> rounded(40);
  llvm::Error err =
      launch(*m, "mma_tf32", {1}, {40}, {a.data(), b.data(), c.data(), d.data(), rounded.data()});
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(llvm::toString(std::move(err)),
            "kernel mma_tf32, block (0, 0, 0), warp 1: mma.sync.aligned needs every lane of a "
            "full warp, and lanes 8..31 have exited or lie past the block's end");
}

// cp.async lands when a wait completes its group, not before: each thread reads its shared slot
// before any wait (the old value), after wait_group 1 (the first group landed, the second not),
// and after wait_all; a zero-filling copy with source size 0 writes zeros.
const char *CpAsync = R"(
@x = internal addrspace(3) global [64 x i32] undef, align 16
@y = internal addrspace(3) global [64 x i32] undef, align 16
declare void @llvm.nvvm.cp.async.ca.shared.global.4(ptr addrspace(3), ptr addrspace(1))
declare void @llvm.nvvm.cp.async.ca.shared.global.4.s(ptr addrspace(3), ptr addrspace(1), i32)
declare void @llvm.nvvm.cp.async.commit.group()
declare void @llvm.nvvm.cp.async.wait.group(i32)
declare void @llvm.nvvm.cp.async.wait.all()

define void @copies(ptr %src, ptr %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %t64 = zext i32 %tid to i64
  %xs = getelementptr i32, ptr addrspace(3) @x, i64 %t64
  %ys = getelementptr i32, ptr addrspace(3) @y, i64 %t64
  store i32 -1, ptr addrspace(3) %xs
  store i32 -2, ptr addrspace(3) %ys
  call void @llvm.nvvm.barrier0()
  %s = getelementptr i32, ptr %src, i64 %t64
  %s1 = addrspacecast ptr %s to ptr addrspace(1)
  call void @llvm.nvvm.cp.async.ca.shared.global.4(ptr addrspace(3) %xs, ptr addrspace(1) %s1)
  call void @llvm.nvvm.cp.async.commit.group()
  %odd = and i32 %tid, 1
  %size = mul i32 %odd, 4
  call void @llvm.nvvm.cp.async.ca.shared.global.4.s(ptr addrspace(3) %ys, ptr addrspace(1) %s1, i32 %size)
  call void @llvm.nvvm.cp.async.commit.group()
  %r0 = load i32, ptr addrspace(3) %xs
  call void @llvm.nvvm.cp.async.wait.group(i32 1)
  %r1 = load i32, ptr addrspace(3) %xs
  %r2 = load i32, ptr addrspace(3) %ys
  call void @llvm.nvvm.cp.async.wait.all()
  %r3 = load i32, ptr addrspace(3) %ys
  %o = mul i64 %t64, 4
  %p0 = getelementptr i32, ptr %out, i64 %o
  store i32 %r0, ptr %p0
  %p1 = getelementptr i32, ptr %p0, i64 1
  store i32 %r1, ptr %p1
  %p2 = getelementptr i32, ptr %p0, i64 2
  store i32 %r2, ptr %p2
  %p3 = getelementptr i32, ptr %p0, i64 3
  store i32 %r3, ptr %p3
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @copies, !"kernel", i32 1}
)";

TEST(Emulator, CpAsyncLandsWhenItsGroupIsWaitedFor) {
  auto m = loadOrFail(CpAsync);
  ASSERT_TRUE(m);
  std::vector<int32_t> src(64), out(256, 7);
  std::iota(src.begin(), src.end(), 100);
  ASSERT_FALSE(launch(*m, "copies", {1}, {64}, {src.data(), out.data()}));
  for (int t = 0; t < 64; ++t) {
    EXPECT_EQ(out[t * 4], -1) << t;
    EXPECT_EQ(out[t * 4 + 1], 100 + t) << t;
    EXPECT_EQ(out[t * 4 + 2], -2) << t;
    EXPECT_EQ(out[t * 4 + 3], t % 2 ? 100 + t : 0) << t;
  }
}

} // namespace
} // namespace aotc::cuda::emu
