// What the backends' kernel-IR layout passes (the CPU's bf16-weights and pack-weights, CUDA's
// half-weights) share when they add a weight derived from another at compile time: its name, a
// buffer that reads it, and the loads of the original that read the derived weight instead.
#ifndef AOTC_CODEGEN_DERIVEDWEIGHTS_H
#define AOTC_CODEGEN_DERIVEDWEIGHTS_H

#include "aotc/ir/Program.h"
#include "kernel/Kernel.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace aotc::codegen {

/// `base`, or `base.2`, `base.3`, ...: the first name that neither the exported program nor
/// `program` gives a weight.
std::string freshWeightName(const kir::Program &program, const ExportedProgram &exported,
                            const std::string &base);

/// Appends to `entry` a buffer reading `program`'s weight `weight` (its dtype and size) and
/// returns its number.
uint32_t addWeightBuffer(kir::EntryKernels &entry, const kir::Program &program, uint32_t weight);

/// The buffer of `entry` that reads `program`'s weight `weight`, added on first use.
uint32_t weightBuffer(kir::EntryKernels &entry, const kir::Program &program, uint32_t weight);

/// Appends to `program` a weight `name` of the 16-bit `type` (bf16 or f16) and `shape` and
/// returns its index. With `withData` its data goes to `exported` too: zeros, then
/// fill(element, data), element(i) reading weight `source`'s f32 element i (an error naming
/// `pass` where `exported` has no f32 data of that weight's size).
llvm::Expected<uint32_t> addSixteenBitWeight(
    kir::Program &program, ExportedProgram &exported, uint32_t source, std::string name, DType type,
    llvm::SmallVector<int64_t, 4> shape, bool withData, llvm::StringRef pass,
    llvm::function_ref<void(llvm::function_ref<float(int64_t)>, std::vector<uint16_t> &)> fill);

/// Makes weight `copy`, a dense copy of every element of weight `weight` in order (rounded or
/// not), the holder of `weight` where it has none: a [rows, numel / rows] matrix, rows its first
/// dim.
void holdByDenseCopy(kir::Program &program, uint32_t weight, uint32_t copy);

/// The weights that a GEMM's or an attention's operand reads (in place: they cannot read a
/// holder's layout instead).
llvm::BitVector operandWeights(const kir::Program &program);

/// Points every load of a weight that `held` accepts (it has a holder: kir::Weight::heldBy) in
/// the loop kernels and GEMM epilogues of `program` at its holder's element
/// (kir::HeldWeight::position: dense, panels of rows, or k-pair panels), widened to the weight's
/// type where the holder's is narrower (bf16, fp16). Where nothing else reads the weight, the blob
/// then leaves it out (kir::elideHeldWeights).
void readFromHolders(kir::Program &program, llvm::function_ref<bool(uint32_t)> held);

} // namespace aotc::codegen

#endif
