// Writing and reading .aotp archives with libzip (stored entries, fixed times, weights padded to
// 64-byte offsets); readers use entry data in place, found by a bounds-checked directory parse.
#include "aotc/serialize/Archive.h"

#include "ProgramProto.h"

#include "aotc/ir/Printer.h"
#include "aotc/ir/Verifier.h"
#include "aotc/serialize/InputFile.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>
#include <nlohmann/json.hpp>
#include <zip.h>
#include <zlib.h>

#include <climits>
#include <unistd.h>

#ifndef AOTC_VERSION
#error "AOTC_VERSION must be defined by the build"
#endif

namespace aotc {

namespace {

constexpr llvm::StringLiteral ManifestEntry = "manifest.json";
constexpr llvm::StringLiteral ProgramEntry = "program.pb";
constexpr llvm::StringLiteral WeightPrefix = "weights/";
constexpr llvm::StringLiteral FormatTag = "aotp";
// Entries the reader copies out of the archive stay small; weights are used in place.
constexpr uint64_t MaxManifestBytes = 1 << 20;
constexpr uint64_t MaxProgramBytes = INT_MAX; // protobuf's limit for one message
// 1980-01-01 00:00:00, the earliest DOS date: every entry gets it so archives are reproducible.
constexpr uint16_t DosTime = 0, DosDate = (0 << 9) | (1 << 5) | 1;
// The extra field zipalign uses for padding (a 2-byte alignment, then zeros); readers skip it.
constexpr uint16_t AlignmentFieldId = 0xD935;
constexpr unsigned LocalHeaderSize = 30;

llvm::Error makeError(std::string msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

// Prefixes every line of `err` with `prefix`, so multi-line verifier reports stay attributed.
llvm::Error prefixLines(llvm::StringRef prefix, llvm::Error err) {
  std::string msg = llvm::toString(std::move(err));
  llvm::SmallVector<llvm::StringRef, 8> lines;
  llvm::StringRef(msg).split(lines, '\n', -1, /*KeepEmpty=*/false);
  std::string out;
  for (llvm::StringRef line : lines)
    out += fmt::format("{}{}{}", out.empty() ? "" : "\n", prefix.str(), line.str());
  return makeError(out);
}

// `[5, 4]`; by hand, since fmt::join of int64_t trips a GCC 12 false -Wstringop-overflow.
std::string dimsStr(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string tensorStr(DType dtype, llvm::ArrayRef<int64_t> shape) {
  return toString(dtype).str() + dimsStr(shape);
}

// The byte size of a dtype x shape tensor, or why there is none.
llvm::Expected<uint64_t> tensorBytes(DType dtype, llvm::ArrayRef<int64_t> shape) {
  uint64_t n = byteSize(dtype);
  for (int64_t d : shape) {
    if (d < 0)
      return makeError("has a negative dim in its shape " + dimsStr(shape));
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n))
      return makeError(
          fmt::format("is too large: {} bytes overflow 64 bits", tensorStr(dtype, shape)));
  }
  return n;
}

// A weight must match the type of the state tensor of its name, when the graph declares one.
llvm::Error checkAgainstState(const Graph &g, llvm::StringRef name, DType dtype,
                              llvm::ArrayRef<int64_t> shape) {
  const StateTensor *state = g.findState(name);
  if (!state)
    return llvm::Error::success();
  Shape dims(shape.begin(), shape.end());
  if (state->type == Type::tensor(dtype, dims))
    return llvm::Error::success();
  return makeError(fmt::format("weight \"{}\" is {} but the graph declares {} \"{}\" : {}",
                               name.str(), tensorStr(dtype, shape), toString(state->kind).str(),
                               name.str(), state->type.str()));
}

uint16_t read16(const uint8_t *p) { return p[0] | (p[1] << 8); }
uint32_t read32(const uint8_t *p) { return read16(p) | (uint32_t(read16(p + 2)) << 16); }
uint64_t read64(const uint8_t *p) { return read32(p) | (uint64_t(read32(p + 4)) << 32); }

//===----------------------------------------------------------------------===//
// The zip directory, read with bounds checks on every field
//===----------------------------------------------------------------------===//

struct ZipEntry {
  std::string name;
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t compressedSize = 0;
  uint64_t size = 0;
  uint64_t headerOffset = 0;
};

struct ZipDirectory {
  std::vector<ZipEntry> entries;
  uint64_t offset = 0; // where the central directory starts; entry data lies before it
};

// True when [offset, offset + length) lies inside [0, limit).
bool fits(uint64_t offset, uint64_t length, uint64_t limit) {
  return offset <= limit && length <= limit - offset;
}

// Finds the sizes and offsets the zip64 extra field holds for fields saturated at 0xFFFFFFFF.
bool readZip64Extra(const uint8_t *extra, uint16_t length, ZipEntry &e, bool needSize,
                    bool needCompressed, bool needOffset) {
  for (uint32_t pos = 0; pos + 4 <= length;) {
    uint16_t id = read16(extra + pos), size = read16(extra + pos + 2);
    if (pos + 4 + size > length)
      return false;
    if (id == 0x0001) {
      const uint8_t *p = extra + pos + 4, *end = p + size;
      for (auto [need, field] :
           {std::pair{needSize, &e.size}, std::pair{needCompressed, &e.compressedSize},
            std::pair{needOffset, &e.headerOffset}}) {
        if (!need)
          continue;
        if (end - p < 8)
          return false;
        *field = read64(p);
        p += 8;
      }
      return true;
    }
    pos += 4 + size;
  }
  return !needSize && !needCompressed && !needOffset;
}

llvm::Expected<ZipDirectory> readZipDirectory(llvm::ArrayRef<uint8_t> file) {
  const uint8_t *base = file.data();
  uint64_t size = file.size();
  constexpr uint64_t EocdSize = 22;
  if (size < EocdSize)
    return makeError("no end of central directory record");
  // The record ends the file, followed only by its comment of up to 64 KiB.
  uint64_t eocd = UINT64_MAX;
  for (uint64_t pos = size - EocdSize + 1; pos-- > 0 && size - pos <= EocdSize + 0xFFFF;) {
    if (read32(base + pos) == 0x06054b50 && pos + EocdSize + read16(base + pos + 20) == size) {
      eocd = pos;
      break;
    }
  }
  if (eocd == UINT64_MAX)
    return makeError("no end of central directory record");
  uint64_t count = read16(base + eocd + 10), cdSize = read32(base + eocd + 12),
           cdOffset = read32(base + eocd + 16), cdEnd = eocd;
  if (read16(base + eocd + 4) != 0 || read16(base + eocd + 6) != 0)
    return makeError("multi-disk archives are not supported");
  if (count == 0xFFFF || cdSize == 0xFFFFFFFF || cdOffset == 0xFFFFFFFF) {
    // Zip64: a locator right before the record points at the zip64 end of directory record.
    if (eocd < 20 || read32(base + eocd - 20) != 0x07064b50)
      return makeError("no zip64 end of central directory locator");
    uint64_t z = read64(base + eocd - 20 + 8);
    if (!fits(z, 56, eocd - 20) || read32(base + z) != 0x06064b50)
      return makeError("bad zip64 end of central directory record");
    count = read64(base + z + 32);
    cdSize = read64(base + z + 40);
    cdOffset = read64(base + z + 48);
    cdEnd = z;
  }
  if (!fits(cdOffset, cdSize, cdEnd))
    return makeError("the central directory lies outside the file");
  // Each entry takes at least 46 bytes, which bounds `count` before anything is allocated.
  if (count > cdSize / 46)
    return makeError("the central directory is too small for its entry count");

  ZipDirectory dir;
  dir.offset = cdOffset;
  dir.entries.reserve(count);
  const uint8_t *p = base + cdOffset;
  uint64_t left = cdSize;
  for (uint64_t i = 0; i < count; ++i) {
    if (left < 46 || read32(p) != 0x02014b50)
      return makeError("bad central directory entry");
    uint16_t nameLen = read16(p + 28), extraLen = read16(p + 30), commentLen = read16(p + 32);
    uint64_t total = 46ull + nameLen + extraLen + commentLen;
    if (total > left)
      return makeError("bad central directory entry");
    ZipEntry e;
    e.flags = read16(p + 8);
    e.method = read16(p + 10);
    e.crc = read32(p + 16);
    e.compressedSize = read32(p + 20);
    e.size = read32(p + 24);
    e.headerOffset = read32(p + 42);
    e.name.assign(reinterpret_cast<const char *>(p + 46), nameLen);
    if (!readZip64Extra(p + 46 + nameLen, extraLen, e, e.size == 0xFFFFFFFF,
                        e.compressedSize == 0xFFFFFFFF, e.headerOffset == 0xFFFFFFFF))
      return makeError(fmt::format("bad zip64 extra field of entry \"{}\"", e.name));
    dir.entries.push_back(std::move(e));
    p += total;
    left -= total;
  }
  return dir;
}

// Where the data of an entry starts, from its local header (whose extra field, and so the data
// offset, may differ from the central directory's).
llvm::Expected<uint64_t> entryDataOffset(llvm::ArrayRef<uint8_t> file, const ZipDirectory &dir,
                                         const ZipEntry &e) {
  const uint8_t *base = file.data();
  if (!fits(e.headerOffset, LocalHeaderSize, dir.offset) ||
      read32(base + e.headerOffset) != 0x04034b50)
    return makeError(fmt::format("entry \"{}\" has no local header", e.name));
  const uint8_t *h = base + e.headerOffset;
  uint64_t nameLen = read16(h + 26), extraLen = read16(h + 28);
  uint64_t data = e.headerOffset + LocalHeaderSize + nameLen + extraLen;
  if (!fits(e.headerOffset + LocalHeaderSize, nameLen + extraLen, dir.offset) ||
      llvm::StringRef(reinterpret_cast<const char *>(h + LocalHeaderSize), nameLen) != e.name ||
      read16(h + 8) != e.method)
    return makeError(fmt::format("the local header of entry \"{}\" does not match the central "
                                 "directory",
                                 e.name));
  if (!fits(data, e.compressedSize, dir.offset))
    return makeError(fmt::format("the data of entry \"{}\" lies outside the file", e.name));
  return data;
}

uint32_t crc32Of(llvm::ArrayRef<uint8_t> bytes) {
  uLong crc = crc32(0, nullptr, 0);
  // zlib takes 32-bit lengths.
  for (size_t done = 0; done < bytes.size();) {
    uInt chunk = static_cast<uInt>(std::min<size_t>(bytes.size() - done, 1u << 30));
    crc = crc32(crc, bytes.data() + done, chunk);
    done += chunk;
  }
  return static_cast<uint32_t>(crc);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

struct PendingEntry {
  std::string name;
  llvm::ArrayRef<uint8_t> bytes;
  bool aligned = false;
};

std::string zipErrorString(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string msg = zip_error_strerror(&error);
  zip_error_fini(&error);
  return msg;
}

// Extra-field padding per entry so that the data of aligned entries starts at a multiple of
// ArchiveWeightAlignment. `libzipExtra` is what libzip adds to each local header by itself (a
// zip64 field for entries of 4 GiB and more). Padding is 0 or a whole field of at least 6 bytes.
std::vector<uint16_t> computePadding(llvm::ArrayRef<PendingEntry> entries,
                                     llvm::ArrayRef<uint64_t> libzipExtra) {
  std::vector<uint16_t> padding;
  uint64_t offset = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    uint64_t header = LocalHeaderSize + entries[i].name.size() + libzipExtra[i];
    uint64_t pad = 0;
    if (uint64_t misalign = (offset + header) % ArchiveWeightAlignment;
        entries[i].aligned && misalign) {
      pad = ArchiveWeightAlignment - misalign;
      if (pad < 6)
        pad += ArchiveWeightAlignment;
    }
    padding.push_back(static_cast<uint16_t>(pad));
    offset += header + pad + entries[i].bytes.size();
  }
  return padding;
}

llvm::Error writeZip(const std::string &path, llvm::ArrayRef<PendingEntry> entries,
                     llvm::ArrayRef<uint16_t> padding) {
  int code = 0;
  zip_t *za = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  if (!za)
    return makeError(zipErrorString(code));
  auto fail = [&](llvm::StringRef what) {
    std::string msg = fmt::format("{}: {}", what.str(), zip_strerror(za));
    zip_discard(za);
    return makeError(msg);
  };
  std::vector<uint8_t> pad(ArchiveWeightAlignment + 6, 0);
  pad[0] = ArchiveWeightAlignment & 0xFF;
  pad[1] = ArchiveWeightAlignment >> 8;
  for (size_t i = 0; i < entries.size(); ++i) {
    const PendingEntry &e = entries[i];
    zip_source_t *src = zip_source_buffer(za, e.bytes.data(), e.bytes.size(), 0);
    if (!src)
      return fail(e.name);
    zip_int64_t index = zip_file_add(za, e.name.c_str(), src, 0);
    if (index < 0) {
      zip_source_free(src);
      return fail(e.name);
    }
    auto idx = static_cast<zip_uint64_t>(index);
    if (zip_set_file_compression(za, idx, ZIP_CM_STORE, 0) < 0 ||
        zip_file_set_dostime(za, idx, DosTime, DosDate, 0) < 0 ||
        (padding[i] && zip_file_extra_field_set(za, idx, AlignmentFieldId, ZIP_EXTRA_FIELD_NEW,
                                                pad.data(), padding[i] - 4, ZIP_FL_LOCAL) < 0))
      return fail(e.name);
  }
  if (zip_close(za) < 0)
    return fail("writing the zip");
  return llvm::Error::success();
}

// Writes the zip and checks, from the file itself, that aligned entries landed where intended.
// Should libzip lay out a header differently than predicted, the second attempt uses the
// observed header sizes.
llvm::Error writeAlignedZip(const std::string &path, llvm::ArrayRef<PendingEntry> entries) {
  std::vector<uint64_t> libzipExtra;
  for (const PendingEntry &e : entries)
    libzipExtra.push_back(e.bytes.size() > 0xFFFFFFFFull ? 20 : 0);
  for (int attempt = 0;; ++attempt) {
    std::vector<uint16_t> padding = computePadding(entries, libzipExtra);
    if (llvm::Error err = writeZip(path, entries, padding))
      return err;
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return makeError(fmt::format("cannot read back: {}", buffer.getError().message()));
    llvm::ArrayRef<uint8_t> file(reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart()),
                                 (*buffer)->getBufferSize());
    auto dir = readZipDirectory(file);
    if (!dir)
      return dir.takeError();
    if (dir->entries.size() != entries.size())
      return makeError("libzip wrote an unexpected number of entries");
    bool aligned = true;
    for (size_t i = 0; i < entries.size(); ++i) {
      const ZipEntry &e = dir->entries[i];
      auto data = entryDataOffset(file, *dir, e);
      if (!data)
        return data.takeError();
      if (e.name != entries[i].name || e.method != ZIP_CM_STORE)
        return makeError(fmt::format("libzip did not store entry \"{}\" as asked", e.name));
      libzipExtra[i] = *data - e.headerOffset - LocalHeaderSize - e.name.size() - padding[i];
      aligned &= !entries[i].aligned || *data % ArchiveWeightAlignment == 0;
    }
    if (aligned)
      return llvm::Error::success();
    if (attempt == 1)
      return makeError("libzip did not place the weights at aligned offsets");
  }
}

std::string manifestText(const proto::Program &program, llvm::ArrayRef<PendingEntry> entries) {
  nlohmann::json manifest;
  manifest["format"] = FormatTag.str();
  manifest["format_version"] = {{"major", program.format().major()},
                                {"minor", program.format().minor()}};
  manifest["aotc_version"] = AOTC_VERSION;
  nlohmann::json names = nlohmann::json::array();
  for (const PendingEntry &e : entries)
    names.push_back(e.name);
  manifest["entries"] = std::move(names);
  return manifest.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

} // namespace

llvm::Error writeProgramArchive(const proto::Program &program, llvm::ArrayRef<DataEntry> data,
                                llvm::StringRef path) {
  auto fail = [&](std::string msg) {
    return makeError(fmt::format("cannot write {}: {}", path.str(), msg));
  };
  std::string programBytes;
  {
    google::protobuf::io::StringOutputStream stream(&programBytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!program.SerializeToCodedStream(&coded))
      return fail("cannot serialize the program");
  }
  if (programBytes.size() > MaxProgramBytes)
    return fail("the program is larger than 2 GiB");

  auto asBytes = [](const std::string &s) {
    return llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(s.data()), s.size());
  };
  std::vector<PendingEntry> entries;
  entries.push_back({ProgramEntry.str(), asBytes(programBytes), false});
  llvm::StringSet<> names = {ManifestEntry, ProgramEntry};
  for (const DataEntry &d : data) {
    if (d.name.empty() || d.name.size() > 0xFFFF || d.name.find('\0') != std::string::npos)
      return fail(fmt::format("bad entry name \"{}\"", d.name));
    if (!names.insert(d.name).second)
      return fail(fmt::format("entry \"{}\" is written twice", d.name));
    entries.push_back({d.name, d.bytes, true});
  }
  std::string manifest = manifestText(program, entries);
  entries.insert(entries.begin(), PendingEntry{ManifestEntry.str(), asBytes(manifest), false});

  // Write next to `path` (so the rename stays within one file system) with the usual mode.
  llvm::SmallString<256> tmp;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(path + ".tmp.%%%%%%", fd, tmp))
    return fail(fmt::format("cannot create a temporary file: {}", ec.message()));
  ::close(fd);
  std::string tmpPath(tmp.str());
  llvm::Error err = writeAlignedZip(tmpPath, entries);
  if (!err) {
    if (std::error_code ec = llvm::sys::fs::rename(tmpPath, path))
      err = makeError(fmt::format("cannot rename {}: {}", tmpPath, ec.message()));
    else
      return llvm::Error::success();
  }
  llvm::sys::fs::remove(tmpPath);
  return fail(llvm::toString(std::move(err)));
}

llvm::Error writeArchive(const Graph &graph, llvm::ArrayRef<WeightRef> weights,
                         llvm::StringRef path) {
  auto fail = [&](llvm::Error err) {
    return prefixLines(fmt::format("cannot write {}: ", path.str()), std::move(err));
  };
  if (llvm::Error err = verifyGraph(graph))
    return fail(std::move(err));

  proto::Program program;
  program.mutable_format()->set_major(ArchiveFormatMajor);
  program.mutable_format()->set_minor(ArchiveFormatMinor);
  if (llvm::Error err = graphToProto(graph, program))
    return fail(std::move(err));

  std::vector<DataEntry> data;
  llvm::StringSet<> names;
  for (const WeightRef &w : weights) {
    std::string name = w.name.str();
    if (name.empty() || name.find('\0') != std::string::npos || !llvm::json::isUTF8(name))
      return fail(makeError(fmt::format("bad weight name \"{}\"", llvm::json::fixUTF8(name))));
    if (!names.insert(name).second)
      return fail(makeError(fmt::format("weight \"{}\" is given twice", name)));
    auto bytes = tensorBytes(w.dtype, w.shape);
    if (!bytes)
      return fail(
          makeError(fmt::format("weight \"{}\" {}", name, llvm::toString(bytes.takeError()))));
    if (*bytes != w.bytes.size())
      return fail(makeError(fmt::format("weight \"{}\" has {} bytes but {} needs {}", name,
                                        w.bytes.size(), tensorStr(w.dtype, w.shape), *bytes)));
    if (llvm::Error err = checkAgainstState(graph, name, w.dtype, w.shape))
      return fail(std::move(err));
    proto::Weight *pw = program.add_weights();
    pw->set_name(name);
    pw->set_dtype(toProto(w.dtype));
    for (int64_t d : w.shape)
      pw->add_shape(d);
    pw->set_entry(WeightPrefix.str() + name);
    data.push_back({pw->entry(), w.bytes});
  }
  return writeProgramArchive(program, data, path);
}

llvm::Error writeArchive(const ExportedProgram &program, llvm::StringRef path) {
  if (!program.graph)
    return makeError(fmt::format("cannot write {}: the program has no graph", path.str()));
  std::vector<WeightRef> refs;
  for (const Weight &w : program.weights)
    refs.push_back(w.ref());
  return writeArchive(*program.graph, refs, path);
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

class Reader {
public:
  Reader(std::shared_ptr<const llvm::MemoryBuffer> buffer, const ReadOptions &options)
      : Buffer(std::move(buffer)), Options(options), Name(Buffer->getBufferIdentifier().str()),
        File(reinterpret_cast<const uint8_t *>(Buffer->getBufferStart()), Buffer->getBufferSize()) {
  }

  llvm::Expected<ExportedProgram> read() {
    if (llvm::Error err = openZip())
      return err;
    ExportedProgram result;
    if (llvm::Error err = readManifest(result))
      return err;

    auto programBytes = entryBytes(ProgramEntry, MaxProgramBytes);
    if (!programBytes)
      return programBytes.takeError();
    proto::Program program;
    bool parsed;
    {
      // protobuf logs why it failed (invalid UTF-8 in a string, say) to stderr; the error
      // returned is the one report.
      google::protobuf::LogSilencer quiet;
      parsed = program.ParseFromArray(programBytes->data(), static_cast<int>(programBytes->size()));
    }
    if (!parsed)
      return error("program.pb: not a valid program (protobuf parse error)");
    if (program.format().major() != result.formatMajor ||
        program.format().minor() != result.formatMinor)
      return error(fmt::format("program.pb: format version {}.{} differs from manifest.json's "
                               "({}.{})",
                               program.format().major(), program.format().minor(),
                               result.formatMajor, result.formatMinor));
    if (llvm::Error err =
            checkVersion("opset", program.opset().major(), program.opset().minor(), OpsetMajor))
      return err;

    auto graph = graphFromProto(program);
    if (!graph)
      return prefixLines(Name + ": program.pb: ", graph.takeError());
    if (llvm::Error err = verifyGraph(**graph))
      return prefixLines(Name + ": ", std::move(err));
    result.graph = std::move(*graph);

    if (llvm::Error err = readWeights(program, result))
      return err;
    return result;
  }

private:
  llvm::Error error(const std::string &msg) const {
    return makeError(fmt::format("{}: {}", Name, msg));
  }

  // libzip validates the archive (ZIP_CHECKCONS compares every local header with the central
  // directory); our own directory parse, which locates the data in the mapping, must agree.
  llvm::Error openZip() {
    zip_error_t zerr;
    zip_error_init(&zerr);
    zip_source_t *src = zip_source_buffer_create(File.data(), File.size(), 0, &zerr);
    zip_t *za = src ? zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &zerr) : nullptr;
    if (!za) {
      std::string msg = zip_error_strerror(&zerr);
      zip_error_fini(&zerr);
      zip_source_free(src);
      return error(fmt::format("not a valid zip archive ({})", msg));
    }
    zip_error_fini(&zerr);
    std::vector<std::string> names;
    zip_int64_t count = zip_get_num_entries(za, 0);
    for (zip_int64_t i = 0; i < count; ++i) {
      const char *name = zip_get_name(za, i, ZIP_FL_ENC_RAW);
      names.push_back(name ? name : "");
    }
    zip_discard(za);

    auto dir = readZipDirectory(File);
    if (!dir)
      return error(fmt::format("not a valid zip archive ({})", llvm::toString(dir.takeError())));
    Dir = std::move(*dir);
    bool agree = names.size() == Dir.entries.size();
    for (size_t i = 0; agree && i < names.size(); ++i)
      agree = names[i] == Dir.entries[i].name;
    if (!agree)
      return error("not a valid zip archive (inconsistent central directory)");
    for (size_t i = 0; i < Dir.entries.size(); ++i)
      if (!Index.try_emplace(Dir.entries[i].name, i).second)
        return error(fmt::format("not a valid zip archive (entry \"{}\" appears twice)",
                                 Dir.entries[i].name));
    return llvm::Error::success();
  }

  const ZipEntry *findEntry(llvm::StringRef name) const {
    auto it = Index.find(name);
    return it == Index.end() ? nullptr : &Dir.entries[it->second];
  }

  // The data of a stored entry, in place; every entry of an .aotp is stored.
  llvm::Expected<llvm::ArrayRef<uint8_t>> entryData(const ZipEntry &e) {
    if (e.method != ZIP_CM_STORE || (e.flags & 1) || e.compressedSize != e.size)
      return error(fmt::format("entry \"{}\" is compressed or encrypted; an .aotp stores every "
                               "entry uncompressed",
                               e.name));
    auto offset = entryDataOffset(File, Dir, e);
    if (!offset)
      return error(fmt::format("not a valid zip archive ({})", llvm::toString(offset.takeError())));
    llvm::ArrayRef<uint8_t> data = File.slice(*offset, e.size);
    if (Options.verifyChecksums && crc32Of(data) != e.crc)
      return error(fmt::format("entry \"{}\" is corrupted (CRC-32 mismatch)", e.name));
    return data;
  }

  llvm::Expected<llvm::ArrayRef<uint8_t>> entryBytes(llvm::StringRef name, uint64_t limit) {
    const ZipEntry *e = findEntry(name);
    if (!e)
      return error(fmt::format("missing {}; not an aotc program archive", name.str()));
    if (e->size > limit)
      return error(fmt::format("{} is too large ({} bytes)", name.str(), e->size));
    return entryData(*e);
  }

  llvm::Error checkVersion(llvm::StringRef what, uint64_t major, uint64_t minor,
                           unsigned readerMajor) const {
    if (major == readerMajor)
      return llvm::Error::success();
    return error(fmt::format("{} version {}.{} is {} than this reader ({}.x)", what.str(), major,
                             minor, major > readerMajor ? "newer" : "older", readerMajor));
  }

  llvm::Error readManifest(ExportedProgram &result) {
    auto bytes = entryBytes(ManifestEntry, MaxManifestBytes);
    if (!bytes)
      return bytes.takeError();
    nlohmann::json manifest =
        nlohmann::json::parse(bytes->begin(), bytes->end(), nullptr, /*allow_exceptions=*/false);
    auto bad = [&](llvm::StringRef why) {
      return error(fmt::format("manifest.json: {}", why.str()));
    };
    if (!manifest.is_object())
      return bad("not a JSON object");
    auto field = [&](const char *key) -> const nlohmann::json * {
      auto it = manifest.find(key);
      return it == manifest.end() ? nullptr : &*it;
    };
    const nlohmann::json *format = field("format");
    if (!format || !format->is_string() || format->get_ref<const std::string &>() != FormatTag)
      return bad("\"format\" is not \"aotp\"; not an aotc program archive");
    const nlohmann::json *version = field("format_version");
    if (!version || !version->is_object() || !version->contains("major") ||
        !version->contains("minor") || !(*version)["major"].is_number_unsigned() ||
        !(*version)["minor"].is_number_unsigned())
      return bad("\"format_version\" must be {\"major\": N, \"minor\": N}");
    uint64_t major = (*version)["major"].get<uint64_t>();
    uint64_t minor = (*version)["minor"].get<uint64_t>();
    if (llvm::Error err = checkVersion("format", major, minor, ArchiveFormatMajor))
      return err;
    if (major > UINT_MAX || minor > UINT_MAX)
      return bad("bad \"format_version\"");
    result.formatMajor = static_cast<unsigned>(major);
    result.formatMinor = static_cast<unsigned>(minor);
    if (const nlohmann::json *producer = field("aotc_version"); producer && producer->is_string())
      result.producer = producer->get<std::string>();
    const nlohmann::json *entries = field("entries");
    if (!entries || !entries->is_array())
      return bad("\"entries\" must be a list of entry names");
    for (const nlohmann::json &entry : *entries) {
      if (!entry.is_string())
        return bad("\"entries\" must be a list of entry names");
      if (!findEntry(entry.get_ref<const std::string &>()))
        return bad(fmt::format("lists entry \"{}\", which the archive lacks",
                               entry.get_ref<const std::string &>()));
    }
    return llvm::Error::success();
  }

  llvm::Error readWeights(const proto::Program &program, ExportedProgram &result) {
    llvm::StringSet<> names;
    std::shared_ptr<const void> storage = Buffer;
    for (const proto::Weight &pw : program.weights()) {
      const std::string &name = pw.name();
      if (!names.insert(name).second)
        return error(fmt::format("weight \"{}\" is listed twice", name));
      auto dtype = fromProto(pw.dtype());
      if (!dtype)
        return error(fmt::format("weight \"{}\" has an unknown dtype ({})", name, int(pw.dtype())));
      std::vector<int64_t> shape(pw.shape().begin(), pw.shape().end());
      auto needed = tensorBytes(*dtype, shape);
      if (!needed)
        return error(fmt::format("weight \"{}\" {}", name, llvm::toString(needed.takeError())));
      const ZipEntry *e = findEntry(pw.entry());
      if (!e)
        return error(fmt::format("weight \"{}\" is missing (no entry \"{}\")", name, pw.entry()));
      if (e->size != *needed)
        return error(fmt::format("weight \"{}\" has {} bytes but {} needs {}", name, e->size,
                                 tensorStr(*dtype, shape), *needed));
      auto data = entryData(*e);
      if (!data)
        return data.takeError();
      if (uint64_t offset = data->data() - File.data(); offset % ArchiveWeightAlignment)
        return error(fmt::format("weight \"{}\" is not {}-byte aligned in the file (its data "
                                 "starts at offset {})",
                                 name, ArchiveWeightAlignment, offset));
      if (llvm::Error err = checkAgainstState(*result.graph, name, *dtype, shape))
        return prefixLines(Name + ": ", std::move(err));
      result.weights.emplace_back(name, *dtype, std::move(shape), *data, storage);
    }
    return llvm::Error::success();
  }

  std::shared_ptr<const llvm::MemoryBuffer> Buffer;
  ReadOptions Options;
  std::string Name;
  llvm::ArrayRef<uint8_t> File;
  ZipDirectory Dir;
  llvm::StringMap<size_t> Index;
};

} // namespace

llvm::Expected<ExportedProgram> readArchiveFromBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
                                                      const ReadOptions &options) {
  return Reader(std::move(buffer), options).read();
}

llvm::Expected<ExportedProgram> readArchive(llvm::StringRef path, const ReadOptions &options) {
  // Mapped when large enough; a small file read into memory keeps the weights' alignment too.
  auto buffer = readInputFile(path, llvm::Align(ArchiveWeightAlignment));
  if (!buffer)
    return buffer.takeError();
  return readArchiveFromBuffer(std::move(*buffer), options);
}

} // namespace aotc
