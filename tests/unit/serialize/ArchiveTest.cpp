// The .aotp archive: graph -> archive -> graph round trips, aligned and bitwise-exact weights,
// reproducible bytes, and one exact error message for every kind of bad input.
#include "aotc/serialize/Archive.h"

#include "ProgramProto.h"

#include "aotc/ir/Parser.h"
#include "aotc/ir/Printer.h"
#include "aotc/ir/Verifier.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/unknown_field_set.h>
#include <gtest/gtest.h>
#include <zip.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

using namespace aotc;

namespace {

// Every kind of thing the format carries: dims with ranges and a divisor, a derived dim, guards
// with and without a location, the three kinds of state tensor, all attribute kinds (symbolic
// int, int list, float, bool, string, dtype), an absent optional operand, a cond with regions,
// a buffer mutation, symint and scalar results, and two entries.
constexpr const char *TinyGraph = R"(graph @tiny opset 1.0

dim batch in 1..512
dim seq in 8..1024 divisible by 8
derived seq_plus_1 = seq + 1
guard batch <= 512  # model.cpp:42:7
guard seq != 16

parameter "fc.weight" : f32[4, 8]
parameter "fc.bias" : f32[4]
buffer "bn.running_mean" : f32[4]
constant "table" : i32[10]

entry @forward(%0 : f32[batch, 8] = input "x", %1 : f32[4, 8] = parameter "fc.weight", %2 : f32[4] = parameter "fc.bias", %3 : f32[4] = buffer "bn.running_mean") {
  %4 = aten.linear(%0, %1, %2) : f32[batch, 4]  # model.cpp:12:5
  %5 = aten.linear(%0, %1, none) : f32[batch, 4]
  %6 = aten.gelu(%4) {approximate = "tanh"} : f32[batch, 4]  # layers/act.cpp:3:9
  %7 = aten.mean.dim(%6) {dim = [0]} : f32[4]
  %8 = aten.layer_norm(%5, none, none) {normalized_shape = [4], eps = 0.001, cudnn_enable = false} : f32[batch, 4]
  %9 = aten._to_copy(%8) {dtype = f16} : f16[batch, 4]
  %10 = aten.sum.dim_IntList(%6) : f32[]
  %11 = aten.gt.Scalar(%10) {other = 0} : bool[]
  %12 = aten.cond(%11, %6) : f32[batch, 4] {  # model.cpp:20:3
    region(%13 : f32[batch, 4]) {
      %14 = aten.neg(%13) : f32[batch, 4]  # model.cpp:21:5
      return %14
    }
    region(%15 : f32[batch, 4]) {
      return %15
    }
  }
  return %12 as output "y", %9 as output "half", %7 as mutates "bn.running_mean"
}

entry @shapes(%0 : f32[batch, seq_plus_1] = input "a", %1 : i32[10] = constant "table") {
  %2 = aten.slice.Tensor(%0) {dim = 1, start = 1, end = seq_plus_1, step = 2} : f32[batch, floordiv(seq + 1, 2)]
  %3 = aten.sym_size.int(%0) {dim = 0} : symint
  %4 = aten.full() {size = [batch, 2], fill_value = 0.5} : f32[batch, 2]
  %5 = aten.ones() {size = []} : f32[]
  %6 = aten._local_scalar_dense(%5) : f32
  return %2 as output "sliced", %3 as output "batch", %4 as output "full", %6 as output "one"
}
)";

std::unique_ptr<Graph> parse(llvm::StringRef text) {
  auto g = parseGraph(text, "test.aotc");
  if (!g) {
    ADD_FAILURE() << llvm::toString(g.takeError());
    return nullptr;
  }
  if (llvm::Error err = verifyGraph(**g)) {
    ADD_FAILURE() << llvm::toString(std::move(err));
    return nullptr;
  }
  return std::move(*g);
}

template <typename T> std::string errorOf(llvm::Expected<T> value) {
  if (value)
    return "<no error>";
  return llvm::toString(value.takeError());
}

std::string errorOf(llvm::Error err) { return err ? llvm::toString(std::move(err)) : "<no error>"; }

std::vector<uint8_t> pattern(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(n);
  for (uint8_t &b : bytes)
    b = static_cast<uint8_t>(rng());
  return bytes;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A zip written directly with libzip, for layouts the aotc writer never produces.
void writeZipByHand(const std::string &path,
                    const std::vector<std::pair<std::string, std::string>> &entries,
                    bool deflate = false) {
  int code = 0;
  zip_t *za = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  ASSERT_NE(za, nullptr);
  for (const auto &[name, bytes] : entries) {
    zip_source_t *src = zip_source_buffer(za, bytes.data(), bytes.size(), 0);
    ASSERT_NE(src, nullptr);
    zip_int64_t index = zip_file_add(za, name.c_str(), src, 0);
    ASSERT_GE(index, 0);
    ASSERT_EQ(zip_set_file_compression(za, index, deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0), 0);
  }
  ASSERT_EQ(zip_close(za), 0) << zip_strerror(za);
}

std::string manifestJson(unsigned major = 1, unsigned minor = 0) {
  return "{\"aotc_version\": \"0.1.0\", \"entries\": [], \"format\": \"aotp\", "
         "\"format_version\": {\"major\": " +
         std::to_string(major) + ", \"minor\": " + std::to_string(minor) + "}}";
}

class ArchiveTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("aotc-archive-test", dir));
    Dir = std::string(dir.str());
    Graph = parse(TinyGraph);
    ASSERT_TRUE(Graph);
    // Sizes chosen so that the padding before each weight differs; one weight is not a state
    // tensor and one is empty.
    Bytes = {pattern(128, 1), pattern(16, 2), pattern(16, 3), pattern(40, 4), pattern(3, 5), {}};
    Shapes = {{4, 8}, {4}, {4}, {10}, {3}, {0, 7}};
    Weights = {
        {"fc.weight", DType::F32, Shapes[0], Bytes[0]},
        {"fc.bias", DType::F32, Shapes[1], Bytes[1]},
        {"bn.running_mean", DType::F32, Shapes[2], Bytes[2]},
        {"table", DType::I32, Shapes[3], Bytes[3]},
        {"extra.bytes", DType::U8, Shapes[4], Bytes[4]},
        {"empty", DType::F32, Shapes[5], Bytes[5]},
    };
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

  // The tiny graph encoded as the writer would, for tests that tamper with it.
  proto::Program program() const {
    proto::Program p;
    p.mutable_format()->set_major(ArchiveFormatMajor);
    p.mutable_format()->set_minor(ArchiveFormatMinor);
    EXPECT_FALSE(static_cast<bool>(graphToProto(*Graph, p)));
    return p;
  }

  // Writes `p` with no weights and returns the reader's error.
  std::string readError(const proto::Program &p, const ReadOptions &options = {}) {
    std::string file = path("bad.aotp");
    llvm::Error err = writeProgramArchive(p, {}, file);
    EXPECT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
    return errorOf(readArchive(file, options));
  }

  // Adds a weight to `p` and writes it with `data` as its entry's bytes.
  std::string readWeightError(proto::Program p, const std::string &name, proto::DType dtype,
                              std::vector<int64_t> shape, llvm::ArrayRef<uint8_t> data) {
    proto::Weight *w = p.add_weights();
    w->set_name(name);
    w->set_dtype(dtype);
    for (int64_t d : shape)
      w->add_shape(d);
    w->set_entry("weights/" + name);
    std::string file = path("bad.aotp");
    llvm::Error err = writeProgramArchive(p, {{w->entry(), data}}, file);
    EXPECT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
    return errorOf(readArchive(file));
  }

  std::string Dir;
  std::unique_ptr<aotc::Graph> Graph;
  std::vector<std::vector<uint8_t>> Bytes;
  std::vector<std::vector<int64_t>> Shapes;
  std::vector<WeightRef> Weights;
};

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

TEST_F(ArchiveTest, GraphPrintsIdenticallyAfterRoundTrip) {
  std::string file = path("model.aotp");
  ASSERT_EQ(errorOf(writeArchive(*Graph, Weights, file)), "<no error>");
  auto read = readArchive(file);
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(printGraph(*read->graph), printGraph(*Graph));
  EXPECT_EQ(printGraph(*read->graph), TinyGraph);
  EXPECT_TRUE(read->graph->shapeEnv() == Graph->shapeEnv());
  EXPECT_EQ(read->formatMajor, ArchiveFormatMajor);
  EXPECT_EQ(read->formatMinor, ArchiveFormatMinor);
  EXPECT_EQ(read->producer, "0.1.0");
}

TEST_F(ArchiveTest, WeightsComeBackBitwiseIdenticalAndAligned) {
  std::string file = path("model.aotp");
  ASSERT_EQ(errorOf(writeArchive(*Graph, Weights, file)), "<no error>");
  auto read = readArchive(file);
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  ASSERT_EQ(read->weights.size(), Weights.size());
  std::string fileBytes = readFile(file);
  for (size_t i = 0; i < Weights.size(); ++i) {
    const Weight &w = read->weights[i];
    SCOPED_TRACE(w.name());
    EXPECT_EQ(w.name(), Weights[i].name);
    EXPECT_EQ(w.dtype(), Weights[i].dtype);
    EXPECT_EQ(w.shape().vec(), Weights[i].shape.vec());
    EXPECT_EQ(w.bytes().vec(), Weights[i].bytes.vec());
    EXPECT_EQ(read->findWeight(Weights[i].name), &w);
    if (w.bytes().empty())
      continue;
    // Aligned in memory (the mapping, or the aligned copy of a small file) ...
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w.bytes().data()) % ArchiveWeightAlignment, 0u);
    // ... because aligned in the file, where the bytes sit raw.
    size_t offset = fileBytes.find(std::string(w.bytes().begin(), w.bytes().end()));
    ASSERT_NE(offset, std::string::npos);
    EXPECT_EQ(offset % ArchiveWeightAlignment, 0u);
  }
  EXPECT_EQ(read->findWeight("nope"), nullptr);
}

TEST_F(ArchiveTest, WeightsKeepTheMappingAlive) {
  std::string file = path("model.aotp");
  ASSERT_EQ(errorOf(writeArchive(*Graph, Weights, file)), "<no error>");
  std::optional<Weight> kept;
  {
    auto read = readArchive(file);
    ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
    kept = read->weights[0];
  }
  EXPECT_EQ(kept->bytes().vec(), Bytes[0]);
}

TEST_F(ArchiveTest, WritingTwiceGivesIdenticalBytes) {
  ASSERT_EQ(errorOf(writeArchive(*Graph, Weights, path("a.aotp"))), "<no error>");
  ASSERT_EQ(errorOf(writeArchive(*Graph, Weights, path("b.aotp"))), "<no error>");
  std::string a = readFile(path("a.aotp"));
  EXPECT_FALSE(a.empty());
  EXPECT_TRUE(a == readFile(path("b.aotp")));

  // A program read back and written again is the same file too.
  auto read = readArchive(path("a.aotp"));
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  ASSERT_EQ(errorOf(writeArchive(*read, path("c.aotp"))), "<no error>");
  EXPECT_TRUE(a == readFile(path("c.aotp")));
}

TEST_F(ArchiveTest, LeavesOnlyTheArchiveWithTheUsualMode) {
  std::string file = path("model.aotp");
  ASSERT_EQ(errorOf(writeArchive(*Graph, Weights, file)), "<no error>");
  EXPECT_EQ(filesInDir(), std::vector<std::string>{"model.aotp"});
  llvm::sys::fs::file_status status;
  ASSERT_FALSE(llvm::sys::fs::status(file, status));
  EXPECT_EQ(status.permissions(),
            static_cast<llvm::sys::fs::perms>(0666 & ~llvm::sys::fs::getUmask()));
}

TEST_F(ArchiveTest, ReplacesAnExistingArchive) {
  std::string file = path("model.aotp");
  writeFile(file, "old contents");
  ASSERT_EQ(errorOf(writeArchive(*Graph, Weights, file)), "<no error>");
  auto read = readArchive(file);
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(filesInDir(), std::vector<std::string>{"model.aotp"});
}

TEST_F(ArchiveTest, ReadsFromABuffer) {
  std::string file = path("model.aotp");
  ASSERT_EQ(errorOf(writeArchive(*Graph, Weights, file)), "<no error>");
  auto read =
      readArchiveFromBuffer(llvm::MemoryBuffer::getMemBufferCopy(readFile(file), "in-memory.aotp"));
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(printGraph(*read->graph), TinyGraph);
  EXPECT_EQ(read->weights[3].bytes().vec(), Bytes[3]);
}

TEST_F(ArchiveTest, GraphWithoutWeightsOrSymbols) {
  auto g = parse(R"(graph @plain opset 1.0

entry @f(%0 : f32[4] = input "x") {
  %1 = aten.relu(%0) : f32[4]
  return %1 as output "y"
}
)");
  ASSERT_TRUE(g);
  std::string file = path("plain.aotp");
  ASSERT_EQ(errorOf(writeArchive(*g, {}, file)), "<no error>");
  auto read = readArchive(file);
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(printGraph(*read->graph), printGraph(*g));
  EXPECT_TRUE(read->weights.empty());
}

#ifdef AOTC_TEST_GRAPHS_DIR
// The IR tests' graphs cover every op family; each must survive the archive as it is.
TEST_F(ArchiveTest, EveryIRTestGraphRoundTrips) {
  std::vector<std::string> files;
  for (const auto &e : std::filesystem::directory_iterator(AOTC_TEST_GRAPHS_DIR))
    if (e.path().extension() == ".aotc")
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const std::string &source : files) {
    SCOPED_TRACE(source);
    auto g = parse(readFile(source));
    ASSERT_TRUE(g);
    std::string file = path("graph.aotp");
    ASSERT_EQ(errorOf(writeArchive(*g, {}, file)), "<no error>");
    auto read = readArchive(file);
    ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
    EXPECT_EQ(printGraph(*read->graph), printGraph(*g));
  }
}
#endif

// Archives must load across aotc versions of the same format major: a newer minor version may
// add fields, which this reader skips.
TEST_F(ArchiveTest, ReadsANewerMinorVersionWithUnknownFields) {
  proto::Program p = program();
  p.mutable_format()->set_minor(7);
  // Field 1000 (varint 42) and a field inside the first node, as a newer writer might add.
  p.GetReflection()->MutableUnknownFields(&p)->AddVarint(1000, 42);
  proto::Node *node = p.mutable_entries(0)->mutable_body()->mutable_nodes(0);
  node->GetReflection()->MutableUnknownFields(node)->AddLengthDelimited(77, "future");
  EXPECT_EQ(readError(p), "<no error>");
  auto read = readArchive(path("bad.aotp"));
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(read->formatMinor, 7u);
  EXPECT_EQ(printGraph(*read->graph), TinyGraph);
}

//===----------------------------------------------------------------------===//
// Writer errors: nothing is written, an existing file stays as it was
//===----------------------------------------------------------------------===//

TEST_F(ArchiveTest, WriterRejectsBadWeightsAndLeavesNothing) {
  std::string file = path("model.aotp");
  writeFile(file, "old contents");
  std::vector<uint8_t> bytes(100);
  std::vector<int64_t> shape = {5, 4};
  EXPECT_EQ(errorOf(writeArchive(*Graph, {{"w", DType::F32, shape, bytes}}, file)),
            "cannot write " + file + ": weight \"w\" has 100 bytes but f32[5, 4] needs 80");
  std::vector<WeightRef> twice = {Weights[1], Weights[1]};
  EXPECT_EQ(errorOf(writeArchive(*Graph, twice, file)),
            "cannot write " + file + ": weight \"fc.bias\" is given twice");
  std::vector<int64_t> wrongShape = {2, 2};
  EXPECT_EQ(errorOf(writeArchive(*Graph, {{"fc.bias", DType::F32, wrongShape, Bytes[1]}}, file)),
            "cannot write " + file +
                ": weight \"fc.bias\" is f32[2, 2] but the graph declares parameter \"fc.bias\" : "
                "f32[4]");
  std::vector<int64_t> negative = {-1};
  EXPECT_EQ(errorOf(writeArchive(*Graph, {{"w", DType::F32, negative, {}}}, file)),
            "cannot write " + file + ": weight \"w\" has a negative dim in its shape [-1]");
  EXPECT_EQ(errorOf(writeArchive(*Graph, {{"", DType::F32, {}, Bytes[0]}}, file)),
            "cannot write " + file + ": bad weight name \"\"");
  EXPECT_EQ(readFile(file), "old contents");
  EXPECT_EQ(filesInDir(), std::vector<std::string>{"model.aotp"});
}

TEST_F(ArchiveTest, WriterRejectsAnInvalidGraph) {
  auto g = parseGraph(R"(graph @g opset 1.0

entry @f(%0 : f32[4] = input "x") {
  %1 = aten.relu(%0) : f32[5]
  return %1 as output "y"
}
)");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  std::string verifierMessage = errorOf(verifyGraph(**g));
  std::string file = path("model.aotp");
  EXPECT_EQ(errorOf(writeArchive(**g, {}, file)), "cannot write " + file + ": " + verifierMessage);
  EXPECT_TRUE(filesInDir().empty());
}

TEST_F(ArchiveTest, WriterReportsAMissingDirectory) {
  std::string file = path("no/such/dir/model.aotp");
  EXPECT_EQ(errorOf(writeArchive(*Graph, Weights, file)),
            "cannot write " + file + ": cannot create a temporary file: No such file or directory");
}

//===----------------------------------------------------------------------===//
// Bad zips
//===----------------------------------------------------------------------===//

class BadArchiveTest : public ArchiveTest {
protected:
  void SetUp() override {
    ArchiveTest::SetUp();
    Good = path("model.aotp");
    ASSERT_EQ(errorOf(writeArchive(*Graph, Weights, Good)), "<no error>");
    GoodBytes = readFile(Good);
  }

  std::string readBytes(const std::string &bytes, const ReadOptions &options = {}) {
    std::string file = path("bad.aotp");
    writeFile(file, bytes);
    return errorOf(readArchive(file, options));
  }

  // The offset of an entry's data in the good archive (all entries are stored raw).
  size_t offsetOf(llvm::ArrayRef<uint8_t> data) const {
    return GoodBytes.find(std::string(data.begin(), data.end()));
  }

  std::string Good, GoodBytes;
};

TEST_F(BadArchiveTest, MissingFile) {
  std::string file = path("missing.aotp");
  EXPECT_EQ(errorOf(readArchive(file)), file + ": No such file or directory");
}

TEST_F(BadArchiveTest, EmptyFile) {
  EXPECT_EQ(readBytes(""),
            path("bad.aotp") + ": not a valid zip archive (no end of central directory record)");
}

TEST_F(BadArchiveTest, NotAZip) {
  EXPECT_EQ(readBytes("graph @g opset 1.0\n"),
            path("bad.aotp") + ": not a valid zip archive (Not a zip archive)");
}

TEST_F(BadArchiveTest, TruncatedZip) {
  EXPECT_EQ(readBytes(GoodBytes.substr(0, GoodBytes.size() / 2)),
            path("bad.aotp") + ": not a valid zip archive (Not a zip archive)");
  EXPECT_EQ(readBytes(GoodBytes.substr(0, GoodBytes.size() - 1)),
            path("bad.aotp") + ": not a valid zip archive (Not a zip archive)");
}

TEST_F(BadArchiveTest, CorruptedCentralDirectory) {
  std::string bytes = GoodBytes;
  size_t cd = bytes.rfind("PK\x01\x02");
  ASSERT_NE(cd, std::string::npos);
  bytes[cd + 3] = 'X';
  EXPECT_EQ(readBytes(bytes), path("bad.aotp") + ": not a valid zip archive (Not a zip archive)");
  // A central directory entry whose CRC disagrees with its local header.
  bytes = GoodBytes;
  bytes[cd + 16] ^= 1;
  EXPECT_EQ(readBytes(bytes),
            path("bad.aotp") + ": not a valid zip archive (Zip archive inconsistent)");
}

TEST_F(BadArchiveTest, CorruptedLocalHeader) {
  std::string bytes = GoodBytes;
  ASSERT_EQ(bytes.substr(0, 4), "PK\x03\x04"); // manifest.json comes first
  bytes[2] = 'X';
  EXPECT_EQ(readBytes(bytes), path("bad.aotp") + ": not a valid zip archive (Not a zip archive)");
}

TEST_F(BadArchiveTest, CorruptedProgramBytes) {
  // The program's own bytes: the graph name sits inside program.pb.
  std::string bytes = GoodBytes;
  size_t name = bytes.find("layers/act.cpp");
  ASSERT_NE(name, std::string::npos);
  bytes[name] = 'L';
  EXPECT_EQ(readBytes(bytes),
            path("bad.aotp") + ": entry \"program.pb\" is corrupted (CRC-32 mismatch)");
}

TEST_F(BadArchiveTest, CorruptedWeightBytes) {
  std::string bytes = GoodBytes;
  size_t offset = offsetOf(Bytes[0]);
  ASSERT_NE(offset, std::string::npos);
  bytes[offset + 5] ^= 0x40;
  EXPECT_EQ(readBytes(bytes),
            path("bad.aotp") + ": entry \"weights/fc.weight\" is corrupted (CRC-32 mismatch)");
  // Without checksums the weights are not read at all, so the damage goes unnoticed.
  EXPECT_EQ(readBytes(bytes, ReadOptions{.verifyChecksums = false}), "<no error>");
}

TEST_F(BadArchiveTest, EveryTruncationAndByteFlipIsAnErrorOrAValidRead) {
  // Never a crash, never an out-of-bounds read (the sanitizer build runs this too).
  for (size_t n = 0; n < GoodBytes.size(); n += 7) {
    auto buffer =
        llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(GoodBytes).take_front(n), "cut.aotp");
    auto read = readArchiveFromBuffer(std::move(buffer));
    EXPECT_FALSE(static_cast<bool>(read)) << n;
    if (!read)
      llvm::consumeError(read.takeError());
  }
  for (size_t i = 0; i < GoodBytes.size(); i += 3) {
    std::string bytes = GoodBytes;
    bytes[i] ^= 0x5A;
    for (bool checksums : {true, false}) {
      auto read = readArchiveFromBuffer(llvm::MemoryBuffer::getMemBufferCopy(bytes, "flip.aotp"),
                                        ReadOptions{.verifyChecksums = checksums});
      if (!read)
        llvm::consumeError(read.takeError());
    }
  }
}

TEST_F(BadArchiveTest, MissingManifest) {
  writeZipByHand(path("bad.aotp"), {{"program.pb", ""}});
  EXPECT_EQ(errorOf(readArchive(path("bad.aotp"))),
            path("bad.aotp") + ": missing manifest.json; not an aotc program archive");
}

TEST_F(BadArchiveTest, MissingProgram) {
  writeZipByHand(path("bad.aotp"), {{"manifest.json", manifestJson()}});
  EXPECT_EQ(errorOf(readArchive(path("bad.aotp"))),
            path("bad.aotp") + ": missing program.pb; not an aotc program archive");
}

TEST_F(BadArchiveTest, ManifestIsNotJson) {
  writeZipByHand(path("bad.aotp"), {{"manifest.json", "{format"}, {"program.pb", ""}});
  EXPECT_EQ(errorOf(readArchive(path("bad.aotp"))),
            path("bad.aotp") + ": manifest.json: not a JSON object");
}

TEST_F(BadArchiveTest, ManifestOfAnotherFormat) {
  writeZipByHand(path("bad.aotp"), {{"manifest.json", "{\"format\": \"pt2\"}"}});
  EXPECT_EQ(errorOf(readArchive(path("bad.aotp"))),
            path("bad.aotp") +
                ": manifest.json: \"format\" is not \"aotp\"; not an aotc program archive");
}

TEST_F(BadArchiveTest, ManifestListsAMissingEntry) {
  std::string manifest = manifestJson();
  manifest.replace(manifest.find("[]"), 2, "[\"weights/gone\"]");
  writeZipByHand(path("bad.aotp"), {{"manifest.json", manifest}, {"program.pb", ""}});
  EXPECT_EQ(errorOf(readArchive(path("bad.aotp"))),
            path("bad.aotp") +
                ": manifest.json: lists entry \"weights/gone\", which the archive lacks");
}

TEST_F(BadArchiveTest, FormatMajorNewerThanReader) {
  proto::Program p = program();
  p.mutable_format()->set_major(2);
  EXPECT_EQ(readError(p),
            path("bad.aotp") + ": format version 2.0 is newer than this reader (1.x)");
  p.mutable_format()->set_major(0);
  p.mutable_format()->set_minor(3);
  EXPECT_EQ(readError(p),
            path("bad.aotp") + ": format version 0.3 is older than this reader (1.x)");
}

TEST_F(BadArchiveTest, ProgramVersionDiffersFromManifest) {
  writeZipByHand(path("bad.aotp"), {{"manifest.json", manifestJson(1, 1)}, {"program.pb", ""}});
  EXPECT_EQ(errorOf(readArchive(path("bad.aotp"))),
            path("bad.aotp") +
                ": program.pb: format version 0.0 differs from manifest.json's (1.1)");
}

TEST_F(BadArchiveTest, OpsetMajorNewerThanReader) {
  proto::Program p = program();
  p.mutable_opset()->set_major(2);
  EXPECT_EQ(readError(p), path("bad.aotp") + ": opset version 2.0 is newer than this reader (1.x)");
}

TEST_F(BadArchiveTest, ProgramIsNotProtobuf) {
  writeZipByHand(path("bad.aotp"),
                 {{"manifest.json", manifestJson()}, {"program.pb", "\xff\xff\xff\xff"}});
  EXPECT_EQ(errorOf(readArchive(path("bad.aotp"))),
            path("bad.aotp") + ": program.pb: not a valid program (protobuf parse error)");
}

TEST_F(BadArchiveTest, CompressedEntry) {
  writeZipByHand(path("bad.aotp"),
                 {{"manifest.json", manifestJson()}, {"program.pb", std::string(100, 'a')}},
                 /*deflate=*/true);
  EXPECT_EQ(errorOf(readArchive(path("bad.aotp"))),
            path("bad.aotp") + ": entry \"manifest.json\" is compressed or encrypted; an .aotp "
                               "stores every entry uncompressed");
}

//===----------------------------------------------------------------------===//
// Bad programs: each names the place in the program
//===----------------------------------------------------------------------===//

TEST_F(BadArchiveTest, UnknownOp) {
  proto::Program p = program();
  p.mutable_entries(0)->mutable_body()->mutable_nodes(0)->set_op("aten.frobnicate");
  EXPECT_EQ(readError(p),
            path("bad.aotp") + ": program.pb: entry @forward: %4: unknown op \"aten.frobnicate\"");
}

TEST_F(BadArchiveTest, UndeclaredSymbol) {
  proto::Program p = program();
  p.mutable_entries(0)->mutable_body()->mutable_args(0)->set_dims(0, "foo + 1");
  EXPECT_EQ(readError(p), path("bad.aotp") +
                              ": program.pb: entry @forward: input \"x\": symbol \"foo\" is used "
                              "but not declared");
  p = program();
  p.mutable_guards(1)->set_lhs("2*bar");
  EXPECT_EQ(readError(p),
            path("bad.aotp") + ": program.pb: guard 1: symbol \"bar\" is used but not declared");
  p = program();
  p.mutable_derived(0)->set_expr("baz");
  EXPECT_EQ(readError(p),
            path("bad.aotp") +
                ": program.pb: derived dim seq_plus_1: symbol \"baz\" is used but not declared");
}

TEST_F(BadArchiveTest, BadSymbolicExpression) {
  proto::Program p = program();
  p.mutable_entries(1)->mutable_body()->mutable_nodes(0)->mutable_results(0)->set_dims(1, "seq +");
  std::string parserMessage = errorOf(parseSymExpr("seq +"));
  EXPECT_EQ(readError(p), path("bad.aotp") +
                              ": program.pb: entry @shapes: %2 = aten.slice.Tensor: bad symbolic "
                              "expression \"seq +\": " +
                              parserMessage);
}

TEST_F(BadArchiveTest, ValueIdOutOfRange) {
  proto::Program p = program();
  p.mutable_entries(0)->mutable_body()->mutable_nodes(0)->set_operands(0, 99);
  EXPECT_EQ(readError(p), path("bad.aotp") +
                              ": program.pb: entry @forward: %4 = aten.linear: operand 0: refers "
                              "to %99, but the entry defines only %0..%15");
  p = program();
  p.mutable_entries(0)->mutable_body()->mutable_nodes(0)->set_operands(0, -7);
  EXPECT_EQ(readError(p), path("bad.aotp") +
                              ": program.pb: entry @forward: %4 = aten.linear: operand 0: refers "
                              "to %-7, but the entry defines only %0..%15");
  p = program();
  p.mutable_entries(0)->mutable_body()->set_returns(0, 16);
  EXPECT_EQ(readError(p), path("bad.aotp") +
                              ": program.pb: entry @forward: return 0: refers to %16, but the "
                              "entry defines only %0..%15");
}

TEST_F(BadArchiveTest, ValueUsedBeforeDefinition) {
  proto::Program p = program();
  p.mutable_entries(0)->mutable_body()->mutable_nodes(0)->set_operands(0, 5);
  EXPECT_EQ(readError(p), path("bad.aotp") +
                              ": program.pb: entry @forward: %4 = aten.linear: operand 0: uses "
                              "%5 before its definition");
}

TEST_F(BadArchiveTest, ValueFromAnotherBlock) {
  proto::Program p = program();
  proto::Node *cond = p.mutable_entries(0)->mutable_body()->mutable_nodes(8);
  ASSERT_EQ(cond->op(), "aten.cond");
  cond->mutable_regions(0)->mutable_nodes(0)->set_operands(0, 6);
  EXPECT_EQ(readError(p), path("bad.aotp") +
                              ": program.pb: entry @forward: %12 = aten.cond: region 0: %14 = "
                              "aten.neg: operand 0: uses %6, which is defined in another block "
                              "(regions are closed)");
}

TEST_F(BadArchiveTest, OperandsAgainstTheSchema) {
  proto::Program p = program();
  p.mutable_entries(0)->mutable_body()->mutable_nodes(0)->set_operands(0, -1);
  EXPECT_EQ(readError(p), path("bad.aotp") +
                              ": program.pb: entry @forward: %4 = aten.linear: operand 0 (input) "
                              "of aten.linear is required but absent");
  p = program();
  p.mutable_entries(0)->mutable_body()->mutable_nodes(0)->add_operands(0);
  EXPECT_EQ(readError(p), path("bad.aotp") + ": program.pb: entry @forward: %4 = aten.linear: "
                                             "aten.linear takes 3 operands but has 4");
  p = program();
  p.mutable_entries(0)->mutable_body()->mutable_nodes(0)->add_results()->set_kind(
      proto::Type::KIND_SYMINT);
  EXPECT_EQ(readError(p), path("bad.aotp") + ": program.pb: entry @forward: %4 = aten.linear: "
                                             "aten.linear has 2 results but the schema says 1");
  p = program();
  p.mutable_entries(0)->mutable_body()->mutable_nodes(0)->add_regions();
  EXPECT_EQ(readError(p), path("bad.aotp") + ": program.pb: entry @forward: %4 = aten.linear: "
                                             "aten.linear takes no regions");
}

TEST_F(BadArchiveTest, BadAttributes) {
  proto::Program p = program();
  proto::Node *gelu = p.mutable_entries(0)->mutable_body()->mutable_nodes(2);
  ASSERT_EQ(gelu->op(), "aten.gelu");
  gelu->mutable_attrs(0)->set_name("approximation");
  EXPECT_EQ(readError(p), path("bad.aotp") + ": program.pb: entry @forward: %6 = aten.gelu: "
                                             "attribute \"approximation\": aten.gelu has no such "
                                             "attribute");
  p = program();
  p.mutable_entries(0)->mutable_body()->mutable_nodes(2)->add_attrs()->CopyFrom(
      p.entries(0).body().nodes(2).attrs(0));
  EXPECT_EQ(readError(p), path("bad.aotp") + ": program.pb: entry @forward: %6 = aten.gelu: "
                                             "attribute \"approximate\" is given twice");
  p = program();
  p.mutable_entries(0)->mutable_body()->mutable_nodes(2)->mutable_attrs(0)->clear_str_value();
  EXPECT_EQ(readError(p), path("bad.aotp") + ": program.pb: entry @forward: %6 = aten.gelu: "
                                             "attribute \"approximate\": no value");
  p = program();
  p.mutable_entries(0)->mutable_body()->mutable_nodes(5)->mutable_attrs(0)->set_dtype_value(
      static_cast<proto::DType>(42));
  EXPECT_EQ(readError(p), path("bad.aotp") + ": program.pb: entry @forward: %9 = aten._to_copy: "
                                             "attribute \"dtype\": unknown dtype 42");
}

TEST_F(BadArchiveTest, BadEnumValues) {
  proto::Program p = program();
  p.mutable_entries(0)->mutable_body()->mutable_args(0)->set_dtype(static_cast<proto::DType>(99));
  EXPECT_EQ(readError(p),
            path("bad.aotp") + ": program.pb: entry @forward: input \"x\": unknown dtype 99");
  p = program();
  p.mutable_entries(0)->mutable_body()->mutable_args(0)->set_kind(proto::Type::KIND_UNSPECIFIED);
  EXPECT_EQ(readError(p),
            path("bad.aotp") + ": program.pb: entry @forward: input \"x\": unknown type kind 0");
  p = program();
  p.mutable_entries(0)->mutable_inputs(0)->set_kind(proto::INPUT_KIND_UNSPECIFIED);
  EXPECT_EQ(readError(p),
            path("bad.aotp") + ": program.pb: entry @forward: input \"x\": unknown kind 0");
  p = program();
  p.mutable_guards(0)->set_kind(static_cast<proto::Guard::Kind>(12));
  EXPECT_EQ(readError(p), path("bad.aotp") + ": program.pb: guard 0: unknown comparison 12");
}

TEST_F(BadArchiveTest, BadSignatureAndLocations) {
  proto::Program p = program();
  p.mutable_entries(0)->mutable_inputs()->RemoveLast();
  EXPECT_EQ(readError(p),
            path("bad.aotp") + ": program.pb: entry @forward: 3 inputs but 4 body arguments");
  p = program();
  p.mutable_entries(0)->mutable_body()->mutable_nodes(0)->mutable_loc()->set_file(9);
  EXPECT_EQ(readError(p), path("bad.aotp") +
                              ": program.pb: entry @forward: %4 = aten.linear: source file 9 is "
                              "out of range (the program lists 2)");
  p = program();
  p.add_entries()->CopyFrom(p.entries(0));
  EXPECT_EQ(readError(p), path("bad.aotp") + ": program.pb: entry @forward is defined twice");
}

TEST_F(BadArchiveTest, GraphThatFailsTheVerifier) {
  proto::Program p = program();
  // A result type the meta function disagrees with: decodes fine, fails verification.
  p.mutable_entries(0)->mutable_body()->mutable_nodes(1)->mutable_results(0)->set_dims(1, "5");
  auto g = graphFromProto(p);
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  std::string verifierMessage = errorOf(verifyGraph(**g));
  ASSERT_NE(verifierMessage, "<no error>");
  std::string expected;
  for (llvm::StringRef line : llvm::split(verifierMessage, '\n'))
    expected += (expected.empty() ? "" : "\n") + path("bad.aotp") + ": " + line.str();
  EXPECT_EQ(readError(p), expected);
}

//===----------------------------------------------------------------------===//
// Bad weights
//===----------------------------------------------------------------------===//

TEST_F(BadArchiveTest, WeightSizeDoesNotMatchDTypeAndShape) {
  std::vector<uint8_t> data(100);
  EXPECT_EQ(readWeightError(program(), "fc.weight", proto::DTYPE_F32, {5, 4}, data),
            path("bad.aotp") + ": weight \"fc.weight\" has 100 bytes but f32[5, 4] needs 80");
}

TEST_F(BadArchiveTest, WeightMissing) {
  proto::Program p = program();
  proto::Weight *w = p.add_weights();
  w->set_name("fc.weight");
  w->set_dtype(proto::DTYPE_F32);
  w->add_shape(4);
  w->add_shape(8);
  w->set_entry("weights/fc.weight");
  EXPECT_EQ(readError(p), path("bad.aotp") +
                              ": weight \"fc.weight\" is missing (no entry \"weights/fc.weight\")");
}

TEST_F(BadArchiveTest, WeightShapeOverflows) {
  EXPECT_EQ(readWeightError(program(), "huge", proto::DTYPE_F64, {INT64_MAX / 4, 3}, {}),
            path("bad.aotp") + ": weight \"huge\" is too large: f64[2305843009213693951, 3] bytes "
                               "overflow 64 bits");
  EXPECT_EQ(readWeightError(program(), "neg", proto::DTYPE_F32, {2, -3}, {}),
            path("bad.aotp") + ": weight \"neg\" has a negative dim in its shape [2, -3]");
}

TEST_F(BadArchiveTest, WeightWithUnknownDType) {
  EXPECT_EQ(readWeightError(program(), "w", static_cast<proto::DType>(99), {3}, Bytes[4]),
            path("bad.aotp") + ": weight \"w\" has an unknown dtype (99)");
}

TEST_F(BadArchiveTest, WeightDisagreesWithItsStateTensor) {
  EXPECT_EQ(readWeightError(program(), "fc.bias", proto::DTYPE_U8, {3}, Bytes[4]),
            path("bad.aotp") + ": weight \"fc.bias\" is u8[3] but the graph declares parameter "
                               "\"fc.bias\" : f32[4]");
}

TEST_F(BadArchiveTest, WeightListedTwice) {
  proto::Program p = program();
  for (int i = 0; i < 2; ++i) {
    proto::Weight *w = p.add_weights();
    w->set_name("w");
    w->set_dtype(proto::DTYPE_U8);
    w->add_shape(3);
    w->set_entry("weights/w");
  }
  std::string file = path("bad.aotp");
  ASSERT_EQ(errorOf(writeProgramArchive(p, {{"weights/w", Bytes[4]}}, file)), "<no error>");
  EXPECT_EQ(errorOf(readArchive(file)), file + ": weight \"w\" is listed twice");
}

TEST_F(BadArchiveTest, WeightNotAligned) {
  proto::Program p = program();
  proto::Weight *w = p.add_weights();
  w->set_name("w");
  w->set_dtype(proto::DTYPE_U8);
  w->add_shape(3);
  w->set_entry("weights/w");
  std::string programBytes;
  ASSERT_TRUE(p.SerializeToString(&programBytes));
  std::string file = path("bad.aotp");
  // libzip alone does not align: "weights/w" lands wherever the previous entries end.
  writeZipByHand(file, {{"manifest.json", manifestJson()},
                        {"program.pb", programBytes},
                        {"weights/w", "\x01\x02\x03"}});
  std::string bytes = readFile(file);
  size_t offset = bytes.find("\x01\x02\x03");
  ASSERT_NE(offset % ArchiveWeightAlignment, 0u);
  EXPECT_EQ(errorOf(readArchive(file)),
            file + ": weight \"w\" is not 64-byte aligned in the file (its data starts at offset " +
                std::to_string(offset) + ")");
}

} // namespace
