// Reading and writing numpy .npy files: a strict parser for the Python-literal header dict and a
// writer that lays out the header exactly as numpy does (data at a 64-byte offset).
#include "aotc/serialize/Npy.h"

#include "aotc/serialize/AtomicFile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "aotc/serialize/InputFile.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <optional>

namespace aotc {

namespace {

constexpr llvm::StringLiteral Magic("\x93NUMPY");
// numpy aligns the data of the files it writes to this (ARRAY_ALIGN in numpy/lib/format.py).
constexpr size_t DataAlignment = 64;
// numpy leaves room after the header for the first dim to grow to this many digits, so that
// appending to a file can rewrite the header in place.
constexpr size_t GrowthDigits = 21;

// The descr numpy writes for each dtype; bf16 has none.
std::optional<llvm::StringRef> descrOf(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return "<f8";
  case DType::F32:
    return "<f4";
  case DType::F16:
    return "<f2";
  case DType::I64:
    return "<i8";
  case DType::I32:
    return "<i4";
  case DType::I16:
    return "<i2";
  case DType::I8:
    return "|i1";
  case DType::U8:
    return "|u1";
  case DType::Bool:
    return "|b1";
  case DType::BF16:
    return std::nullopt;
  }
  return std::nullopt;
}

llvm::Error makeError(std::string msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

// A header string as Python would show it, with unprintable bytes escaped.
std::string quoted(llvm::StringRef s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << '\'';
  llvm::printEscapedString(s, os);
  os << '\'';
  return out;
}

//===----------------------------------------------------------------------===//
// The header dict
//===----------------------------------------------------------------------===//

struct Header {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

// A parser for the only Python literals an .npy header holds: a dict of string keys whose values
// are strings, True/False or tuples of ints. Anything else is an error, where numpy would hand
// the text to ast.literal_eval.
class HeaderParser {
public:
  explicit HeaderParser(llvm::StringRef text) : Text(text) {}

  llvm::Expected<Header> parse() {
    skipSpace();
    if (!consume('{'))
      return makeError("header is not a dict");
    std::optional<llvm::StringRef> descr;
    std::optional<bool> fortranOrder;
    std::optional<std::vector<int64_t>> shape;
    skipSpace();
    while (!consume('}')) {
      auto key = parseString();
      if (!key)
        return key.takeError();
      skipSpace();
      if (!consume(':'))
        return expected("':'");
      skipSpace();
      if (*key == "descr") {
        if (descr)
          return makeError("header has 'descr' twice");
        if (peek() == '[')
          return makeError("structured dtypes are not supported");
        auto value = parseString();
        if (!value)
          return value.takeError();
        descr = *value;
      } else if (*key == "fortran_order") {
        if (fortranOrder)
          return makeError("header has 'fortran_order' twice");
        if (Text.substr(Pos).starts_with("True"))
          fortranOrder = true;
        else if (Text.substr(Pos).starts_with("False"))
          fortranOrder = false;
        else
          return makeError("'fortran_order' must be True or False");
        Pos += *fortranOrder ? 4 : 5;
      } else if (*key == "shape") {
        if (shape)
          return makeError("header has 'shape' twice");
        auto value = parseShape();
        if (!value)
          return value.takeError();
        shape = std::move(*value);
      } else {
        return makeError(fmt::format("header has an unexpected key {}", quoted(*key)));
      }
      skipSpace();
      if (consume(',')) {
        skipSpace();
        continue;
      }
      if (peek() != '}')
        return expected("',' or '}'");
    }
    skipSpace();
    if (Pos != Text.size())
      return expected("the end of the header");
    if (!descr)
      return makeError("header has no 'descr'");
    if (!fortranOrder)
      return makeError("header has no 'fortran_order'");
    if (!shape)
      return makeError("header has no 'shape'");
    if (*fortranOrder)
      return makeError("Fortran-order arrays are not supported");
    auto dtype = parseDescr(*descr);
    if (!dtype)
      return dtype.takeError();
    return Header{*dtype, std::move(*shape)};
  }

private:
  char peek() const { return Pos < Text.size() ? Text[Pos] : '\0'; }

  bool consume(char c) {
    if (Pos >= Text.size() || Text[Pos] != c)
      return false;
    ++Pos;
    return true;
  }

  void skipSpace() {
    while (Pos < Text.size() && llvm::StringRef(" \t\r\n").contains(Text[Pos]))
      ++Pos;
  }

  llvm::Error expected(llvm::StringRef what) const {
    return makeError(
        fmt::format("cannot parse the header: expected {} at byte {}", what.str(), Pos));
  }

  // A quoted string without escapes; numpy's keys and descrs never need any.
  llvm::Expected<llvm::StringRef> parseString() {
    char quote = peek();
    if (quote != '\'' && quote != '"')
      return expected("a string");
    size_t end = Text.find_first_of(llvm::StringRef("\\\n\0", 3).str() + quote, Pos + 1);
    if (end == llvm::StringRef::npos || Text[end] != quote)
      return expected("a string without escapes");
    llvm::StringRef s = Text.slice(Pos + 1, end);
    Pos = end + 1;
    return s;
  }

  // `()`, `(3,)` or `(2, 3)`; `(3)` is an int in Python, not a tuple.
  llvm::Expected<std::vector<int64_t>> parseShape() {
    auto notATuple = [] { return makeError("'shape' must be a tuple of ints"); };
    if (!consume('('))
      return notATuple();
    std::vector<int64_t> dims;
    skipSpace();
    bool comma = false;
    while (!consume(')')) {
      bool negative = consume('-');
      size_t start = Pos;
      while (Pos < Text.size() && llvm::isDigit(Text[Pos]))
        ++Pos;
      if (Pos == start)
        return notATuple();
      llvm::StringRef digits = Text.slice(start, Pos);
      uint64_t magnitude;
      // A magnitude of 2^63 reads as INT64_MIN when negative; anything beyond fits no int64.
      if (digits.getAsInteger(10, magnitude) ||
          magnitude > uint64_t(std::numeric_limits<int64_t>::max()) + negative)
        return makeError(fmt::format("shape dim {}{} does not fit in 64 bits", negative ? "-" : "",
                                     digits.str()));
      dims.push_back(negative ? static_cast<int64_t>(0 - magnitude)
                              : static_cast<int64_t>(magnitude));
      skipSpace();
      comma = consume(',');
      skipSpace();
      if (!comma && peek() != ')')
        return notATuple();
    }
    if (dims.size() == 1 && !comma)
      return notATuple();
    return dims;
  }

  llvm::Expected<DType> parseDescr(llvm::StringRef descr) const {
    std::optional<DType> found;
    if (descr.size() >= 2)
      for (DType t : AllDTypes)
        if (auto d = descrOf(t); d && d->drop_front() == descr.drop_front())
          found = t;
    char order = descr.empty() ? '\0' : descr.front();
    // The byte order of one-byte types means nothing; numpy writes '|' but accepts any.
    if (found && byteSize(*found) == 1 && llvm::StringRef("<>|=").contains(order))
      return *found;
    if (found && order == '<')
      return *found;
    if (found && order == '>')
      return makeError(fmt::format("big-endian data is not supported (dtype {})", quoted(descr)));
    return makeError(fmt::format("dtype {} is not supported (aotc reads '<f8', '<f4', '<f2', "
                                 "'<i8', '<i4', '<i2', '|i1', '|u1' and '|b1')",
                                 quoted(descr)));
  }

  llvm::StringRef Text;
  size_t Pos = 0;
};

// Parses a whole file; the tensor views `bytes` when `keepAlive` owns them, else copies.
llvm::Expected<HostTensor> parse(llvm::ArrayRef<uint8_t> bytes, llvm::StringRef name,
                                 std::shared_ptr<const void> keepAlive) {
  auto fail = [&](std::string msg) { return makeError(fmt::format("{}: {}", name.str(), msg)); };
  llvm::StringRef file(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  if (!Magic.starts_with(file.take_front(Magic.size())) || file.empty())
    return fail("not a .npy file (bad magic)");
  if (file.size() < Magic.size() + 2)
    return fail("truncated header");
  unsigned major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0)
    return fail(fmt::format("unsupported .npy version {}.{}", major, minor));
  // Version 1.0 has a 2-byte header length; 2.0 and 3.0 (a UTF-8 header) have 4 bytes.
  size_t lengthBytes = major == 1 ? 2 : 4;
  size_t prefix = Magic.size() + 2 + lengthBytes;
  if (bytes.size() < prefix)
    return fail("truncated header");
  uint64_t headerBytes = 0;
  for (size_t i = 0; i < lengthBytes; ++i)
    headerBytes |= uint64_t(bytes[8 + i]) << (8 * i);
  if (headerBytes > bytes.size() - prefix)
    return fail(fmt::format("truncated header: it declares {} bytes but only {} follow",
                            headerBytes, bytes.size() - prefix));

  auto header = HeaderParser(file.substr(prefix, headerBytes)).parse();
  if (!header)
    return fail(llvm::toString(header.takeError()));
  llvm::ArrayRef<uint8_t> data = bytes.drop_front(prefix + headerBytes);
  // The size is checked before anything is allocated: a header may claim any shape.
  auto needed = checkedByteSize(header->dtype, header->shape);
  if (!needed)
    return fail(llvm::toString(needed.takeError()));
  if (data.size() != *needed)
    return fail(fmt::format("data has {} bytes but {} needs {}", data.size(),
                            describe(header->dtype, header->shape), *needed));
  auto tensor = HostTensor::view(header->dtype, header->shape, data, keepAlive);
  if (!tensor)
    return fail(llvm::toString(tensor.takeError()));
  // Without an owner for the bytes, the tensor gets a copy of them.
  if (!keepAlive)
    tensor->mutableData();
  return tensor;
}

} // namespace

llvm::Expected<HostTensor> parseNpy(llvm::ArrayRef<uint8_t> bytes, llvm::StringRef name) {
  return parse(bytes, name, nullptr);
}

llvm::Expected<HostTensor> readNpy(llvm::StringRef path) {
  // Aligned like the data numpy writes, so that the tensor can view the file in place.
  auto buffer = readInputFile(path, llvm::Align(DataAlignment));
  if (!buffer)
    return buffer.takeError();
  std::shared_ptr<const llvm::MemoryBuffer> owner = std::move(*buffer);
  llvm::ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t *>(owner->getBufferStart()),
                                owner->getBufferSize());
  return parse(bytes, path, owner);
}

llvm::Expected<std::vector<uint8_t>> encodeNpy(const HostTensor &t) {
  std::optional<llvm::StringRef> descr = descrOf(t.dtype());
  if (!descr)
    return makeError(fmt::format("{} has no numpy dtype", describe(t.dtype(), t.shape())));
  // The dict as numpy's repr() writes it, keys sorted.
  std::string shape = "(";
  for (size_t i = 0; i < t.rank(); ++i)
    shape += (i ? ", " : "") + std::to_string(t.shape()[i]);
  shape += t.rank() == 1 ? ",)" : ")";
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr->str(), shape);
  if (t.rank() > 0)
    dict.append(GrowthDigits - std::to_string(t.shape()[0]).size(), ' ');
  // Padded with spaces and a final newline so that the data starts at a multiple of 64; numpy
  // pads a full 64 bytes when the header happens to end aligned, and so do we. Version 2.0 only
  // when the header outgrows a 2-byte length, as numpy decides.
  unsigned major = 1;
  size_t prefix = Magic.size() + 2 + 2;
  size_t length = dict.size() + 1;
  size_t padding = DataAlignment - (prefix + length) % DataAlignment;
  if (length + padding > 0xFFFF) {
    major = 2;
    prefix += 2;
    padding = DataAlignment - (prefix + length) % DataAlignment;
  }
  uint64_t headerBytes = length + padding;

  std::vector<uint8_t> out;
  out.reserve(prefix + headerBytes + t.nbytes());
  out.insert(out.end(), Magic.begin(), Magic.end());
  out.push_back(static_cast<uint8_t>(major));
  out.push_back(0);
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i)
    out.push_back(static_cast<uint8_t>(headerBytes >> (8 * i)));
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), padding, ' ');
  out.push_back('\n');
  out.insert(out.end(), t.bytes().begin(), t.bytes().end());
  return out;
}

llvm::Error writeNpy(const HostTensor &t, llvm::StringRef path) {
  auto fail = [&](std::string msg) {
    return makeError(fmt::format("cannot write {}: {}", path.str(), msg));
  };
  auto bytes = encodeNpy(t);
  if (!bytes)
    return fail(llvm::toString(bytes.takeError()));
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    os.write(reinterpret_cast<const char *>(bytes->data()), bytes->size());
  });
}

} // namespace aotc
