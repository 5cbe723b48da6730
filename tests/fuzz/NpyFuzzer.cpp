// libFuzzer target for the .npy reader: any bytes must give a tensor or one error, never a crash
// or an out-of-bounds read; a tensor that reads must survive encode -> parse unchanged.
#include "aotc/serialize/Npy.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto tensor = aotc::parseNpy(llvm::ArrayRef<uint8_t>(data, size), "fuzz.npy");
  if (!tensor) {
    llvm::consumeError(tensor.takeError());
    return 0;
  }
  // Every element converts (the data lies inside the input, so this is bounded by its size).
  double sum = 0;
  for (int64_t i = 0; i < tensor->numel(); ++i)
    sum += tensor->getDouble(i) + static_cast<double>(tensor->getInt(i));
  asm volatile("" : : "r"(sum));

  // Every dtype the reader gives has a numpy descr, so the writer must take it back.
  auto encoded = aotc::encodeNpy(*tensor);
  if (!encoded)
    __builtin_trap();
  auto again = aotc::parseNpy(*encoded, "encoded.npy");
  if (!again || !(*again == *tensor))
    __builtin_trap();
  return 0;
}
