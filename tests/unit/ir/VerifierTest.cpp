// The verifier reports every problem of a graph, naming the entry, value and op.
#include "aotc/ir/Verifier.h"
#include "aotc/ir/Parser.h"

#include <gtest/gtest.h>

using namespace aotc;

namespace {

std::string verifyText(const std::string &text) {
  auto g = parseGraph(text, "t.aotc");
  if (!g)
    return "parse error: " + llvm::toString(g.takeError());
  if (llvm::Error e = verifyGraph(**g))
    return llvm::toString(std::move(e));
  return "<valid>";
}

struct Case {
  const char *why;
  const char *text;
  const char *error;
};

TEST(Verifier, ReportsMismatches) {
  const Case cases[] = {
      {"result type disagrees with the meta function",
       "graph @g opset 1.0\nentry @f(%0 : f32[4, 3] = input \"x\") {\n"
       "  %1 = aten.sum.dim_IntList(%0) {dim = [1]} : f32[3]\n  return %1 as output \"y\"\n}\n",
       "entry @f: %1: aten.sum.dim_IntList: result 0 is f32[3] but the op produces f32[4]"},
      {"matmul inner dims differ",
       "graph @g opset 1.0\nentry @f(%0 : f32[4, 3] = input \"x\", %1 : f32[5, 2] = input \"w\") "
       "{\n"
       "  %2 = aten.mm(%0, %1) : f32[4, 2]\n  return %2 as output \"y\"\n}\n",
       "entry @f: %2: aten.mm: dim 1 of self and dim 0 of mat2 must match, got 3 and 5"},
      {"symbol used but not declared",
       "graph @g opset 1.0\nentry @f(%0 : f32[batch] = input \"x\") {\n"
       "  return %0 as output \"y\"\n}\n",
       "entry @f: input \"x\": expression \"batch\" uses undeclared dim \"batch\""},
      {"parameter missing from the graph",
       "graph @g opset 1.0\nentry @f(%0 : f32[4] = parameter \"w\") {\n"
       "  return %0 as output \"y\"\n}\n",
       "entry @f: parameter \"w\" is not declared in the graph"},
      {"parameter type differs from the graph's",
       "graph @g opset 1.0\nparameter \"w\" : f32[4]\nentry @f(%0 : f32[5] = parameter \"w\") {\n"
       "  return %0 as output \"y\"\n}\n",
       "entry @f: parameter \"w\" is f32[4] in the graph but f32[5] here"},
      {"mutation of something that is not a buffer",
       "graph @g opset 1.0\nparameter \"w\" : f32[4]\nentry @f(%0 : f32[4] = parameter \"w\") {\n"
       "  %1 = aten.neg(%0) : f32[4]\n  return %1 as mutates \"w\"\n}\n",
       "entry @f: output 0 mutates \"w\", which is not a buffer"},
      {"mutation writes the wrong type",
       "graph @g opset 1.0\nbuffer \"b\" : f32[4]\nentry @f(%0 : f32[4] = buffer \"b\") {\n"
       "  %1 = aten.sum.dim_IntList(%0) : f32[]\n  return %1 as mutates \"b\"\n}\n",
       "entry @f: buffer \"b\" is f32[4] but the mutation writes f32[]"},
      {"two user inputs with one name",
       "graph @g opset 1.0\nentry @f(%0 : f32[4] = input \"x\", %1 : f32[4] = input \"x\") {\n"
       "  return %0 as output \"y\"\n}\n",
       "entry @f: input \"x\" is declared twice"},
      {"cond branches disagree",
       "graph @g opset 1.0\nentry @f(%0 : bool[] = input \"p\", %1 : f32[4] = input \"x\") {\n"
       "  %2 = aten.cond(%0, %1) : f32[4] {\n"
       "    region(%3 : f32[4]) {\n      return %3\n    }\n"
       "    region(%4 : f32[4]) {\n      %5 = aten.sum.dim_IntList(%4) : f32[]\n      return %5\n"
       "    }\n  }\n  return %2 as output \"y\"\n}\n",
       "entry @f: %2: aten.cond: output 0 differs between branches: then returns f32[4] but else "
       "returns f32[]"},
      {"cond predicate is not bool",
       "graph @g opset 1.0\nentry @f(%0 : f32[] = input \"p\", %1 : f32[4] = input \"x\") {\n"
       "  %2 = aten.cond(%0, %1) : f32[4] {\n"
       "    region(%3 : f32[4]) {\n      return %3\n    }\n"
       "    region(%4 : f32[4]) {\n      return %4\n    }\n  }\n  return %2 as output \"y\"\n}\n",
       "entry @f: %2: aten.cond: pred must be a bool tensor with one element, got f32[]"},
      {"broadcast of unrelated dynamic dims",
       "graph @g opset 1.0\ndim a in 1..8\ndim b in 1..8\n"
       "entry @f(%0 : f32[a] = input \"x\", %1 : f32[b] = input \"y\") {\n"
       "  %2 = aten.add.Tensor(%0, %1) : f32[a]\n  return %2 as output \"z\"\n}\n",
       "entry @f: %2: aten.add.Tensor: shapes [a] and [b] do not broadcast: dim -1 is a in one and "
       "b in another"},
      {"view that changes the element count",
       "graph @g opset 1.0\nentry @f(%0 : f32[4, 3] = input \"x\") {\n"
       "  %1 = aten.view(%0) {size = [5, 2]} : f32[5, 2]\n  return %1 as output \"y\"\n}\n",
       "entry @f: %1: aten.view: cannot view f32[4, 3] (12 elements) as [5, 2] (10 elements)"},
      {"dim out of range",
       "graph @g opset 1.0\nentry @f(%0 : f32[4, 3] = input \"x\") {\n"
       "  %1 = aten.softmax.int(%0) {dim = 2} : f32[4, 3]\n  return %1 as output \"y\"\n}\n",
       "entry @f: %1: aten.softmax.int: dim 2 is out of range for a tensor of rank 2 (expected "
       "-2..1)"},
      {"required operand missing",
       "graph @g opset 1.0\nentry @f(%0 : f32[4, 3] = input \"x\") {\n"
       "  %1 = aten.linear(%0, none, none) : f32[4, 3]\n  return %1 as output \"y\"\n}\n",
       "entry @f: %1: aten.linear: operand 'weight' is missing"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(verifyText(c.text), c.error) << c.why;
}

TEST(Verifier, ReportsEveryProblemAtOnce) {
  std::string err = verifyText(
      "graph @g opset 1.0\nentry @f(%0 : f32[4, 3] = input \"x\") {\n"
      "  %1 = aten.sum.dim_IntList(%0) {dim = [1]} : f32[3]\n"
      "  %2 = aten.relu(%0) : f32[4]\n  return %1 as output \"y\", %2 as output \"y\"\n}\n");
  EXPECT_EQ(err,
            "entry @f: %1: aten.sum.dim_IntList: result 0 is f32[3] but the op produces f32[4]\n"
            "entry @f: %2: aten.relu: result 0 is f32[4] but the op produces f32[4, 3]\n"
            "entry @f: output \"y\" is declared twice");
}

TEST(Verifier, AcceptsBroadcastWithRecordedEqualityGuard) {
  // Broadcasting two dynamic dims is legal once the trace recorded that they are equal.
  EXPECT_EQ(verifyText("graph @g opset 1.0\ndim a in 1..8\ndim b in 1..8\nguard a == b  # m.cpp:3\n"
                       "entry @f(%0 : f32[a] = input \"x\", %1 : f32[b] = input \"y\") {\n"
                       "  %2 = aten.add.Tensor(%0, %1) : f32[a]\n  return %2 as output \"z\"\n}\n"),
            "<valid>");
}

} // namespace
