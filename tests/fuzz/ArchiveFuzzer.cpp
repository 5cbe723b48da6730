// libFuzzer target for the .aotp reader: any bytes must give an archive or one error, never a
// crash or an out-of-bounds read; a graph that reads must survive Graph -> protobuf -> Graph.
#include "aotc/serialize/Archive.h"

#include "ProgramProto.h"

#include "aotc/ir/Printer.h"
#include "aotc/ir/Verifier.h"

#include "llvm/Support/MemoryBuffer.h"

#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>

// The decoder must give the same graph back after re-encoding what it accepted.
static void checkReencodes(const aotc::Graph &graph) {
  std::string printed = aotc::printGraph(graph);
  aotc::proto::Program encoded;
  if (llvm::Error err = aotc::graphToProto(graph, encoded)) {
    llvm::consumeError(std::move(err));
    return;
  }
  auto decoded = aotc::graphFromProto(encoded);
  if (!decoded || aotc::printGraph(**decoded) != printed)
    __builtin_trap();
}

// The same bytes as a bare program.pb, so that the decoder is reached without zip framing too.
static void decodeAsProgram(const uint8_t *data, size_t size) {
  aotc::proto::Program program;
  google::protobuf::LogSilencer quiet;
  if (!program.ParseFromArray(data, static_cast<int>(size)))
    return;
  auto graph = aotc::graphFromProto(program);
  if (!graph) {
    llvm::consumeError(graph.takeError());
    return;
  }
  if (llvm::Error err = aotc::verifyGraph(**graph)) {
    llvm::consumeError(std::move(err));
    return;
  }
  checkReencodes(**graph);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  decodeAsProgram(data, size);
  auto buffer = llvm::MemoryBuffer::getMemBuffer(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.aotp",
      /*RequiresNullTerminator=*/false);
  // Checksums off, so that mutated program bytes reach the protobuf decoder instead of stopping
  // at the CRC.
  auto program = aotc::readArchiveFromBuffer(std::move(buffer), {.verifyChecksums = false});
  if (!program) {
    llvm::consumeError(program.takeError());
    return 0;
  }
  // Touch every weight byte: the views must lie inside the input.
  uint8_t sum = 0;
  for (const aotc::Weight &w : program->weights)
    for (uint8_t b : w.bytes())
      sum ^= b;
  asm volatile("" : : "r"(sum));

  checkReencodes(*program->graph);
  return 0;
}
