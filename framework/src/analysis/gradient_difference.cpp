#include "rematkit/analysis/gradient_difference.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

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
    if (x->data.size() != y->data.size() || x->imag.size() != y->imag.size())
      internal_error("gradients of " + std::to_string(x->data.size()) + " and " + std::to_string(y->data.size()) +
                     " elements compared");
    // A complex gradient's imaginary parts are compared as its real parts are.
    auto same_bits = [](const std::vector<double>& u, const std::vector<double>& v) {
      return u.empty() || std::memcmp(u.data(), v.data(), u.size() * sizeof(double)) == 0;  // empty: no pointer
    };
    d.identical = same_bits(x->data, y->data) && same_bits(x->imag, y->imag);
    if (d.identical) continue;
    for (auto [us, vs] : {std::pair{&x->data, &y->data}, std::pair{&x->imag, &y->imag}})
      for (size_t k = 0; k < us->size() && !std::isnan(d.max_abs_diff); ++k) {
        const double u = (*us)[k], v = (*vs)[k];
        if (std::isnan(u) && std::isnan(v)) continue;
        const double diff = std::fabs(u - v);  // NaN when exactly one is NaN
        d.max_abs_diff = std::isnan(diff) ? diff : std::max(d.max_abs_diff, diff);
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
