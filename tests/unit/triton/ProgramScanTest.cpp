// Reading from an artifact's embedded program whether an entry updates buffers: archives as
// `aotc export` embeds them (a graph without weights), with and without buffer mutations.
#include "ProgramScan.h"

#include "aotc/ir/Parser.h"
#include "aotc/ir/Verifier.h"
#include "aotc/serialize/Archive.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace aotc;
using namespace aotc::triton;

namespace {

// A graph in aotc's text form whose one entry returns `returns`.
std::string counter(const std::string &returns) {
  return R"(graph @Counter opset 1.0

dim batch in 1..8

buffer "steps" : i64[]

entry @forward(%0 : f32[batch, 4] = input "x", %1 : i64[] = buffer "steps") {
  %2 = aten.relu(%0) : f32[batch, 4]
  %3 = aten.ones() {size = [], dtype = i64} : i64[]
  %4 = aten.add.Tensor(%1, %3) : i64[]
  return )" +
         returns + "\n}\n";
}

// The .aotp bytes of `text`, written the way an export embeds them.
std::vector<uint8_t> archive(const std::string &text) {
  auto graph = parseGraph(text, "test.aotc");
  if (!graph) {
    ADD_FAILURE() << llvm::toString(graph.takeError());
    return {};
  }
  if (llvm::Error e = verifyGraph(**graph)) {
    ADD_FAILURE() << llvm::toString(std::move(e));
    return {};
  }
  llvm::SmallString<128> path;
  EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("programscan", "aotp", path));
  if (llvm::Error e = writeArchive(**graph, {}, path)) {
    ADD_FAILURE() << llvm::toString(std::move(e));
    return {};
  }
  auto buffer = llvm::MemoryBuffer::getFile(path);
  llvm::sys::fs::remove(path);
  if (!buffer)
    return {};
  llvm::StringRef bytes = (*buffer)->getBuffer();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

using Updates = std::map<std::string, std::vector<std::string>>;

TEST(ProgramScan, FindsBufferMutations) {
  std::vector<uint8_t> a = archive(counter(R"(%2 as output "y", %4 as mutates "steps")"));
  ASSERT_FALSE(a.empty());
  std::optional<BufferUpdates> u = readBufferUpdates(a.data(), a.size());
  ASSERT_TRUE(u);
  EXPECT_EQ(u->byEntry, (Updates{{"forward", {"steps"}}}));
}

TEST(ProgramScan, NoMutationsMeansSharable) {
  std::vector<uint8_t> a = archive(counter(R"(%2 as output "y", %4 as output "next")"));
  ASSERT_FALSE(a.empty());
  std::optional<BufferUpdates> u = readBufferUpdates(a.data(), a.size());
  ASSERT_TRUE(u);
  EXPECT_EQ(u->byEntry, (Updates{{"forward", {}}}));
}

// Anything else is unknown, never "no updates": the backend then gives each instance its own
// model handle.
TEST(ProgramScan, UnreadableBytesAreUnknown) {
  std::vector<uint8_t> a = archive(counter(R"(%2 as output "y", %4 as mutates "steps")"));
  ASSERT_FALSE(a.empty());
  EXPECT_FALSE(readBufferUpdates(a.data(), 0));
  EXPECT_FALSE(readBufferUpdates(a.data(), a.size() / 2));
  std::vector<uint8_t> garbage(200, 0x50);
  EXPECT_FALSE(readBufferUpdates(garbage.data(), garbage.size()));
  // The program damaged: Entry.name (tag 0x0a, length 7, "forward") made to run past its message.
  const std::string name = "\x0a\x07"
                           "forward";
  auto at = std::search(a.begin(), a.end(), name.begin(), name.end());
  ASSERT_NE(at, a.end());
  at[1] = 0x7f;
  EXPECT_FALSE(readBufferUpdates(a.data(), a.size()));
}

} // namespace
