// The reference interpreter: runs an entry of a graph on the CPU with plain kernels, after binding
// its symbolic dims from the inputs and checking them against ranges, divisors and guards.
#ifndef AOTC_INTERP_INTERPRETER_H
#define AOTC_INTERP_INTERPRETER_H

#include "aotc/ir/Graph.h"
#include "aotc/tensor/HostTensor.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace aotc {

/// The value of every dim of one call: root dims bound from the inputs, derived dims evaluated.
using SymbolValues = std::map<std::string, int64_t, std::less<>>;

/// Finds a state tensor (parameter, buffer or constant) by name; null when there is none.
using StateLookup = llvm::function_ref<const HostTensor *(llvm::StringRef name)>;

/// The entry called `name`, or an error listing the graph's entries.
llvm::Expected<const Entry *> findEntry(const Graph &g, llvm::StringRef name);

/// Binds the dims of `entry` from `userInputs` (in the order of the entry's user inputs) and checks
/// them: the number of inputs, dtypes, ranks and static dims, the consistency of each dim across
/// inputs, derived dims, ranges and divisors of the root dims, and every guard whose dims are all
/// bound. Errors are one line naming the input and dim:
///   input "x" dim 0 (batch) = 600 is outside 1..512
///   input "y" dim 1 (seq) = 7 but seq = 5 from input "x" dim 1
///   guard batch <= 16 (model.cpp:42:7) does not hold for batch = 20
llvm::Expected<SymbolValues> bindInputs(const Graph &g, const Entry &entry,
                                        llvm::ArrayRef<HostTensor> userInputs);

/// The dtype and shape of an input that need not exist yet.
struct InputShape {
  DType dtype;
  llvm::ArrayRef<int64_t> shape;
};
/// bindInputs on shapes alone: checks what inputs of these shapes would be given before any is
/// allocated (`aotc run --input x=300000x784` fails at once instead of after filling 1 GB).
llvm::Expected<SymbolValues> bindInputShapes(const Graph &g, const Entry &entry,
                                             llvm::ArrayRef<InputShape> userInputs);

/// Runs `entry` of `g` on the CPU: PyTorch's semantics, reductions, matmul and convolution
/// accumulated in double, every result checked against its result type evaluated with the bound
/// dims. `userInputs` follow the order of the entry's user inputs; parameters, buffers and
/// constants come from `state` by name and must have the dtype and shape the graph declares.
/// Returns the entry's outputs in the signature's order (user outputs and buffer mutations as
/// they are listed); symint results are 0-d i64 tensors and scalar results 0-d tensors.
/// Errors in a kernel (an index out of range, an integer division by zero) name the value, op
/// and source line: `entry @forward: %5: aten.embedding (model.cpp:12:5): ...`.
llvm::Expected<std::vector<HostTensor>> interpret(const Graph &g, llvm::StringRef entry,
                                                  llvm::ArrayRef<HostTensor> userInputs,
                                                  StateLookup state);

/// A deterministic random tensor for `aotc run` inputs and `aotc archive` weights, drawn from
/// `rng` in C order. std::mt19937_64's output sequence is fixed by the C++ standard but its
/// distributions are not, so the mapping is written out here:
///   floating dtypes: standard normal values by Box-Muller, one pair of 64-bit draws per pair of
///     elements: u = ((draw >> 11) + 0.5) / 2^53, then sqrt(-2 ln u1) * cos(2 pi u2) and
///     sqrt(-2 ln u1) * sin(2 pi u2), rounded to the dtype;
///   integer dtypes: draw % intValues, in [0, intValues) (10 unless given);
///   bool: the top bit of a draw.
HostTensor randomTensor(DType dtype, llvm::ArrayRef<int64_t> shape, std::mt19937_64 &rng,
                        int64_t intValues = 10);

} // namespace aotc

#endif
