// Which requests of one execution run together: requests whose inputs agree on every dim but the
// batch dim are concatenated along it, up to max_batch_size rows; outputs are split back by rows.
#ifndef AOTC_TRITON_BATCH_H
#define AOTC_TRITON_BATCH_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace aotc::triton {

/// The shapes of one request's inputs, in the entry's input order.
using InputShapes = std::vector<std::vector<int64_t>>;

/// Groups of request indices, each in request order, groups ordered by their first request.
/// maxBatch 0 (a model that does not batch): one group per request. Otherwise requests join the
/// first open group with the same non-batch dims whose rows stay within maxBatch.
std::vector<std::vector<size_t>> groupRequests(const std::vector<InputShapes> &requests,
                                               int64_t maxBatch);

} // namespace aotc::triton

#endif
