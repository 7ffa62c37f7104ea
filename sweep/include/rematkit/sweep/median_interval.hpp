// How sure a sweep is of a median step time: a distribution-free confidence interval from order
// statistics, and whether two such intervals tell two policies apart.
#pragma once
#include <string>
#include <vector>
#include "rematkit/sweep/export.hpp"

namespace rematkit::sweep {

struct MedianInterval {
  double median = 0, low = 0, high = 0;
  // The interval's coverage: at least the asked-for confidence once there are enough samples (6
  // for 95%); below that, [min, max], whose coverage is 1 - 2^(1-n).
  double coverage = 0;
};

// The median of `samples` and the narrowest symmetric order-statistic interval [x(j), x(n+1-j)]
// (1-based, sorted) that covers the true median with probability >= `confidence`: the count of
// samples below the median is Binomial(n, 1/2), so the coverage is 1 - 2 P(B <= j - 1). Empty
// samples give all zeros.
REMATKIT_SWEEP_EXPORT MedianInterval median_interval(std::vector<double> samples, double confidence = 0.95);

// A policy's interval against its baseline's: "faster" or "slower" when they are apart, "no clear
// difference" when they overlap.
REMATKIT_SWEEP_EXPORT std::string versus(const MedianInterval& policy, const MedianInterval& baseline);

}  // namespace rematkit::sweep
