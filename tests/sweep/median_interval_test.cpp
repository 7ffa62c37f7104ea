// The median's confidence interval from order statistics, on samples whose answer is worked out
// by hand from the binomial distribution, and the verdict two intervals give.
#include "rematkit/sweep/median_interval.hpp"

#include <gtest/gtest.h>

#include <numeric>

namespace rematkit::sweep {
namespace {

std::vector<double> one_to(int n) {
  std::vector<double> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 1.0);
  std::reverse(v.begin(), v.end());  // order must not matter
  return v;
}

TEST(MedianInterval, FiveSamplesCanOnlyGiveTheirRangeAtNinetyThreePercent) {
  // [min, max] misses the median only when all five fall on one side: 2 / 2^5.
  const MedianInterval m = median_interval({5, 1, 4, 2, 3});
  EXPECT_EQ(m.median, 3);
  EXPECT_EQ(m.low, 1);
  EXPECT_EQ(m.high, 5);
  EXPECT_DOUBLE_EQ(m.coverage, 1 - 2.0 / 32);
}

TEST(MedianInterval, TenSamplesGiveTheSecondAndNinth) {
  // P(B <= 1) = (1 + 10) / 1024 for B ~ Binomial(10, 1/2): [x(2), x(9)] covers 1 - 22/1024 = 97.9%;
  // [x(3), x(8)] would cover 1 - 2 (1 + 10 + 45) / 1024 = 89.1%, too little.
  const MedianInterval m = median_interval(one_to(10));
  EXPECT_EQ(m.median, 5.5);
  EXPECT_EQ(m.low, 2);
  EXPECT_EQ(m.high, 9);
  EXPECT_DOUBLE_EQ(m.coverage, 1 - 22.0 / 1024);
}

TEST(MedianInterval, TwentySamplesGiveTheSixthAndFifteenth) {
  // P(B <= 5) = (1 + 20 + 190 + 1140 + 4845 + 15504) / 2^20 = 21700 / 1048576: coverage 95.9%;
  // one step further in, P(B <= 6) adds 38760 and the coverage falls to 88.5%.
  const MedianInterval m = median_interval(one_to(20));
  EXPECT_EQ(m.low, 6);
  EXPECT_EQ(m.high, 15);
  EXPECT_NEAR(m.coverage, 1 - 2 * 21700.0 / 1048576, 1e-12);
  // At 80% the interval narrows: P(B <= 6) = 60460 / 2^20 gives 88.5% >= 80%, P(B <= 7) = 137980
  // / 2^20 gives 73.7% < 80%: [x(7), x(14)].
  const MedianInterval eighty = median_interval(one_to(20), 0.80);
  EXPECT_EQ(eighty.low, 7);
  EXPECT_EQ(eighty.high, 14);
}

TEST(MedianInterval, NoSamplesGiveZeros) {
  const MedianInterval m = median_interval({});
  EXPECT_EQ(m.median, 0);
  EXPECT_EQ(m.coverage, 0);
}

TEST(MedianInterval, OverlappingIntervalsAreNoClearDifference) {
  const MedianInterval base{10, 9, 11, 0.95};
  EXPECT_EQ(versus(MedianInterval{8, 7, 8.9, 0.95}, base), "faster");
  EXPECT_EQ(versus(MedianInterval{12, 11.1, 13, 0.95}, base), "slower");
  EXPECT_EQ(versus(MedianInterval{8, 7, 9, 0.95}, base), "no clear difference");  // touching counts as overlap
  EXPECT_EQ(versus(MedianInterval{10.5, 9.5, 12, 0.95}, base), "no clear difference");
}

}  // namespace
}  // namespace rematkit::sweep
