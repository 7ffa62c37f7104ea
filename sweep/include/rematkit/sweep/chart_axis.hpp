// A chart axis fitted to its data: a range a little wider than the data's, cut by round ticks.
#pragma once
#include <string>
#include <vector>
#include "rematkit/sweep/export.hpp"

namespace rematkit::sweep {

struct AxisScale {
  double low = 0, high = 1;   // the axis's ends, both on ticks
  double step = 1;            // between ticks: 1, 2 or 5 times a power of ten
  std::vector<double> ticks;  // low, low + step, ..., high
};

// The axis for data in [min, max], with about `ticks` steps (round_tick_step's rule):
// - the step is round_tick_step(max - min, ticks), and the ends are the multiples of the step at or
//   just outside the data (floor and ceil);
// - an end the data comes within 1% of the range of moves out one step, so no point sits on the
//   axis line (not below 0 when the data is not negative: time and memory are not);
// - a degenerate range (max <= min: one point, or all equal) is widened by a tenth of the value
//   on each side first (by 0.5 when the value is 0), so it still gets a few ticks around it; the
//   1% margin is still measured from the data itself.
REMATKIT_SWEEP_EXPORT AxisScale fit_axis(double min, double max, int ticks);

// A tick's text with as many decimals as the step has: 12 for step 2, "1.0" and "1.5" for step 0.5.
REMATKIT_SWEEP_EXPORT std::string tick_label(double value, double step);

}  // namespace rematkit::sweep
