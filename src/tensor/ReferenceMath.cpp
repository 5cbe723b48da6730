// Reference computations shared by the interpreter and the kernel IR evaluator.
#include "aotc/tensor/ReferenceMath.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace aotc {

void attentionRow(llvm::MutableArrayRef<double> scores,
                  llvm::function_ref<double(int64_t, int64_t)> value,
                  llvm::MutableArrayRef<double> out) {
  constexpr double Inf = std::numeric_limits<double>::infinity();
  double mx = -Inf;
  for (double s : scores)
    mx = std::isnan(s) || std::isnan(mx) ? std::numeric_limits<double>::quiet_NaN()
                                         : std::max(mx, s);
  double sum = 0;
  for (double &s : scores) {
    s = mx == -Inf ? 0 : std::exp(s - mx);
    sum += s;
  }
  for (size_t e = 0; e < out.size(); ++e) {
    double acc = 0;
    for (size_t j = 0; j < scores.size(); ++j)
      acc += scores[j] * value(int64_t(j), int64_t(e));
    out[e] = mx == -Inf ? 0 : acc / sum;
  }
}

} // namespace aotc
