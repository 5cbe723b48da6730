// Weight folding: computations on weights only are evaluated once at compile time and become
// constant weights of the program (BatchNorm folded into the convolution before it, casts, ...).
#ifndef AOTC_PASSES_FOLDWEIGHTS_H
#define AOTC_PASSES_FOLDWEIGHTS_H

#include "aotc/ir/Program.h"

#include "llvm/Support/Error.h"

namespace aotc {

/// Folds computations that depend only on weights (state tensors that no entry mutates, and
/// constants) into new constant weights: (1) scale/shift after a convolution whose
/// per-output-channel factors are weight-only (conv(x, W) * s + t  ->
/// conv(x, W * s[:,None,None,None], bias * s + t)), i.e. BatchNorm folded into the conv; (2) then
/// every node whose operands are all weight-only is evaluated once with the reference interpreter
/// and replaced by a new state tensor of kind Constant, named after the weight it derives from
/// (`layer1.0.conv1.weight.folded`, then `.folded.1`, ... when taken). Views of a single weight
/// (transpose, permute, reshape, expand) stay: the kernel IR handles them as strides. Weights that
/// folding leaves unused are removed from the graph, from every entry's inputs and from
/// `program.weights`; new constants are appended to both. Identical inputs give identical output.
/// State tensors without data in `program.weights` are left alone.
llvm::Error foldWeights(ExportedProgram &program);

} // namespace aotc

#endif
