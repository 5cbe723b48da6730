// What every LLVM backend shares to emit the kernel IR's scalar code: dtype conversions, element
// loads and stores, symbolic integers, loops, reduction steps, and kernel expressions with torch's
// semantics. The float functions come from a MathLibrary the backend passes in (inline
// approximations and libm on x86-64, libdevice on CUDA): they are the one target-dependent part.
#ifndef AOTC_CODEGEN_EXPREMITTER_H
#define AOTC_CODEGEN_EXPREMITTER_H

#include "kernel/Kernel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/IR/IRBuilder.h"

#include <vector>

namespace aotc::codegen {

using Builder = llvm::IRBuilder<>;

/// The float functions kernel expressions need beyond LLVM's portable instructions. Arguments and
/// result are f32 or f64 (all of one type).
enum class MathFn { Exp, Log, Log1p, Sin, Cos, Tanh, Erf, Sigmoid, Pow, Fmod };

/// Where a backend's float functions come from.
class MathLibrary {
public:
  virtual ~MathLibrary() = default;
  virtual llvm::Value *emit(Builder &b, MathFn fn, llvm::ArrayRef<llvm::Value *> args) = 0;
};

/// i64 value of a symbolic expression over the entry's root symbols; Python semantics for
/// floordiv/mod, and a zero divisor gives 0 instead of trapping.
llvm::Value *emitSym(Builder &b, const SymExpr &e, const llvm::StringMap<unsigned> &symIndex,
                     llvm::ArrayRef<llvm::Value *> syms);
llvm::Value *emitFloorDivI(Builder &b, llvm::Value *x, llvm::Value *y);
llvm::Value *emitModI(Builder &b, llvm::Value *x, llvm::Value *y);

/// x + y and x * y with reassoc + contract, so that reductions vectorize.
llvm::Value *reassocAdd(Builder &b, llvm::Value *x, llvm::Value *y);
llvm::Value *reassocMul(Builder &b, llvm::Value *x, llvm::Value *y);

/// for (i = begin; i < end; ++i) body(i); the builder ends after the loop.
void emitLoop(Builder &b, llvm::Value *begin, llvm::Value *end,
              llvm::function_ref<void(llvm::Value *)> body, const llvm::Twine &name = "i");
/// An alloca in the function's entry block.
llvm::AllocaInst *entryAlloca(Builder &b, llvm::Type *type, const llvm::Twine &name = "");

/// The type values of a dtype have in registers: f16/bf16 compute in f32, bool is i1.
llvm::Type *valueType(llvm::LLVMContext &c, DType t);
/// The type of a dtype in memory: half, i16 for bf16, i8 for bool.
llvm::Type *storageType(llvm::LLVMContext &c, DType t);
/// Converts a register value of dtype `from` to dtype `to` (rounding to f16/bf16 precision).
llvm::Value *convert(Builder &b, llvm::Value *v, DType from, DType to);
/// A value as loaded from memory (of storageType) to its value type, and back (rounding).
llvm::Value *fromStorage(Builder &b, llvm::Value *v, DType t);
llvm::Value *toStorage(Builder &b, llvm::Value *v, DType t);
llvm::Value *loadElement(Builder &b, llvm::Value *base, llvm::Value *offset, DType t);
void storeElement(Builder &b, llvm::Value *v, llvm::Value *base, llvm::Value *offset, DType t);

/// Stores check number `check` (i32) into the run's index-check flag `flag`, atomically.
void storeCheckFlag(Builder &b, llvm::Value *flag, llvm::Value *check);

/// The starting value of a reduction in `t`'s value type (Arg*: of the compared values).
llvm::Value *reduceIdentity(Builder &b, kir::ReduceOp op, DType t);
/// One step of a reduction: *acc = op(*acc, v) in `t` (the accumulator's value type); ArgMax/
/// ArgMin also keep in *accIdx the linear inner index `lin` of the first extreme (the first NaN
/// wins, as in torch).
void emitReduceStep(Builder &b, kir::ReduceOp op, DType t, llvm::Value *acc, llvm::Value *accIdx,
                    llvm::Value *v, llvm::Value *lin);

/// Emits kernel expressions of one entry at one point of a loop nest. `buffers` has one pointer
/// per buffer of the entry, then, inside generated entries, the run's index-check flag (i32).
class ExprEmitter {
public:
  ExprEmitter(MathLibrary &math, Builder &b, const kir::EntryKernels &entry,
              const llvm::StringMap<unsigned> &symIndex, llvm::ArrayRef<llvm::Value *> syms,
              llvm::ArrayRef<llvm::Value *> buffers)
      : Math(math), B(b), Entry(entry), SymIndex(symIndex), Syms(syms), Buffers(buffers) {}

  std::vector<llvm::Value *> loopVars;     // by loop number
  std::vector<llvm::Value *> reduceValues; // by stage (in the stage's accType; i64 for Arg*)
  std::vector<DType> reduceTypes;
  llvm::Value *acc = nullptr; // GEMM epilogue: the f32 sum
  /// An i32 local where CheckIndex records its number when an index is out of range, for the
  /// kernel to flush into the run's flag; null: CheckIndex stores into the flag directly.
  llvm::Value *failedCheck = nullptr;
  /// Selects with an arm that loads (isLoadingSelect) branch on their condition, so that a point
  /// loads only from the arm it takes: a concatenation of n inputs then reads each element once,
  /// not n times. For backends whose kernels do not rely on straight-line code to vectorize.
  bool lazySelects = false;
  /// Expressions emitted as another (followed until one has no substitute): clamps that the
  /// caller proved pass their operand through over the points it emits (clampInterior), selects
  /// whose condition it decided before a loop.
  llvm::DenseMap<kir::ExprId, kir::ExprId> substitutes;
  /// What emit(id) emits: `id` after its chain of substitutes.
  kir::ExprId resolve(kir::ExprId id) const {
    for (auto sub = substitutes.find(id); sub != substitutes.end(); sub = substitutes.find(id))
      id = sub->second;
    return id;
  }

  /// The value of `id` in its dtype's value type. Results are cached until clearCache().
  llvm::Value *emit(kir::ExprId id);
  void clearCache() { Cache.clear(); }
  /// What emit(id) returns until the cache is cleared: a value the backend computed otherwise (a
  /// lane of a vector load).
  void setCached(kir::ExprId id, llvm::Value *v) { Cache[id] = v; }
  /// Swaps the cache with `other`: a backend emitting several points side by side keeps one cache
  /// per point.
  void swapCache(llvm::DenseMap<kir::ExprId, llvm::Value *> &other) { Cache.swap(other); }
  llvm::Value *sym(const SymExpr &e) { return emitSym(B, e, SymIndex, Syms); }
  DType exprType(kir::ExprId id) const { return Entry.expr(id).type; }
  const kir::EntryKernels &entry() const { return Entry; }
  /// Emits stage `si` of a loop kernel at the current outer point: a store, or a reduction whose
  /// result later stages read (reduceValues). The stage's inner loops are loop vars
  /// `firstInnerLoop` on, row-major; from the first inner loop whose remaining extents are
  /// constants with at most `maxUnrolledPoints` points in all, they are unrolled (the backend's
  /// choice; 0: never).
  void emitStage(unsigned si, const kir::Stage &s, unsigned firstInnerLoop,
                 int64_t maxUnrolledPoints);
  /// Whether emitStage unrolls all of `s`'s inner window (no inner loop left) at this limit.
  static bool unrollsWindow(const kir::Stage &s, int64_t maxUnrolledPoints);

private:
  /// Runs `body` at every inner point of `s` from inner loop `j` on; `lin` is the row-major linear
  /// inner index so far.
  void innerLoops(const kir::Stage &s, unsigned j, llvm::Value *lin, unsigned firstInnerLoop,
                  int64_t maxUnrolledPoints, llvm::function_ref<void(llvm::Value *)> body);
  llvm::Value *emitUncached(const kir::Expr &e);
  llvm::Value *unary(kir::UnaryOp op, llvm::Value *x, DType t);
  llvm::Value *binary(kir::BinaryOp op, llvm::Value *x, llvm::Value *y, DType t);
  llvm::Value *checkIndex(const kir::Expr &e);
  llvm::Value *branchingSelect(const kir::Expr &e, llvm::Value *cond);

  MathLibrary &Math;
  Builder &B;
  const kir::EntryKernels &Entry;
  const llvm::StringMap<unsigned> &SymIndex;
  llvm::ArrayRef<llvm::Value *> Syms;
  llvm::ArrayRef<llvm::Value *> Buffers;
  llvm::DenseMap<kir::ExprId, llvm::Value *> Cache;
};

} // namespace aotc::codegen

#endif
