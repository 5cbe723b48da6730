// libFuzzer target for the IR text parser: any text must parse or give one error; a graph that
// parses and verifies must print, reparse and print identically.
#include "aotc/ir/Parser.h"
#include "aotc/ir/Printer.h"
#include "aotc/ir/Verifier.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto graph = aotc::parseGraph(text, "fuzz.aotc");
  if (!graph) {
    llvm::consumeError(graph.takeError());
    return 0;
  }
  llvm::Error invalid = aotc::verifyGraph(**graph);
  bool verified = !invalid;
  llvm::consumeError(std::move(invalid));
  // The printer and parser run on unverified graphs too (for crashes); the round trip is only
  // promised for graphs that verify.
  std::string printed = aotc::printGraph(**graph);
  auto again = aotc::parseGraph(printed, "printed.aotc");
  if (!again) {
    if (verified)
      __builtin_trap();
    llvm::consumeError(again.takeError());
    return 0;
  }
  if (verified && aotc::printGraph(**again) != printed)
    __builtin_trap();
  return 0;
}
