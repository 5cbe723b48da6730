// The x86-64 code generator: one kir::Program -> LLVM IR for one CPU variant -> an ELF object.
#ifndef AOTC_CODEGEN_CPU_CPUCODEGEN_H
#define AOTC_CODEGEN_CPU_CPUCODEGEN_H

#include "codegen/cpu/CpuTarget.h"
#include "kernel/Kernel.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>
#include <vector>

namespace aotc::cpu {

/// Which x86-64 code an artifact carries. Portable: x86-64-v3 (AVX2) and x86-64-v4 (AVX-512),
/// picked at load by CPU detection; Native: only this machine's CPU.
enum class CpuTarget { Portable, X86_64_V3, X86_64_V4, Native };
/// portable|x86-64-v3|x86-64-v4|native
llvm::Expected<CpuTarget> parseCpuTarget(llvm::StringRef text);

/// The code of one variant: an ELF relocatable object with the functions of emitProgram.
struct CodeObject {
  Variant variant;
  bool native; // the host's CPU name and features
  llvm::SmallVector<char, 0> object;
  std::string ir; // the optimized LLVM IR, when asked for
};

/// The code generation step: the object of every variant `target` names, in variant order (the
/// first also carries the shape functions); with `printIR` each one's optimized LLVM IR too.
llvm::Expected<std::vector<CodeObject>> generateCode(const kir::Program &program, CpuTarget target,
                                                     bool printIR = false);

/// A PIC, deterministic x86-64 target machine for `v` at the aggressive optimization level; v4
/// functions prefer 512-bit vectors. `native` takes the host's CPU name and features instead.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(Variant v,
                                                                         bool native = false);

/// Emits every entry i of `program` into `module` (whose data layout and triple are set from
/// `tm`): the external functions
///   int32_t aotc_e<i>_run_v<3|4>(aotc_exec *, const void *const *inputs, void *const *outputs,
///                                const int64_t *syms)
///   int32_t aotc_e<i>_shapes(const int64_t *syms, int64_t *out)   (only when withShapes)
/// with the contracts of runtime/src/artifact.h. Every other function is internal and named
/// after the variant (aotc_v4_<kernel>), so both variants link into one object.
///
/// GEMM pack buffers live on the stack of the thread running a GEMM task (at most
/// gemmStackBytes()), so threads running generated code need stacks of at least 1 MiB.
llvm::Error emitProgram(const kir::Program &program, Variant v, bool withShapes,
                        llvm::TargetMachine &tm, llvm::Module &module);

/// Runs LLVM's O3 pipeline (loop and SLP vectorizers on) on `module` and returns the ELF
/// relocatable object.
llvm::Expected<llvm::SmallVector<char, 0>> optimizeAndEmitObject(llvm::Module &module,
                                                                 llvm::TargetMachine &tm);

/// Runs only the O3 pipeline (for JIT tests and IR dumps).
void optimizeModule(llvm::Module &module, llvm::TargetMachine &tm);

/// The largest stack area one GEMM task allocates for its pack buffers.
uint64_t gemmStackBytes(Variant v);

} // namespace aotc::cpu

#endif
