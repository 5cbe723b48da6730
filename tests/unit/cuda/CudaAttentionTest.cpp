// The attention library kernel (kir::AttentionCall, codegen/cuda/Attention.cpp): the CUDA
// lowering makes one call per scaled_dot_product_attention; the kernel IR evaluator and the
// kernel on the emulated device match the reference interpreter (f64) at odd sizes of L, S and
// the head dims, causal and not, bool and float masks, grouped-query heads, strided and
// broadcast operands; its PTX goes through ptxas for sm_80 and sm_90.
#include "CudaTestUtil.h"

#include "kernel/Evaluate.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/IR/Instructions.h"

namespace aotc::cuda {
namespace {

using test::Dims;

// Grouped-query attention (4 query heads on 2 key/value heads) at E = 64, Ev = 80 (value
// columns past the lanes' second slot), with L and S dynamic: no mask, causal (tiles past a
// block's rows skipped), a bool mask (rows wholly masked at small S give zeros), and a float
// mask broadcast over the heads with an explicit scale.
const char *GqaGraph = R"(graph @t opset 1.0
dim seq in 1..65
dim kv in 1..129
entry @f(%0 : f32[2, 4, seq, 64] = input "q", %1 : f32[2, 2, kv, 64] = input "k", %2 : f32[2, 2, kv, 80] = input "v", %3 : bool[seq, kv] = input "bmask", %4 : f32[2, 1, seq, kv] = input "fmask") {
  %5 = aten.scaled_dot_product_attention(%0, %1, %2, none) {enable_gqa = true} : f32[2, 4, seq, 80]
  %6 = aten.scaled_dot_product_attention(%0, %1, %2, none) {is_causal = true, enable_gqa = true} : f32[2, 4, seq, 80]
  %7 = aten.scaled_dot_product_attention(%0, %1, %2, %3) {enable_gqa = true} : f32[2, 4, seq, 80]
  %8 = aten.scaled_dot_product_attention(%0, %1, %2, %4) {scale = 0.2, enable_gqa = true} : f32[2, 4, seq, 80]
  return %5 as output "plain", %6 as output "causal", %7 as output "bmask", %8 as output "fmask"
}
)";

// L and S at 1, a middle value and their maximum, and the corners.
const std::vector<Dims> GqaRuns = {{{"seq", 1}, {"kv", 1}},    {{"seq", 7}, {"kv", 63}},
                                   {{"seq", 65}, {"kv", 129}}, {{"seq", 1}, {"kv", 129}},
                                   {{"seq", 65}, {"kv", 1}},   {{"seq", 7}, {"kv", 7}}};

// A query transposed from [batch, L, heads, E] read through its strides, causal; a decode step
// (L = 1) against a cache with a padding mask [batch, 1, 1, S] (stride 0 over heads and rows);
// rank-3 inputs (heads only) at E = 80 with key and value one tensor; E = 18, whose tiles do not
// split evenly over the block's threads.
const char *DecodeGraph = R"(graph @t opset 1.0
dim batch in 1..3
dim past in 1..129
entry @f(%0 : f32[batch, 7, 3, 32] = input "qt", %1 : f32[batch, 3, past, 32] = input "k", %2 : f32[batch, 3, past, 32] = input "v", %3 : f32[batch, 3, 1, 32] = input "qd", %4 : bool[batch, 1, 1, past] = input "pad", %5 : f32[6, 7, 80] = input "q3", %6 : f32[6, past, 80] = input "kv3", %7 : f32[2, 5, 18] = input "q4", %8 : f32[2, past, 18] = input "k4", %9 : f32[2, past, 18] = input "v4") {
  %10 = aten.transpose.int(%0) {dim0 = 1, dim1 = 2} : f32[batch, 3, 7, 32]
  %11 = aten.scaled_dot_product_attention(%10, %1, %2, none) {is_causal = true} : f32[batch, 3, 7, 32]
  %12 = aten.scaled_dot_product_attention(%3, %1, %2, %4) : f32[batch, 3, 1, 32]
  %13 = aten.scaled_dot_product_attention(%5, %6, %6, none) : f32[6, 7, 80]
  %14 = aten.scaled_dot_product_attention(%7, %8, %9, none) {is_causal = true} : f32[2, 5, 18]
  return %11 as output "strided", %12 as output "decode", %13 as output "rank3", %14 as output "odd"
}
)";

// One query row (L = 1, a constant: a decode step's entry) takes the decode kernel, whose warps
// split the keys: grouped-query heads with E = 64 and Ev = 80 (3 value columns a lane, the last
// one partly past ev), an additive mask with a scale, and rank-3 causal heads of 18 (key 0
// only). S up to 300: 10 tiles of 32 keys over 4 warps, the last tile partial.
const char *DecodeStepGraph = R"(graph @t opset 1.0
dim past in 1..300
entry @f(%0 : f32[2, 4, 1, 64] = input "q", %1 : f32[2, 2, past, 64] = input "k", %2 : f32[2, 2, past, 80] = input "v", %3 : f32[2, 1, 1, past] = input "fmask", %4 : f32[3, 1, 18] = input "q3", %5 : f32[3, past, 18] = input "kv3") {
  %6 = aten.scaled_dot_product_attention(%0, %1, %2, none) {enable_gqa = true} : f32[2, 4, 1, 80]
  %7 = aten.scaled_dot_product_attention(%0, %1, %2, %3) {scale = 0.2, enable_gqa = true} : f32[2, 4, 1, 80]
  %8 = aten.scaled_dot_product_attention(%4, %5, %5, none) {is_causal = true} : f32[3, 1, 18]
  return %6 as output "gqa", %7 as output "fmask", %8 as output "causal"
}
)";

const std::vector<Dims> DecodeStepRuns = {{{"past", 1}},  {{"past", 31}},  {{"past", 32}},
                                          {{"past", 33}}, {{"past", 129}}, {{"past", 300}}};

const std::vector<Dims> DecodeRuns = {
    {{"batch", 1}, {"past", 1}}, {{"batch", 2}, {"past", 63}}, {{"batch", 3}, {"past", 129}}};

/// How many attention calls and GEMMs the CUDA lowering of `text` has.
std::pair<int, int> callCounts(const std::string &text) {
  std::unique_ptr<Graph> g = aotc::test::prepare(text);
  auto p = test::lowerForCuda(*g, true);
  if (!p)
    return {-1, -1};
  int attention = 0, gemms = 0;
  kir::forEachStep(p->entries[0].steps, [&](const kir::Step &s) {
    attention += std::holds_alternative<kir::AttentionCall>(s);
    gemms += std::holds_alternative<kir::GemmCall>(s);
  });
  return {attention, gemms};
}

TEST(CudaAttention, OneCallPerAttention) {
  EXPECT_EQ(callCounts(GqaGraph), std::make_pair(4, 0));
  EXPECT_EQ(callCounts(DecodeGraph), std::make_pair(4, 0));
}

// The CPU target keeps GEMM -> softmax -> GEMM.
TEST(CudaAttention, CpuKeepsGemms) {
  std::unique_ptr<Graph> g = aotc::test::prepare(GqaGraph);
  auto p = aotc::test::lower(*g);
  ASSERT_TRUE(p);
  int attention = 0, gemms = 0;
  kir::forEachStep(p->entries[0].steps, [&](const kir::Step &s) {
    attention += std::holds_alternative<kir::AttentionCall>(s);
    gemms += std::holds_alternative<kir::GemmCall>(s);
  });
  EXPECT_EQ(attention, 0);
  EXPECT_EQ(gemms, 8);
}

// The call's text: the operands' strides split into batch and heads, the mask's head stride 0.
TEST(CudaAttention, Printed) {
  std::unique_ptr<Graph> g = aotc::test::prepare(GqaGraph);
  auto p = test::lowerForCuda(*g, true);
  ASSERT_TRUE(p);
  std::string text = aotc::test::printed(*p);
  EXPECT_NE(text.find("attention attention_8 f32 batch 2 heads 4 group 2 l seq s kv e 64 ev 80 "
                      "scale 0.2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("causal scale 0.125"), std::string::npos) << text;
  EXPECT_NE(text.find("mask = b4[0 + batch*(kv*seq) + head*0 + row*kv + col*1]"), std::string::npos)
      << text;
}

/// kir::evaluate of the CUDA lowering against the interpreter.
void expectEvaluated(const std::string &text, const std::vector<Dims> &runs, double tol = 1e-6) {
  std::unique_ptr<Graph> g = aotc::test::prepare(text);
  ASSERT_TRUE(g);
  auto p = test::lowerForCuda(*g, true);
  ASSERT_TRUE(p);
  std::mt19937_64 rng(7);
  for (const Dims &dims : runs) {
    aotc::test::EntryArgs args = aotc::test::randomArgs(*g, dims, rng);
    auto want = aotc::test::interpretArgs(*g, args);
    ASSERT_TRUE(static_cast<bool>(want)) << llvm::toString(want.takeError());
    auto got = kir::evaluate(*p, 0, args.inputs, args.weights);
    ASSERT_TRUE(static_cast<bool>(got)) << llvm::toString(got.takeError());
    ASSERT_NO_FATAL_FAILURE(aotc::test::expectClose(*want, *got, tol, ""));
  }
}

// Attention outputs whose heads are merged right after (y.transpose(1, 2), or a permute with a
// negative dim) are stored [batch, l, heads, ev] (AttentionCall::headsInRows), so that the
// merge and the projection read them in place: the tiled kernel (a projection after it), the
// decode kernel (L = 1), a rank-3 call that keeps the dense layout, and an output.
const char *MergedHeadsGraph = R"(graph @t opset 1.0
dim batch in 1..3
dim seq in 1..40
entry @f(%0 : f32[batch, 4, seq, 32] = input "q", %1 : f32[batch, 4, seq, 32] = input "k", %2 : f32[batch, 4, seq, 32] = input "v", %3 : f32[batch, 4, 1, 32] = input "qd", %4 : f32[128, 24] = input "w") {
  %5 = aten.scaled_dot_product_attention(%0, %1, %2, none) {is_causal = true} : f32[batch, 4, seq, 32]
  %6 = aten.transpose.int(%5) {dim0 = 1, dim1 = 2} : f32[batch, seq, 4, 32]
  %7 = aten.view(%6) {size = [batch, seq, 128]} : f32[batch, seq, 128]
  %8 = aten.matmul(%7, %4) : f32[batch, seq, 24]
  %9 = aten.scaled_dot_product_attention(%3, %1, %2, none) : f32[batch, 4, 1, 32]
  %10 = aten.permute(%9) {dims = [0, -2, 1, 3]} : f32[batch, 1, 4, 32]
  %11 = aten.scaled_dot_product_attention(%0, %1, %2, none) : f32[batch, 4, seq, 32]
  %12 = aten.transpose.int(%11) {dim0 = 2, dim1 = 3} : f32[batch, 4, 32, seq]
  return %8 as output "proj", %10 as output "decode", %12 as output "other"
}
)";

const std::vector<Dims> MergedHeadsRuns = {
    {{"batch", 1}, {"seq", 1}}, {{"batch", 2}, {"seq", 17}}, {{"batch", 3}, {"seq", 40}}};

TEST(CudaAttention, MergedHeads) {
  std::unique_ptr<Graph> g = aotc::test::prepare(MergedHeadsGraph);
  ASSERT_TRUE(g);
  auto p = test::lowerForCuda(*g, true);
  ASSERT_TRUE(p);
  std::string text = aotc::test::printed(*p);
  size_t merged = 0;
  for (size_t at = text.find("heads in rows"); at != std::string::npos;
       at = text.find("heads in rows", at + 1))
    ++merged;
  EXPECT_EQ(merged, 2u) << text;
  // The projection reads the attention's buffer in place: no copy between them.
  size_t out = text.find("out = ", text.find("attention attention_5"));
  ASSERT_NE(out, std::string::npos) << text;
  std::string buffer = text.substr(out + 6, text.find(' ', out + 6) - out - 6);
  EXPECT_NE(text.find("a = " + buffer + "[0 + batch*0 + row*128 + col*1]"), std::string::npos)
      << text;
}
// At bf16 the inputs are rounded first and the tolerance is bf16's verify tolerance: the
// projection sums 128 products of the rounded attention outputs.
TEST(CudaEmu, AttentionMergedHeads) {
  expectEvaluated(MergedHeadsGraph, MergedHeadsRuns, 1e-5);
  test::expectEmulatedMatches(MergedHeadsGraph, MergedHeadsRuns, 1e-5);
  test::expectEmulatedMatches(MergedHeadsGraph, MergedHeadsRuns, 5e-2, true, false,
                              kir::Precision::BF16, true);
}

TEST(CudaAttention, Evaluated) {
  expectEvaluated(GqaGraph, GqaRuns);
  expectEvaluated(DecodeGraph, DecodeRuns);
  expectEvaluated(DecodeStepGraph, DecodeStepRuns);
}

TEST(CudaEmu, AttentionDecodeStep) {
  test::expectEmulatedMatches(DecodeStepGraph, DecodeStepRuns, 1e-5);
}

/// How many attention kernels of entry @f of `text` are the decode kernel (its warps' states in
/// shared memory).
int decodeKernels(const std::string &text) {
  llvm::LLVMContext ctx;
  auto k = test::emitKernels(ctx, text, true);
  if (!k)
    return -1;
  // The kernels share the module's shared arrays: count the functions that use one.
  llvm::SmallPtrSet<const llvm::Function *, 4> decode;
  for (const llvm::GlobalVariable &g : k->module.module->globals())
    if (g.getName().starts_with("shared_warp_max_sum"))
      for (const llvm::User *u : g.users()) {
        if (const auto *i = llvm::dyn_cast<llvm::Instruction>(u))
          decode.insert(i->getFunction());
        else // a constant GEP
          for (const llvm::User *uu : u->users())
            decode.insert(llvm::cast<llvm::Instruction>(uu)->getFunction());
      }
  return int(decode.size());
}

// Every call of the decode step graph (and the split kernels of the two that split-decode
// splits); in DecodeGraph the one whose L is 1 (the others' is symbolic or 5 and 7).
TEST(CudaAttention, DecodeStepKernel) {
  EXPECT_EQ(decodeKernels(DecodeStepGraph), 5);
  EXPECT_EQ(decodeKernels(DecodeGraph), 1);
  EXPECT_EQ(decodeKernels(GqaGraph), 0);
}

TEST(CudaPtxas, AttentionDecodeStep) { test::expectPtxasAccepts(DecodeStepGraph); }

// A decode step over a long cache (split-decode): grouped-query heads (2 x 4 query heads on 2 key
// and value heads) at E = 64 and Ev = 80, with a padding mask. Up to 2100 keys: 9 parts of 256 a
// (batch x head) at batch 1 (4 blocks without them), 3 parts at batch 3 and 600 keys, 2 at 257
// (160 and 97 keys: parts are whole tiles of 32), the decode kernel alone at 256 and below.
const char *LongCacheGraph = R"(graph @t opset 1.0
dim batch in 1..3
dim past in 1..2100
entry @f(%0 : f32[batch, 4, 1, 64] = input "q", %1 : f32[batch, 2, past, 64] = input "k", %2 : f32[batch, 2, past, 80] = input "v", %3 : bool[batch, 1, 1, past] = input "pad") {
  %4 = aten.scaled_dot_product_attention(%0, %1, %2, none) {enable_gqa = true} : f32[batch, 4, 1, 80]
  %5 = aten.scaled_dot_product_attention(%0, %1, %2, %3) {enable_gqa = true} : f32[batch, 4, 1, 80]
  return %4 as output "plain", %5 as output "padded"
}
)";

const std::vector<Dims> LongCacheRuns = {{{"batch", 1}, {"past", 2100}},
                                         {{"batch", 3}, {"past", 600}},
                                         {{"batch", 2}, {"past", 257}},
                                         {{"batch", 3}, {"past", 256}},
                                         {{"batch", 1}, {"past", 1}}};

// Each call gets its parts and a workspace of their states; its kernels are the decode kernel
// (where the parts are 1), the split kernel and the merge kernel, the last two both launched
// where the parts are 2 or more.
TEST(CudaAttention, SplitDecodeSteps) {
  llvm::LLVMContext ctx;
  auto k = test::emitKernels(ctx, LongCacheGraph, true);
  ASSERT_TRUE(k);
  const kir::EntryKernels &entry = k->program.entries[0];
  std::vector<const kir::AttentionCall *> calls;
  kir::forEachStep(entry.steps, [&](const kir::Step &s) {
    if (const auto *a = std::get_if<kir::AttentionCall>(&s))
      calls.push_back(a);
  });
  ASSERT_EQ(calls.size(), 2u);
  for (const kir::AttentionCall *a : calls) {
    ASSERT_TRUE(a->partials);
    EXPECT_EQ(a->splits.str(),
              "max(min(floordiv(4*batch + 131, 4*batch), floordiv(past + 255, 256)), 1)");
    const kir::Buffer &w = entry.buffers[*a->partials];
    EXPECT_EQ(w.kind, kir::Buffer::Kind::Arena);
    EXPECT_EQ(w.dtype, DType::F32);
    EXPECT_EQ(*w.numel.evaluate({{"batch", 1}, {"past", 2100}}), 4 * 9 * 82);
    EXPECT_EQ(*a->splits.evaluate({{"batch", 3}, {"past", 600}}), 3);
    EXPECT_EQ(*a->splits.evaluate({{"batch", 3}, {"past", 256}}), 1);
    std::vector<std::string> names;
    for (const CudaKernel &c : k->module.kernels)
      if (std::get_if<kir::AttentionCall>(c.step) == a)
        names.push_back(c.name);
    EXPECT_EQ(names, (std::vector<std::string>{a->name, a->name + "_split", a->name + "_merge"}));
  }
  // A causal decode step reads key 0 only, and a cache of at most 256 keys is one part: neither
  // splits.
  for (const char *graph : {DecodeGraph, GqaGraph})
    kir::forEachStep(test::lowerForCuda(*aotc::test::prepare(graph), true)->entries[0].steps,
                     [&](const kir::Step &s) {
                       if (const auto *a = std::get_if<kir::AttentionCall>(&s)) {
                         EXPECT_FALSE(a->partials) << a->name;
                       }
                     });
}

TEST(CudaEmu, AttentionSplitDecode) {
  test::expectEmulatedMatches(LongCacheGraph, LongCacheRuns, 1e-5);
}

// bf16 data: the parts' states stay f32, the output is rounded once.
TEST(CudaEmu, AttentionSplitDecodeHalfData) {
  std::string text = LongCacheGraph;
  for (size_t at = 0; (at = text.find("f32", at)) != std::string::npos; at += 4)
    text.replace(at, 3, "bf16");
  test::expectEmulatedMatches(text, {LongCacheRuns[0], LongCacheRuns[2]}, 4e-3);
}

TEST(CudaPtxas, AttentionSplitDecode) { test::expectPtxasAccepts(LongCacheGraph); }

TEST(CudaEmu, AttentionGqa) { test::expectEmulatedMatches(GqaGraph, GqaRuns, 1e-5); }
TEST(CudaEmu, AttentionDecode) { test::expectEmulatedMatches(DecodeGraph, DecodeRuns, 1e-5); }
// At tf32 attention computes in f32 (torch's flash kernels have no tf32 either), as does the
// decode kernel at every precision: DecodeStepGraph's calls all have L = 1.
TEST(CudaEmu, AttentionAtTf32IsF32) {
  test::expectEmulatedMatches(DecodeGraph, DecodeRuns, 1e-5, true, false, kir::Precision::TF32);
  test::expectEmulatedMatches(DecodeStepGraph, {{{"past", 33}}}, 1e-5, true, false,
                              kir::Precision::BF16);
}

/// How many kernels of entry @f of `text`, lowered at `precision`, multiply on the tensor cores.
int tensorCoreKernels(const std::string &text, kir::Precision precision) {
  llvm::LLVMContext ctx;
  auto k = test::emitKernels(ctx, text, true, precision);
  if (!k)
    return -1;
  int kernels = 0;
  for (const llvm::Function &f : *k->module.module) {
    bool mma = false;
    for (const llvm::BasicBlock &bb : f)
      for (const llvm::Instruction &i : bb)
        if (const auto *call = llvm::dyn_cast<llvm::CallInst>(&i))
          if (const llvm::Function *callee = call->getCalledFunction())
            mma |= callee->getName().starts_with("llvm.nvvm.mma.");
    kernels += mma;
  }
  return kernels;
}

// At bf16 and fp16 every call but a decode step's takes the tensor cores (the graphs have no
// GEMM).
TEST(CudaAttention, TensorCoreKernels) {
  for (kir::Precision p : {kir::Precision::BF16, kir::Precision::FP16}) {
    EXPECT_EQ(tensorCoreKernels(GqaGraph, p), 4);
    EXPECT_EQ(tensorCoreKernels(DecodeGraph, p), 3);
    EXPECT_EQ(tensorCoreKernels(DecodeStepGraph, p), 0);
  }
  EXPECT_EQ(tensorCoreKernels(GqaGraph, kir::Precision::FP32), 0);
  EXPECT_EQ(tensorCoreKernels(GqaGraph, kir::Precision::TF32), 0);
}

// On the tensor cores q and k, then the probabilities and v, are rounded to the precision (f32
// sums): fresh f32 inputs within bf16's and fp16's tolerances of the interpreter's f64 at odd L,
// S and head sizes (18, 32, 64, 80: e not a multiple of the mma's k, ev past whole tiles), causal
// and masked, strided and grouped. Inputs already rounded leave only the probabilities' rounding.
TEST(CudaEmu, AttentionTensorCoresBf16) {
  test::expectEmulatedMatches(GqaGraph, GqaRuns, 1.5e-2, true, false, kir::Precision::BF16);
  test::expectEmulatedMatches(DecodeGraph, DecodeRuns, 1.5e-2, true, false, kir::Precision::BF16);
  test::expectEmulatedMatches(GqaGraph, GqaRuns, 6e-3, true, false, kir::Precision::BF16, true);
}
TEST(CudaEmu, AttentionTensorCoresFp16) {
  test::expectEmulatedMatches(GqaGraph, GqaRuns, 3e-3, true, false, kir::Precision::FP16);
  test::expectEmulatedMatches(DecodeGraph, DecodeRuns, 3e-3, true, false, kir::Precision::FP16);
}
TEST(CudaPtxas, AttentionTensorCores) {
  test::expectPtxasAccepts(GqaGraph, true, kir::Precision::BF16);
  test::expectPtxasAccepts(DecodeGraph, true, kir::Precision::FP16);
}

// The largest heads the kernel takes (128: 32 query fragment registers and 64 accumulators a
// lane, 16 keys a tile) and GqaGraph's: no register spills, at most 168 registers a thread (three
// blocks an SM; 168 at heads of 128 on both archs, with the staging's element-at-a-time copies
// kept in loops: unrolled, they took 241).
const char *WideHeadsGraph = R"(graph @t opset 1.0
dim seq in 1..300
entry @f(%0 : f32[2, 4, seq, 128] = input "q", %1 : f32[2, 4, seq, 128] = input "k", %2 : f32[2, 4, seq, 128] = input "v") {
  %3 = aten.scaled_dot_product_attention(%0, %1, %2, none) {is_causal = true} : f32[2, 4, seq, 128]
  return %3 as output "o"
}
)";
TEST(CudaPtxas, AttentionTensorCoresNoSpills) {
  test::expectNoSpills(WideHeadsGraph, kir::Precision::BF16, 168);
  test::expectNoSpills(GqaGraph, kir::Precision::FP16, 168);
  test::expectNoSpills(DecodeGraph, kir::Precision::BF16, 168);
}
// Odd head sizes (e = 17: a pair half past e; ev = 9: one column past a whole mma tile), rank 3,
// causal and with a float mask, L and S from 1 (the tensor-core kernel: L is symbolic).
const char *OddHeadsGraph = R"(graph @t opset 1.0
dim seq in 1..40
dim kv in 1..70
entry @f(%0 : f32[3, seq, 17] = input "q", %1 : f32[3, kv, 17] = input "k", %2 : f32[3, kv, 9] = input "v", %3 : f32[3, seq, kv] = input "m") {
  %4 = aten.scaled_dot_product_attention(%0, %1, %2, none) {is_causal = true} : f32[3, seq, 9]
  %5 = aten.scaled_dot_product_attention(%0, %1, %2, %3) : f32[3, seq, 9]
  return %4 as output "causal", %5 as output "fmask"
}
)";
TEST(CudaEmu, AttentionTensorCoresOddHeads) {
  const std::vector<Dims> runs = {
      {{"seq", 1}, {"kv", 1}}, {{"seq", 40}, {"kv", 33}}, {{"seq", 17}, {"kv", 70}}};
  test::expectEmulatedMatches(OddHeadsGraph, runs, 1.5e-2, true, false, kir::Precision::BF16);
  test::expectEmulatedMatches(OddHeadsGraph, runs, 3e-3, true, false, kir::Precision::FP16);
  EXPECT_EQ(tensorCoreKernels(OddHeadsGraph, kir::Precision::FP16), 2);
}

// A call with at least GemmFewBlocks blocks of 128 query rows takes the kernel whose warps each
// hold two mma tiles of rows (MmaAttentionTiles), a smaller one the kernel of one tile a warp
// (MmaAttentionFewTiles): both are emitted for a symbolic batch, each launched where its gate is
// positive; here 11 x 12 heads at L = 129 (264 blocks of 128 rows, the last row block partial)
// and at L = 40 (132 blocks of 128, 1 of them a block of 64 rows), 2 x 12 at L = 77 (24 blocks).
const char *RowTilesGraph = R"(graph @t opset 1.0
dim batch in 1..16
dim seq in 1..300
entry @f(%0 : f32[batch, 12, seq, 64] = input "q", %1 : f32[batch, 12, seq, 64] = input "k", %2 : f32[batch, 12, seq, 40] = input "v") {
  %3 = aten.scaled_dot_product_attention(%0, %1, %2, none) {is_causal = true} : f32[batch, 12, seq, 40]
  return %3 as output "o"
}
)";
TEST(CudaEmu, AttentionTensorCoresRowTiles) {
  EXPECT_EQ(tensorCoreKernels(RowTilesGraph, kir::Precision::BF16), 2);
  const std::vector<Dims> runs = {
      {{"batch", 11}, {"seq", 129}}, {{"batch", 11}, {"seq", 40}}, {{"batch", 2}, {"seq", 77}}};
  test::expectEmulatedMatches(RowTilesGraph, runs, 1.5e-2, true, false, kir::Precision::BF16);
}
// Two row tiles a warp take every register (255 at heads of 64: two blocks of 128 rows an SM)
// without spilling.
TEST(CudaPtxas, AttentionRowTilesNoSpills) {
  test::expectNoSpills(RowTilesGraph, kir::Precision::BF16, 255);
}

// The tensor-core kernel copies keys and values 16 bytes at a time only where their rows are
// contiguous and 16-byte aligned; else an element at a time: keys transposed (a column stride of
// S) and values sliced one column in (every row 1 float past 16-byte alignment), at heads of 32
// and 128 (the wide tiles), against rows that are aligned in the same call.
const char *StridedKeysGraph = R"(graph @t opset 1.0
dim seq in 1..100
entry @f(%0 : f32[2, seq, 32] = input "q", %1 : f32[2, 32, seq] = input "kt", %2 : f32[2, seq, 41] = input "v", %3 : f32[2, seq, 128] = input "qw", %4 : f32[2, seq, 129] = input "vw") {
  %5 = aten.transpose.int(%1) {dim0 = 1, dim1 = 2} : f32[2, seq, 32]
  %6 = aten.slice.Tensor(%2) {dim = 2, start = 1, end = 41} : f32[2, seq, 40]
  %7 = aten.scaled_dot_product_attention(%0, %5, %6, none) {is_causal = true} : f32[2, seq, 40]
  %8 = aten.slice.Tensor(%4) {dim = 2, start = 1, end = 129} : f32[2, seq, 128]
  %9 = aten.scaled_dot_product_attention(%3, %3, %8, none) {is_causal = true} : f32[2, seq, 128]
  %10 = aten.scaled_dot_product_attention(%3, %3, %3, none) : f32[2, seq, 128]
  return %7 as output "strided", %9 as output "wide", %10 as output "aligned"
}
)";
TEST(CudaEmu, AttentionTensorCoresStridedKeys) {
  const std::vector<Dims> runs = {{{"seq", 1}}, {{"seq", 45}}, {{"seq", 100}}};
  test::expectEmulatedMatches(StridedKeysGraph, runs, 1.5e-2, true, false, kir::Precision::BF16);
  EXPECT_EQ(tensorCoreKernels(StridedKeysGraph, kir::Precision::BF16), 3);
}

TEST(CudaEmu, AttentionTensorCoresWideHeads) {
  test::expectEmulatedMatches(WideHeadsGraph, {{{"seq", 1}}, {{"seq", 77}}}, 1.5e-2, true, false,
                              kir::Precision::BF16);
}
TEST(CudaPtxas, AttentionGqa) { test::expectPtxasAccepts(GqaGraph); }
TEST(CudaPtxas, AttentionDecode) { test::expectPtxasAccepts(DecodeGraph); }

// q, k and v in bf16 or fp16 (a model converted with Module::to): one call in the data's type,
// on the tensor cores of that type whatever the export's precision (a decode step on the CUDA
// cores, reading 16-bit elements), its output in the data's type. Grouped-query heads, causal
// and with an additive mask of the data's type; keys and values staged 16 bytes (8 elements) at
// a time, and an element at a time where a sliced value tensor's rows are 2 bytes past 16-byte
// alignment and e = ev = 18 are not whole chunks (partial pairs, zeros past the heads).
const char *HalfGraph = R"(graph @t opset 1.0
dim seq in 1..70
dim kv in 1..140
entry @f(%0 : bf16[2, 4, seq, 64] = input "q", %1 : bf16[2, 2, kv, 64] = input "k", %2 : bf16[2, 2, kv, 40] = input "v", %3 : bf16[2, 1, seq, kv] = input "mask", %4 : bf16[2, seq, 18] = input "q3", %5 : bf16[2, kv, 18] = input "k3", %6 : bf16[2, kv, 19] = input "v3", %7 : bf16[2, 4, 1, 64] = input "qd") {
  %8 = aten.scaled_dot_product_attention(%0, %1, %2, none) {is_causal = true, enable_gqa = true} : bf16[2, 4, seq, 40]
  %9 = aten.scaled_dot_product_attention(%0, %1, %2, %3) {enable_gqa = true} : bf16[2, 4, seq, 40]
  %10 = aten.slice.Tensor(%6) {dim = 2, start = 1, end = 19} : bf16[2, kv, 18]
  %11 = aten.scaled_dot_product_attention(%4, %5, %10, none) : bf16[2, seq, 18]
  %12 = aten.scaled_dot_product_attention(%7, %1, %2, none) {enable_gqa = true} : bf16[2, 4, 1, 40]
  return %8 as output "causal", %9 as output "masked", %11 as output "sliced", %12 as output "decode"
}
)";

std::string halfGraph(DType t) {
  std::string text = HalfGraph;
  for (size_t at = 0; (at = text.find("bf16", at)) != std::string::npos; at += 3)
    text.replace(at, 4, toString(t).str());
  return text;
}

const std::vector<Dims> HalfRuns = {{{"seq", 1}, {"kv", 1}},
                                    {{"seq", 33}, {"kv", 70}},
                                    {{"seq", 70}, {"kv", 140}},
                                    {{"seq", 9}, {"kv", 3}}};

TEST(CudaAttention, HalfDataKeepsItsType) {
  for (DType t : {DType::BF16, DType::F16}) {
    std::unique_ptr<Graph> g = aotc::test::prepare(halfGraph(t));
    ASSERT_TRUE(g);
    auto p = test::lowerForCuda(*g, true, kir::Precision::FP32);
    ASSERT_TRUE(p);
    unsigned calls = 0;
    kir::forEachStep(p->entries[0].steps, [&](const kir::Step &s) {
      if (const auto *a = std::get_if<kir::AttentionCall>(&s)) {
        ++calls;
        EXPECT_EQ(a->dtype, t);
        EXPECT_EQ(a->precision, t == DType::BF16 ? kir::Precision::BF16 : kir::Precision::FP16);
      }
    });
    EXPECT_EQ(calls, 4u) << aotc::test::printed(*p);
    // Three calls on the tensor cores, the decode step not; at any export precision.
    for (kir::Precision precision :
         {kir::Precision::FP32, kir::Precision::TF32, kir::Precision::BF16, kir::Precision::FP16})
      EXPECT_EQ(tensorCoreKernels(halfGraph(t), precision), 3) << toString(t).str();
  }
}

// Against the interpreter's f64 on the same 16-bit inputs: only the probabilities' rounding and
// the output's are left, within the type's tolerance.
TEST(CudaEmu, AttentionHalfData) {
  test::expectEmulatedMatches(halfGraph(DType::BF16), HalfRuns, 1.5e-2);
  test::expectEmulatedMatches(halfGraph(DType::F16), HalfRuns, 3e-3);
}
TEST(CudaPtxas, AttentionHalfData) {
  test::expectPtxasAccepts(halfGraph(DType::BF16));
  test::expectNoSpills(halfGraph(DType::F16), kir::Precision::FP32, 168);
}

// Two runs of the kernel give the same bits.
TEST(CudaEmu, AttentionDeterministic) {
  llvm::LLVMContext ctx;
  auto k = test::emitKernels(ctx, GqaGraph, true);
  ASSERT_TRUE(k);
  auto dev = emu::EmulatedModule::load(*k->module.module);
  ASSERT_TRUE(static_cast<bool>(dev)) << llvm::toString(dev.takeError());
  std::mt19937_64 rng(3);
  Dims dims = {{"seq", 33}, {"kv", 100}};
  aotc::test::EntryArgs args = aotc::test::randomArgs(*k->graph, dims, rng);
  int32_t failed = 0;
  auto first =
      test::runEmulated(k->program, k->module, **dev, dims, args.inputs, args.weights, failed);
  ASSERT_TRUE(static_cast<bool>(first)) << llvm::toString(first.takeError());
  auto second =
      test::runEmulated(k->program, k->module, **dev, dims, args.inputs, args.weights, failed);
  ASSERT_TRUE(static_cast<bool>(second)) << llvm::toString(second.takeError());
  for (size_t o = 0; o < first->size(); ++o)
    EXPECT_EQ(std::memcmp((*first)[o].data(), (*second)[o].data(), (*first)[o].nbytes()), 0);
}

} // namespace
} // namespace aotc::cuda
