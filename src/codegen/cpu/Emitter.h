// Internals shared by the pieces of the CPU code generator: the per-module context (function
// attributes, runtime types, libm, the float functions), loops and task dispatch; scalar and
// kernel-expression emission come from codegen/ExprEmitter.h, shared with the CUDA backend.
#ifndef AOTC_CODEGEN_CPU_EMITTER_H
#define AOTC_CODEGEN_CPU_EMITTER_H

#include "codegen/ExprEmitter.h"
#include "codegen/cpu/CpuCodegen.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/IR/IRBuilder.h"

#include <string>
#include <vector>

namespace aotc::cpu {

using codegen::Builder;
using codegen::convert;
using codegen::emitFloorDivI;
using codegen::emitLoop;
using codegen::emitModI;
using codegen::emitSym;
using codegen::entryAlloca;
using codegen::ExprEmitter;
using codegen::loadElement;
using codegen::reassocAdd;
using codegen::reassocMul;
using codegen::storageType;
using codegen::storeCheckFlag;
using codegen::storeElement;
using codegen::valueType;

class ModuleEmitter;

/// x86-64's float functions: inline vectorizable approximations for the f32 functions hot in
/// models, LLVM intrinsics or libm for the rest.
class CpuMath final : public codegen::MathLibrary {
public:
  explicit CpuMath(ModuleEmitter &me) : ME(me) {}
  llvm::Value *emit(Builder &b, codegen::MathFn fn, llvm::ArrayRef<llvm::Value *> args) override;

private:
  ModuleEmitter &ME;
};

/// What every emitted function of one module and variant shares.
class ModuleEmitter {
public:
  ModuleEmitter(llvm::Module &m, Variant v, llvm::TargetMachine &tm);
  ModuleEmitter(const ModuleEmitter &) = delete;
  ModuleEmitter &operator=(const ModuleEmitter &) = delete;

  llvm::Module &module() { return M; }
  llvm::LLVMContext &ctx() { return M.getContext(); }
  Variant variant() const { return V; }
  /// "aotc_v4_"
  std::string prefix() const;
  /// A function with the variant's target attributes; internal unless `external`.
  llvm::Function *createFunction(llvm::FunctionType *type, const llvm::Twine &name,
                                 bool external = false);
  /// `aotc_exec` of runtime/src/artifact.h; ExecField numbers its fields.
  llvm::StructType *execType();
  enum ExecField : unsigned {
    ExecWeights,
    ExecState,
    ExecDerived,
    ExecArena,
    ExecParallelFor,
    ExecPool,
    ExecNumThreads,
    ExecCpuFeatures
  };
  /// The task signature `void (ptr closure, i64 begin, i64 end)`.
  llvm::FunctionType *taskType();
  /// A libm function of one or two arguments of the same floating type (no side effects).
  llvm::FunctionCallee libm(llvm::StringRef name, llvm::Type *type, unsigned arity = 1);
  codegen::MathLibrary &math() { return Math; }
  /// Task functions already emitted, by TaskKey: a step whose key is here reuses them. They keep
  /// the first such step's name, so a profile counts every step of the key under it.
  llvm::StringMap<llvm::SmallVector<llvm::Function *, 4>> &sharedTasks() { return Shared; }
  /// Whether all of the program's weights fit in a last-level cache (CacheResidentWeightBytes):
  /// then they stay there between calls, and a thread re-reading one costs no memory traffic.
  bool weightsCacheResident() const { return CacheResident; }
  void setWeightsCacheResident(bool resident) { CacheResident = resident; }

private:
  llvm::Module &M;
  Variant V;
  llvm::TargetMachine &TM;
  llvm::StructType *Exec = nullptr;
  CpuMath Math{*this};
  llvm::StringMap<llvm::SmallVector<llvm::Function *, 4>> Shared;
  bool CacheResident = false;
};

/// What a step's task computes, as text with the entry's buffers renamed by first use (slots):
/// two steps with equal keys differ only in their buffers' addresses, so one task function that
/// reads its buffers through the step's own closure serves both.
class TaskKey {
public:
  TaskKey(const kir::EntryKernels &entry, llvm::StringRef kind);

  TaskKey &text(llvm::StringRef s);
  TaskKey &number(int64_t n);
  TaskKey &sym(const SymExpr &e);
  /// A buffer by its slot and element type.
  TaskKey &buffer(uint32_t id);
  /// An expression tree, its loads' buffers by slot.
  TaskKey &expr(kir::ExprId id);

  const std::string &str() const { return Text; }
  /// The entry's buffer numbers, slot by slot.
  llvm::ArrayRef<uint32_t> slots() const { return Slots; }

private:
  const kir::EntryKernels &Entry;
  std::string Text;
  llvm::SmallVector<uint32_t, 8> Slots;
  llvm::DenseMap<kir::ExprId, unsigned> Seen;
};

/// emitLoop for a loop whose iterations are independent (no iteration reads what another
/// writes): its memory accesses carry llvm.loop.parallel_accesses, so the vectorizer needs no
/// alias checks. With `predicated`, the vectorizer is asked to vectorize it whatever its cost
/// model says, the last partial vector as masked operations (for short trip counts).
void emitParallelLoop(Builder &b, llvm::Value *begin, llvm::Value *end,
                      llvm::function_ref<void(llvm::Value *)> body, const llvm::Twine &name = "i",
                      bool predicated = false);
/// if (cond) then() else otherwise(); the builder ends after both.
void emitIf(Builder &b, llvm::Value *cond, llvm::function_ref<void()> then,
            llvm::function_ref<void()> otherwise);
/// Adds `feature` ("+avx512bf16") to the function's target features.
void addTargetFeature(llvm::Function *f, llvm::StringRef feature);
/// Signed minimum of two integers.
llvm::Value *smin(Builder &b, llvm::Value *x, llvm::Value *y);
/// ceil(x / y) for integers x >= 0, y > 0.
llvm::Value *emitCeilDiv(Builder &b, llvm::Value *x, llvm::Value *y);
/// The mask of the lanes l < n of a `width`-lane vector (n an integer of any width).
llvm::Value *lanesBelow(Builder &b, unsigned width, llvm::Value *n);
/// A read prefetch of the cache line holding `ptr` (a hint: any address, no fault) into L1
/// (locality 3) or L2 (locality 2).
void emitPrefetch(Builder &b, llvm::Value *ptr, int locality);
/// Floats per 64-byte cache line.
inline constexpr int64_t FloatsPerLine = 16;
// Inline f32 approximations (straight-line IR, vectorizable); within about 1.5 ulp.
llvm::Value *emitExpF32(Builder &b, llvm::Value *x);
llvm::Value *emitLogF32(Builder &b, llvm::Value *x);
llvm::Value *emitTanhF32(Builder &b, llvm::Value *x);
llvm::Value *emitSigmoidF32(Builder &b, llvm::Value *x);
llvm::Value *emitErfF32(Builder &b, llvm::Value *x);

/// The closure the run function fills once per call and hands to every task: the syms pointer,
/// one pointer per buffer of the entry, then the run's index-check flag (an i32, 0 until a
/// CheckIndex fails).
llvm::ArrayType *closureType(llvm::LLVMContext &c, const kir::EntryKernels &entry);

/// Emits the task function of a loop kernel and, at the builder (inside the run function), the
/// code that runs it serially or through exec->parallel_for.
void emitLoopKernel(ModuleEmitter &me, const kir::EntryKernels &entry,
                    const kir::LoopKernel &kernel, const llvm::StringMap<unsigned> &symIndex,
                    Builder &run, llvm::Value *exec, llvm::Value *closure,
                    llvm::ArrayRef<llvm::Value *> syms, llvm::ArrayRef<llvm::Value *> buffers);
/// Emits a GEMM call (its task functions and the call in the run function).
void emitGemm(ModuleEmitter &me, const kir::EntryKernels &entry, const kir::GemmCall &gemm,
              const llvm::StringMap<unsigned> &symIndex, Builder &run, llvm::Value *exec,
              llvm::Value *closure, llvm::ArrayRef<llvm::Value *> syms,
              llvm::ArrayRef<llvm::Value *> buffers);

/// Loads the syms and buffer pointers from a closure (inside a task function); `buffers` ends
/// with the index-check flag's pointer.
void loadClosure(Builder &b, const kir::EntryKernels &entry, llvm::Value *closure,
                 llvm::SmallVectorImpl<llvm::Value *> &syms,
                 llvm::SmallVectorImpl<llvm::Value *> &buffers);

/// Runs fn(closure, 0, total) directly when `work` is small, else through exec->parallel_for
/// with a grain giving chunks of at least ~16K element-operations.
void emitDispatch(ModuleEmitter &me, Builder &b, llvm::Value *exec, llvm::Function *fn,
                  llvm::Value *closure, llvm::Value *total, llvm::Value *workPerIndex);

} // namespace aotc::cpu

#endif
