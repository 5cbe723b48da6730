// Reading and writing safetensors files. The reader validates as the reference implementation
// (huggingface/safetensors) does, and more strictly where it would silently accept a bad file
// (duplicate keys); tensors view the file's memory mapping.
#include "aotc/serialize/Safetensors.h"

#include "aotc/serialize/AtomicFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "aotc/serialize/InputFile.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>

namespace aotc {

namespace {

using Json = nlohmann::json;

constexpr llvm::StringLiteral MetadataKey = "__metadata__";
// The reference reader refuses larger headers, so no valid file has one.
constexpr uint64_t MaxHeaderBytes = 100'000'000;
// The header is padded so that the data starts at a multiple of this, as the reference writer
// does.
constexpr size_t HeaderAlignment = 8;
// Aligning the whole buffer to 64 keeps every tensor at its in-file alignment.
constexpr size_t BufferAlignment = 64;

#define AOTC_SAFETENSORS_DTYPES(X)                                                                 \
  X(F64, "F64")                                                                                    \
  X(F32, "F32")                                                                                    \
  X(F16, "F16")                                                                                    \
  X(BF16, "BF16")                                                                                  \
  X(I64, "I64")                                                                                    \
  X(I32, "I32")                                                                                    \
  X(I16, "I16")                                                                                    \
  X(I8, "I8")                                                                                      \
  X(U8, "U8")                                                                                      \
  X(Bool, "BOOL")

llvm::StringRef safetensorsName(DType t) {
  switch (t) {
#define AOTC_ST_NAME(Name, Str)                                                                    \
  case DType::Name:                                                                                \
    return Str;
    AOTC_SAFETENSORS_DTYPES(AOTC_ST_NAME)
#undef AOTC_ST_NAME
  }
  return "?";
}

std::optional<DType> parseSafetensorsDType(llvm::StringRef s) {
#define AOTC_ST_PARSE(Name, Str)                                                                   \
  if (s == Str)                                                                                    \
    return DType::Name;
  AOTC_SAFETENSORS_DTYPES(AOTC_ST_PARSE)
#undef AOTC_ST_PARSE
  return std::nullopt;
}

// dtypes the format defines that aotc has no type for; named as such in errors, not as unknown.
bool isUnsupportedSafetensorsDType(llvm::StringRef s) {
  return llvm::is_contained(
      {"U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64"}, s);
}

llvm::Error makeError(std::string msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

// `[5, 4]`; by hand, since fmt::join of int64_t trips a GCC 12 false -Wstringop-overflow.
template <typename T> std::string listStr(llvm::ArrayRef<T> values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

// `F32 [5, 4]`: safetensors' own spelling of a tensor type.
std::string typeStr(DType dtype, llvm::ArrayRef<int64_t> shape) {
  return fmt::format("{} {}", safetensorsName(dtype).str(), listStr(shape));
}

//===----------------------------------------------------------------------===//
// The JSON header
//===----------------------------------------------------------------------===//

// Builds the header's JSON value as nlohmann's own DOM parser does, and stops at what that
// parser would let through: a repeated key (which would silently replace the first value) and
// nesting deeper than a safetensors header has (which only costs memory). Also keeps the
// parse error's text.
class HeaderBuilder : public nlohmann::json_sax<Json> {
public:
  Json Root;
  std::string Error;

  bool null() override { return value(nullptr); }
  bool boolean(bool v) override { return value(v); }
  bool number_integer(number_integer_t v) override { return value(v); }
  bool number_unsigned(number_unsigned_t v) override { return value(v); }
  bool number_float(number_float_t v, const string_t &) override { return value(v); }
  bool string(string_t &v) override { return value(std::move(v)); }
  bool binary(binary_t &v) override { return value(Json::binary(std::move(v))); }

  bool start_object(std::size_t) override { return open(Json::object()); }
  bool start_array(std::size_t) override { return open(Json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t &k) override {
    Json &object = *Stack.back();
    if (object.contains(k)) {
      if (Stack.size() == 1)
        Error = k == MetadataKey ? fmt::format("\"{}\" appears twice", k)
                                 : fmt::format("tensor \"{}\" appears twice", k);
      else
        Error = fmt::format("{}: \"{}\" appears twice", context(), k);
      return false;
    }
    if (Stack.size() == 1)
      TopKey = k;
    Slot = &object[k];
    return true;
  }

  bool parse_error(std::size_t, const std::string &,
                   const nlohmann::detail::exception &ex) override {
    // Drop the "[json.exception.parse_error.101] " tag; the rest says where and why.
    llvm::StringRef what = ex.what();
    if (size_t tag = what.find("] "); what.starts_with("[") && tag != llvm::StringRef::npos)
      what = what.drop_front(tag + 2);
    Error = fmt::format("header is not valid JSON: {}", what.str());
    return false;
  }

private:
  // The tensor (or the metadata) whose entry is being read, for messages.
  std::string context() const {
    return TopKey == MetadataKey ? fmt::format("\"{}\"", TopKey)
                                 : fmt::format("tensor \"{}\"", TopKey);
  }

  bool value(Json v) {
    put(std::move(v));
    return true;
  }

  // Stores a value where the innermost open container expects it; returns where it landed.
  Json *put(Json v) {
    if (Stack.empty()) {
      Root = std::move(v);
      return &Root;
    }
    Json &parent = *Stack.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    *Slot = std::move(v);
    return Slot;
  }

  bool open(Json container) {
    // The header, a tensor, its shape list: nothing valid goes deeper.
    if (Stack.size() >= 3) {
      Error = "header nests lists or objects too deeply";
      return false;
    }
    Stack.push_back(put(std::move(container)));
    return true;
  }

  bool close() {
    Stack.pop_back();
    return true;
  }

  // Pointers stay valid: an open container is the last element of its parent array or a node of
  // its parent's std::map, and nothing is added to the parent until it closes.
  std::vector<Json *> Stack;
  Json *Slot = nullptr;
  std::string TopKey;
};

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

// The non-negative integer `v` holds, if it fits in int64.
std::optional<int64_t> asDim(const Json &v) {
  if (!v.is_number_unsigned())
    return std::nullopt;
  uint64_t u = v.get<uint64_t>();
  if (u > uint64_t(std::numeric_limits<int64_t>::max()))
    return std::nullopt;
  return static_cast<int64_t>(u);
}

// One tensor's entry, checked on its own; `dataBytes` is the size of the data region.
llvm::Expected<TensorInfo> parseTensorInfo(const std::string &name, const Json &entry,
                                           uint64_t dataBytes) {
  auto bad = [&](std::string msg) {
    return makeError(fmt::format("tensor \"{}\": {}", name, msg));
  };
  if (!entry.is_object())
    return bad("not a JSON object");
  // Other keys are ignored, as the reference reader does.
  for (const char *key : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(key))
      return bad(fmt::format("missing \"{}\"", key));

  TensorInfo info;
  info.name = name;
  const Json &dtype = entry["dtype"];
  if (!dtype.is_string())
    return bad("\"dtype\" must be a string");
  const std::string &dtypeName = dtype.get_ref<const std::string &>();
  std::optional<DType> parsed = parseSafetensorsDType(dtypeName);
  if (!parsed)
    return bad(isUnsupportedSafetensorsDType(dtypeName)
                   ? fmt::format("dtype \"{}\" is not supported", dtypeName)
                   : fmt::format("unknown dtype \"{}\"", dtypeName));
  info.dtype = *parsed;

  const Json &shape = entry["shape"];
  if (!shape.is_array())
    return bad("\"shape\" must be a list of integers in [0, 2^63)");
  for (const Json &d : shape) {
    std::optional<int64_t> dim = asDim(d);
    if (!dim)
      return bad("\"shape\" must be a list of integers in [0, 2^63)");
    info.shape.push_back(*dim);
  }
  auto needed = checkedByteSize(info.dtype, info.shape);
  if (!needed) {
    llvm::consumeError(needed.takeError());
    return bad(
        fmt::format("{} is too large (more than 2^63 - 1 bytes)", typeStr(info.dtype, info.shape)));
  }

  const Json &offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    return bad("\"data_offsets\" must be [begin, end] with non-negative integers");
  info.begin = offsets[0].get<uint64_t>();
  info.end = offsets[1].get<uint64_t>();
  uint64_t range[] = {info.begin, info.end};
  std::string rangeStr = listStr(llvm::ArrayRef<uint64_t>(range));
  if (info.begin > info.end)
    return bad(fmt::format("data_offsets {} end before they begin", rangeStr));
  if (info.end - info.begin != *needed)
    return bad(fmt::format("data_offsets {} hold {} bytes but {} needs {}", rangeStr,
                           info.end - info.begin, typeStr(info.dtype, info.shape), *needed));
  if (info.end > dataBytes)
    return bad(
        fmt::format("data_offsets {} lie outside the {} bytes of data", rangeStr, dataBytes));
  return info;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

// The header (size prefix included) and the order in which tensor data follows it.
struct Layout {
  std::string header;
  std::vector<const std::pair<std::string, HostTensor> *> order;
};

llvm::Expected<Layout> layOut(const std::vector<std::pair<std::string, HostTensor>> &tensors,
                              const std::map<std::string, std::string> &metadata) {
  Layout layout;
  for (const auto &t : tensors)
    layout.order.push_back(&t);
  llvm::sort(layout.order, [](auto *a, auto *b) { return a->first < b->first; });

  Json header = Json::object();
  // Keys sort in nlohmann's std::map, so the JSON text is canonical.
  if (!metadata.empty()) {
    Json meta = Json::object();
    for (const auto &[key, value] : metadata) {
      if (!llvm::json::isUTF8(key) || !llvm::json::isUTF8(value))
        return makeError(
            fmt::format("metadata \"{}\" is not valid UTF-8", llvm::json::fixUTF8(key)));
      meta[key] = value;
    }
    header[MetadataKey.str()] = std::move(meta);
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < layout.order.size(); ++i) {
    const auto &[name, tensor] = *layout.order[i];
    if (!llvm::json::isUTF8(name))
      return makeError(
          fmt::format("tensor name \"{}\" is not valid UTF-8", llvm::json::fixUTF8(name)));
    if (name == MetadataKey)
      return makeError(fmt::format("\"{}\" cannot name a tensor", name));
    if (i > 0 && layout.order[i - 1]->first == name)
      return makeError(fmt::format("tensor \"{}\" is given twice", name));
    Json entry = Json::object();
    entry["dtype"] = safetensorsName(tensor.dtype()).str();
    entry["shape"] = std::vector<int64_t>(tensor.shape().begin(), tensor.shape().end());
    entry["data_offsets"] = {offset, offset + tensor.nbytes()};
    offset += tensor.nbytes();
    header[name] = std::move(entry);
  }
  std::string text = header.dump();
  text.append((HeaderAlignment - text.size() % HeaderAlignment) % HeaderAlignment, ' ');
  uint64_t size = text.size();
  for (int i = 0; i < 8; ++i)
    layout.header.push_back(static_cast<char>(size >> (8 * i)));
  layout.header += text;
  return layout;
}

} // namespace

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

llvm::Expected<SafetensorsFile> SafetensorsFile::parse(llvm::ArrayRef<uint8_t> bytes,
                                                       llvm::StringRef name,
                                                       std::shared_ptr<const void> keepAlive) {
  auto fail = [&](std::string msg) { return makeError(fmt::format("{}: {}", name.str(), msg)); };
  if (bytes.size() < 8)
    return fail(
        fmt::format("truncated file: {} bytes cannot hold the 8-byte header size", bytes.size()));
  uint64_t headerBytes = 0;
  for (int i = 0; i < 8; ++i)
    headerBytes |= uint64_t(bytes[i]) << (8 * i);
  if (headerBytes > bytes.size() - 8)
    return fail(fmt::format("header size {} is beyond the end of the file ({} bytes)", headerBytes,
                            bytes.size()));
  if (headerBytes > MaxHeaderBytes)
    return fail(
        fmt::format("header size {} is over the limit of {} bytes", headerBytes, MaxHeaderBytes));
  llvm::ArrayRef<uint8_t> header = bytes.slice(8, headerBytes);
  llvm::ArrayRef<uint8_t> data = bytes.drop_front(8 + headerBytes);

  // nlohmann's lexer takes a NUL for the end of input, which would let trailing bytes through;
  // JSON text never holds one (not even in strings, where it must be escaped).
  if (const uint8_t *nul = static_cast<const uint8_t *>(
          headerBytes ? std::memchr(header.data(), 0, header.size()) : nullptr))
    return fail(
        fmt::format("header is not valid JSON: a NUL byte at offset {}", nul - header.data()));
  HeaderBuilder builder;
  if (!Json::sax_parse(header.begin(), header.end(), &builder))
    return fail(builder.Error);
  const Json &root = builder.Root;
  if (!root.is_object())
    return fail("header is not a JSON object");

  SafetensorsFile file;
  std::vector<TensorInfo> infos;
  // std::map iteration: by name, so the first problem reported does not depend on key order.
  for (const auto &[key, value] : root.items()) {
    if (key == MetadataKey) {
      if (value.is_null())
        continue; // what the reference writer's Option<HashMap> may hold
      if (!value.is_object())
        return fail(fmt::format("\"{}\" must map strings to strings", key));
      for (const auto &[k, v] : value.items()) {
        if (!v.is_string())
          return fail(fmt::format("\"{}\" must map strings to strings", key));
        file.Metadata.emplace(k, v.get<std::string>());
      }
      continue;
    }
    auto info = parseTensorInfo(key, value, data.size());
    if (!info)
      return fail(llvm::toString(info.takeError()));
    infos.push_back(std::move(*info));
  }

  // The tensors must tile the data region exactly, as the reference reader requires: sorted by
  // offsets, each starts where the previous one ended and the last ends with the file.
  std::vector<const TensorInfo *> byOffset;
  for (const TensorInfo &info : infos)
    byOffset.push_back(&info);
  // Names break ties (they are unique), so the tensor an error names does not depend on the sort.
  llvm::sort(byOffset, [](const TensorInfo *a, const TensorInfo *b) {
    return std::tie(a->begin, a->end, a->name) < std::tie(b->begin, b->end, b->name);
  });
  uint64_t covered = 0;
  const TensorInfo *previous = nullptr;
  for (const TensorInfo *info : byOffset) {
    if (info->begin < covered)
      return fail(fmt::format("tensor \"{}\": data_offsets [{}, {}] overlap tensor \"{}\" at "
                              "[{}, {}]",
                              info->name, info->begin, info->end, previous->name, previous->begin,
                              previous->end));
    if (info->begin > covered)
      return fail(
          fmt::format("bytes [{}, {}) of the data belong to no tensor", covered, info->begin));
    covered = info->end;
    previous = info;
  }
  if (covered != data.size())
    return fail(
        fmt::format("bytes [{}, {}) of the data belong to no tensor", covered, data.size()));

  for (TensorInfo &info : infos) {
    auto tensor = HostTensor::view(info.dtype, info.shape,
                                   data.slice(info.begin, info.end - info.begin), keepAlive);
    if (!tensor)
      return fail(llvm::toString(tensor.takeError()));
    file.Entries.push_back({std::move(info.name), std::move(*tensor)});
  }
  return file;
}

llvm::Expected<SafetensorsFile> SafetensorsFile::open(llvm::StringRef path) {
  // Mapped when large enough (small files are read); either way 64-byte aligned.
  auto buffer = readInputFile(path, llvm::Align(BufferAlignment));
  if (!buffer)
    return buffer.takeError();
  std::shared_ptr<const llvm::MemoryBuffer> owner = std::move(*buffer);
  llvm::ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t *>(owner->getBufferStart()),
                                owner->getBufferSize());
  return parse(bytes, path, owner);
}

const SafetensorsFile::Entry *SafetensorsFile::find(llvm::StringRef name) const {
  auto it = llvm::partition_point(Entries, [&](const Entry &e) { return e.name < name; });
  return it != Entries.end() && it->name == name ? &*it : nullptr;
}

llvm::Expected<std::vector<uint8_t>>
encodeSafetensors(const std::vector<std::pair<std::string, HostTensor>> &tensors,
                  const std::map<std::string, std::string> &metadata) {
  auto layout = layOut(tensors, metadata);
  if (!layout)
    return layout.takeError();
  std::vector<uint8_t> out(layout->header.begin(), layout->header.end());
  for (const auto *t : layout->order)
    out.insert(out.end(), t->second.bytes().begin(), t->second.bytes().end());
  return out;
}

llvm::Error writeSafetensors(llvm::StringRef path,
                             const std::vector<std::pair<std::string, HostTensor>> &tensors,
                             const std::map<std::string, std::string> &metadata) {
  auto fail = [&](std::string msg) {
    return makeError(fmt::format("cannot write {}: {}", path.str(), msg));
  };
  auto layout = layOut(tensors, metadata);
  if (!layout)
    return fail(llvm::toString(layout.takeError()));
  // Streamed, so that large weights are not copied into one buffer first.
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    os << layout->header;
    for (const auto *t : layout->order)
      os.write(reinterpret_cast<const char *>(t->second.data()), t->second.nbytes());
  });
}

} // namespace aotc
