// An exported program in memory.
#include "aotc/ir/Program.h"

namespace aotc {

const Weight *ExportedProgram::findWeight(llvm::StringRef name) const {
  for (const Weight &w : weights)
    if (w.name() == name)
      return &w;
  return nullptr;
}

} // namespace aotc
