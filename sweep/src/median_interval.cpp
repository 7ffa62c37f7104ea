#include "rematkit/sweep/median_interval.hpp"

#include <algorithm>
#include <cmath>

namespace rematkit::sweep {
namespace {

// P(B <= k) for B ~ Binomial(n, 1/2), summed in log space so that n in the thousands is exact enough.
double binomial_half_cdf(size_t n, size_t k) {
  double sum = 0;
  for (size_t i = 0; i <= k && i <= n; ++i)
    sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) - n * std::log(2.0));
  return std::min(sum, 1.0);
}

}  // namespace

MedianInterval median_interval(std::vector<double> samples, double confidence) {
  MedianInterval out;
  const size_t n = samples.size();
  if (n == 0) return out;
  std::sort(samples.begin(), samples.end());
  out.median = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  // The largest j whose interval still covers enough; j = 1 ([min, max]) when none does.
  size_t j = 1;
  while (j + 1 <= (n + 1) / 2 && 1 - 2 * binomial_half_cdf(n, j) >= confidence) ++j;
  out.low = samples[j - 1];
  out.high = samples[n - j];
  out.coverage = 1 - 2 * binomial_half_cdf(n, j - 1);
  return out;
}

std::string versus(const MedianInterval& policy, const MedianInterval& baseline) {
  if (policy.high < baseline.low) return "faster";
  if (policy.low > baseline.high) return "slower";
  return "no clear difference";
}

}  // namespace rematkit::sweep
