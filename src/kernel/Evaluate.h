// A reference evaluator of the kernel IR, for tests and debugging: plain loops over every step,
// expressions computed in double / int64 and rounded to their declared types.
#ifndef AOTC_KERNEL_EVALUATE_H
#define AOTC_KERNEL_EVALUATE_H

#include "aotc/tensor/HostTensor.h"
#include "kernel/Kernel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace aotc::kir {

/// Runs entry `entry` of `program` on HostTensors: inputs in order, weights by index
/// (program.weights order). Temporaries live in one arena of entry.arenaBytes bytes at their
/// planned offsets, so an overlap of two live buffers shows up as wrong results.
llvm::Expected<std::vector<HostTensor>> evaluate(const Program &program, unsigned entry,
                                                 llvm::ArrayRef<HostTensor> inputs,
                                                 llvm::ArrayRef<HostTensor> weights);

} // namespace aotc::kir

#endif
