// Grouping requests for concatenation along the batch dim: see Batch.h.
#include "Batch.h"

#include <algorithm>

namespace aotc::triton {

namespace {

bool sameButBatch(const InputShapes &a, const InputShapes &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].size() != b[i].size() || a[i].empty() ||
        !std::equal(a[i].begin() + 1, a[i].end(), b[i].begin() + 1))
      return false;
  return true;
}

int64_t rows(const InputShapes &shapes) {
  return shapes.empty() || shapes[0].empty() ? 1 : shapes[0][0];
}

} // namespace

std::vector<std::vector<size_t>> groupRequests(const std::vector<InputShapes> &requests,
                                               int64_t maxBatch) {
  std::vector<std::vector<size_t>> groups;
  std::vector<int64_t> groupRows;
  for (size_t r = 0; r < requests.size(); ++r) {
    bool placed = false;
    for (size_t g = 0; maxBatch > 0 && !placed && g < groups.size(); ++g) {
      if (groupRows[g] + rows(requests[r]) <= maxBatch &&
          sameButBatch(requests[groups[g][0]], requests[r])) {
        groups[g].push_back(r);
        groupRows[g] += rows(requests[r]);
        placed = true;
      }
    }
    if (!placed) {
      groups.push_back({r});
      groupRows.push_back(rows(requests[r]));
    }
  }
  return groups;
}

} // namespace aotc::triton
