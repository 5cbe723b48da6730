// Object emission: an ELF relocatable for each variant whose only undefined symbols are libc/libm
// functions (no compiler-rt or libgcc helpers such as __truncsfhf2), with run/shapes exported.
#include "CodegenTestUtil.h"

#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"

#include <gtest/gtest.h>

#include <set>

using namespace aotc;
using namespace aotc::cpu;
using namespace aotc::cpu::test;

namespace {

// Every unary op, f16/bf16/f64 conversions and a GEMM, in one entry.
kir::Program everything() {
  kir::Program p;
  p.name = "everything";
  kir::EntryKernels e;
  e.name = "forward";
  e.symbols = {"n"};
  SymExpr n = SymExpr::symbol("n");
  e.inputs = {{"x", DType::F32, {n}}};
  e.outputs = {{"h", DType::F16, {n}},
               {"b", DType::BF16, {n}},
               {"d", DType::F64, {n}},
               {"g", DType::F32, {n, n}}};
  auto buf = [&](kir::Buffer::Kind k, DType t, uint32_t i) {
    kir::Buffer b;
    b.kind = k;
    b.dtype = t;
    b.index = i;
    b.numel = n;
    e.buffers.push_back(b);
  };
  buf(kir::Buffer::Kind::Input, DType::F32, 0);
  buf(kir::Buffer::Kind::Output, DType::F16, 0);
  buf(kir::Buffer::Kind::Output, DType::BF16, 1);
  buf(kir::Buffer::Kind::Output, DType::F64, 2);
  buf(kir::Buffer::Kind::Output, DType::F32, 3);
  ExprBuilder eb{e};
  kir::ExprId i = eb.loopVar(0);
  kir::ExprId x = eb.load(0, i, DType::F32);
  kir::ExprId xd = eb.cast(x, DType::F64);
  kir::ExprId acc = x, accd = xd;
  for (unsigned op = 0; op <= unsigned(kir::UnaryOp::Round); ++op) {
    acc = eb.binary(kir::BinaryOp::Add, acc, eb.unary(kir::UnaryOp(op), x, DType::F32), DType::F32);
    accd =
        eb.binary(kir::BinaryOp::Add, accd, eb.unary(kir::UnaryOp(op), xd, DType::F64), DType::F64);
  }
  acc = eb.binary(kir::BinaryOp::Pow, acc, x, DType::F32);
  acc = eb.binary(kir::BinaryOp::Mod, acc, x, DType::F32);
  kir::LoopKernel k;
  k.name = "all_ops";
  k.outer = {n};
  k.parallelLoops = 1;
  for (auto [b, v] : {std::pair{1u, acc}, {2u, acc}, {3u, accd}}) {
    kir::Stage s;
    s.buffer = b;
    s.offset = i;
    s.value = v;
    k.stages.push_back(s);
  }
  kir::Stage s;
  s.buffer = 1;
  s.offset = i;
  s.value = eb.cast(xd, DType::F16);
  k.stages.push_back(s);
  e.steps.push_back(k);
  kir::GemmCall g;
  g.name = "gemm";
  g.m = g.n = g.k = n;
  g.a = {0, 0, 0, 0, 0};
  g.b = {0, 0, 0, 0, 0};
  g.out = 4;
  e.steps.push_back(g);
  p.entries.push_back(e);
  return p;
}

TEST(ObjectTest, OnlyLibcAndLibmUndefined) {
  const std::set<std::string> allowed = {"sinf",   "cosf",   "log1pf", "powf", "fmodf", "tanhf",
                                         "erff",   "expf",   "logf",   "sin",  "cos",   "log1p",
                                         "pow",    "fmod",   "tanh",   "erf",  "exp",   "log",
                                         "memset", "memcpy", "memmove"};
  for (Variant v : {Variant::X86_64_V3, Variant::X86_64_V4}) {
    auto tm = createTargetMachine(v);
    ASSERT_TRUE(!!tm) << llvm::toString(tm.takeError());
    llvm::LLVMContext ctx;
    llvm::Module m("everything", ctx);
    ASSERT_FALSE(emitProgram(everything(), v, v == Variant::X86_64_V3, **tm, m));
    auto obj = optimizeAndEmitObject(m, **tm);
    ASSERT_TRUE(!!obj) << llvm::toString(obj.takeError());
    auto file = llvm::object::ObjectFile::createObjectFile(
        llvm::MemoryBufferRef(llvm::StringRef(obj->data(), obj->size()), "obj"));
    ASSERT_TRUE(!!file) << llvm::toString(file.takeError());
    EXPECT_TRUE((*file)->isELF());
    std::set<std::string> defined, undefined;
    for (const llvm::object::SymbolRef &sym : (*file)->symbols()) {
      auto name = sym.getName();
      auto flags = sym.getFlags();
      ASSERT_TRUE(name && flags);
      if (name->empty())
        continue;
      if (*flags & llvm::object::SymbolRef::SF_Undefined)
        undefined.insert(name->str());
      else if (*flags & llvm::object::SymbolRef::SF_Global)
        defined.insert(name->str());
    }
    for (const std::string &u : undefined)
      EXPECT_TRUE(allowed.count(u)) << variantName(v).str() << " needs " << u;
    std::string run = v == Variant::X86_64_V4 ? "aotc_e0_run_v4" : "aotc_e0_run_v3";
    std::set<std::string> want = {run};
    if (v == Variant::X86_64_V3)
      want.insert("aotc_e0_shapes");
    EXPECT_EQ(defined, want) << variantName(v).str();
  }
}

} // namespace
