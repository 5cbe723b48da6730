// The serialize library's internal interface (generated protobuf types stay out of the public
// API): Graph <-> aotc.proto.Program, and writing an archive around an encoded program.
#ifndef AOTC_SERIALIZE_PROGRAMPROTO_H
#define AOTC_SERIALIZE_PROGRAMPROTO_H

#include "aotc/ir/Graph.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include "program.pb.h"

#include <memory>
#include <optional>
#include <string>

namespace aotc {

/// Encodes everything of `graph` into `out` (format version and weights are left to the caller).
/// Errors only on strings protobuf cannot carry (invalid UTF-8).
llvm::Error graphToProto(const Graph &graph, proto::Program &out);

/// Decodes a program into a graph, checking everything a Graph cannot represent or would assert
/// on: op names, operand counts and absent operands against the schemas, value ids (defined
/// before use, in the same block), attribute names and kinds, enum values, symbolic expressions
/// and that every symbol they use is declared. Leaves semantic checks to verifyGraph. Errors are
/// one line naming the place: `entry @forward: unknown op "aten.frobnicate"`.
llvm::Expected<std::unique_ptr<Graph>> graphFromProto(const proto::Program &program);

/// DType <-> its stable number in the format.
proto::DType toProto(DType t);
std::optional<DType> fromProto(proto::DType t);

/// An archive entry holding raw bytes that must be stored uncompressed and aligned.
struct DataEntry {
  std::string name;
  llvm::ArrayRef<uint8_t> bytes;
};

/// Writes manifest.json, program.pb and the data entries (in this order) as an archive at `path`,
/// through a temporary file. Checks only what the zip needs; writeArchive checks the program.
/// Tests use it to write archives that a reader must reject. (Implemented in Archive.cpp.)
llvm::Error writeProgramArchive(const proto::Program &program, llvm::ArrayRef<DataEntry> data,
                                llvm::StringRef path);

} // namespace aotc

#endif
