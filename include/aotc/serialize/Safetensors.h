// The safetensors weights format: an 8-byte little-endian header size, a JSON header mapping
// names to dtype, shape and data_offsets (plus optional `__metadata__`), then raw little-endian
// data. Files are memory-mapped; tensors read from them are views of the mapping.
#ifndef AOTC_SERIALIZE_SAFETENSORS_H
#define AOTC_SERIALIZE_SAFETENSORS_H

#include "aotc/tensor/HostTensor.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace aotc {

class SafetensorsFile {
public:
  struct Entry {
    std::string name;
    HostTensor tensor; // a read-only view of the file's mapping
  };

  /// Maps and validates the whole header; every error names the file and the problem.
  static llvm::Expected<SafetensorsFile> open(llvm::StringRef path);
  /// Validates `bytes` (kept alive by `keepAlive`); `name` prefixes errors (used by the fuzzer).
  static llvm::Expected<SafetensorsFile> parse(llvm::ArrayRef<uint8_t> bytes, llvm::StringRef name,
                                               std::shared_ptr<const void> keepAlive);

  /// Entries sorted by name.
  const std::vector<Entry> &entries() const { return Entries; }
  const Entry *find(llvm::StringRef name) const;
  const std::map<std::string, std::string> &metadata() const { return Metadata; }

private:
  std::vector<Entry> Entries;
  std::map<std::string, std::string> Metadata;
};

/// The bytes writeSafetensors writes, in memory (for tests and the fuzzer's round trip). The
/// header is compact JSON with sorted keys, padded with spaces so that the data starts at an
/// 8-byte offset; tensors are laid out contiguously in name order.
llvm::Expected<std::vector<uint8_t>>
encodeSafetensors(const std::vector<std::pair<std::string, HostTensor>> &tensors,
                  const std::map<std::string, std::string> &metadata = {});

/// Writes tensors (sorted by name, data 8-byte aligned) and metadata to a temporary file renamed
/// into place; identical inputs give identical bytes.
llvm::Error writeSafetensors(llvm::StringRef path,
                             const std::vector<std::pair<std::string, HostTensor>> &tensors,
                             const std::map<std::string, std::string> &metadata = {});

} // namespace aotc

#endif
