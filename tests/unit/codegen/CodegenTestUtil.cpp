// Helpers of the CPU code generator tests (see CodegenTestUtil.h).
#include "CodegenTestUtil.h"

#include "llvm/TargetParser/Host.h"

#include <atomic>
#include <cstdlib>
#include <thread>

namespace aotc::cpu::test {

bool hostSupports(Variant v) {
  llvm::StringMap<bool> f = llvm::sys::getHostCPUFeatures();
  auto has = [&](const char *name) { return f.lookup(name); };
  bool v3 = has("avx2") && has("fma") && has("f16c") && has("bmi2");
  if (v == Variant::X86_64_V3)
    return v3;
  return v3 && has("avx512f") && has("avx512bw") && has("avx512dq") && has("avx512vl");
}

static kir::Expr make(kir::ExprKind kind, DType t) {
  kir::Expr x;
  x.kind = kind;
  x.type = t;
  return x;
}

kir::ExprId ExprBuilder::cf(double v, DType t) {
  kir::Expr x = make(kir::ExprKind::Const, t);
  x.fval = v;
  return add(x);
}
kir::ExprId ExprBuilder::ci(int64_t v, DType t) {
  kir::Expr x = make(kir::ExprKind::Const, t);
  x.ival = v;
  return add(x);
}
kir::ExprId ExprBuilder::loopVar(unsigned i) {
  kir::Expr x = make(kir::ExprKind::LoopVar, DType::I64);
  x.index = i;
  return add(x);
}
kir::ExprId ExprBuilder::dim(const SymExpr &s) {
  kir::Expr x = make(kir::ExprKind::Dim, DType::I64);
  x.sym = s;
  return add(x);
}
kir::ExprId ExprBuilder::load(uint32_t buffer, kir::ExprId offset, DType t) {
  kir::Expr x = make(kir::ExprKind::Load, t);
  x.index = buffer;
  x.operands = {offset};
  return add(x);
}
kir::ExprId ExprBuilder::unary(kir::UnaryOp op, kir::ExprId a, DType t) {
  kir::Expr x = make(kir::ExprKind::Unary, t);
  x.unary = op;
  x.operands = {a};
  return add(x);
}
kir::ExprId ExprBuilder::binary(kir::BinaryOp op, kir::ExprId a, kir::ExprId b, DType t) {
  kir::Expr x = make(kir::ExprKind::Binary, t);
  x.binary = op;
  x.operands = {a, b};
  return add(x);
}
kir::ExprId ExprBuilder::cast(kir::ExprId a, DType t) {
  kir::Expr x = make(kir::ExprKind::Cast, t);
  x.operands = {a};
  return add(x);
}
kir::ExprId ExprBuilder::select(kir::ExprId c, kir::ExprId a, kir::ExprId b, DType t) {
  kir::Expr x = make(kir::ExprKind::Select, t);
  x.operands = {c, a, b};
  return add(x);
}
kir::ExprId ExprBuilder::reduceValue(unsigned stage, DType t) {
  kir::Expr x = make(kir::ExprKind::ReduceValue, t);
  x.index = stage;
  return add(x);
}
kir::Buffer makeBuffer(kir::Buffer::Kind kind, uint32_t index, SymExpr numel, DType dtype) {
  kir::Buffer b;
  b.kind = kind;
  b.dtype = dtype;
  b.index = index;
  b.numel = std::move(numel);
  return b;
}

kir::ExprId ExprBuilder::acc() { return add(make(kir::ExprKind::Acc, DType::F32)); }
kir::ExprId ExprBuilder::linear(llvm::ArrayRef<std::pair<unsigned, SymExpr>> terms) {
  kir::ExprId sum = kir::NoExpr;
  for (const auto &[loop, stride] : terms) {
    kir::ExprId t = binary(kir::BinaryOp::Mul, loopVar(loop), dim(stride), DType::I64);
    sum = sum == kir::NoExpr ? t : binary(kir::BinaryOp::Add, sum, t, DType::I64);
  }
  return sum == kir::NoExpr ? ci(0) : sum;
}

llvm::Expected<std::unique_ptr<Compiled>> Compiled::create(const kir::Program &program, Variant v) {
  auto tm = createTargetMachine(v);
  if (!tm)
    return tm.takeError();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>(program.name, *ctx);
  if (llvm::Error err = emitProgram(program, v, true, **tm, *module))
    return err;
  optimizeModule(*module, **tm);
  // For looking at the vectorized loops: AOTC_CODEGEN_DUMP=file.ll keeps the optimized IR.
  if (const char *dump = std::getenv("AOTC_CODEGEN_DUMP")) {
    std::error_code ec;
    llvm::raw_fd_ostream os(dump, ec);
    if (!ec)
      module->print(os, nullptr);
  }
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit)
    return jit.takeError();
  if (llvm::Error err =
          (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(ctx))))
    return err;
  auto c = std::unique_ptr<Compiled>(new Compiled);
  c->Jit = std::move(*jit);
  for (unsigned i = 0; i < program.entries.size(); ++i) {
    std::string run =
        "aotc_e" + std::to_string(i) + "_run_v" + (v == Variant::X86_64_V4 ? "4" : "3");
    auto r = c->Jit->lookup(run);
    if (!r)
      return r.takeError();
    c->Runs.push_back(r->toPtr<aotc_run_fn>());
    auto s = c->Jit->lookup("aotc_e" + std::to_string(i) + "_shapes");
    if (!s)
      return s.takeError();
    c->Shapes.push_back(s->toPtr<aotc_shapes_fn>());
  }
  return c;
}

aotc_run_fn Compiled::run(unsigned entry) const { return Runs[entry]; }
aotc_shapes_fn Compiled::shapes(unsigned entry) const { return Shapes[entry]; }

static void serialFor(aotc_exec *exec, int64_t n, int64_t grain, aotc_task_fn fn, void *c) {
  ++static_cast<TestExec *>(exec->pool)->calls;
  grain = std::max<int64_t>(grain, 1);
  for (int64_t b = 0; b < n; b += grain)
    fn(c, b, std::min(n, b + grain));
}

static void threadedFor(aotc_exec *exec, int64_t n, int64_t grain, aotc_task_fn fn, void *c) {
  ++static_cast<TestExec *>(exec->pool)->calls;
  grain = std::max<int64_t>(grain, 1);
  // Chunks of ~n/8 (at least grain) handed out by an atomic counter to two threads.
  int64_t chunk = std::max(grain, (n + 7) / 8);
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t b; (b = next.fetch_add(chunk)) < n;)
      fn(c, b, std::min(n, b + chunk));
  };
  std::thread t(worker);
  worker();
  t.join();
}

TestExec::TestExec(int threads, const std::vector<uint8_t> *weights, size_t arenaBytes)
    : arena(arenaBytes + 64) {
  if (weights)
    state = *weights;
  exec.weights = weights ? weights->data() : nullptr;
  exec.state = state.data();
  exec.arena = arena.data() + (64 - reinterpret_cast<uintptr_t>(arena.data()) % 64) % 64;
  exec.parallel_for = threads > 1 ? threadedFor : serialFor;
  exec.pool = this;
  exec.num_threads = threads;
}

} // namespace aotc::cpu::test
