// An exported program in memory: the graph and the data of its weights. Passes and code
// generation work on it; the .aotp archive (aotc/serialize/Archive.h) is one way to store it.
#ifndef AOTC_IR_PROGRAM_H
#define AOTC_IR_PROGRAM_H

#include "aotc/ir/DType.h"
#include "aotc/ir/Graph.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace aotc {

/// A weight to write: a view of its raw little-endian bytes, which must stay alive during the
/// write.
struct WeightRef {
  llvm::StringRef name;
  DType dtype = DType::F32;
  llvm::ArrayRef<int64_t> shape;
  llvm::ArrayRef<uint8_t> bytes;
};

/// A weight of a program. Its bytes view `storage` (an archive's memory mapping, a buffer a pass
/// computed), which every copy of the weight keeps alive.
class Weight {
public:
  Weight(std::string name, DType dtype, std::vector<int64_t> shape, llvm::ArrayRef<uint8_t> bytes,
         std::shared_ptr<const void> storage)
      : Name(std::move(name)), DT(dtype), Dims(std::move(shape)), Bytes(bytes),
        Storage(std::move(storage)) {}

  const std::string &name() const { return Name; }
  DType dtype() const { return DT; }
  llvm::ArrayRef<int64_t> shape() const { return Dims; }
  llvm::ArrayRef<uint8_t> bytes() const { return Bytes; }
  WeightRef ref() const { return {Name, DT, Dims, Bytes}; }

private:
  std::string Name;
  DType DT;
  std::vector<int64_t> Dims;
  llvm::ArrayRef<uint8_t> Bytes;
  std::shared_ptr<const void> Storage;
};

struct ExportedProgram {
  std::unique_ptr<Graph> graph;
  std::vector<Weight> weights; // in archive order
  // Where the program was read from: the archive's format version and the aotc version that
  // wrote it (`0.1.0`); 0 and empty for a program made in memory.
  unsigned formatMajor = 0;
  unsigned formatMinor = 0;
  std::string producer;

  const Weight *findWeight(llvm::StringRef name) const;
};

} // namespace aotc

#endif
