// Bad input to the IR text parser: every case gives one `file:line:col: message` error.
#include "aotc/ir/Parser.h"

#include <gtest/gtest.h>

using namespace aotc;

namespace {

std::string parseError(const std::string &text) {
  auto g = parseGraph(text, "t.aotc");
  if (g)
    return "<parsed>";
  return llvm::toString(g.takeError());
}

// A graph with one entry around `body` (the nodes and the return).
std::string entry(const std::string &body, const std::string &decls = "") {
  return "graph @g opset 1.0\n" + decls + "entry @f(%0 : f32[4] = input \"x\") {\n" + body + "}\n";
}

struct Case {
  const char *why;
  std::string text;
  const char *error;
};

TEST(Parser, BadInputGivesOneClearError) {
  const Case cases[] = {
      {"empty input", "", "t.aotc:1:1: expected 'graph', got end of input"},
      {"graph name without @", "graph g opset 1.0\n",
       "t.aotc:1:7: expected a graph name starting with '@', got 'g'"},
      {"newer op set", "graph @g opset 2.0\n",
       "t.aotc:1:16: opset 2.0 is not supported by this reader (opset 1.x)"},
      {"empty dim range", "graph @g opset 1.0\ndim batch in 5..2\n",
       "t.aotc:2:4: dim \"batch\" has an empty range 5..2"},
      {"dim declared twice", "graph @g opset 1.0\ndim batch in 1..8\ndim batch in 1..8\n",
       "t.aotc:3:4: dim \"batch\" is declared twice"},
      {"derived dim over an undeclared dim", "graph @g opset 1.0\nderived d = foo + 1\n",
       "t.aotc:2:8: derived dim \"d\" uses undeclared dim \"foo\""},
      {"malformed guard expression", "graph @g opset 1.0\nguard a +\n",
       "t.aotc:2:7: symbolic expression \"a +\": expected an operand at column 4"},
      {"unknown dtype", "graph @g opset 1.0\nparameter \"w\" : f99[3]\n",
       "t.aotc:2:17: expected a type (a dtype such as f32, or symint), got 'f99'"},
      {"unterminated string", "graph @g opset 1.0\nparameter \"w : f32[3]\n",
       "t.aotc:2:11: unterminated string"},
      {"unknown top-level word", "graph @g opset 1.0\nbanana\n",
       "t.aotc:2:1: expected 'dim', 'derived', 'guard', 'parameter', 'buffer', 'constant' or "
       "'entry', got 'banana'"},
      {"unknown op", entry("  %1 = aten.frobnicate(%0) : f32[4]\n  return %1 as output \"y\"\n"),
       "t.aotc:3:8: unknown op 'aten.frobnicate'"},
      {"undefined value", entry("  %1 = aten.relu(%7) : f32[4]\n  return %1 as output \"y\"\n"),
       "t.aotc:3:18: use of undefined value %7"},
      {"value defined twice", entry("  %0 = aten.relu(%0) : f32[4]\n  return %0 as output \"y\"\n"),
       "t.aotc:3:3: value %0 is defined twice"},
      {"too many operands",
       entry("  %1 = aten.relu(%0, %0) : f32[4]\n  return %1 as output \"y\"\n"),
       "t.aotc:3:8: aten.relu takes 1 operands, got 2"},
      {"attribute of the wrong type",
       entry("  %1 = aten.sum.dim_IntList(%0) {dim = true} : f32[]\n  return %1 as output \"y\"\n"),
       "t.aotc:3:34: aten.sum.dim_IntList: attribute 'dim' must be a list of ints, got true"},
      {"unknown attribute",
       entry("  %1 = aten.sum.dim_IntList(%0) {bogus = 1} : f32[]\n  return %1 as output \"y\"\n"),
       "t.aotc:3:34: aten.sum.dim_IntList has no attribute 'bogus'"},
      {"attribute given twice",
       entry("  %1 = aten.sum.dim_IntList(%0) {keepdim = true, keepdim = false} : f32[1]\n"
             "  return %1 as output \"y\"\n"),
       "t.aotc:3:50: attribute 'keepdim' is given twice"},
      {"unclosed shape", entry("  %1 = aten.relu(%0) : f32[4\n  return %1 as output \"y\"\n"),
       "t.aotc:3:24: expected ']' to close the shape, got 'return'"},
      {"bad output kind", entry("  %1 = aten.relu(%0) : f32[4]\n  return %1 as result \"y\"\n"),
       "t.aotc:4:16: expected 'output' or 'mutates', got 'result'"},
      {"more results than types",
       entry("  %1, %2 = aten.relu(%0) : f32[4]\n  return %1 as output \"y\"\n"),
       "t.aotc:3:12: 2 results are named but 1 types are given"},
      {"location with a column but line 0",
       entry("  %1 = aten.relu(%0) : f32[4]  # m.cpp:00:3\n  return %1 as output \"y\"\n"),
       "t.aotc:3:32: bad location 'm.cpp:00:3': line numbers start at 1"},
      {"location without a file",
       entry("  %1 = aten.relu(%0) : f32[4]  # :3:4\n  return %1 as output \"y\"\n"),
       "t.aotc:3:32: bad location ':3:4': expected file:line:col"},
      {"region using an outer value",
       entry("  %1 = aten.cond(%0, %0) : f32[4] {\n    region(%2 : f32[4]) {\n"
             "      %3 = aten.neg(%0) : f32[4]\n      return %3\n    }\n  }\n"
             "  return %1 as output \"y\"\n"),
       "t.aotc:5:21: value %0 is defined outside this region; regions only use their own "
       "arguments"},
      {"int literal out of range",
       entry("  %1 = aten.mul.Scalar(%0) {other = 99999999999999999999} : f32[4]\n"
             "  return %1 as output \"y\"\n"),
       "t.aotc:3:37: symbolic expression \"99999999999999999999\": integer literal "
       "99999999999999999999 does not fit in 64 bits at column 1"},
      {"malformed shape expression",
       entry("  %1 = aten.view(%0) {size = [b +]} : f32[4]\n  return %1 as output \"y\"\n",
             "dim b in 1..8\n"),
       "t.aotc:4:31: symbolic expression \"b +\": expected an operand at column 4"},
      {"input ends inside an entry", "graph @g opset 1.0\nentry @f(%0 : f32[4] = input \"x\") {\n",
       "t.aotc:3:1: expected 'return', got end of input"},
      {"entry defined twice",
       "graph @g opset 1.0\nentry @f() {\n  return\n}\nentry @f() {\n  return\n}\n",
       "t.aotc:5:6: entry @f is defined twice"},
      {"bad escape", "graph @g opset 1.0\nparameter \"a\\qb\" : f32[3]\n",
       "t.aotc:2:13: unknown escape in string"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(parseError(c.text), c.error) << c.why;
}

TEST(Parser, CommentsAndBlankLinesAreIgnored) {
  auto g = parseGraph("// a comment\ngraph @g opset 1.0 // trailing\n\n// another\n"
                      "entry @f(%0 : f32[4] = input \"x\") {\n  // inside\n"
                      "  return %0 as output \"y\"\n}\n");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  EXPECT_EQ((*g)->entries().size(), 1u);
}

TEST(Parser, LocationsKeepFileLineAndColumn) {
  auto g = parseGraph(entry("  %1 = aten.relu(%0) : f32[4]  # dir/my model.cpp:42:7\n"
                            "  %2 = aten.neg(%1) : f32[4]  # m.cpp:9\n"
                            "  return %2 as output \"y\"\n"));
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  auto &nodes = (*g)->entries()[0]->body().nodes();
  EXPECT_EQ(nodes.front()->loc().file, "dir/my model.cpp");
  EXPECT_EQ(nodes.front()->loc().line, 42u);
  EXPECT_EQ(nodes.front()->loc().column, 7u);
  EXPECT_EQ(nodes.back()->loc().str(), "m.cpp:9");
}

TEST(Parser, LocationsWithoutALineRoundTrip) {
  // A location the tracer could only attribute to a file prints as the bare file name.
  auto g = parseGraph(
      entry("  %1 = aten.relu(%0) : f32[4]  # model.cpp\n  return %1 as output \"y\"\n"));
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  const SourceLoc &loc = (*g)->entries()[0]->body().nodes().front()->loc();
  EXPECT_EQ(loc.file, "model.cpp");
  EXPECT_EQ(loc.line, 0u);
  EXPECT_EQ(loc.str(), "model.cpp");
}

TEST(Parser, StringsWithEscapesRoundTrip) {
  auto g = parseGraph("graph @g opset 1.0\nparameter \"a\\\"b\\\\c\\n\\x01\" : f32[3]\n");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  EXPECT_EQ((*g)->state()[0].name, "a\"b\\c\n\x01");
}

} // namespace
