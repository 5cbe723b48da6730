// What the CPU backend's layout passes (bf16-weights, pack-weights) share when they add a weight
// derived from another at compile time: its name, and a buffer that reads it.
#ifndef AOTC_CODEGEN_CPU_DERIVEDWEIGHTS_H
#define AOTC_CODEGEN_CPU_DERIVEDWEIGHTS_H

#include "aotc/ir/Program.h"
#include "kernel/Kernel.h"

#include <string>

namespace aotc::cpu {

/// `base`, or `base.2`, `base.3`, ...: the first name that neither the exported program nor
/// `program` gives a weight.
std::string freshWeightName(const kir::Program &program, const ExportedProgram &exported,
                            const std::string &base);

/// Appends to `entry` a buffer reading `program`'s weight `weight` (its dtype and size) and
/// returns its number.
uint32_t addWeightBuffer(kir::EntryKernels &entry, const kir::Program &program, uint32_t weight);

} // namespace aotc::cpu

#endif
