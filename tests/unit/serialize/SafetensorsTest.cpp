// safetensors files: round trips for every dtype, the writer's exact bytes, a file written by the
// official safetensors library, and one exact error for each way a header or layout can be bad.
#include "aotc/serialize/Safetensors.h"

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

using Tensors = std::vector<std::pair<std::string, HostTensor>>;

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

HostTensor randomTensor(DType dtype, llvm::ArrayRef<int64_t> shape, unsigned seed) {
  HostTensor t(dtype, shape);
  std::mt19937 rng(seed);
  uint8_t *data = t.mutableData();
  for (size_t i = 0; i < t.nbytes(); ++i)
    data[i] = static_cast<uint8_t>(rng());
  return t;
}

// A file with `header` as its JSON text (unpadded) and `dataBytes` bytes of data.
std::string stFile(const std::string &header, size_t dataBytes = 0) {
  std::string out;
  for (int i = 0; i < 8; ++i)
    out += static_cast<char>(uint64_t(header.size()) >> (8 * i));
  return out + header + std::string(dataBytes, '\x5A');
}

// The error parsing `bytes` gives, named as a file called w.safetensors.
std::string parseError(const std::string &bytes) {
  return errorOf(SafetensorsFile::parse(asBytes(bytes), "w.safetensors", nullptr));
}

// A header holding one tensor entry.
std::string oneTensor(const std::string &name, const std::string &entry) {
  return "{\"" + name + "\": " + entry + "}";
}

class SafetensorsTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("aotc-safetensors-test", dir));
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

  std::string Dir;
};

//===----------------------------------------------------------------------===//
// Round trips and layout
//===----------------------------------------------------------------------===//

TEST_F(SafetensorsTest, EveryDTypeRoundTripsBitwise) {
  Tensors tensors;
  unsigned seed = 0;
  for (DType dtype : AllDTypes) {
    std::string name = toString(dtype).str();
    tensors.emplace_back(name + ".matrix", randomTensor(dtype, {3, 5}, ++seed));
    tensors.emplace_back(name + ".scalar", randomTensor(dtype, {}, ++seed));
    tensors.emplace_back(name + ".empty", randomTensor(dtype, {2, 0, 3}, ++seed));
  }
  std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "\"quoted\" \n ü"}};
  std::string file = path("w.safetensors");
  ASSERT_EQ(errorOf(writeSafetensors(file, tensors, metadata)), "<no error>");
  EXPECT_EQ(filesInDir(), std::vector<std::string>{"w.safetensors"});

  auto read = SafetensorsFile::open(file);
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(read->metadata(), metadata);
  ASSERT_EQ(read->entries().size(), tensors.size());
  std::sort(tensors.begin(), tensors.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  for (size_t i = 0; i < tensors.size(); ++i) {
    const SafetensorsFile::Entry &e = read->entries()[i];
    EXPECT_EQ(e.name, tensors[i].first);
    EXPECT_TRUE(e.tensor == tensors[i].second) << e.name;
    EXPECT_TRUE(e.tensor.isView()) << e.name;
    const SafetensorsFile::Entry *found = read->find(e.name);
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->name, e.name);
  }
  EXPECT_EQ(read->find("nope"), nullptr);
  EXPECT_EQ(read->find(""), nullptr);
  EXPECT_EQ(read->find("zzz"), nullptr);

  // encodeSafetensors gives the file's bytes.
  auto encoded = encodeSafetensors(tensors, metadata);
  ASSERT_TRUE(static_cast<bool>(encoded));
  EXPECT_EQ(std::string(encoded->begin(), encoded->end()), readFile(file));
}

TEST_F(SafetensorsTest, WriterBytesAreExactAndDeterministic) {
  HostTensor w(DType::F32, {2});
  w.setDouble(0, 1.0);
  w.setDouble(1, -2.0);
  HostTensor b(DType::U8, {3});
  b.setInt(2, 7);
  auto encoded = encodeSafetensors({{"w", w}, {"b", b}}, {{"k", "v"}});
  ASSERT_TRUE(static_cast<bool>(encoded));
  // Sorted keys, compact JSON, tensors in name order, spaces up to a multiple of 8.
  std::string header =
      R"({"__metadata__":{"k":"v"},"b":{"data_offsets":[0,3],"dtype":"U8","shape":[3]},)"
      R"("w":{"data_offsets":[3,11],"dtype":"F32","shape":[2]}})";
  std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
  ASSERT_EQ(padded.size() % 8, 0u);
  std::string expected = std::string(1, static_cast<char>(padded.size())) + std::string(7, '\0') +
                         padded + std::string("\0\0\x07", 3) +
                         std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8);
  EXPECT_EQ(std::string(encoded->begin(), encoded->end()), expected);

  // Input order does not matter; writing twice gives the same file.
  auto reordered = encodeSafetensors({{"b", b}, {"w", w}}, {{"k", "v"}});
  ASSERT_TRUE(static_cast<bool>(reordered));
  EXPECT_EQ(*reordered, *encoded);
  std::string one = path("1.safetensors"), two = path("2.safetensors");
  ASSERT_EQ(errorOf(writeSafetensors(one, {{"w", w}, {"b", b}}, {{"k", "v"}})), "<no error>");
  ASSERT_EQ(errorOf(writeSafetensors(two, {{"b", b}, {"w", w}}, {{"k", "v"}})), "<no error>");
  EXPECT_EQ(readFile(one), readFile(two));
  EXPECT_EQ(readFile(one), expected);
}

TEST_F(SafetensorsTest, NoTensorsAndNoMetadata) {
  auto encoded = encodeSafetensors({});
  ASSERT_TRUE(static_cast<bool>(encoded));
  EXPECT_EQ(std::string(encoded->begin(), encoded->end()),
            std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  auto read = SafetensorsFile::parse(*encoded, "empty.safetensors", nullptr);
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  EXPECT_TRUE(read->entries().empty());
  EXPECT_TRUE(read->metadata().empty());
}

TEST_F(SafetensorsTest, ViewsKeepTheMappingAlive) {
  std::string file = path("w.safetensors");
  HostTensor t = randomTensor(DType::I64, {64, 64}, 5); // large enough to be mapped
  ASSERT_EQ(errorOf(writeSafetensors(file, {{"t", t}})), "<no error>");
  HostTensor view;
  {
    auto read = SafetensorsFile::open(file);
    ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
    view = read->entries()[0].tensor;
  }
  ASSERT_FALSE(llvm::sys::fs::remove(file));
  EXPECT_TRUE(view.isView());
  EXPECT_TRUE(view == t);
  // Writing to the view copies it; the file's bytes stay as they were.
  view.setInt(0, 42);
  EXPECT_FALSE(view.isView());
  EXPECT_EQ(view.getInt(0), 42);
}

TEST_F(SafetensorsTest, WriterReplacesAnExistingFile) {
  std::string file = path("w.safetensors");
  writeFile(file, "old contents");
  ASSERT_EQ(errorOf(writeSafetensors(file, {{"a", HostTensor(DType::F16, {4})}})), "<no error>");
  EXPECT_EQ(filesInDir(), std::vector<std::string>{"w.safetensors"});
  llvm::sys::fs::file_status status;
  ASSERT_FALSE(llvm::sys::fs::status(file, status));
  EXPECT_EQ(status.permissions(),
            static_cast<llvm::sys::fs::perms>(0666 & ~llvm::sys::fs::getUmask()));
  auto read = SafetensorsFile::open(file);
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(read->entries().size(), 1u);
}

TEST_F(SafetensorsTest, WriterRejectsBadNamesAndLeavesNothing) {
  std::string file = path("w.safetensors");
  HostTensor t(DType::F32, {1});
  EXPECT_EQ(errorOf(writeSafetensors(file, {{"a", t}, {"b", t}, {"a", t}})),
            "cannot write " + file + ": tensor \"a\" is given twice");
  EXPECT_EQ(errorOf(writeSafetensors(file, {{"__metadata__", t}})),
            "cannot write " + file + ": \"__metadata__\" cannot name a tensor");
  EXPECT_EQ(errorOf(writeSafetensors(file, {{"bad\xff", t}})),
            "cannot write " + file + ": tensor name \"bad\xef\xbf\xbd\" is not valid UTF-8");
  EXPECT_EQ(errorOf(writeSafetensors(file, {{"a", t}}, {{"k", "\xc3"}})),
            "cannot write " + file + ": metadata \"k\" is not valid UTF-8");
  EXPECT_TRUE(filesInDir().empty());
  std::string missing = path("no/such/dir/w.safetensors");
  EXPECT_EQ(errorOf(writeSafetensors(missing, {{"a", t}})),
            "cannot write " + missing +
                ": cannot create a temporary file: No such file or directory");
}

//===----------------------------------------------------------------------===//
// A file the official library wrote
//===----------------------------------------------------------------------===//

TEST_F(SafetensorsTest, ReadsAFileTheReferenceWriterWrote) {
  // safetensors.numpy.save_file (safetensors 0.8), which orders data by dtype, then name:
  //   fc.weight: f32 arange(6).reshape(2, 3) / 4   fc.bias: f16 [0.5, -1.5]
  //   embed.ids: i64 [[1, -2], [3, 4]]             mask: bool [True, False, True]
  //   scale: f64 2.0 (0-d)                          bytes: u8 [0, 255, 7]
  //   empty: i32 zeros((0, 3))
  //   metadata {"format": "np", "source": "safetensors.numpy"}
  auto read =
      SafetensorsFile::open(std::string(AOTC_TEST_FIXTURES_DIR) + "/numpy_written.safetensors");
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  std::map<std::string, std::string> metadata = {{"format", "np"}, {"source", "safetensors.numpy"}};
  EXPECT_EQ(read->metadata(), metadata);
  std::vector<std::string> names;
  for (const auto &e : read->entries())
    names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"bytes", "embed.ids", "empty", "fc.bias", "fc.weight",
                                             "mask", "scale"}));
  auto values = [&](llvm::StringRef name) {
    const SafetensorsFile::Entry *e = read->find(name);
    std::vector<double> out;
    if (!e)
      return out;
    for (int64_t i = 0; i < e->tensor.numel(); ++i)
      out.push_back(e->tensor.getDouble(i));
    return out;
  };
  EXPECT_EQ(values("fc.weight"), (std::vector<double>{0, 0.25, 0.5, 0.75, 1, 1.25}));
  EXPECT_EQ(values("fc.bias"), (std::vector<double>{0.5, -1.5}));
  EXPECT_EQ(values("embed.ids"), (std::vector<double>{1, -2, 3, 4}));
  EXPECT_EQ(values("mask"), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(values("scale"), (std::vector<double>{2}));
  EXPECT_EQ(values("bytes"), (std::vector<double>{0, 255, 7}));
  EXPECT_EQ(values("empty"), std::vector<double>{});
  EXPECT_EQ(read->find("fc.weight")->tensor.shape(), llvm::ArrayRef<int64_t>({2, 3}));
  EXPECT_EQ(read->find("scale")->tensor.shape(), llvm::ArrayRef<int64_t>());
  EXPECT_EQ(read->find("empty")->tensor.shape(), llvm::ArrayRef<int64_t>({0, 3}));
  EXPECT_EQ(read->find("embed.ids")->tensor.dtype(), DType::I64);
  EXPECT_EQ(read->find("mask")->tensor.dtype(), DType::Bool);
  EXPECT_EQ(read->find("empty")->tensor.dtype(), DType::I32);
}

//===----------------------------------------------------------------------===//
// Bad input
//===----------------------------------------------------------------------===//

TEST_F(SafetensorsTest, MissingFile) {
  std::string file = path("missing.safetensors");
  EXPECT_EQ(errorOf(SafetensorsFile::open(file)), file + ": No such file or directory");
}

TEST_F(SafetensorsTest, TruncatedFile) {
  EXPECT_EQ(parseError(""), "w.safetensors: truncated file: 0 bytes cannot hold the 8-byte "
                            "header size");
  EXPECT_EQ(parseError(std::string("\x02\0\0\0\0", 5)),
            "w.safetensors: truncated file: 5 bytes cannot hold the "
            "8-byte header size");
  std::string file = path("w.safetensors");
  writeFile(file, "abc");
  EXPECT_EQ(errorOf(SafetensorsFile::open(file)),
            file + ": truncated file: 3 bytes cannot hold the 8-byte header size");
}

TEST_F(SafetensorsTest, HeaderSizeBeyondTheFile) {
  std::string bytes = stFile("{}");
  bytes[0] = 3;
  EXPECT_EQ(parseError(bytes), "w.safetensors: header size 3 is beyond the end of the file (10 "
                               "bytes)");
  std::fill(bytes.begin(), bytes.begin() + 8, '\xff');
  EXPECT_EQ(parseError(bytes), "w.safetensors: header size 18446744073709551615 is beyond the "
                               "end of the file (10 bytes)");
  // A truncated data region shows up as a tensor outside the data.
  std::string cut = stFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
  EXPECT_EQ(parseError(cut.substr(0, cut.size() - 1)),
            "w.safetensors: tensor \"a\": data_offsets [0, 8] lie outside the 7 bytes of data");
}

TEST_F(SafetensorsTest, HeaderOverTheReferenceLimit) {
  // The reference reader refuses headers over 100 MB; so does this one, before parsing.
  std::string bytes = stFile(std::string(100'000'001, ' '));
  EXPECT_EQ(parseError(bytes), "w.safetensors: header size 100000001 is over the limit of "
                               "100000000 bytes");
}

TEST_F(SafetensorsTest, HeaderNotJson) {
  EXPECT_EQ(parseError(stFile("")),
            "w.safetensors: header is not valid JSON: parse error at line 1, column 1: syntax "
            "error while parsing value - unexpected end of input; expected '[', '{', or a "
            "literal");
  EXPECT_EQ(parseError(stFile("{x}")),
            "w.safetensors: header is not valid JSON: parse error at line 1, column 2: syntax "
            "error while parsing object key - invalid literal; last read: '{x'; expected string "
            "literal");
  EXPECT_EQ(parseError(stFile("{\"a\": {}")),
            "w.safetensors: header is not valid JSON: parse error at line 1, column 9: syntax "
            "error while parsing object - unexpected end of input; expected '}'");
  // Invalid UTF-8 in a string.
  EXPECT_EQ(parseError(stFile("{\"\xff\": 1}")),
            "w.safetensors: header is not valid JSON: parse error at line 1, column 3: syntax "
            "error while parsing object key - invalid string: ill-formed UTF-8 byte; last read: "
            "'\"\xff'; expected string literal");
}

TEST_F(SafetensorsTest, HeaderWithTrailingGarbage) {
  EXPECT_EQ(parseError(stFile("{}x")),
            "w.safetensors: header is not valid JSON: parse error at line 1, column 3: syntax "
            "error while parsing value - invalid literal; last read: '{}x'; expected end of input");
  EXPECT_EQ(parseError(stFile("{} {}")),
            "w.safetensors: header is not valid JSON: parse error at line 1, column 4: syntax "
            "error while parsing value - unexpected '{'; expected end of input");
  // nlohmann's parser would stop at a NUL as at the end of input; JSON text never holds one.
  EXPECT_EQ(parseError(stFile(std::string("{}\0\0", 4))),
            "w.safetensors: header is not valid JSON: a NUL byte at offset 2");
  EXPECT_EQ(parseError(stFile(std::string("{\"a\0\": 1}", 10))),
            "w.safetensors: header is not valid JSON: a NUL byte at offset 3");
  // Whitespace padding is what the writers add: fine.
  EXPECT_EQ(parseError(stFile("{} \t\r\n  ")), "<no error>");
}

TEST_F(SafetensorsTest, HeaderNotAnObject) {
  for (const char *header : {"[]", "3", "\"x\"", "null", "[{\"a\": 1}]"})
    EXPECT_EQ(parseError(stFile(header)), "w.safetensors: header is not a JSON object") << header;
}

TEST_F(SafetensorsTest, DuplicateKeys) {
  std::string a = R"("a":{"dtype":"F32","shape":[],"data_offsets":[0,4]})";
  EXPECT_EQ(parseError(stFile("{" + a + "," + a + "}", 4)),
            "w.safetensors: tensor \"a\" appears twice");
  EXPECT_EQ(parseError(stFile(R"({"__metadata__":{},"__metadata__":{}})")),
            "w.safetensors: \"__metadata__\" appears twice");
  EXPECT_EQ(parseError(stFile(R"({"a":{"dtype":"F32","dtype":"F32"}})")),
            "w.safetensors: tensor \"a\": \"dtype\" appears twice");
  EXPECT_EQ(parseError(stFile(R"({"__metadata__":{"k":"1","k":"2"}})")),
            "w.safetensors: \"__metadata__\": \"k\" appears twice");
}

TEST_F(SafetensorsTest, NestingDeeperThanAHeader) {
  EXPECT_EQ(parseError(stFile(R"({"a":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})", 4)),
            "w.safetensors: header nests lists or objects too deeply");
  EXPECT_EQ(parseError(stFile(std::string(100000, '[') + std::string(100000, ']'))),
            "w.safetensors: header nests lists or objects too deeply");
}

TEST_F(SafetensorsTest, Metadata) {
  EXPECT_EQ(parseError(stFile(R"({"__metadata__":{"a":1}})")),
            "w.safetensors: \"__metadata__\" must map strings to strings");
  EXPECT_EQ(parseError(stFile(R"({"__metadata__":["a"]})")),
            "w.safetensors: \"__metadata__\" must map strings to strings");
  EXPECT_EQ(parseError(stFile(R"({"__metadata__":"a"})")),
            "w.safetensors: \"__metadata__\" must map strings to strings");
  // null is what the reference library reads as "no metadata".
  auto read = SafetensorsFile::parse(asBytes(stFile(R"({"__metadata__":null})")), "w", nullptr);
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  EXPECT_TRUE(read->metadata().empty());
}

TEST_F(SafetensorsTest, BadTensorEntries) {
  EXPECT_EQ(parseError(stFile(oneTensor("a", "3"))),
            "w.safetensors: tensor \"a\": not a JSON object");
  EXPECT_EQ(parseError(stFile(oneTensor("a", R"({"shape":[],"data_offsets":[0,4]})"), 4)),
            "w.safetensors: tensor \"a\": missing \"dtype\"");
  EXPECT_EQ(parseError(stFile(oneTensor("a", R"({"dtype":"F32","data_offsets":[0,4]})"), 4)),
            "w.safetensors: tensor \"a\": missing \"shape\"");
  EXPECT_EQ(parseError(stFile(oneTensor("a", R"({"dtype":"F32","shape":[]})"), 4)),
            "w.safetensors: tensor \"a\": missing \"data_offsets\"");
  EXPECT_EQ(parseError(stFile(oneTensor("a", R"({"dtype":4,"shape":[],"data_offsets":[0,4]})"), 4)),
            "w.safetensors: tensor \"a\": \"dtype\" must be a string");
  // Keys the format does not define are ignored, as the reference reader ignores them.
  EXPECT_EQ(parseError(stFile(oneTensor("a", R"({"dtype":"F32","shape":[],"data_offsets":[0,4],)"
                                             R"("extra":[1]})"),
                              4)),
            "<no error>");
}

TEST_F(SafetensorsTest, UnknownDType) {
  auto entry = [](const std::string &dtype) {
    return stFile(
        oneTensor("a", R"({"dtype":")" + dtype + R"(","shape":[1],"data_offsets":[0,2]})"), 2);
  };
  EXPECT_EQ(parseError(entry("F7")), "w.safetensors: tensor \"a\": unknown dtype \"F7\"");
  EXPECT_EQ(parseError(entry("f32")), "w.safetensors: tensor \"a\": unknown dtype \"f32\"");
  EXPECT_EQ(parseError(entry("U16")),
            "w.safetensors: tensor \"a\": dtype \"U16\" is not supported");
  EXPECT_EQ(parseError(entry("F8_E4M3")),
            "w.safetensors: tensor \"a\": dtype \"F8_E4M3\" is not supported");
}

TEST_F(SafetensorsTest, BadShapes) {
  auto entry = [](const std::string &shape) {
    return stFile(
        oneTensor("a", R"({"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,4]})"), 4);
  };
  for (const char *shape : {"[1.0]", "[-1]", "[\"1\"]", "[null]", "{}", "1",
                            "[9223372036854775808]", "[1e3]", "[18446744073709551616]"})
    EXPECT_EQ(parseError(entry(shape)),
              "w.safetensors: tensor \"a\": \"shape\" must be a list of integers in [0, 2^63)")
        << shape;
  EXPECT_EQ(parseError(entry("[4611686018427387904,4]")),
            "w.safetensors: tensor \"a\": F32 [4611686018427387904, 4] is too large (more than "
            "2^63 - 1 bytes)");
  EXPECT_EQ(parseError(entry("[0,4611686018427387904,4]")),
            "w.safetensors: tensor \"a\": F32 [0, 4611686018427387904, 4] is too large (more "
            "than 2^63 - 1 bytes)");
}

TEST_F(SafetensorsTest, BadDataOffsets) {
  auto entry = [](const std::string &offsets) {
    return stFile(oneTensor("a", R"({"dtype":"F32","shape":[2],"data_offsets":)" + offsets + "}"),
                  8);
  };
  for (const char *offsets : {"[0]", "[0,8,8]", "[0,-8]", "[0,8.0]", "\"0,8\"", "{}", "null"})
    EXPECT_EQ(parseError(entry(offsets)),
              "w.safetensors: tensor \"a\": \"data_offsets\" must be [begin, end] with "
              "non-negative integers")
        << offsets;
  EXPECT_EQ(parseError(entry("[8,0]")),
            "w.safetensors: tensor \"a\": data_offsets [8, 0] end before they begin");
  EXPECT_EQ(parseError(entry("[0,4]")),
            "w.safetensors: tensor \"a\": data_offsets [0, 4] hold 4 bytes but F32 [2] needs 8");
  EXPECT_EQ(parseError(entry("[8,16]")),
            "w.safetensors: tensor \"a\": data_offsets [8, 16] lie outside the 8 bytes of data");
  EXPECT_EQ(parseError(entry("[18446744073709551608,18446744073709551615]")),
            "w.safetensors: tensor \"a\": data_offsets [18446744073709551608, "
            "18446744073709551615] hold 7 bytes but F32 [2] needs 8");
}

TEST_F(SafetensorsTest, SizeDisagreesWithDTypeTimesShape) {
  // The example from the issue.
  std::string header = oneTensor("fc.weight", R"({"dtype":"F32","shape":[5,4],)"
                                              R"("data_offsets":[0,100]})");
  EXPECT_EQ(parseError(stFile(header, 100)),
            "w.safetensors: tensor \"fc.weight\": data_offsets [0, 100] hold 100 bytes but F32 "
            "[5, 4] needs 80");
  EXPECT_EQ(parseError(stFile(oneTensor("s", R"({"dtype":"BF16","shape":[],)"
                                             R"("data_offsets":[0,0]})"))),
            "w.safetensors: tensor \"s\": data_offsets [0, 0] hold 0 bytes but BF16 [] needs 2");
  std::string file = path("w.safetensors");
  writeFile(file, stFile(header, 100));
  EXPECT_EQ(errorOf(SafetensorsFile::open(file)),
            file + ": tensor \"fc.weight\": data_offsets [0, 100] hold 100 bytes but F32 [5, 4] "
                   "needs 80");
}

TEST_F(SafetensorsTest, OverlappingOffsets) {
  std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  EXPECT_EQ(parseError(stFile(header, 12)),
            "w.safetensors: tensor \"b\": data_offsets [4, 12] overlap tensor \"a\" at [0, 8]");
  // The same bytes twice.
  header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
           R"("b":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_EQ(parseError(stFile(header, 8)),
            "w.safetensors: tensor \"b\": data_offsets [0, 8] overlap tensor \"a\" at [0, 8]");
  // An empty tensor inside another one.
  header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
           R"("b":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})";
  EXPECT_EQ(parseError(stFile(header, 8)),
            "w.safetensors: tensor \"b\": data_offsets [4, 4] overlap tensor \"a\" at [0, 8]");
}

TEST_F(SafetensorsTest, HolesInTheData) {
  std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})";
  EXPECT_EQ(parseError(stFile(header, 20)),
            "w.safetensors: bytes [8, 12) of the data belong to no tensor");
  header = oneTensor("a", R"({"dtype":"F32","shape":[2],"data_offsets":[4,12]})");
  EXPECT_EQ(parseError(stFile(header, 12)),
            "w.safetensors: bytes [0, 4) of the data belong to no tensor");
  header = oneTensor("a", R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})");
  EXPECT_EQ(parseError(stFile(header, 11)),
            "w.safetensors: bytes [8, 11) of the data belong to no tensor");
  EXPECT_EQ(parseError(stFile("{}", 3)),
            "w.safetensors: bytes [0, 3) of the data belong to no tensor");
}

TEST_F(SafetensorsTest, OffsetsInAnyOrderAndEmptyTensorsAnywhere) {
  // The reference writer orders data by dtype, not name; empty tensors may sit at any boundary.
  std::string header = R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[8,10]},)"
                       R"("b":{"dtype":"F64","shape":[],"data_offsets":[0,8]},)"
                       R"("c":{"dtype":"I16","shape":[0,5],"data_offsets":[8,8]},)"
                       R"("d":{"dtype":"BOOL","shape":[0],"data_offsets":[10,10]}})";
  auto read = SafetensorsFile::parse(asBytes(stFile(header, 10)), "w", nullptr);
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  ASSERT_EQ(read->entries().size(), 4u);
  EXPECT_EQ(read->find("a")->tensor.nbytes(), 2u);
  EXPECT_EQ(read->find("b")->tensor.dtype(), DType::F64);
  EXPECT_EQ(read->find("c")->tensor.numel(), 0);
  EXPECT_EQ(read->find("d")->tensor.dtype(), DType::Bool);
}

TEST_F(SafetensorsTest, EveryTruncationAndByteFlipIsAnErrorOrAValidRead) {
  HostTensor w(DType::F32, {2, 3}), m(DType::Bool, {3});
  auto good = encodeSafetensors({{"w", w}, {"m", m}}, {{"k", "v"}});
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
