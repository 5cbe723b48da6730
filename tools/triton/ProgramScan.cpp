// A reader for just enough of the .aotp format (src/serialize: a zip whose entries are stored
// uncompressed; program.pb, the Program protobuf of src/serialize/program.proto) to find
// buffer-mutation outputs, without linking aotc's serialization library (and LLVM) into the
// backend.
#include "ProgramScan.h"

#include <string_view>

namespace aotc::triton {

namespace {

// program.proto's field numbers and values this reader relies on.
constexpr uint32_t ProgramEntries = 9; // Program.entries
constexpr uint32_t EntryName = 1;      // Entry.name
constexpr uint32_t EntryOutputs = 3;   // Entry.outputs
constexpr uint32_t OutputKind = 1;     // Output.kind
constexpr uint32_t OutputName = 2;     // Output.name
constexpr uint64_t BufferMutation = 2; // OUTPUT_KIND_BUFFER_MUTATION

struct Bytes {
  const uint8_t *data;
  size_t size;
};

uint32_t le(const uint8_t *p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}

// The data of a stored zip entry, found through the central directory; null data when absent,
// compressed, or in a ZIP64 archive (a program without weights never needs one).
Bytes zipEntry(Bytes zip, std::string_view name) {
  constexpr size_t EocdSize = 22, CentralSize = 46, LocalSize = 30;
  if (zip.size < EocdSize)
    return {nullptr, 0};
  size_t eocd = zip.size - EocdSize;
  while (le(zip.data + eocd, 4) != 0x06054b50) {
    if (eocd == 0 || zip.size - eocd > EocdSize + 0xffff)
      return {nullptr, 0};
    --eocd;
  }
  const uint32_t count = le(zip.data + eocd + 10, 2);
  size_t at = le(zip.data + eocd + 16, 4);
  for (uint32_t i = 0; i < count; ++i) {
    if (at > eocd || eocd - at < CentralSize || le(zip.data + at, 4) != 0x02014b50)
      return {nullptr, 0};
    const uint8_t *h = zip.data + at;
    const size_t nameLen = le(h + 28, 2), extraLen = le(h + 30, 2), commentLen = le(h + 32, 2);
    if (eocd - at - CentralSize < nameLen)
      return {nullptr, 0};
    if (std::string_view(reinterpret_cast<const char *>(h + CentralSize), nameLen) == name) {
      const uint32_t method = le(h + 10, 2), size = le(h + 24, 4), local = le(h + 42, 4);
      if (method != 0 || size == 0xffffffff || local > zip.size || zip.size - local < LocalSize ||
          le(zip.data + local, 4) != 0x04034b50)
        return {nullptr, 0};
      const size_t data =
          local + LocalSize + le(zip.data + local + 26, 2) + le(zip.data + local + 28, 2);
      if (data > zip.size || zip.size - data < size)
        return {nullptr, 0};
      return {zip.data + data, size};
    }
    at += CentralSize + nameLen + extraLen + commentLen;
  }
  return {nullptr, 0};
}

// A protobuf wire-format reader over one message.
class Wire {
public:
  explicit Wire(Bytes b) : p_(b.data), end_(b.data + b.size) {}
  bool done() const { return p_ == end_; }
  bool failed() const { return failed_; }

  // The next field's number and wire type; false at the end or on malformed input.
  bool next(uint32_t &field, uint32_t &type) {
    uint64_t key = 0;
    if (done() || !varint(key))
      return false;
    field = static_cast<uint32_t>(key >> 3);
    type = static_cast<uint32_t>(key & 7);
    return true;
  }
  bool varint(uint64_t &v) {
    v = 0;
    for (int shift = 0; shift < 64 && p_ < end_; shift += 7) {
      const uint8_t byte = *p_++;
      v |= uint64_t{byte & 0x7fu} << shift;
      if (!(byte & 0x80))
        return true;
    }
    return fail();
  }
  bool bytes(Bytes &out) {
    uint64_t n = 0;
    if (!varint(n) || n > static_cast<uint64_t>(end_ - p_))
      return fail();
    out = {p_, static_cast<size_t>(n)};
    p_ += n;
    return true;
  }
  bool skip(uint32_t type) {
    uint64_t v;
    Bytes b;
    switch (type) {
    case 0:
      return varint(v);
    case 1:
      return advance(8);
    case 2:
      return bytes(b);
    case 5:
      return advance(4);
    default:
      return fail();
    }
  }

private:
  bool advance(size_t n) {
    if (n > static_cast<size_t>(end_ - p_))
      return fail();
    p_ += n;
    return true;
  }
  bool fail() {
    failed_ = true;
    return false;
  }
  const uint8_t *p_, *end_;
  bool failed_ = false;
};

// Calls `fn` on the payload of every length-delimited field `number`; false when malformed.
template <typename Fn> bool eachMessage(Bytes message, uint32_t number, Fn fn) {
  Wire w(message);
  uint32_t field, type;
  while (w.next(field, type)) {
    Bytes sub;
    if (field == number && type == 2) {
      if (!w.bytes(sub) || !fn(sub))
        return false;
    } else if (!w.skip(type)) {
      return false;
    }
  }
  return !w.failed();
}

// The string field `number` of a message ("" when absent); false when malformed.
bool stringField(Bytes message, uint32_t number, std::string &out) {
  Wire w(message);
  uint32_t field, type;
  while (w.next(field, type)) {
    Bytes b;
    if (field == number && type == 2) {
      if (!w.bytes(b))
        return false;
      out.assign(reinterpret_cast<const char *>(b.data), b.size);
    } else if (!w.skip(type)) {
      return false;
    }
  }
  return !w.failed();
}

// Output.kind (0 when absent); false when malformed.
bool outputKind(Bytes output, uint64_t &kind) {
  Wire w(output);
  uint32_t field, type;
  kind = 0;
  while (w.next(field, type)) {
    if (field == OutputKind && type == 0) {
      if (!w.varint(kind))
        return false;
    } else if (!w.skip(type)) {
      return false;
    }
  }
  return !w.failed();
}

} // namespace

std::optional<BufferUpdates> readBufferUpdates(const uint8_t *aotp, size_t size) {
  const Bytes program = zipEntry({aotp, size}, "program.pb");
  if (!program.data)
    return std::nullopt;
  BufferUpdates updates;
  const bool ok = eachMessage(program, ProgramEntries, [&](Bytes entry) {
    std::string name;
    if (!stringField(entry, EntryName, name))
      return false;
    std::vector<std::string> &names = updates.byEntry[name];
    return eachMessage(entry, EntryOutputs, [&](Bytes output) {
      uint64_t kind = 0;
      std::string outputName;
      if (!outputKind(output, kind) || !stringField(output, OutputName, outputName))
        return false;
      if (kind == BufferMutation)
        names.push_back(outputName);
      return true;
    });
  });
  if (!ok)
    return std::nullopt;
  return updates;
}

} // namespace aotc::triton
