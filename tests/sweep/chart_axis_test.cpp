// Chart axes: ranges and ticks worked out by hand from fit_axis's rule (step from round_tick_step,
// ends at the multiples around the data, one step more where the data is within 1% of an end).
#include "rematkit/sweep/chart_axis.hpp"

#include <gtest/gtest.h>

namespace rematkit::sweep {
namespace {

void expect_ticks(const AxisScale& axis, const std::vector<double>& ticks) {
  ASSERT_EQ(axis.ticks.size(), ticks.size());
  for (size_t i = 0; i < ticks.size(); ++i) EXPECT_NEAR(axis.ticks[i], ticks[i], 1e-9) << "tick " << i;
  EXPECT_NEAR(axis.low, ticks.front(), 1e-9);
  EXPECT_NEAR(axis.high, ticks.back(), 1e-9);
}

TEST(SweepChartAxis, TicksAreMultiplesOfARoundStepAroundTheData) {
  // 12.3..17.9 MiB: span 5.6, 5.6 / 5 = 1.12, the next of 1, 2, 5 is 2. floor(12.3 / 2) = 6 and
  // ceil(17.9 / 2) = 9: 12..18. 12.3 is 0.3 / 6 = 5% above 12, 17.9 is 0.1 / 6 = 1.7% below 18,
  // both at least 1%: no step more.
  const AxisScale mib = fit_axis(12.3, 17.9, 5);
  EXPECT_EQ(mib.step, 2);
  expect_ticks(mib, {12, 14, 16, 18});
  // 0.62..1.87 ms: span 1.25, 0.25 a part, the next round step 0.5; floor(1.24) = 1 and
  // ceil(3.74) = 4 steps: 0.5..2.0.
  const AxisScale ms = fit_axis(0.62, 1.87, 5);
  EXPECT_EQ(ms.step, 0.5);
  expect_ticks(ms, {0.5, 1.0, 1.5, 2.0});
  EXPECT_EQ(tick_label(ms.ticks[1], ms.step), "1.0");
  EXPECT_EQ(tick_label(ms.ticks[2], ms.step), "1.5");
}

TEST(SweepChartAxis, DataOnAnEndGetsOneStepOfMarginButNotBelowZero) {
  // 10..20: step 2, ends 10 and 20 are the data itself (0% away): one step out on each side.
  expect_ticks(fit_axis(10, 20, 5), {8, 10, 12, 14, 16, 18, 20, 22});
  // 0..100: step 20; the low end stays at 0 (no negative memory), the high end moves to 120.
  expect_ticks(fit_axis(0, 100, 5), {0, 20, 40, 60, 80, 100, 120});
}

TEST(SweepChartAxis, ADegenerateRangeStillGetsAnAxisAroundTheValue) {
  // All 5: widened to 4.5..5.5, span 1, step 0.2; floor(22.5) = 22 and ceil(27.5) = 28 steps.
  const AxisScale five = fit_axis(5, 5, 5);
  EXPECT_NEAR(five.step, 0.2, 1e-12);
  expect_ticks(five, {4.4, 4.6, 4.8, 5.0, 5.2, 5.4, 5.6});
  EXPECT_EQ(tick_label(five.ticks[3], five.step), "5.0");
  // All 0: widened to -0.5..0.5, cut at 0 (not negative data); 0..0.5 in steps of 0.1.
  expect_ticks(fit_axis(0, 0, 5), {0, 0.1, 0.2, 0.3, 0.4, 0.5});
}

TEST(SweepChartAxis, TickLabelsHaveTheStepsDecimals) {
  EXPECT_EQ(tick_label(12, 2), "12");
  EXPECT_EQ(tick_label(1500, 500), "1500");
  EXPECT_EQ(tick_label(0.1 * 3, 0.1), "0.3");  // 0.30000000000000004
  EXPECT_EQ(tick_label(0.25, 0.05), "0.25");
  EXPECT_EQ(tick_label(-1e-17, 0.1), "0.0");  // no "-0.0"
}

}  // namespace
}  // namespace rematkit::sweep
