// numpy .npy files: round trips for every dtype numpy has, files numpy wrote (versions 1.0, 2.0
// and 3.0), the writer's byte layout against numpy's, and one exact error for each bad input.
#include "aotc/serialize/Npy.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

using namespace aotc;

namespace {

template <typename T> std::string errorOf(llvm::Expected<T> value) {
  if (value)
    return "<no error>";
  return llvm::toString(value.takeError());
}

std::string errorOf(llvm::Error err) { return err ? llvm::toString(std::move(err)) : "<no error>"; }

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

llvm::ArrayRef<uint8_t> asBytes(const std::string &s) {
  return {reinterpret_cast<const uint8_t *>(s.data()), s.size()};
}

// A tensor of `dtype` and `shape` filled with random bytes (any bytes: the formats are bitwise).
HostTensor randomTensor(DType dtype, llvm::ArrayRef<int64_t> shape, unsigned seed) {
  HostTensor t(dtype, shape);
  std::mt19937 rng(seed);
  uint8_t *data = t.mutableData();
  for (size_t i = 0; i < t.nbytes(); ++i)
    data[i] = static_cast<uint8_t>(rng());
  return t;
}

// An .npy file with `dict` as its header, padded as numpy pads, followed by `data`.
std::string npyFile(const std::string &dict, const std::string &data = "", int major = 1) {
  std::string header = dict + "\n";
  size_t prefix = major == 1 ? 10 : 12;
  header.insert(header.size() - 1, (64 - (prefix + header.size()) % 64) % 64, ' ');
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>(header.size() >> (8 * i));
  return out + header + data;
}

std::string f32Dict(const std::string &shape) {
  return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
}

const std::vector<std::vector<int64_t>> Shapes = {{}, {0}, {1}, {3}, {2, 0, 4}, {2, 3, 4}, {5, 1}};

class NpyTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("aotc-npy-test", dir));
    Dir = std::string(dir.str());
  }
  void TearDown() override { llvm::sys::fs::remove_directories(Dir); }

  std::string path(llvm::StringRef name) const { return Dir + "/" + name.str(); }

  std::vector<std::string> filesInDir() const {
    std::vector<std::string> names;
    for (const auto &e : std::filesystem::directory_iterator(Dir))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  // The error parsing `bytes` gives, named as a file called x.npy.
  static std::string parseError(const std::string &bytes) {
    return errorOf(parseNpy(asBytes(bytes), "x.npy"));
  }

  std::string Dir;
};

//===----------------------------------------------------------------------===//
// Round trips and layout
//===----------------------------------------------------------------------===//

TEST_F(NpyTest, EveryDTypeAndShapeRoundTripsBitwise) {
  unsigned seed = 0;
  for (DType dtype : AllDTypes) {
    if (dtype == DType::BF16)
      continue;
    for (const auto &shape : Shapes) {
      SCOPED_TRACE(describe(dtype, shape));
      HostTensor t = randomTensor(dtype, shape, ++seed);
      auto bytes = encodeNpy(t);
      ASSERT_TRUE(static_cast<bool>(bytes)) << llvm::toString(bytes.takeError());
      // numpy aligns the data to 64 bytes; so does the writer.
      EXPECT_EQ((bytes->size() - t.nbytes()) % 64, 0u);
      auto parsed = parseNpy(*bytes, "t.npy");
      ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
      EXPECT_TRUE(*parsed == t);
      EXPECT_FALSE(parsed->isView()); // parseNpy has no owner for the bytes: it copies them

      std::string file = path("t.npy");
      ASSERT_EQ(errorOf(writeNpy(t, file)), "<no error>");
      EXPECT_EQ(readFile(file), std::string(bytes->begin(), bytes->end()));
      auto read = readNpy(file);
      ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
      EXPECT_TRUE(*read == t);
      EXPECT_TRUE(read->isView()); // a view of the file's buffer
      EXPECT_EQ(reinterpret_cast<uintptr_t>(read->data()) % 64, 0u);
    }
  }
}

TEST_F(NpyTest, HeaderIsNumpysOwn) {
  // The exact bytes numpy 2.x writes for a float32 (2, 3) array: keys sorted, room for the first
  // dim to grow to 21 digits, spaces to a 64-byte boundary and a newline.
  HostTensor t(DType::F32, {2, 3});
  auto bytes = encodeNpy(t);
  ASSERT_TRUE(static_cast<bool>(bytes));
  std::string header(bytes->begin(), bytes->end() - 24);
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict +
                         std::string(118 - dict.size() - 1, ' ') + "\n";
  EXPECT_EQ(header, expected);

  // Rank 0 has no room for growth.
  HostTensor scalar(DType::I64, {});
  auto scalarBytes = encodeNpy(scalar);
  ASSERT_TRUE(static_cast<bool>(scalarBytes));
  dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (), }";
  EXPECT_EQ(std::string(scalarBytes->begin() + 10, scalarBytes->begin() + 10 + dict.size() + 1),
            dict + " ");
  EXPECT_EQ(scalarBytes->size(), 128u + 8u);

  // With 36 dims the header would end exactly on a boundary; numpy then pads a full 64 bytes
  // (np.save writes 260 bytes, a header length of 246), and so does the writer.
  auto ones = encodeNpy(HostTensor(DType::F32, std::vector<int64_t>(36, 1)));
  ASSERT_TRUE(static_cast<bool>(ones));
  EXPECT_EQ(ones->size(), 260u);
  EXPECT_EQ((*ones)[8] | ((*ones)[9] << 8), 246);
}

TEST_F(NpyTest, OneDimShapesAreOneTuples) {
  auto bytes = encodeNpy(HostTensor(DType::U8, {3}));
  ASSERT_TRUE(static_cast<bool>(bytes));
  std::string text(bytes->begin(), bytes->end());
  EXPECT_NE(text.find("'descr': '|u1', 'fortran_order': False, 'shape': (3,), }"),
            std::string::npos);
}

TEST_F(NpyTest, LongHeadersUseVersion2) {
  // 30000 dims of 1: the dict no longer fits a 2-byte length, and numpy switches to 2.0.
  std::vector<int64_t> shape(30000, 1);
  HostTensor t = randomTensor(DType::F64, shape, 1);
  auto bytes = encodeNpy(t);
  ASSERT_TRUE(static_cast<bool>(bytes));
  EXPECT_EQ((*bytes)[6], 2);
  EXPECT_EQ((bytes->size() - 8) % 64, 0u);
  auto parsed = parseNpy(*bytes, "long.npy");
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  EXPECT_TRUE(*parsed == t);
}

TEST_F(NpyTest, BFloat16HasNoNumpyDType) {
  HostTensor t(DType::BF16, {2});
  EXPECT_EQ(errorOf(encodeNpy(t)), "bf16[2] has no numpy dtype");
  std::string file = path("b.npy");
  EXPECT_EQ(errorOf(writeNpy(t, file)), "cannot write " + file + ": bf16[2] has no numpy dtype");
  EXPECT_TRUE(filesInDir().empty());
}

TEST_F(NpyTest, WriterReplacesAtomicallyAndLeavesNothingElse) {
  std::string file = path("t.npy");
  writeFile(file, "old");
  HostTensor t = randomTensor(DType::I32, {4}, 3);
  ASSERT_EQ(errorOf(writeNpy(t, file)), "<no error>");
  EXPECT_EQ(filesInDir(), std::vector<std::string>{"t.npy"});
  auto read = readNpy(file);
  ASSERT_TRUE(static_cast<bool>(read));
  EXPECT_TRUE(*read == t);
  llvm::sys::fs::file_status status;
  ASSERT_FALSE(llvm::sys::fs::status(file, status));
  // The usual mode for a new file, not a temporary file's 0600.
  EXPECT_EQ(status.permissions(),
            static_cast<llvm::sys::fs::perms>(0666 & ~llvm::sys::fs::getUmask()));

  std::string missing = path("no/such/dir/t.npy");
  EXPECT_EQ(errorOf(writeNpy(t, missing)), "cannot write " + missing +
                                               ": cannot create a temporary file: No such file or "
                                               "directory");
}

//===----------------------------------------------------------------------===//
// Files numpy wrote
//===----------------------------------------------------------------------===//

TEST_F(NpyTest, ReadsNumpyVersion1) {
  // np.save of np.array([[1.5, -2.0, 0.25], [3.0, 1e-8, -0.0]], dtype='<f4')
  std::string file = std::string(AOTC_TEST_FIXTURES_DIR) + "/f32_2x3.npy";
  auto t = readNpy(file);
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(t->dtype(), DType::F32);
  EXPECT_EQ(t->shape(), llvm::ArrayRef<int64_t>({2, 3}));
  float expected[] = {1.5f, -2.0f, 0.25f, 3.0f, 1e-8f, -0.0f};
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(t->getDouble(i), static_cast<double>(expected[i])) << i;
  EXPECT_TRUE(std::signbit(t->getDouble(5)));
  // The writer gives back numpy's bytes exactly.
  auto encoded = encodeNpy(*t);
  ASSERT_TRUE(static_cast<bool>(encoded));
  EXPECT_EQ(std::string(encoded->begin(), encoded->end()), readFile(file));
}

TEST_F(NpyTest, ReadsNumpyVersion2) {
  // numpy.lib.format.write_array(f, np.array([True, False, False, True]), version=(2, 0))
  auto t = readNpy(std::string(AOTC_TEST_FIXTURES_DIR) + "/bool_4_v2.npy");
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(t->dtype(), DType::Bool);
  EXPECT_EQ(t->shape(), llvm::ArrayRef<int64_t>({4}));
  std::vector<int64_t> values;
  for (int64_t i = 0; i < 4; ++i)
    values.push_back(t->getInt(i));
  EXPECT_EQ(values, (std::vector<int64_t>{1, 0, 0, 1}));
}

TEST_F(NpyTest, ReadsNumpyVersion3) {
  // numpy.lib.format.write_array(f, np.array(-1234567890123, dtype='<i8'), version=(3, 0))
  auto t = readNpy(std::string(AOTC_TEST_FIXTURES_DIR) + "/i64_scalar_v3.npy");
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(t->dtype(), DType::I64);
  EXPECT_EQ(t->rank(), 0u);
  EXPECT_EQ(t->getInt(0), -1234567890123);
}

TEST_F(NpyTest, AcceptsTheDescrVariantsNumpyAccepts) {
  // One-byte types in any byte order; double-quoted strings; no trailing comma; tabs, newlines.
  struct Case {
    std::string descr;
    DType dtype;
  } cases[] = {{"|u1", DType::U8},   {"<u1", DType::U8},  {">u1", DType::U8},
               {"|i1", DType::I8},   {"<i1", DType::I8},  {"|b1", DType::Bool},
               {"<b1", DType::Bool}, {"<f2", DType::F16}, {"<f8", DType::F64},
               {"<i2", DType::I16},  {"<i4", DType::I32}, {"<i8", DType::I64}};
  for (const Case &c : cases) {
    std::string dict = "{\"descr\": \"" + c.descr + "\",\n\t'shape': (2,), 'fortran_order': False}";
    auto t = parseNpy(asBytes(npyFile(dict, std::string(2 * byteSize(c.dtype), '\1'))), "x.npy");
    ASSERT_TRUE(static_cast<bool>(t)) << c.descr << ": " << llvm::toString(t.takeError());
    EXPECT_EQ(t->dtype(), c.dtype) << c.descr;
  }
}

//===----------------------------------------------------------------------===//
// Bad input
//===----------------------------------------------------------------------===//

TEST_F(NpyTest, MissingFile) {
  std::string file = path("missing.npy");
  EXPECT_EQ(errorOf(readNpy(file)), file + ": No such file or directory");
}

TEST_F(NpyTest, BadMagic) {
  EXPECT_EQ(parseError(""), "x.npy: not a .npy file (bad magic)");
  EXPECT_EQ(parseError("PK\x03\x04"), "x.npy: not a .npy file (bad magic)");
  EXPECT_EQ(parseError("\x93NUMPx\x01\x00"), "x.npy: not a .npy file (bad magic)");
  std::string file = path("bad.npy");
  writeFile(file, "hello world");
  EXPECT_EQ(errorOf(readNpy(file)), file + ": not a .npy file (bad magic)");
}

TEST_F(NpyTest, UnsupportedVersion) {
  std::string bytes = npyFile(f32Dict("(1,)"), "abcd");
  bytes[6] = 4;
  EXPECT_EQ(parseError(bytes), "x.npy: unsupported .npy version 4.0");
  bytes[6] = 1;
  bytes[7] = 1;
  EXPECT_EQ(parseError(bytes), "x.npy: unsupported .npy version 1.1");
  bytes[6] = 0;
  bytes[7] = 0;
  EXPECT_EQ(parseError(bytes), "x.npy: unsupported .npy version 0.0");
}

TEST_F(NpyTest, TruncatedHeader) {
  std::string good = npyFile(f32Dict("(2, 3)"), std::string(24, '\0'));
  EXPECT_EQ(parseError(good.substr(0, 4)), "x.npy: truncated header");
  EXPECT_EQ(parseError(good.substr(0, 7)), "x.npy: truncated header");
  EXPECT_EQ(parseError(good.substr(0, 9)), "x.npy: truncated header");
  EXPECT_EQ(parseError(good.substr(0, 60)),
            "x.npy: truncated header: it declares 118 bytes but only 50 follow");
  std::string v2 = npyFile(f32Dict("(2, 3)"), "", 2);
  EXPECT_EQ(parseError(v2.substr(0, 11)), "x.npy: truncated header");
  // A 4-byte length near 2^32 does not wrap around.
  v2[8] = v2[9] = v2[10] = v2[11] = '\xff';
  EXPECT_EQ(parseError(v2),
            "x.npy: truncated header: it declares 4294967295 bytes but only 116 follow");
}

TEST_F(NpyTest, HeaderNotADict) {
  EXPECT_EQ(parseError(npyFile("[1, 2]")), "x.npy: header is not a dict");
  EXPECT_EQ(parseError(npyFile("")), "x.npy: header is not a dict");
  EXPECT_EQ(parseError(npyFile("'descr'")), "x.npy: header is not a dict");
}

TEST_F(NpyTest, MalformedDict) {
  EXPECT_EQ(parseError(npyFile("{'descr' '<f4'}")),
            "x.npy: cannot parse the header: expected ':' at byte 9");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4' 'shape': (1,)}")),
            "x.npy: cannot parse the header: expected ',' or '}' at byte 16");
  EXPECT_EQ(parseError(npyFile("{descr: '<f4'}")),
            "x.npy: cannot parse the header: expected a string at byte 1");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f\\x34'}")),
            "x.npy: cannot parse the header: expected a string without escapes at byte 10");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4")),
            "x.npy: cannot parse the header: expected a string without escapes at byte 10");
  // The padding spaces are skipped over to the end.
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4',")),
            "x.npy: cannot parse the header: expected a string at byte 54");
  EXPECT_EQ(parseError(npyFile(f32Dict("(1,)") + " x")),
            "x.npy: cannot parse the header: expected the end of the header at byte 58");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': false, 'shape': (1,)}")),
            "x.npy: 'fortran_order' must be True or False");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}")),
            "x.npy: 'fortran_order' must be True or False");
}

TEST_F(NpyTest, WrongKeys) {
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': False}")),
            "x.npy: header has no 'shape'");
  EXPECT_EQ(parseError(npyFile("{'shape': (), 'fortran_order': False}")),
            "x.npy: header has no 'descr'");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'shape': ()}")),
            "x.npy: header has no 'fortran_order'");
  EXPECT_EQ(parseError(npyFile("{}")), "x.npy: header has no 'descr'");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'descr': '<f4'}")),
            "x.npy: header has 'descr' twice");
  EXPECT_EQ(parseError(npyFile("{'shape': (), 'shape': ()}")), "x.npy: header has 'shape' twice");
  EXPECT_EQ(parseError(npyFile("{'fortran_order': False, 'fortran_order': False}")),
            "x.npy: header has 'fortran_order' twice");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (), "
                               "'align': False}")),
            "x.npy: header has an unexpected key 'align'");
}

TEST_F(NpyTest, UnknownDescr) {
  auto dict = [](const std::string &descr) {
    return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (1,), }";
  };
  const std::string supported =
      "(aotc reads '<f8', '<f4', '<f2', '<i8', '<i4', '<i2', '|i1', '|u1' and '|b1')";
  EXPECT_EQ(parseError(npyFile(dict("<c8"), "12345678")),
            "x.npy: dtype '<c8' is not supported " + supported);
  EXPECT_EQ(parseError(npyFile(dict("<u4"), "1234")),
            "x.npy: dtype '<u4' is not supported " + supported);
  EXPECT_EQ(parseError(npyFile(dict("|O"), "12345678")),
            "x.npy: dtype '|O' is not supported " + supported);
  EXPECT_EQ(parseError(npyFile(dict("|f4"), "1234")),
            "x.npy: dtype '|f4' is not supported " + supported);
  EXPECT_EQ(parseError(npyFile(dict(""), "1234")), "x.npy: dtype '' is not supported " + supported);
  EXPECT_EQ(parseError(npyFile(dict("<f4\x01"), "1234")),
            "x.npy: dtype '<f4\\01' is not supported " + supported);
  EXPECT_EQ(parseError(npyFile("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}")),
            "x.npy: structured dtypes are not supported");
}

TEST_F(NpyTest, BigEndian) {
  EXPECT_EQ(
      parseError(npyFile("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", "1234")),
      "x.npy: big-endian data is not supported (dtype '>f4')");
  EXPECT_EQ(
      parseError(npyFile("{'descr': '>i8', 'fortran_order': False, 'shape': (), }", "12345678")),
      "x.npy: big-endian data is not supported (dtype '>i8')");
}

TEST_F(NpyTest, FortranOrder) {
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                               std::string(24, '\0'))),
            "x.npy: Fortran-order arrays are not supported");
}

TEST_F(NpyTest, DataSizeMismatch) {
  EXPECT_EQ(parseError(npyFile(f32Dict("(2, 3)"), std::string(12, '\0'))),
            "x.npy: data has 12 bytes but f32[2, 3] needs 24");
  EXPECT_EQ(parseError(npyFile(f32Dict("(2, 3)"), std::string(25, '\0'))),
            "x.npy: data has 25 bytes but f32[2, 3] needs 24");
  EXPECT_EQ(parseError(npyFile(f32Dict("()"))), "x.npy: data has 0 bytes but f32[] needs 4");
  EXPECT_EQ(parseError(npyFile(f32Dict("(0, 5)"), "x")),
            "x.npy: data has 1 bytes but f32[0, 5] needs 0");
}

TEST_F(NpyTest, BadShapes) {
  EXPECT_EQ(parseError(npyFile(f32Dict("(4611686018427387904, 4)"))),
            "x.npy: f32[4611686018427387904, 4] is too large (more than 2^63 - 1 bytes)");
  EXPECT_EQ(parseError(npyFile(f32Dict("(0, 4611686018427387904, 4)"))),
            "x.npy: f32[0, 4611686018427387904, 4] is too large (more than 2^63 - 1 bytes)");
  EXPECT_EQ(parseError(npyFile(f32Dict("(99999999999999999999,)"))),
            "x.npy: shape dim 99999999999999999999 does not fit in 64 bits");
  EXPECT_EQ(parseError(npyFile(f32Dict("(9223372036854775808,)"))),
            "x.npy: shape dim 9223372036854775808 does not fit in 64 bits");
  EXPECT_EQ(parseError(npyFile(f32Dict("(-1, 3)"))), "x.npy: f32[-1, 3] has a negative dim");
  EXPECT_EQ(parseError(npyFile(f32Dict("(2, -9223372036854775808)"))),
            "x.npy: f32[2, -9223372036854775808] has a negative dim");
  for (const char *shape :
       {"(3)", "[3]", "(,)", "3", "('3',)", "(3,,)", "(3.5,)", "(3 4)", "(3L,)", "(3", "(3,"})
    EXPECT_EQ(parseError(npyFile(f32Dict(shape))), "x.npy: 'shape' must be a tuple of ints")
        << shape;
}

TEST_F(NpyTest, EveryTruncationAndByteFlipIsAnErrorOrAValidRead) {
  // Never a crash or an out-of-bounds read (the sanitizer build runs this too).
  auto good = encodeNpy(randomTensor(DType::F32, {2, 3}, 9));
  ASSERT_TRUE(static_cast<bool>(good));
  std::string bytes(good->begin(), good->end());
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_NE(parseError(bytes.substr(0, n)), "<no error>") << n;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t flip : {0x01, 0x5A, 0xFF}) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ flip);
      (void)parseError(bad);
    }
  }
}

} // namespace
