// sort, argsort and topk against hand-computed values: both directions, negative and inner dims,
// ties kept in input order, NaN sorted as the largest value, empty and size-1 dims, integer and
// bool inputs, and the errors of a bad dim or k.
#include "InterpTestUtil.h"

#include <cmath>
#include <limits>

using namespace aotc;
using namespace aotc::test;

namespace {

/// Runs a two-result node (`aten.sort.stable(%0) {...} : T, i64[...]`) on `x`: values, indices.
std::vector<HostTensor> runPair(const std::string &node, HostTensor x) {
  auto g = parse(entryText({x}, "  %1, %2 = " + node, "%1, %2"));
  if (!g)
    return {HostTensor(), HostTensor()};
  auto out = run(*g, {std::move(x)});
  if (!out) {
    ADD_FAILURE() << node << ": " << llvm::toString(out.takeError());
    return {HostTensor(), HostTensor()};
  }
  return std::move(*out);
}

std::string pairMetaError(const std::string &node, HostTensor x) {
  std::string text = entryText({x}, "  %1, %2 = " + node, "%1, %2");
  auto g = parseGraph(text, "test.aotc");
  std::string err;
  if (!g)
    err = llvm::toString(g.takeError());
  else if (llvm::Error e = verifyGraph(**g))
    err = llvm::toString(std::move(e));
  else
    return "<ok>";
  size_t at = err.find("%1: ");
  return at == std::string::npos ? err : err.substr(at + 4);
}

TEST(Sort, AscendingAndDescendingWithStableTies) {
  HostTensor x = f32({2, 4}, {3, 1, 3, 2, 0, 5, 5, 5});
  auto up = runPair("aten.sort.stable(%0) : f32[2, 4], i64[2, 4]", x);
  expectTensor(up[0], DType::F32, {2, 4}, {1, 2, 3, 3, 0, 5, 5, 5});
  expectTensor(up[1], DType::I64, {2, 4}, {1, 3, 0, 2, 0, 1, 2, 3});
  // Descending keeps equal elements in input order too (torch's stable sort).
  auto down =
      runPair("aten.sort.stable(%0) {dim = -1, descending = true} : f32[2, 4], i64[2, 4]", x);
  expectTensor(down[0], DType::F32, {2, 4}, {3, 3, 2, 1, 5, 5, 5, 0});
  expectTensor(down[1], DType::I64, {2, 4}, {0, 2, 3, 1, 1, 2, 3, 0});
}

TEST(Sort, AlongAnInnerDim) {
  HostTensor x = i64({3, 2}, {4, 0, 1, 0, 2, -1});
  auto r = runPair("aten.sort.stable(%0) {dim = 0} : i64[3, 2], i64[3, 2]", x);
  expectTensor(r[0], DType::I64, {3, 2}, {1, -1, 2, 0, 4, 0});
  expectTensor(r[1], DType::I64, {3, 2}, {1, 2, 2, 0, 0, 1});
  auto neg =
      runPair("aten.sort.stable(%0) {dim = -2, descending = true} : i64[3, 2], i64[3, 2]", x);
  expectTensor(neg[0], DType::I64, {3, 2}, {4, 0, 2, 0, 1, -1});
  expectTensor(neg[1], DType::I64, {3, 2}, {0, 0, 2, 1, 1, 2});
}

TEST(Sort, NanIsTheLargest) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  double inf = std::numeric_limits<double>::infinity();
  HostTensor x = f32({5}, {nan, 1, inf, nan, -inf});
  auto up = runPair("aten.sort.stable(%0) : f32[5], i64[5]", x);
  expectTensor(up[0], DType::F32, {5}, {-inf, 1, inf, nan, nan});
  expectTensor(up[1], DType::I64, {5}, {4, 1, 2, 0, 3});
  auto down = runPair("aten.sort.stable(%0) {descending = true} : f32[5], i64[5]", x);
  expectTensor(down[0], DType::F32, {5}, {nan, nan, inf, 1, -inf});
  expectTensor(down[1], DType::I64, {5}, {0, 3, 2, 1, 4});
}

TEST(Sort, EmptySizeOneZeroDimAndBool) {
  auto empty = runPair("aten.sort.stable(%0) {dim = 1} : f32[2, 0], i64[2, 0]",
                       HostTensor(DType::F32, {2, 0}));
  expectTensor(empty[0], DType::F32, {2, 0}, {});
  expectTensor(empty[1], DType::I64, {2, 0}, {});
  auto single =
      runPair("aten.sort.stable(%0) {dim = 1} : f32[2, 1], i64[2, 1]", f32({2, 1}, {7, 8}));
  expectTensor(single[0], DType::F32, {2, 1}, {7, 8});
  expectTensor(single[1], DType::I64, {2, 1}, {0, 0});
  auto scalar = runPair("aten.sort.stable(%0) {dim = 0} : f32[], i64[]", f32({}, {4}));
  expectTensor(scalar[0], DType::F32, {}, {4});
  expectTensor(scalar[1], DType::I64, {}, {0});
  auto flags = runPair("aten.sort.stable(%0) {descending = true} : bool[4], i64[4]",
                       boolean({4}, {0, 1, 0, 1}));
  expectTensor(flags[0], DType::Bool, {4}, {1, 1, 0, 0});
  expectTensor(flags[1], DType::I64, {4}, {1, 3, 0, 2});
}

TEST(Topk, LargestSmallestAndSymbolicK) {
  HostTensor x = f32({2, 4}, {3, 1, 3, 2, 0, 5, 5, 5});
  auto big = runPair("aten.topk(%0) {k = 2} : f32[2, 2], i64[2, 2]", x);
  expectTensor(big[0], DType::F32, {2, 2}, {3, 3, 5, 5});
  expectTensor(big[1], DType::I64, {2, 2}, {0, 2, 1, 2});
  auto small =
      runPair("aten.topk(%0) {k = 3, dim = -1, largest = false} : f32[2, 3], i64[2, 3]", x);
  expectTensor(small[0], DType::F32, {2, 3}, {1, 2, 3, 0, 5, 5});
  expectTensor(small[1], DType::I64, {2, 3}, {1, 3, 0, 0, 1, 2});
  auto rows = runPair("aten.topk(%0) {k = 1, dim = 0} : f32[1, 4], i64[1, 4]", x);
  expectTensor(rows[0], DType::F32, {1, 4}, {3, 5, 5, 5});
  expectTensor(rows[1], DType::I64, {1, 4}, {0, 1, 1, 1});
  auto none = runPair("aten.topk(%0) {k = 0} : f32[2, 0], i64[2, 0]", x);
  expectTensor(none[0], DType::F32, {2, 0}, {});
  expectTensor(none[1], DType::I64, {2, 0}, {});
  // k = n - 1 over a symbolic row.
  auto g = parse(R"(graph @t opset 1.0
dim n in 2..8
entry @f(%0 : i64[n] = input "x") {
  %1, %2 = aten.topk(%0) {k = n - 1} : i64[n - 1], i64[n - 1]
  return %1 as output "v", %2 as output "i"
}
)");
  ASSERT_TRUE(g);
  auto out = run(*g, {i64({3}, {5, 9, 7})});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  expectTensor((*out)[0], DType::I64, {2}, {9, 7});
  expectTensor((*out)[1], DType::I64, {2}, {1, 2});
}

TEST(Topk, BadDimOrK) {
  HostTensor x = f32({2, 4}, {3, 1, 3, 2, 0, 5, 5, 5});
  EXPECT_EQ(pairMetaError("aten.topk(%0) {k = 5} : f32[2, 5], i64[2, 5]", x),
            "aten.topk: k (5) must be at most the size 4 of dim -1 of f32[2, 4]");
  EXPECT_EQ(pairMetaError("aten.topk(%0) {k = -1} : f32[2, 0], i64[2, 0]", x),
            "aten.topk: k must be non-negative, got -1");
  EXPECT_EQ(pairMetaError("aten.sort.stable(%0) {dim = 2} : f32[2, 4], i64[2, 4]", x),
            "aten.sort.stable: dim 2 is out of range for a tensor of rank 2 (expected -2..1)");
}

} // namespace
