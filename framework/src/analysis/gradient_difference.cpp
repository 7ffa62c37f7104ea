#include "rematkit/analysis/gradient_difference.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "rematkit/ir/error.hpp"

namespace rematkit {

std::vector<ArgumentDifference> gradient_differences(const GradientResult& a, const GradientResult& b) {
  if (a.gradients.size() != b.gradients.size())
    internal_error("gradients of " + std::to_string(a.gradients.size()) + " and " + std::to_string(b.gradients.size()) +
                   " arguments compared");
  std::vector<ArgumentDifference> out(a.gradients.size());
  for (size_t i = 0; i < a.gradients.size(); ++i) {
    const std::optional<Tensor>& x = a.gradients[i];
    const std::optional<Tensor>& y = b.gradients[i];
    ArgumentDifference& d = out[i];
    if (!x || !y) {
      d.identical = !x && !y;
      d.max_abs_diff = d.identical ? 0 : std::numeric_limits<double>::infinity();
      continue;
    }
    if (x->data.size() != y->data.size())
      internal_error("gradients of " + std::to_string(x->data.size()) + " and " + std::to_string(y->data.size()) +
                     " elements compared");
    d.identical = std::memcmp(x->data.data(), y->data.data(), x->data.size() * sizeof(double)) == 0;
    if (d.identical) continue;
    for (size_t k = 0; k < x->data.size(); ++k) {
      const double u = x->data[k], v = y->data[k];
      if (std::isnan(u) && std::isnan(v)) continue;
      const double diff = std::fabs(u - v);  // NaN when exactly one is NaN
      if (std::isnan(diff)) {
        d.max_abs_diff = diff;
        break;
      }
      d.max_abs_diff = std::max(d.max_abs_diff, diff);
    }
  }
  return out;
}

double max_abs_difference(const std::vector<ArgumentDifference>& differences) {
  double most = 0;
  for (const ArgumentDifference& d : differences) {
    if (std::isnan(d.max_abs_diff)) return d.max_abs_diff;
    most = std::max(most, d.max_abs_diff);
  }
  return most;
}

}  // namespace rematkit
