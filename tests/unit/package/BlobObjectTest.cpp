// The weight blob object: the weights at their offsets with zeros between, in a read-only,
// 64-byte aligned section, under one hidden symbol that lld can bind the descriptor to.
#include "package/BlobObject.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <random>

using namespace aotc;

namespace {

std::vector<uint8_t> randomBytes(size_t n, std::mt19937_64 &rng) {
  std::vector<uint8_t> out(n);
  for (uint8_t &b : out)
    b = static_cast<uint8_t>(rng() | 1); // never zero, so that misplaced padding shows
  return out;
}

struct Blob {
  std::vector<std::vector<uint8_t>> data;
  std::vector<BlobPiece> pieces;
  std::vector<uint8_t> expected;
};

// Pieces at 64-byte aligned offsets as layoutWeights places them, one empty, with a tail.
Blob makeBlob() {
  std::mt19937_64 rng(std::random_device{}());
  Blob b;
  b.data = {randomBytes(3, rng), randomBytes(0, rng), randomBytes(100, rng), randomBytes(64, rng)};
  uint64_t offsets[] = {0, 64, 64, 192};
  b.expected.assign(300, 0);
  for (size_t i = 0; i < b.data.size(); ++i) {
    b.pieces.push_back({offsets[i], b.data[i]});
    std::copy(b.data[i].begin(), b.data[i].end(), b.expected.begin() + offsets[i]);
  }
  return b;
}

TEST(BlobObject, StreamsPiecesWithZerosBetween) {
  Blob b = makeBlob();
  std::string out;
  llvm::raw_string_ostream os(out);
  writeBlob(os, b.pieces, b.expected.size());
  os.flush();
  ASSERT_EQ(out.size(), b.expected.size());
  EXPECT_TRUE(std::equal(b.expected.begin(), b.expected.end(),
                         reinterpret_cast<const uint8_t *>(out.data())));
}

TEST(BlobObject, IsAnElfObjectDefiningTheBlob) {
  Blob b = makeBlob();
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("blob-test", "o", path));
  auto remove = llvm::make_scope_exit([&] { llvm::sys::fs::remove(path); });
  llvm::Error e = writeBlobObject(path, "test_blob", b.pieces, b.expected.size());
  ASSERT_FALSE(e) << llvm::toString(std::move(e));

  auto owning = llvm::object::ObjectFile::createObjectFile(path);
  ASSERT_TRUE(bool(owning)) << llvm::toString(owning.takeError());
  auto *obj = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(owning->getBinary());
  ASSERT_NE(obj, nullptr);
  EXPECT_TRUE(obj->isRelocatableObject());
  EXPECT_EQ(obj->getArch(), llvm::Triple::x86_64);

  std::optional<llvm::object::ELFSectionRef> data;
  bool gnuStack = false;
  for (llvm::object::ELFSectionRef s : obj->sections()) {
    auto name = s.getName();
    ASSERT_TRUE(bool(name)) << llvm::toString(name.takeError());
    if (*name == ".rodata.aotc_weights")
      data = s;
    gnuStack |= *name == ".note.GNU-stack";
    EXPECT_TRUE(s.relocations().empty());
  }
  EXPECT_TRUE(gnuStack);
  ASSERT_TRUE(data);
  EXPECT_EQ(data->getType(), llvm::ELF::SHT_PROGBITS);
  EXPECT_EQ(data->getFlags(), uint64_t(llvm::ELF::SHF_ALLOC)); // neither writable nor code
  EXPECT_EQ(data->getAlignment().value(), 64u);
  auto contents = data->getContents();
  ASSERT_TRUE(bool(contents)) << llvm::toString(contents.takeError());
  ASSERT_EQ(contents->size(), b.expected.size());
  EXPECT_TRUE(std::equal(b.expected.begin(), b.expected.end(),
                         reinterpret_cast<const uint8_t *>(contents->data())));
  EXPECT_EQ((contents->data() - obj->getData().data()) % 64, 0)
      << "a file offset aligned like the address lets the linker copy the section as it is";

  int found = 0;
  for (llvm::object::ELFSymbolRef sym : obj->symbols()) {
    auto name = sym.getName();
    ASSERT_TRUE(bool(name)) << llvm::toString(name.takeError());
    if (*name != "test_blob")
      continue;
    ++found;
    EXPECT_EQ(sym.getBinding(), llvm::ELF::STB_GLOBAL);
    EXPECT_EQ(sym.getELFType(), llvm::ELF::STT_OBJECT);
    EXPECT_EQ(sym.getOther(), llvm::ELF::STV_HIDDEN);
    EXPECT_EQ(sym.getSize(), b.expected.size());
    auto value = sym.getValue();
    ASSERT_TRUE(bool(value)) << llvm::toString(value.takeError());
    EXPECT_EQ(*value, 0u);
    auto section = sym.getSection();
    ASSERT_TRUE(bool(section)) << llvm::toString(section.takeError());
    EXPECT_EQ(**section, *data);
  }
  EXPECT_EQ(found, 1);
}

TEST(BlobObject, IsTheSameBytesEveryTime) {
  Blob b = makeBlob();
  std::string files[2];
  for (std::string &f : files) {
    llvm::SmallString<128> path;
    ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("blob-test", "o", path));
    auto remove = llvm::make_scope_exit([&] { llvm::sys::fs::remove(path); });
    llvm::Error e = writeBlobObject(path, "test_blob", b.pieces, b.expected.size());
    ASSERT_FALSE(e) << llvm::toString(std::move(e));
    auto buffer = llvm::MemoryBuffer::getFile(path);
    ASSERT_TRUE(bool(buffer));
    f = (*buffer)->getBuffer().str();
  }
  EXPECT_EQ(files[0], files[1]);
}

} // namespace
