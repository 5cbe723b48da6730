// Every test graph verifies, prints exactly as written, and survives print -> parse -> print.
#include "aotc/ir/Parser.h"
#include "aotc/ir/Printer.h"
#include "aotc/ir/Verifier.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace aotc;

namespace {

std::vector<std::string> graphFiles() {
  std::vector<std::string> files;
  for (const auto &e : std::filesystem::directory_iterator(AOTC_TEST_GRAPHS_DIR))
    if (e.path().extension() == ".aotc")
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(RoundTrip, EveryTestGraph) {
  std::vector<std::string> files = graphFiles();
  ASSERT_GE(files.size(), 4u);
  for (const std::string &file : files) {
    SCOPED_TRACE(file);
    auto buf = llvm::MemoryBuffer::getFile(file);
    ASSERT_TRUE(buf);
    llvm::StringRef text = (*buf)->getBuffer();
    auto g = parseGraph(text, file);
    ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
    llvm::Error err = verifyGraph(**g);
    ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
    std::string printed = printGraph(**g);
    // The files are in printed form, so the printer is checked against text a human wrote.
    EXPECT_EQ(printed, text.str());
    auto again = parseGraph(printed, file);
    ASSERT_TRUE(static_cast<bool>(again)) << llvm::toString(again.takeError());
    EXPECT_EQ(printGraph(**again), printed);
    EXPECT_TRUE((*again)->shapeEnv() == (*g)->shapeEnv());
  }
}

TEST(RoundTrip, RenumbersValuesInOrder) {
  auto g = parseGraph(R"(graph @g opset 1.0
entry @f(%x : f32[4] = input "x") {
  %b = aten.neg(%x) : f32[4]
  %a = aten.relu(%b) : f32[4]  # f.cpp:3
  return %a as output "y"
}
)");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  EXPECT_EQ(printGraph(**g), R"(graph @g opset 1.0

entry @f(%0 : f32[4] = input "x") {
  %1 = aten.neg(%0) : f32[4]
  %2 = aten.relu(%1) : f32[4]  # f.cpp:3
  return %2 as output "y"
}
)");
}

TEST(RoundTrip, FloatAttributesKeepEveryBit) {
  for (const char *v : {"0.1", "1e-05", "-2.5e+300", "inf", "-inf", "3.0", "5e-324"}) {
    std::string text = std::string("graph @g opset 1.0\n\nentry @f(%0 : f32[4] = input \"x\") {\n"
                                   "  %1 = aten.mul.Scalar(%0) {other = ") +
                       v + "} : f32[4]\n  return %1 as output \"y\"\n}\n";
    auto g = parseGraph(text);
    ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
    auto again = parseGraph(printGraph(**g));
    ASSERT_TRUE(static_cast<bool>(again));
    const Attribute *a = (*g)->entries()[0]->body().nodes().front()->attr("other");
    const Attribute *b = (*again)->entries()[0]->body().nodes().front()->attr("other");
    ASSERT_TRUE(a && b);
    EXPECT_EQ(*a, *b) << v;
    EXPECT_EQ(printGraph(**again), printGraph(**g));
  }
}

} // namespace
