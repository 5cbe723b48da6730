// libFuzzer target for the safetensors reader: any bytes must give a file or one error, never a
// crash or an out-of-bounds read; what reads must survive encode -> parse unchanged.
#include "aotc/serialize/Safetensors.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto file = aotc::SafetensorsFile::parse(llvm::ArrayRef<uint8_t>(data, size), "fuzz.safetensors",
                                           nullptr);
  if (!file) {
    llvm::consumeError(file.takeError());
    return 0;
  }
  // Touch every element: the views must lie inside the input.
  double sum = 0;
  std::vector<std::pair<std::string, aotc::HostTensor>> tensors;
  for (const aotc::SafetensorsFile::Entry &e : file->entries()) {
    for (int64_t i = 0; i < e.tensor.numel(); ++i)
      sum += e.tensor.getDouble(i);
    tensors.emplace_back(e.name, e.tensor);
  }
  asm volatile("" : : "r"(sum));

  // Names and metadata that read are valid UTF-8, unique and not "__metadata__": the writer must
  // take them, and reading its bytes must give the same tensors back.
  auto encoded = aotc::encodeSafetensors(tensors, file->metadata());
  if (!encoded)
    __builtin_trap();
  auto again = aotc::SafetensorsFile::parse(*encoded, "encoded.safetensors", nullptr);
  if (!again || again->metadata() != file->metadata() ||
      again->entries().size() != file->entries().size())
    __builtin_trap();
  for (size_t i = 0; i < file->entries().size(); ++i)
    if (again->entries()[i].name != file->entries()[i].name ||
        !(again->entries()[i].tensor == file->entries()[i].tensor))
      __builtin_trap();
  return 0;
}
