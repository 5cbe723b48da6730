// The exported program archive (.aotp): a zip of a versioned protobuf graph plus every weight as
// a raw, 64-byte-aligned, uncompressed entry that readers use straight from a memory mapping.
#ifndef AOTC_SERIALIZE_ARCHIVE_H
#define AOTC_SERIALIZE_ARCHIVE_H

#include "aotc/ir/Program.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class MemoryBuffer;
} // namespace llvm

namespace aotc {

// Layout, in this order, every entry stored uncompressed with the time 1980-01-01 00:00:
//   manifest.json      {"format": "aotp", "format_version": {"major", "minor"}, "aotc_version",
//                       "entries": [every other entry]}; read first, so a newer major version is
//                       reported before anything else is parsed
//   program.pb         aotc.proto.Program (src/serialize/program.proto): the graph and the name,
//                       dtype, shape and entry of every weight
//   weights/<name>     raw little-endian bytes, starting at a multiple of ArchiveWeightAlignment
//                       in the file (padded with a zipalign-style 0xD935 local extra field)

/// The archive format version written. A reader accepts every minor version of its own major
/// version: minor versions only add fields that older readers may ignore.
inline constexpr unsigned ArchiveFormatMajor = 1;
inline constexpr unsigned ArchiveFormatMinor = 0;
/// Weight data starts at a multiple of this offset in the file (the widest vector load).
inline constexpr unsigned ArchiveWeightAlignment = 64;

/// Writes `graph` and `weights` to `path`. The graph must verify; every weight needs a unique
/// name and exactly dtype x shape bytes, and must match the type of the state tensor of that
/// name if the graph has one. The archive is written to a temporary file next to `path` and
/// renamed into place, so on error no file is left behind (and an existing `path` is untouched).
/// Equal inputs give byte-identical archives.
llvm::Error writeArchive(const Graph &graph, llvm::ArrayRef<WeightRef> weights,
                         llvm::StringRef path);
llvm::Error writeArchive(const ExportedProgram &program, llvm::StringRef path);

struct ReadOptions {
  /// Checks the CRC-32 of every entry, weights included (this reads every weight once). Off, the
  /// weights are not touched until used.
  bool verifyChecksums = true;
};

/// Reads the archive at `path` through a memory mapping. Every problem is an error that starts
/// with the path: `model.aotp: weight "fc.weight" has 100 bytes but f32[5, 4] needs 80`.
llvm::Expected<ExportedProgram> readArchive(llvm::StringRef path, const ReadOptions &options = {});
/// Reads an archive held in memory; errors name the buffer's identifier. The weights view (and
/// keep alive) the buffer.
llvm::Expected<ExportedProgram> readArchiveFromBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
                                                      const ReadOptions &options = {});

} // namespace aotc

#endif
