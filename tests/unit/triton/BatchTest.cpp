// Which requests of one execution the backend runs together.
#include "Batch.h"

#include <gtest/gtest.h>

using namespace aotc::triton;

namespace {

using Groups = std::vector<std::vector<size_t>>;

// A request of `rows` images of h x w.
InputShapes image(int64_t rows, int64_t h, int64_t w) { return {{rows, 3, h, w}}; }

TEST(Batch, RequestsOfTheSameShapeRunTogether) {
  EXPECT_EQ(groupRequests({image(1, 32, 32), image(2, 32, 32), image(1, 32, 32)}, 16),
            (Groups{{0, 1, 2}}));
}

// The batch dim is concatenated; any other dim that differs keeps requests apart.
TEST(Batch, OtherDimsMustAgree) {
  EXPECT_EQ(groupRequests({image(1, 32, 32), image(1, 64, 32), image(1, 32, 32), image(1, 64, 32),
                           image(1, 32, 64)},
                          16),
            (Groups{{0, 2}, {1, 3}, {4}}));
}

// Every input takes part: a second input of another shape splits the group.
TEST(Batch, EveryInputCounts) {
  InputShapes a = {{1, 4}, {1, 7}}, b = {{2, 4}, {2, 7}}, c = {{1, 4}, {1, 8}};
  EXPECT_EQ(groupRequests({a, b, c}, 8), (Groups{{0, 1}, {2}}));
}

// A group never exceeds max_batch_size rows; a later request may still join an earlier group.
TEST(Batch, RowsStayWithinMaxBatch) {
  EXPECT_EQ(
      groupRequests({image(3, 32, 32), image(2, 32, 32), image(2, 32, 32), image(1, 32, 32)}, 5),
      (Groups{{0, 1}, {2, 3}}));
}

// A model that does not batch runs each request alone.
TEST(Batch, NoBatchingRunsRequestsAlone) {
  EXPECT_EQ(groupRequests({image(1, 32, 32), image(1, 32, 32)}, 0), (Groups{{0}, {1}}));
  EXPECT_EQ(groupRequests({}, 8), Groups{});
}

} // namespace
