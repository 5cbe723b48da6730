// Names and buffers of weights derived at compile time (see DerivedWeights.h).
#include "codegen/cpu/DerivedWeights.h"

#include "llvm/ADT/STLExtras.h"

#include <fmt/format.h>

namespace aotc::cpu {

std::string freshWeightName(const kir::Program &program, const ExportedProgram &exported,
                            const std::string &base) {
  auto taken = [&](const std::string &n) {
    return exported.findWeight(n) ||
           llvm::any_of(program.weights, [&](const kir::Weight &w) { return w.name == n; });
  };
  std::string name = base;
  for (int n = 2; taken(name); ++n)
    name = fmt::format("{}.{}", base, n);
  return name;
}

uint32_t addWeightBuffer(kir::EntryKernels &entry, const kir::Program &program, uint32_t weight) {
  const kir::Weight &w = program.weights[weight];
  kir::Buffer buf;
  buf.kind = kir::Buffer::Kind::Weight;
  buf.dtype = w.dtype;
  buf.index = weight;
  buf.numel = static_cast<int64_t>(w.numel());
  buf.name = w.name;
  entry.buffers.push_back(buf);
  return entry.buffers.size() - 1;
}

} // namespace aotc::cpu
