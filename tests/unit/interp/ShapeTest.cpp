// View, layout, creation and indexing kernels against hand-computed values: views of views
// (non-contiguous results copied in the right order), negative dims and indices, Python slice
// bounds, promotion in cat, symbolic sizes, and index bounds errors.
#include "InterpTestUtil.h"

#include <cstdint>

using namespace aotc;
using namespace aotc::test;

namespace {

TEST(Views, ReshapeAndView) {
  HostTensor x = iota(DType::F32, {2, 3});
  expectTensor(runOp("aten.view(%0) {size = [3, -1]} : f32[3, 2]", {x}), DType::F32, {3, 2},
               {0, 1, 2, 3, 4, 5});
  expectTensor(runOp("aten.reshape(%0) {shape = [6]} : f32[6]", {x}), DType::F32, {6},
               {0, 1, 2, 3, 4, 5});
  expectTensor(runOp("aten.reshape(%0) {shape = []} : i64[]", {i64({1, 1}, {7})}), DType::I64, {},
               {7});
  expectTensor(
      runOp("aten.reshape(%0) {shape = [0, 5]} : f32[0, 5]", {HostTensor(DType::F32, {5, 0})}),
      DType::F32, {0, 5}, {});
}

TEST(Views, PermuteThenReshapeCopiesInViewOrder) {
  HostTensor x = iota(DType::F32, {2, 3});
  auto g = parse(entryText({x}, R"(  %1 = aten.permute(%0) {dims = [1, 0]} : f32[3, 2]
  %2 = aten.reshape(%1) {shape = [6]} : f32[6]
  %3 = aten.transpose.int(%0) {dim0 = -1, dim1 = 0} : f32[3, 2]
  %4 = aten.flatten.using_ints(%3) : f32[6]
  %5 = aten.slice.Tensor(%1) {dim = 0, start = 1} : f32[2, 2]
  %6 = aten.reshape(%5) {shape = [-1]} : f32[4])",
                           "%2, %4, %6"));
  ASSERT_TRUE(g);
  auto out = run(*g, {x});
  ASSERT_TRUE(!!out) << llvm::toString(out.takeError());
  expectTensor((*out)[0], DType::F32, {6}, {0, 3, 1, 4, 2, 5});
  expectTensor((*out)[1], DType::F32, {6}, {0, 3, 1, 4, 2, 5});
  expectTensor((*out)[2], DType::F32, {4}, {1, 4, 2, 5});
}

TEST(Views, PermuteThreeDims) {
  HostTensor x = iota(DType::I64, {2, 2, 3});
  expectTensor(runOp("aten.permute(%0) {dims = [2, 0, -2]} : i64[3, 2, 2]", {x}), DType::I64,
               {3, 2, 2}, {0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11});
}

TEST(Views, ExpandSqueezeUnsqueeze) {
  HostTensor col = f32({3, 1}, {1, 2, 3});
  expectTensor(runOp("aten.expand(%0) {size = [2, -1, 2]} : f32[2, 3, 2]", {col}), DType::F32,
               {2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  expectTensor(runOp("aten.expand(%0) {size = [3, 0]} : f32[3, 0]", {col}), DType::F32, {3, 0}, {});
  HostTensor x = iota(DType::F32, {2, 1, 3});
  expectTensor(runOp("aten.squeeze.dims(%0) {dim = [1]} : f32[2, 3]", {x}), DType::F32, {2, 3},
               {0, 1, 2, 3, 4, 5});
  // A dim that is not 1 stays, as torch does.
  expectTensor(runOp("aten.squeeze.dims(%0) {dim = [0, -2]} : f32[2, 3]", {x}), DType::F32, {2, 3},
               {0, 1, 2, 3, 4, 5});
  expectTensor(runOp("aten.unsqueeze(%0) {dim = -1} : f32[2, 1, 3, 1]", {x}), DType::F32,
               {2, 1, 3, 1}, {0, 1, 2, 3, 4, 5});
  expectTensor(runOp("aten.unsqueeze(%0) {dim = 0} : f32[1]", {f32({}, {5})}), DType::F32, {1},
               {5});
  expectTensor(runOp("aten.contiguous(%0) : f32[2, 1, 3]", {x}), DType::F32, {2, 1, 3},
               {0, 1, 2, 3, 4, 5});
  expectTensor(runOp("aten.flatten.using_ints(%0) : f32[1]", {f32({}, {5})}), DType::F32, {1}, {5});
  expectTensor(runOp("aten.flatten.using_ints(%0) {start_dim = 1} : f32[2, 3]", {x}), DType::F32,
               {2, 3}, {0, 1, 2, 3, 4, 5});
}

TEST(Views, SliceHasPythonBounds) {
  HostTensor x = iota(DType::I64, {10});
  expectTensor(runOp("aten.slice.Tensor(%0) {start = -3} : i64[3]", {x}), DType::I64, {3},
               {7, 8, 9});
  expectTensor(runOp("aten.slice.Tensor(%0) {start = 1, end = -1, step = 3} : i64[3]", {x}),
               DType::I64, {3}, {1, 4, 7});
  expectTensor(runOp("aten.slice.Tensor(%0) {start = 8, end = 9223372036854775807} : i64[2]", {x}),
               DType::I64, {2}, {8, 9});
  expectTensor(runOp("aten.slice.Tensor(%0) {start = 5, end = 2} : i64[0]", {x}), DType::I64, {0},
               {});
  expectTensor(runOp("aten.slice.Tensor(%0) {start = -20, end = 2} : i64[2]", {x}), DType::I64, {2},
               {0, 1});
  HostTensor m = iota(DType::I64, {3, 4});
  expectTensor(runOp("aten.slice.Tensor(%0) {dim = -1, start = 1, step = 2} : i64[3, 2]", {m}),
               DType::I64, {3, 2}, {1, 3, 5, 7, 9, 11});
}

TEST(Views, Select) {
  HostTensor m = iota(DType::I64, {3, 4});
  expectTensor(runOp("aten.select.int(%0) {dim = 1, index = -1} : i64[3]", {m}), DType::I64, {3},
               {3, 7, 11});
  expectTensor(runOp("aten.select.int(%0) {dim = 0, index = 1} : i64[4]", {m}), DType::I64, {4},
               {4, 5, 6, 7});
}

TEST(Layout, CatStackSplit) {
  // i64 and f32 concatenate as f32.
  expectTensor(runOp("aten.cat(%0, %1) : f32[3]", {i64({2}, {1, 2}), f32({1}, {0.5})}), DType::F32,
               {3}, {1, 2, 0.5});
  HostTensor a = f32({2, 1}, {1, 2}), b = f32({2, 2}, {3, 4, 5, 6});
  expectTensor(runOp("aten.cat(%0, %1) {dim = -1} : f32[2, 3]", {a, b}), DType::F32, {2, 3},
               {1, 3, 4, 2, 5, 6});
  expectTensor(runOp("aten.cat(%0, %1) : f32[2, 1]", {a, HostTensor(DType::F32, {0, 1})}),
               DType::F32, {2, 1}, {1, 2});
  HostTensor c = f32({2}, {1, 2}), d = f32({2}, {3, 4});
  expectTensor(runOp("aten.stack(%0, %1) {dim = 1} : f32[2, 2]", {c, d}), DType::F32, {2, 2},
               {1, 3, 2, 4});
  expectTensor(runOp("aten.stack(%0, %1) : f32[2, 2]", {c, d}), DType::F32, {2, 2}, {1, 2, 3, 4});

  HostTensor x = iota(DType::I64, {5});
  auto g = parse(entryText({x},
                           "  %1, %2, %3 = aten.split.Tensor(%0) {split_size = 2} : i64[2], "
                           "i64[2], i64[1]",
                           "%1, %2, %3"));
  ASSERT_TRUE(g);
  auto out = run(*g, {x});
  ASSERT_TRUE(!!out) << llvm::toString(out.takeError());
  expectTensor((*out)[0], DType::I64, {2}, {0, 1});
  expectTensor((*out)[1], DType::I64, {2}, {2, 3});
  expectTensor((*out)[2], DType::I64, {1}, {4});
}

TEST(Creation, Arange) {
  HostTensor none(DType::F32, {1});
  expectTensor(runOp("aten.arange.start_step() {start = 0, end = 10, step = 3} : i64[4]", {none}),
               DType::I64, {4}, {0, 3, 6, 9});
  expectTensor(runOp("aten.arange.start_step() {start = 5, end = 0, step = -2} : i64[3]", {none}),
               DType::I64, {3}, {5, 3, 1});
  expectTensor(
      runOp("aten.arange.start_step() {start = 0.0, end = 1.0, step = 0.25} : f32[4]", {none}),
      DType::F32, {4}, {0, 0.25, 0.5, 0.75});
  expectTensor(runOp("aten.arange.start_step() {start = 2, end = 4, dtype = f64} : f64[2]", {none}),
               DType::F64, {2}, {2, 3});
  expectTensor(runOp("aten.arange.start_step() {start = 3, end = 1} : i64[0]", {none}), DType::I64,
               {0}, {});
}

TEST(Creation, SizesFromBoundDims) {
  HostTensor x(DType::F32, {3, 2});
  auto graph = parse(R"(graph @t opset 1.0
dim n in 1..16
entry @f(%0 : f32[n, 2] = input "x") {
  %1 = aten.full() {size = [n, 2], fill_value = 1.5} : f32[n, 2]
  %2 = aten.zeros() {size = [2, n], dtype = i32} : i32[2, n]
  %3 = aten.ones() {size = [n + 1], dtype = bool} : bool[n + 1]
  %4 = aten.arange.start_step() {start = 0, end = n} : i64[n]
  %5 = aten.view(%0) {size = [2*n]} : f32[2*n]
  %6 = aten.sym_size.int(%0) {dim = 0} : symint
  %7 = aten.full() {size = [], fill_value = true} : bool[]
  %8 = aten.full() {size = [2], fill_value = 7, dtype = f16} : f16[2]
  return %1 as output "full", %2 as output "zeros", %3 as output "ones", %4 as output "arange", %5 as output "view", %6 as output "n", %7 as output "flag", %8 as output "sevens"
}
)");
  ASSERT_TRUE(graph);
  auto out = run(*graph, {x});
  ASSERT_TRUE(!!out) << llvm::toString(out.takeError());
  expectTensor((*out)[0], DType::F32, {3, 2}, {1.5, 1.5, 1.5, 1.5, 1.5, 1.5});
  expectTensor((*out)[1], DType::I32, {2, 3}, {0, 0, 0, 0, 0, 0});
  expectTensor((*out)[2], DType::Bool, {4}, {1, 1, 1, 1});
  expectTensor((*out)[3], DType::I64, {3}, {0, 1, 2});
  expectTensor((*out)[4], DType::F32, {6}, {0, 0, 0, 0, 0, 0});
  expectTensor((*out)[5], DType::I64, {}, {3});
  expectTensor((*out)[6], DType::Bool, {}, {1});
  expectTensor((*out)[7], DType::F16, {2}, {7, 7});
}

TEST(Scalars, LocalScalarDense) {
  expectTensor(runOp("aten._local_scalar_dense(%0) : f32", {f32({1, 1}, {2.5})}), DType::F32, {},
               {2.5});
  expectTensor(runOp("aten.sym_size.int(%0) {dim = -1} : symint", {HostTensor(DType::F32, {4, 0})}),
               DType::I64, {}, {0});
}

TEST(Indexing, Embedding) {
  HostTensor table = iota(DType::F32, {4, 2});
  expectTensor(runOp("aten.embedding(%0, %1) : f32[2, 2, 2]", {table, i64({2, 2}, {3, 0, 1, 3})}),
               DType::F32, {2, 2, 2}, {6, 7, 0, 1, 2, 3, 6, 7});
  expectTensor(runOp("aten.embedding(%0, %1) : f32[2]", {table, tensor(DType::I32, {}, {2})}),
               DType::F32, {2}, {4, 5});
  EXPECT_EQ(opError("aten.embedding(%0, %1) : f32[3, 2]", {table, i64({3}, {0, 4, 1})}),
            "index 4 at position 1 is out of range for the rows of weight of size 4");
  EXPECT_EQ(opError("aten.embedding(%0, %1) : f32[1, 2]", {table, i64({1}, {-1})}),
            "index -1 at position 0 is out of range for the rows of weight of size 4");
}

TEST(Indexing, IndexSelect) {
  HostTensor m = iota(DType::I64, {3, 4});
  expectTensor(runOp("aten.index_select(%0, %1) {dim = 1} : i64[3, 2]", {m, i64({2}, {3, 0})}),
               DType::I64, {3, 2}, {3, 0, 7, 4, 11, 8});
  expectTensor(runOp("aten.index_select(%0, %1) {dim = -2} : i64[3, 4]",
                     {m, tensor(DType::I32, {3}, {2, 2, 0})}),
               DType::I64, {3, 4}, {8, 9, 10, 11, 8, 9, 10, 11, 0, 1, 2, 3});
  expectTensor(runOp("aten.index_select(%0, %1) {dim = 0} : i64[0, 4]", {m, i64({0}, {})}),
               DType::I64, {0, 4}, {});
  EXPECT_EQ(opError("aten.index_select(%0, %1) {dim = 0} : i64[1, 4]", {m, i64({1}, {3})}),
            "index 3 at position 0 is out of range for dim 0 of size 3");
}

TEST(Indexing, Gather) {
  HostTensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expectTensor(runOp("aten.gather(%0, %1) {dim = 1} : f32[2, 2]", {m, i64({2, 2}, {2, 0, 1, 1})}),
               DType::F32, {2, 2}, {3, 1, 5, 5});
  // The index may be smaller than self in the other dims.
  expectTensor(runOp("aten.gather(%0, %1) {dim = 0} : f32[1, 2]", {m, i64({1, 2}, {1, 0})}),
               DType::F32, {1, 2}, {4, 2});
  EXPECT_EQ(opError("aten.gather(%0, %1) {dim = 0} : f32[1, 2]", {m, i64({1, 2}, {0, 2})}),
            "index 2 at position 1 is out of range for dim 0 of size 2");
  EXPECT_EQ(opError("aten.gather(%0, %1) {dim = 1} : f32[3, 1]", {m, i64({3, 1}, {0, 0, 0})}),
            "index i64[3, 1] is larger than self f32[2, 3] in dim 0");
}

} // namespace
