// Helpers of the CPU code generator tests: hand-built kernel programs, JIT compilation of one
// variant with LLVM ORC, and test executors (serial and two-thread parallel_for).
#ifndef AOTC_TESTS_UNIT_CODEGEN_CODEGENTESTUTIL_H
#define AOTC_TESTS_UNIT_CODEGEN_CODEGENTESTUTIL_H

#include "codegen/cpu/CpuCodegen.h"
#include "kernel/Kernel.h"

#include "../../../runtime/src/artifact.h"

#include "llvm/ExecutionEngine/Orc/LLJIT.h"

#include <memory>
#include <string>
#include <vector>

namespace aotc::cpu::test {

bool hostSupports(Variant v);

/// A buffer of an entry: input, output or weight number `index` (kind), `numel` elements.
kir::Buffer makeBuffer(kir::Buffer::Kind kind, uint32_t index, SymExpr numel,
                       DType dtype = DType::F32);

/// Builds the expression pool of one entry.
struct ExprBuilder {
  kir::EntryKernels &e;
  kir::ExprId add(kir::Expr x) {
    e.exprs.push_back(std::move(x));
    return e.exprs.size() - 1;
  }
  kir::ExprId cf(double v, DType t = DType::F32);
  kir::ExprId ci(int64_t v, DType t = DType::I64);
  kir::ExprId loopVar(unsigned i);
  kir::ExprId dim(const SymExpr &s);
  kir::ExprId load(uint32_t buffer, kir::ExprId offset, DType t);
  kir::ExprId unary(kir::UnaryOp op, kir::ExprId x, DType t);
  kir::ExprId binary(kir::BinaryOp op, kir::ExprId x, kir::ExprId y, DType t);
  kir::ExprId cast(kir::ExprId x, DType t);
  kir::ExprId select(kir::ExprId c, kir::ExprId x, kir::ExprId y, DType t);
  kir::ExprId reduceValue(unsigned stage, DType t);
  kir::ExprId acc();
  // offset = sum loopVar(i) * strides[i]
  kir::ExprId linear(llvm::ArrayRef<std::pair<unsigned, SymExpr>> terms);
};

/// One JIT-compiled program for one variant.
class Compiled {
public:
  static llvm::Expected<std::unique_ptr<Compiled>> create(const kir::Program &program, Variant v);
  aotc_run_fn run(unsigned entry) const;
  aotc_shapes_fn shapes(unsigned entry) const;

private:
  std::unique_ptr<llvm::orc::LLJIT> Jit;
  std::vector<aotc_run_fn> Runs;
  std::vector<aotc_shapes_fn> Shapes;
};

/// An aotc_exec for tests: `threads` == 1 runs chunks of `grain` in order on the caller; 2 runs
/// them on two std::threads.
struct TestExec {
  explicit TestExec(int threads, const std::vector<uint8_t> *weights = nullptr,
                    size_t arenaBytes = 1 << 20);
  aotc_exec exec{};
  std::vector<uint8_t> arena;
  std::vector<uint8_t> state;
  int calls = 0; // parallel_for calls seen
};

} // namespace aotc::cpu::test

#endif
