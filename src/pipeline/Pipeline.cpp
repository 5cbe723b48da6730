// The one ordered list of the passes the compiler runs by default.
#include "pipeline/PassManager.h"

namespace aotc {

llvm::ArrayRef<llvm::StringLiteral> defaultPipeline() {
  static constexpr llvm::StringLiteral Pipeline[] = {
      // Folding trivial ops first makes equal computations look equal (`relu(reshape(x, same))`
      // and `relu(x)`), which is what cse needs.
      "canonicalize",
      "cse",
      // Last: canonicalize and cse both leave their leftovers (inner views, zeros, duplicates'
      // producers) to dce.
      "dce",
  };
  return Pipeline;
}

} // namespace aotc
