// Helpers of the CUDA backend tests: a graph lowered for the CUDA target (decode steps split over
// long caches, as the export splits them), its loop kernels emitted
// as NVPTX IR and run on the emulated device (every step, conds included, in order), compared
// with the reference interpreter; and the same kernels' PTX assembled by ptxas.
#ifndef AOTC_TESTS_UNIT_CUDA_CUDATESTUTIL_H
#define AOTC_TESTS_UNIT_CUDA_CUDATESTUTIL_H

#include "../kernel/KernelTestUtil.h"
#include "codegen/cuda/CudaCodegen.h"
#include "codegen/cuda/SplitDecode.h"
#include "codegen/cuda/emu/Emulator.h"

#include <bit>
#include <cstring>
#include <regex>

namespace aotc::cuda::test {

using aotc::test::Dims;

inline std::optional<kir::Program> lowerForCuda(const Graph &g, bool fuse,
                                                kir::Precision precision = kir::Precision::FP32) {
  LowerOptions options{fuse};
  options.precision = precision;
  auto p = lowerToKernels(g, cuda::loweringTarget(), options);
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return std::nullopt;
  }
  kir::placeConcats(*p);
  kir::planMemory(*p, g.shapeEnv().facts());
  cuda::splitDecodeSteps(*p, g.shapeEnv().facts());
  return std::move(*p);
}

/// Entry @f of a graph text prepared (decomposed), lowered for CUDA at `precision`, given to
/// `layout` where there is one (the CUDA layout passes a test wants), and its kernels emitted
/// into `ctx`, for tests that look at the emitted code or launch it themselves.
struct EmittedKernels {
  std::unique_ptr<Graph> graph;
  kir::Program program;
  CudaModule module;
};
inline std::optional<EmittedKernels>
emitKernels(llvm::LLVMContext &ctx, const std::string &text, bool fuse,
            kir::Precision precision = kir::Precision::FP32,
            llvm::function_ref<void(const Graph &, kir::Program &)> layout = {}) {
  EmittedKernels out;
  out.graph = aotc::test::prepare(text, true);
  if (!out.graph) {
    ADD_FAILURE() << "the graph does not prepare";
    return std::nullopt;
  }
  std::optional<kir::Program> p = lowerForCuda(*out.graph, fuse, precision);
  if (!p)
    return std::nullopt;
  if (layout)
    layout(*out.graph, *p);
  out.program = std::move(*p);
  auto cm = emitEntryKernels(ctx, out.program.entries[0], "test");
  if (!cm) {
    ADD_FAILURE() << llvm::toString(cm.takeError());
    return std::nullopt;
  }
  out.module = std::move(*cm);
  return out;
}

/// Runs entry 0 of `program` on the emulated device: buffers bound as kir::evaluate binds them,
/// each grid-stride kernel launched on a grid of at most 5 blocks of 64 threads (so that the
/// grid-stride loop and idle threads both happen), or of its own block size with `ownBlocks`.
/// `failedCheck` gets the run's index-check flag. With `shiftInputs`, each input is read from a
/// copy that many bytes past a 64-byte boundary (a caller's pointer into a buffer of its own).
inline llvm::Expected<std::vector<HostTensor>>
runEmulated(const kir::Program &program, const CudaModule &cm, emu::EmulatedModule &dev,
            const Dims &dims, llvm::ArrayRef<HostTensor> inputs, llvm::ArrayRef<HostTensor> weights,
            int32_t &failedCheck, bool ownBlocks = false, size_t shiftInputs = 0) {
  const kir::EntryKernels &e = program.entries[0];
  auto eval = [&](const SymExpr &s) { return *s.evaluate(dims); };
  std::vector<int64_t> syms;
  for (const std::string &s : e.symbols)
    syms.push_back(dims.at(s));
  std::vector<uint8_t> arena(eval(e.arenaBytes) + 64);
  std::vector<HostTensor> outputs, state(weights.begin(), weights.end()),
      ins(inputs.begin(), inputs.end());
  for (const kir::TensorSig &sig : e.outputs) {
    std::vector<int64_t> shape;
    for (const SymExpr &d : sig.shape)
      shape.push_back(eval(d));
    outputs.emplace_back(sig.dtype, shape);
  }
  std::vector<void *> bufs;
  std::vector<std::vector<uint8_t>> shifted;
  for (const kir::Buffer &b : e.buffers) {
    switch (b.kind) {
    case kir::Buffer::Kind::Input:
      if (shiftInputs) {
        const HostTensor &t = ins[b.index];
        std::vector<uint8_t> &copy = shifted.emplace_back(t.nbytes() + 64 + shiftInputs);
        uint8_t *at = copy.data() + (-reinterpret_cast<uintptr_t>(copy.data()) & 63) + shiftInputs;
        std::memcpy(at, t.data(), t.nbytes());
        bufs.push_back(at);
        break;
      }
      bufs.push_back(ins[b.index].mutableData());
      break;
    case kir::Buffer::Kind::Output:
      bufs.push_back(static_cast<uint8_t *>(outputs[b.index].mutableData()) +
                     eval(b.viewOffset) * int64_t(byteSize(b.dtype)));
      break;
    case kir::Buffer::Kind::Weight:
    case kir::Buffer::Kind::State:
      bufs.push_back(state[b.index].mutableData());
      break;
    case kir::Buffer::Kind::Arena:
      bufs.push_back(arena.data() + eval(b.arenaOffset));
      break;
    }
  }
  failedCheck = 0;
  std::function<llvm::Error(const CudaKernel *)> launch;
  std::function<llvm::Error(const std::vector<kir::Step> &)> run =
      [&](const std::vector<kir::Step> &steps) -> llvm::Error {
    for (const kir::Step &step : steps) {
      if (const auto *c = std::get_if<kir::CondStep>(&step)) {
        bool p = *static_cast<const uint8_t *>(bufs[c->predicate]) != 0;
        if (llvm::Error err = run(p ? c->thenSteps : c->elseSteps))
          return err;
        continue;
      }
      // A step's kernels (a GEMM's small-m ones and its tiled one) launch as the host code
      // launches them: each whose grid has no extent of 0 or less.
      bool any = false;
      for (const CudaKernel &x : cm.kernels) {
        if (x.step != &step)
          continue;
        any = true;
        if (llvm::Error err = launch(&x))
          return err;
      }
      if (!any)
        return llvm::createStringError("a step without a kernel");
    }
    return llvm::Error::success();
  };
  launch = [&](const CudaKernel *ck) -> llvm::Error {
    std::vector<void *> params;
    for (int64_t &s : syms)
      params.push_back(&s);
    std::vector<void *> ptrs;
    for (uint32_t b : ck->buffers)
      ptrs.push_back(bufs[b]);
    int32_t *flag = &failedCheck;
    for (void *&p : ptrs)
      params.push_back(&p);
    params.push_back(&flag);
    // Grid-stride kernels on at most 5 blocks of 64 threads, so that the grid-stride loop and
    // idle threads both happen; every other kernel on its own grid and block.
    emu::Dim3 grid, block{ck->launch.block[0], ck->launch.block[1], ck->launch.block[2]};
    uint32_t *g[] = {&grid.x, &grid.y, &grid.z};
    for (auto [i, extent] : llvm::enumerate(ck->launch.grid)) {
      int64_t v = eval(extent);
      if (v <= 0)
        return llvm::Error::success();
      *g[i] = static_cast<uint32_t>(v);
    }
    if (ck->launch.gridStride && ownBlocks) {
      grid.x = std::min<uint32_t>(grid.x, 5);
    } else if (ck->launch.gridStride) {
      int64_t points = int64_t(grid.x) * block.x;
      block.x = 64;
      grid.x = static_cast<uint32_t>(std::clamp<int64_t>((points + 63) / 64, 1, 5));
    }
    return dev.launch(ck->name, grid, block, params, ck->launch.dynamicShared);
  };
  if (llvm::Error err = run(e.steps))
    return err;
  return outputs;
}

/// `x` rounded as the tensor cores' fragments round f32 at `p`: tf32 to nearest with ties away
/// from zero (cvt.rna), bf16 and fp16 to nearest even.
inline float roundTo(kir::Precision p, float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  switch (p) {
  case kir::Precision::FP32:
    return x;
  case kir::Precision::TF32:
    return std::bit_cast<float>((bits + 0x1000u) & 0xffffe000u);
  case kir::Precision::BF16:
    return std::bit_cast<float>((bits + 0x7fffu + (bits >> 16 & 1)) & 0xffff0000u);
  case kir::Precision::FP16:
    return float(static_cast<_Float16>(x));
  }
  return x;
}

/// Every f32 element of the inputs and weights of `args` rounded to `p`: a GEMM that reads them
/// directly then multiplies exactly what the interpreter multiplies, and only the order of the
/// f32 sums differs.
inline void roundArgs(aotc::test::EntryArgs &args, kir::Precision p) {
  auto round = [&](HostTensor &t) {
    if (t.dtype() != DType::F32)
      return;
    auto *data = reinterpret_cast<float *>(t.mutableData());
    for (int64_t i = 0; i < t.numel(); ++i)
      data[i] = roundTo(p, data[i]);
  };
  for (HostTensor &t : args.inputs)
    round(t);
  for (HostTensor &t : args.weights)
    round(t);
  for (auto &[name, t] : args.state)
    round(t);
}

/// expectMatches of KernelTestUtil.h on the emulated CUDA device: entry @f lowered for CUDA (fused
/// and unfused, its GEMMs at `precision`) and run emulated at each assignment of the dims
/// (runEmulated's `ownBlocks`).
inline void expectEmulatedMatches(const std::string &text, const std::vector<Dims> &runs,
                                  double tol = 1e-5, bool decompose = true, bool ownBlocks = false,
                                  kir::Precision precision = kir::Precision::FP32,
                                  bool roundInputs = false) {
  std::unique_ptr<Graph> g = aotc::test::prepare(text, decompose);
  ASSERT_TRUE(g);
  std::mt19937_64 rng(0x5eed + text.size());
  for (bool fuse : {true, false}) {
    auto program = lowerForCuda(*g, fuse, precision);
    ASSERT_TRUE(program);
    llvm::LLVMContext ctx;
    auto cm = emitEntryKernels(ctx, program->entries[0], "test");
    ASSERT_TRUE(static_cast<bool>(cm)) << llvm::toString(cm.takeError());
    auto dev = emu::EmulatedModule::load(*cm->module);
    ASSERT_TRUE(static_cast<bool>(dev)) << llvm::toString(dev.takeError());
    for (const Dims &dims : runs) {
      aotc::test::EntryArgs args = aotc::test::randomArgs(*g, dims, rng);
      if (roundInputs)
        roundArgs(args, precision);
      auto want = aotc::test::interpretArgs(*g, args);
      ASSERT_TRUE(static_cast<bool>(want)) << llvm::toString(want.takeError());
      int32_t failed = 0;
      auto got =
          runEmulated(*program, *cm, **dev, dims, args.inputs, args.weights, failed, ownBlocks);
      ASSERT_TRUE(static_cast<bool>(got)) << llvm::toString(got.takeError());
      ASSERT_EQ(failed, 0);
      ASSERT_NO_FATAL_FAILURE(aotc::test::expectClose(
          *want, *got, tol, fmt::format(" fuse={}\n{}", fuse, aotc::test::printed(*program))));
    }
  }
}

/// Entry @f of `text` lowered at `precision` (fused, and unfused too where `bothFusions`) and
/// given to `transform` (a layout pass) where there is one, its kernels compiled to PTX and
/// assembled by ptxas for sm_80 and sm_90: `check(ptx, cubin, usage)` on each (usage: ptxas -v's
/// report). Skipped where the toolkit is missing (CI has it).
inline void forEachAssembly(
    const std::string &text, bool decompose, kir::Precision precision, bool bothFusions,
    llvm::function_ref<void(const std::string &, const std::vector<char> &, const std::string &)>
        check,
    llvm::function_ref<void(kir::Program &)> transform = {}) {
  if (auto dir = cudaToolkitDir(); !dir)
    GTEST_SKIP() << llvm::toString(dir.takeError());
  std::unique_ptr<Graph> g = aotc::test::prepare(text, decompose);
  ASSERT_TRUE(g);
  for (bool fuse : {true, false}) {
    if (!fuse && !bothFusions)
      break;
    auto program = lowerForCuda(*g, fuse, precision);
    ASSERT_TRUE(program);
    if (transform)
      transform(*program);
    llvm::LLVMContext ctx;
    auto cm = emitEntryKernels(ctx, program->entries[0], "test");
    ASSERT_TRUE(static_cast<bool>(cm)) << llvm::toString(cm.takeError());
    for (CudaArch arch : {CudaArch::SM80, CudaArch::SM90}) {
      SCOPED_TRACE(archInfo(arch).name.str());
      auto ptx = compileToPtx(*cm->module, arch);
      ASSERT_TRUE(static_cast<bool>(ptx)) << llvm::toString(ptx.takeError());
      std::string usage;
      auto cubin = assemblePtx(*ptx, arch, &usage);
      ASSERT_TRUE(static_cast<bool>(cubin)) << llvm::toString(cubin.takeError()) << "\n" << *ptx;
      check(*ptx, *cubin, usage);
    }
  }
}

/// Every loop kernel of entry @f (fused and unfused) compiled to PTX and assembled by ptxas for
/// sm_80 and sm_90 into an ELF.
inline void expectPtxasAccepts(const std::string &text, bool decompose = true,
                               kir::Precision precision = kir::Precision::FP32) {
  forEachAssembly(text, decompose, precision, true,
                  [](const std::string &, const std::vector<char> &cubin, const std::string &) {
                    ASSERT_GT(cubin.size(), 4u);
                    EXPECT_EQ(std::memcmp(cubin.data(),
                                          "\x7f"
                                          "ELF",
                                          4),
                              0);
                  });
}

/// ptxas -v on the kernels of entry @f of `text` (fused, lowered at `precision`, then given to
/// `transform` where there is one): no register spills, at most `maxRegisters` registers a
/// thread. AOTC_PRINT_PTXAS=1 prints the report.
inline void expectNoSpills(const std::string &text, kir::Precision precision, int maxRegisters,
                           llvm::function_ref<void(kir::Program &)> transform = {}) {
  SCOPED_TRACE(toString(precision).str());
  forEachAssembly(
      text, true, precision, false,
      [&](const std::string &, const std::vector<char> &, const std::string &usage) {
        std::regex spills("([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads");
        std::regex registers("Used ([0-9]+) registers");
        unsigned kernels = 0;
        for (auto it = std::sregex_iterator(usage.begin(), usage.end(), spills);
             it != std::sregex_iterator(); ++it, ++kernels) {
          EXPECT_EQ((*it)[1], "0") << usage;
          EXPECT_EQ((*it)[2], "0") << usage;
        }
        EXPECT_GE(kernels, 1u) << usage;
        for (auto it = std::sregex_iterator(usage.begin(), usage.end(), registers);
             it != std::sregex_iterator(); ++it)
          EXPECT_LE(std::stoi((*it)[1]), maxRegisters) << usage;
        if (getenv("AOTC_PRINT_PTXAS"))
          llvm::errs() << usage << "\n";
      },
      transform);
}

} // namespace aotc::cuda::test

#endif
