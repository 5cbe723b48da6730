// The emulated device's threads: runtime functions, sequential blocks, and fibers with their
// scheduler (barriers, warp shuffles and votes).
#include "codegen/cuda/emu/BlockRunner.h"

#include "fmt/format.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#if defined(__SANITIZE_ADDRESS__)
#define AOTC_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AOTC_EMU_ASAN 1
#endif
#endif
#ifdef AOTC_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

// Fibers switch stacks in a few instructions, not with swapcontext: glibc's makes a
// sigprocmask system call and saves the whole x87 environment at every switch, and ASan's
// interceptor of it clears the shadow of the whole stack it switches to (64 KiB at every switch
// into a fiber). `aotc verify` of the bf16 MLP on the emulated device (docs/cuda.md) took 12.8 s
// with it, 5.2 now; 265 s and 31 in the sanitizer build. aotc_emu_switch(from, to) pushes the
// callee-saved registers, MXCSR and the x87 control word, stores the stack pointer into *from and
// resumes the stack `to` that an earlier switch (or startStack) left in the same state.
#if !defined(__x86_64__)
#error "the emulated CUDA device's fibers switch x86-64 stacks"
#endif
extern "C" __attribute__((visibility("hidden"))) void aotc_emu_switch(void **from, void *to);
asm(R"(
  .pushsection .text
  .p2align 4
  .hidden aotc_emu_switch
  .type aotc_emu_switch, @function
aotc_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size aotc_emu_switch, .-aotc_emu_switch
  .popsection
)");

namespace aotc::cuda::emu {

using namespace llvm;

namespace {

// The emulated thread running on this OS thread: the scheduler sets it before each switch into
// a fiber, the sequential path before each thread.
thread_local ThreadContext *Current = nullptr;

constexpr unsigned WarpSize = 32;

uint32_t linearTid(const ThreadContext &t) {
  return t.tid.x + t.ntid.x * (t.tid.y + t.ntid.y * t.tid.z);
}

uint32_t aotcEmuSreg(uint32_t which) {
  if (which == SregLaneId)
    return linearTid(*Current) % WarpSize;
  if (which == SregWarpSize)
    return WarpSize;
  const Dim3 *d[] = {&Current->tid, &Current->ntid, &Current->ctaid, &Current->nctaid};
  const Dim3 &v = *d[which / 3];
  return which % 3 == 0 ? v.x : which % 3 == 1 ? v.y : v.z;
}

uint8_t *aotcEmuShared() { return Current->shared; }

// ASan must know which stack runs (its fake stacks and stack bounds); without it these are no-ops.
void startSwitch(void **fakeStackSave, const void *bottom, size_t size) {
#ifdef AOTC_EMU_ASAN
  __sanitizer_start_switch_fiber(fakeStackSave, bottom, size);
#else
  (void)fakeStackSave, (void)bottom, (void)size;
#endif
}
void finishSwitch(void *fakeStack, const void **bottomOld, size_t *sizeOld) {
#ifdef AOTC_EMU_ASAN
  __sanitizer_finish_switch_fiber(fakeStack, bottomOld, sizeOld);
#else
  (void)fakeStack, (void)bottomOld, (void)sizeOld;
#endif
}

// A stack [bottom, bottom + size) that the first switch to enters `entry` on, as if called, with
// this thread's floating-point control state; `entry` must never return. Returns its pointer.
void *startStack(char *bottom, size_t size, void (*entry)()) {
  auto *top =
      reinterpret_cast<uint64_t *>(reinterpret_cast<uintptr_t>(bottom + size) & ~uintptr_t(15));
  uint32_t mxcsr;
  uint16_t fcw;
  asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(mxcsr), "=m"(fcw));
  uint64_t *sp = top - 9;
  sp[0] = uint64_t(mxcsr) | uint64_t(fcw) << 32; // aotc_emu_switch's 8 bytes of control state
  std::fill(sp + 1, sp + 7, 0);                  // r15, r14, r13, r12, rbx, rbp
  sp[7] = reinterpret_cast<uint64_t>(entry);     // its return address
  sp[8] = 0; // entry's return address (none: backtraces end here); its rsp is 8 mod 16
  return sp;
}

} // namespace

/// A cp.async copy not yet complete: `group` is the number of commits before it was issued, so
/// that it belongs to the group the next commit closes.
struct PendingCopy {
  uint8_t *dst;
  const uint8_t *src;
  uint32_t bytes, srcBytes, group;
};

struct BlockRunner::Fiber {
  enum class State : uint8_t { Ready, Barrier, Warp, Done };
  void *sp = nullptr; // its stack pointer while switched out
  ThreadContext thread;
  State state = State::Ready;
  // The warp collective it waits in, and its result once released; a matrix collective's
  // operands and results through `in` and `out`.
  WarpOp op = WarpOp::All;
  uint32_t mask = 0, value = 0, b = 0, c = 0, result = 0;
  const void *in = nullptr;
  void *out = nullptr;
  // Its cp.async copies that no wait has completed yet, and how many groups it committed.
  SmallVector<PendingCopy, 16> copies;
  uint32_t commits = 0;
  // Its first cp.async whose addresses are not aligned to its size (a fault on a GPU): the
  // block's run ends with an error naming it.
  std::string fault;
  char *stack = nullptr;
  void *fakeStack = nullptr; // ASan's, while switched out
  bool quit = false;         // set when its runner ends: the fiber returns from its last yield
};

namespace {

// Completes the copies of every committed group but the `keep` most recent ones.
void completeCopies(BlockRunner::Fiber &f, uint32_t keep) {
  uint32_t below = f.commits > keep ? f.commits - keep : 0;
  auto done = [&](const PendingCopy &c) {
    if (c.group >= below)
      return false;
    std::memcpy(c.dst, c.src, c.srcBytes);
    std::memset(c.dst + c.srcBytes, 0, c.bytes - c.srcBytes);
    return true;
  };
  f.copies.erase(std::remove_if(f.copies.begin(), f.copies.end(), done), f.copies.end());
}

} // namespace

// What a fiber's runtime calls and entry need of the runner that schedules it.
struct FiberAccess {
  struct Scheduler {
    void *sp = nullptr;           // the scheduler's stack pointer while a fiber runs
    const void *bottom = nullptr; // the scheduler's stack, for ASan
    size_t size = 0;
    void *fakeStack = nullptr;
    Trampoline entry = nullptr;
    void *const *params = nullptr;
  };
  static thread_local Scheduler Sched;

  static BlockRunner::Fiber &current() {
    return *static_cast<BlockRunner::Fiber *>(Current->fiber);
  }

  // Back to the scheduler until the fiber is released.
  static void yield(BlockRunner::Fiber &f) {
    startSwitch(&f.fakeStack, Sched.bottom, Sched.size);
    aotc_emu_switch(&f.sp, Sched.sp);
    finishSwitch(f.fakeStack, &Sched.bottom, &Sched.size);
  }

  // A fiber runs its thread of one block after another, from the runner's start to its end, so
  // that ASan makes one fake stack a fiber, not one a thread of each block. A fiber started again
  // after a deadlock takes back the fake stack it had.
  static void start() {
    BlockRunner::Fiber &f = current();
    finishSwitch(f.fakeStack, &Sched.bottom, &Sched.size);
    while (!f.quit) {
      Sched.entry(Sched.params);
      // Copies a thread never waited for still land (on a GPU, before the grid completes).
      f.commits += 1;
      completeCopies(f, 0);
      f.state = BlockRunner::Fiber::State::Done;
      yield(f);
    }
    // No fake stack to keep (ASan frees it): this fiber never runs again.
    startSwitch(nullptr, Sched.bottom, Sched.size);
    aotc_emu_switch(&f.sp, Sched.sp);
    __builtin_unreachable();
  }
};
thread_local FiberAccess::Scheduler FiberAccess::Sched;

namespace {

void aotcEmuBarrier() {
  BlockRunner::Fiber &f = FiberAccess::current();
  f.state = BlockRunner::Fiber::State::Barrier;
  FiberAccess::yield(f);
}

uint32_t warpCollective(WarpOp op, uint32_t mask, uint32_t value, uint32_t b, uint32_t c) {
  BlockRunner::Fiber &f = FiberAccess::current();
  f.state = BlockRunner::Fiber::State::Warp;
  f.op = op;
  f.mask = mask;
  f.value = value;
  f.b = b;
  f.c = c;
  FiberAccess::yield(f);
  return f.result;
}

uint32_t aotcEmuShfl(uint32_t mode, uint32_t mask, uint32_t value, uint32_t b, uint32_t c) {
  return warpCollective(WarpOp(mode), mask, value, b, c);
}

uint32_t aotcEmuVote(uint32_t mode, uint32_t mask, uint32_t pred) {
  return warpCollective(WarpOp(mode), mask, pred != 0, 0, 0);
}

// A matrix collective: the whole warp, `value` the kind or mode that every lane must agree on.
void matrixCollective(WarpOp op, uint32_t value, const void *in, void *out) {
  BlockRunner::Fiber &f = FiberAccess::current();
  f.in = in;
  f.out = out;
  warpCollective(op, ~0u, value, 0, 0);
}

void aotcEmuMma(uint32_t kind, MmaFragment *frag) {
  matrixCollective(WarpOp::Mma, kind, frag, frag);
}

void aotcEmuLdmatrix(uint32_t mode, const void *row, uint32_t *out) {
  matrixCollective(WarpOp::Ldmatrix, mode, row, out);
}

// cp.async: `bytes` from `src` to shared `dst`, the part past `srcBytes` zero-filled. The copy
// lands when a wait completes its group: a thread that reads its destination before waiting
// sees what was there before, as it may on a GPU. Without fibers (a kernel that never
// synchronizes) it lands at once.
void aotcEmuCpAsync(uint8_t *dst, const uint8_t *src, uint32_t bytes, uint32_t srcBytes) {
  srcBytes = std::min(srcBytes, bytes);
  if (!Current->fiber) {
    std::memcpy(dst, src, srcBytes);
    std::memset(dst + srcBytes, 0, bytes - srcBytes);
    return;
  }
  BlockRunner::Fiber &f = FiberAccess::current();
  if (reinterpret_cast<uintptr_t>(dst) % bytes || reinterpret_cast<uintptr_t>(src) % bytes) {
    if (f.fault.empty())
      f.fault = fmt::format("cp.async of {} bytes from {} to shared {}: not {}-byte aligned", bytes,
                            static_cast<const void *>(src), static_cast<void *>(dst), bytes);
    return;
  }
  f.copies.push_back({dst, src, bytes, srcBytes, f.commits});
}

void aotcEmuCpAsyncCommit() {
  if (Current->fiber)
    FiberAccess::current().commits += 1;
}

// cp.async.wait_group n: every committed group but the n most recent is complete.
void aotcEmuCpAsyncWait(uint32_t n) {
  if (Current->fiber)
    completeCopies(FiberAccess::current(), n);
}

// cvt.rna.tf32.f32: round to the nearest tf32 (10 explicit mantissa bits), ties away from zero;
// NaN and infinities pass (a NaN keeps a mantissa bit set).
uint32_t aotcEmuF2Tf32(float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7f800000u) == 0x7f800000u)
    return bits & 0x7fffffu ? (bits | 0x400000u) & 0xffffe000u : bits;
  return (bits + 0x1000u) & 0xffffe000u;
}

// f32 -> bf16, round to nearest even; a NaN stays a (quiet) NaN.
uint16_t floatToBf16(float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  if (std::isnan(x))
    return uint16_t(bits >> 16 | 0x40);
  uint32_t rounding = 0x7fff + (bits >> 16 & 1);
  return uint16_t((bits + rounding) >> 16);
}

// f32 -> f16, round to nearest even, with f16's subnormals; overflow gives infinity.
uint16_t floatToF16(float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  uint16_t sign = uint16_t(bits >> 16 & 0x8000);
  float a = std::fabs(x);
  if (std::isnan(x))
    return sign | 0x7e00;
  if (a >= 65520.0f) // rounds past the largest f16, 65504
    return sign | 0x7c00;
  if (a < 0x1p-14f) // subnormal: a multiple of 2^-24, rounded to nearest even
    return sign | uint16_t(std::nearbyint(a * 0x1p24f));
  uint32_t abits = std::bit_cast<uint32_t>(a);
  uint32_t rounding = 0xfff + (abits >> 13 & 1);
  uint32_t r = abits + rounding;
  return sign | uint16_t(((r >> 23) - 112) << 10 | (r >> 13 & 0x3ff));
}

// cvt.rn.{bf16,f16}x2.f32 d, hi, lo: `hi` converted into the upper half, `lo` into the lower.
uint32_t aotcEmuF2x2(uint32_t f16, float hi, float lo) {
  auto convert = f16 ? floatToF16 : floatToBf16;
  return uint32_t(convert(hi)) << 16 | convert(lo);
}

const RuntimeSymbol Symbols[] = {
    {"aotc_emu_sreg", reinterpret_cast<void *>(&aotcEmuSreg)},
    {"aotc_emu_shared", reinterpret_cast<void *>(&aotcEmuShared)},
    {"aotc_emu_barrier", reinterpret_cast<void *>(&aotcEmuBarrier)},
    {"aotc_emu_shfl", reinterpret_cast<void *>(&aotcEmuShfl)},
    {"aotc_emu_vote", reinterpret_cast<void *>(&aotcEmuVote)},
    {"aotc_emu_mma", reinterpret_cast<void *>(&aotcEmuMma)},
    {"aotc_emu_ldmatrix", reinterpret_cast<void *>(&aotcEmuLdmatrix)},
    {"aotc_emu_cp_async", reinterpret_cast<void *>(&aotcEmuCpAsync)},
    {"aotc_emu_cp_async_commit", reinterpret_cast<void *>(&aotcEmuCpAsyncCommit)},
    {"aotc_emu_cp_async_wait", reinterpret_cast<void *>(&aotcEmuCpAsyncWait)},
    {"aotc_emu_f2tf32", reinterpret_cast<void *>(&aotcEmuF2Tf32)},
    {"aotc_emu_f2x2", reinterpret_cast<void *>(&aotcEmuF2x2)},
};

float bf16ToFloat(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

float f16ToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f)
    return std::bit_cast<float>(sign | 0x7f800000u | man << 13);
  if (exp == 0) // zero or subnormal: man * 2^-24
    return std::bit_cast<float>(sign) + (sign ? -1.0f : 1.0f) * std::ldexp(float(man), -24);
  return std::bit_cast<float>(sign | (exp + 112) << 23 | man << 13);
}

// One element of a lane's A or B register: a tf32 (the low 13 bits ignored, as the tensor
// cores do) or the lower or upper 16-bit half.
float fragmentElement(MmaKind kind, uint32_t reg, unsigned half) {
  if (kind == MmaKind::M16N8K8Tf32)
    return std::bit_cast<float>(reg & 0xffffe000u);
  uint16_t h = uint16_t(half ? reg >> 16 : reg);
  return kind == MmaKind::M16N8K16Bf16 ? bf16ToFloat(h) : f16ToFloat(h);
}

// mma.sync.aligned.m16n8k{8,16}.row.col.f32: D = A (16 x k) * B (k x 8) + C, each dot product
// summed exactly in double and rounded once (the tensor cores' own order and rounding of the
// partial sums are unspecified; they differ from this in the last bits of f32).
void multiplyFragments(MmaKind kind, ArrayRef<MmaFragment *> lanes) {
  unsigned k = kind == MmaKind::M16N8K8Tf32 ? 8 : 16;
  double a[16][16], b[16][8];
  for (unsigned l = 0; l < WarpSize; ++l) {
    const MmaFragment &f = *lanes[l];
    unsigned g = l / 4, t = l % 4;
    if (kind == MmaKind::M16N8K8Tf32) {
      for (unsigned i = 0; i < 4; ++i)
        a[g + (i & 1) * 8][t + (i >> 1) * 4] = fragmentElement(kind, f.a[i], 0);
      for (unsigned i = 0; i < 2; ++i)
        b[t + i * 4][g] = fragmentElement(kind, f.b[i], 0);
      continue;
    }
    for (unsigned i = 0; i < 4; ++i)
      for (unsigned h = 0; h < 2; ++h)
        a[g + (i & 1) * 8][2 * t + h + (i >> 1) * 8] = fragmentElement(kind, f.a[i], h);
    for (unsigned i = 0; i < 2; ++i)
      for (unsigned h = 0; h < 2; ++h)
        b[2 * t + h + i * 8][g] = fragmentElement(kind, f.b[i], h);
  }
  for (unsigned l = 0; l < WarpSize; ++l) {
    MmaFragment &f = *lanes[l];
    unsigned g = l / 4, t = l % 4;
    for (unsigned i = 0; i < 4; ++i) {
      unsigned row = g + (i >> 1) * 8, col = 2 * t + (i & 1);
      double sum = 0;
      for (unsigned e = 0; e < k; ++e)
        sum += a[row][e] * b[e][col];
      f.d[i] = float(sum + double(f.c[i]));
    }
  }
}

// ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].b16: lanes 8i..8i+7 give the rows of matrix i;
// lane l receives, of each matrix, the two 16-bit elements at row l / 4, columns 2 (l % 4) and
// 2 (l % 4) + 1 (of the transposed matrix with .trans).
void loadMatrices(uint32_t mode, ArrayRef<const uint8_t *> rows, ArrayRef<uint32_t *> outs) {
  unsigned count = mode & 0xff;
  bool trans = mode & LdmatrixTrans;
  auto element = [&](unsigned matrix, unsigned r, unsigned c) {
    uint16_t h;
    std::memcpy(&h, rows[matrix * 8 + r] + 2 * c, 2);
    return uint32_t(h);
  };
  for (unsigned l = 0; l < WarpSize; ++l)
    for (unsigned m = 0; m < count; ++m) {
      unsigned r = l / 4, c = 2 * (l % 4);
      uint32_t lo = trans ? element(m, c, r) : element(m, r, c);
      uint32_t hi = trans ? element(m, c + 1, r) : element(m, r, c + 1);
      outs[l][m] = lo | hi << 16;
    }
}

// PTX's shfl.sync: the source lane of `lane`, or `lane` itself when out of range.
unsigned shuffleSource(WarpOp op, unsigned lane, uint32_t b, uint32_t c) {
  int bval = int(b & 31), cval = int(c & 31), segmask = int((c >> 8) & 31);
  int l = int(lane);
  int maxLane = (l & segmask) | (cval & ~segmask), minLane = l & segmask;
  int j = l;
  bool ok = false;
  switch (op) {
  case WarpOp::ShflUp:
    j = l - bval;
    ok = j >= maxLane;
    break;
  case WarpOp::ShflDown:
    j = l + bval;
    ok = j <= maxLane;
    break;
  case WarpOp::ShflBfly:
    j = l ^ bval;
    ok = j <= maxLane;
    break;
  case WarpOp::ShflIdx:
    j = minLane | (bval & ~segmask);
    ok = j <= maxLane;
    break;
  default:
    break;
  }
  return ok ? unsigned(j) : lane;
}

const char *opName(WarpOp op) {
  static const char *names[] = {"shfl.sync.up",         "shfl.sync.down",   "shfl.sync.bfly",
                                "shfl.sync.idx",        "vote.sync.all",    "vote.sync.any",
                                "vote.sync.uni",        "vote.sync.ballot", "mma.sync.aligned",
                                "ldmatrix.sync.aligned"};
  return names[unsigned(op)];
}

// "0..31, 40, 42..43"
std::string ranges(ArrayRef<unsigned> threads) {
  std::string out;
  for (size_t i = 0; i < threads.size();) {
    size_t j = i;
    while (j + 1 < threads.size() && threads[j + 1] == threads[j] + 1)
      ++j;
    out += (out.empty() ? "" : ", ") +
           (i == j ? fmt::format("{}", threads[i]) : fmt::format("{}..{}", threads[i], threads[j]));
    i = j + 1;
  }
  return out;
}

// The lanes of a full warp that `group` leaves out, as ranges().
std::string missingLanes(uint32_t group) {
  SmallVector<unsigned, WarpSize> missing;
  for (unsigned l = 0; l < WarpSize; ++l)
    if (!(group >> l & 1))
      missing.push_back(l);
  return ranges(missing);
}

} // namespace

ArrayRef<RuntimeSymbol> runtimeSymbols() { return Symbols; }

void runSequential(Trampoline entry, void *const *params, const ThreadContext &block) {
  ThreadContext t = block;
  ThreadContext *saved = Current;
  Current = &t;
  for (t.tid.z = 0; t.tid.z < block.ntid.z; ++t.tid.z)
    for (t.tid.y = 0; t.tid.y < block.ntid.y; ++t.tid.y)
      for (t.tid.x = 0; t.tid.x < block.ntid.x; ++t.tid.x)
        entry(params);
  Current = saved;
}

Expected<std::unique_ptr<BlockRunner>> BlockRunner::create(unsigned threads) {
  auto r = std::unique_ptr<BlockRunner>(new BlockRunner);
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  // Kernels need little stack, libm and the runtime calls a little more; ASan's frames are
  // several times larger.
#ifdef AOTC_EMU_ASAN
  r->StackBytes = 512 * 1024;
#else
  r->StackBytes = 128 * 1024;
#endif
  size_t slot = r->StackBytes + page; // a guard page below each stack
  r->MappedBytes = slot * threads;
  void *p = mmap(nullptr, r->MappedBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return createStringError(fmt::format(
        "the emulated CUDA device cannot map {} bytes of fiber stacks", r->MappedBytes));
  r->Stacks = static_cast<char *>(p);
  r->Threads = threads;
  r->Fibers = std::make_unique<Fiber[]>(threads);
  for (unsigned i = 0; i < threads; ++i) {
    char *guard = r->Stacks + i * slot;
    mprotect(guard, page, PROT_NONE);
    r->Fibers[i].stack = guard + page;
    r->Fibers[i].thread.fiber = &r->Fibers[i];
  }
  r->restart();
  return r;
}

void BlockRunner::restart() {
  for (unsigned i = 0; i < Threads; ++i) {
    Fiber &f = Fibers[i];
#ifdef AOTC_EMU_ASAN
    // Frames that a deadlock abandoned keep their redzones poisoned.
    if (Abandoned)
      ASAN_UNPOISON_MEMORY_REGION(f.stack, StackBytes);
#endif
    f.sp = startStack(f.stack, StackBytes, &FiberAccess::start);
  }
  Abandoned = false;
}

BlockRunner::~BlockRunner() {
  if (!Stacks)
    return;
  // Every fiber returns from its last yield (or starts again and ends at once) to end.
  if (Abandoned)
    restart();
  for (unsigned i = 0; i < Threads; ++i) {
    Fibers[i].quit = true;
    enter(Fibers[i]);
  }
  munmap(Stacks, MappedBytes);
}

void BlockRunner::enter(Fiber &f) {
  ThreadContext *saved = Current;
  Current = &f.thread;
  FiberAccess::Scheduler &s = FiberAccess::Sched;
  startSwitch(&s.fakeStack, f.stack, StackBytes);
  aotc_emu_switch(&s.sp, f.sp);
  finishSwitch(s.fakeStack, nullptr, nullptr);
  Current = saved;
}

Error BlockRunner::run(StringRef kernel, Trampoline entry, void *const *params,
                       const ThreadContext &block) {
  assert(uint64_t(block.ntid.x) * block.ntid.y * block.ntid.z == Threads && "a block's threads");
  if (Abandoned)
    restart();
  FiberAccess::Scheduler &s = FiberAccess::Sched;
  s.entry = entry;
  s.params = params;
  for (unsigned i = 0; i < Threads; ++i) {
    Fiber &f = Fibers[i];
    f.thread = block;
    f.thread.tid = {i % block.ntid.x, i / block.ntid.x % block.ntid.y,
                    i / (block.ntid.x * block.ntid.y)};
    f.thread.fiber = &f;
    f.state = Fiber::State::Ready;
    f.copies.clear();
    f.commits = 0;
    f.fault.clear();
  }
  for (;;) {
    for (unsigned i = 0; i < Threads; ++i)
      if (Fibers[i].state == Fiber::State::Ready)
        enter(Fibers[i]);
    for (unsigned i = 0; i < Threads; ++i)
      if (!Fibers[i].fault.empty()) {
        Abandoned = true;
        const Dim3 &b = block.ctaid;
        return createStringError(fmt::format("kernel {}, block ({}, {}, {}), thread {}: {}",
                                             kernel.str(), b.x, b.y, b.z, i, Fibers[i].fault));
      }
    if (llvm::all_of(ArrayRef(Fibers.get(), Threads),
                     [](const Fiber &f) { return f.state == Fiber::State::Done; }))
      return Error::success();
    Expected<bool> warps = releaseWarps(kernel);
    if (!warps) {
      Abandoned = true;
      return warps.takeError();
    }
    if (!*warps && !releaseBarrier()) {
      Abandoned = true;
      return deadlock(kernel);
    }
  }
}

bool BlockRunner::releaseBarrier() {
  for (unsigned i = 0; i < Threads; ++i)
    if (Fibers[i].state != Fiber::State::Barrier)
      return false;
  for (unsigned i = 0; i < Threads; ++i)
    Fibers[i].state = Fiber::State::Ready;
  return true;
}

Expected<bool> BlockRunner::releaseWarps(StringRef kernel) {
  bool released = false;
  for (unsigned w = 0; w * WarpSize < Threads; ++w) {
    unsigned base = w * WarpSize, lanes = std::min(WarpSize, Threads - base);
    auto fiber = [&](unsigned lane) -> Fiber & { return Fibers[base + lane]; };
    // Lanes that can take part in a collective: present and not exited.
    uint32_t live = 0;
    for (unsigned l = 0; l < lanes; ++l)
      if (fiber(l).state != Fiber::State::Done)
        live |= 1u << l;
    for (unsigned l = 0; l < lanes; ++l) {
      Fiber &f = fiber(l);
      if (f.state != Fiber::State::Warp)
        continue;
      const ThreadContext &t = f.thread;
      auto where = [&] {
        return fmt::format("kernel {}, block ({}, {}, {}), warp {}", kernel.str(), t.ctaid.x,
                           t.ctaid.y, t.ctaid.z, w);
      };
      if (!(f.mask >> l & 1))
        return createStringError(fmt::format("{}: lane {} calls {} with mask {:#010x}, which "
                                             "leaves it out",
                                             where(), l, opName(f.op), f.mask));
      uint32_t group = f.mask & live;
      bool waiting = true;
      for (unsigned o = 0; o < lanes; ++o) {
        if (!(group >> o & 1))
          continue;
        Fiber &g = fiber(o);
        if (g.state != Fiber::State::Warp) {
          waiting = false;
          continue;
        }
        if (g.op != f.op || g.mask != f.mask || (f.op >= WarpOp::Mma && g.value != f.value))
          return createStringError(fmt::format(
              "{}: lanes {} and {} meet in different warp collectives ({} mask {:#010x}, {} mask "
              "{:#010x})",
              where(), l, o, opName(f.op), f.mask, opName(g.op), g.mask));
      }
      if (!waiting)
        continue; // some lane of the mask waits at a barrier: a deadlock unless it is released
      if (f.op >= WarpOp::Mma) {
        if (lanes < WarpSize || group != ~0u)
          return createStringError(fmt::format(
              "{}: {} needs every lane of a full warp, and lanes {} have exited or lie past the "
              "block's end",
              where(), opName(f.op), missingLanes(group)));
        matrixRelease(f.op, f.value, base);
        released = true;
        continue;
      }
      uint32_t votes = 0;
      for (unsigned o = 0; o < lanes; ++o)
        if (group >> o & 1 && fiber(o).value)
          votes |= 1u << o;
      for (unsigned o = 0; o < lanes; ++o) {
        if (!(group >> o & 1))
          continue;
        Fiber &g = fiber(o);
        switch (f.op) {
        case WarpOp::All:
          g.result = votes == group;
          break;
        case WarpOp::Any:
          g.result = votes != 0;
          break;
        case WarpOp::Uni:
          g.result = votes == 0 || votes == group;
          break;
        case WarpOp::Ballot:
          g.result = votes;
          break;
        default: {
          unsigned src = shuffleSource(f.op, o, g.b, g.c);
          g.result = src < lanes && (group >> src & 1) ? fiber(src).value : g.value;
        }
        }
      }
      for (unsigned o = 0; o < lanes; ++o)
        if (group >> o & 1)
          fiber(o).state = Fiber::State::Ready;
      released = true;
    }
  }
  return released;
}

void BlockRunner::matrixRelease(WarpOp op, uint32_t value, unsigned base) {
  SmallVector<const uint8_t *, WarpSize> in;
  SmallVector<void *, WarpSize> out;
  for (unsigned l = 0; l < WarpSize; ++l) {
    Fiber &g = Fibers[base + l];
    in.push_back(static_cast<const uint8_t *>(g.in));
    out.push_back(g.out);
    g.state = Fiber::State::Ready;
  }
  if (op == WarpOp::Mma) {
    SmallVector<MmaFragment *, WarpSize> frags;
    for (void *p : out)
      frags.push_back(static_cast<MmaFragment *>(p));
    multiplyFragments(MmaKind(value), frags);
    return;
  }
  SmallVector<uint32_t *, WarpSize> regs;
  for (void *p : out)
    regs.push_back(static_cast<uint32_t *>(p));
  loadMatrices(value, in, regs);
}

Error BlockRunner::deadlock(StringRef kernel) const {
  SmallVector<unsigned, 64> barrier, warp, done;
  for (unsigned i = 0; i < Threads; ++i) {
    switch (Fibers[i].state) {
    case Fiber::State::Barrier:
      barrier.push_back(i);
      break;
    case Fiber::State::Warp:
      warp.push_back(i);
      break;
    case Fiber::State::Done:
      done.push_back(i);
      break;
    case Fiber::State::Ready:
      break;
    }
  }
  const ThreadContext &t = Fibers[0].thread;
  std::string where =
      fmt::format("kernel {}, block ({}, {}, {})", kernel.str(), t.ctaid.x, t.ctaid.y, t.ctaid.z);
  if (warp.empty())
    return createStringError(
        fmt::format("{}: threads {} wait at a barrier that threads {} exited without reaching",
                    where, ranges(barrier), ranges(done)));
  return createStringError(fmt::format(
      "{}: deadlock: threads {} wait in a warp collective whose mask names threads {} waiting at "
      "a barrier",
      where, ranges(warp), ranges(barrier)));
}

} // namespace aotc::cuda::emu
