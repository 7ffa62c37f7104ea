#include "rematkit/sweep/chart_axis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "rematkit/io/svg_text.hpp"

namespace rematkit::sweep {

AxisScale fit_axis(double min, double max, int ticks) {
  if (max < min) std::swap(min, max);
  const bool nonnegative = min >= 0;
  const double data_min = min, data_max = max;  // the margin is kept from the data, not the widening
  if (max - min <= 0) {
    const double half = min != 0 ? std::abs(min) / 10 : 0.5;
    min -= half;
    max += half;
  }
  if (nonnegative) min = std::max(min, 0.0);
  AxisScale axis;
  axis.step = round_tick_step(max - min, ticks);
  // Counting in steps keeps the ends exact multiples: 0.1 * 3 is not 0.3, but 3 steps of 0.1 are.
  // The small tolerance keeps data already on a multiple (12.0 / 2) from floor-ing a step lower.
  const double eps = 1e-9;
  double first = std::floor(min / axis.step + eps), last = std::ceil(max / axis.step - eps);
  const double margin = (last - first) / 100;
  if (data_min / axis.step - first < margin && !(nonnegative && first <= 0)) first -= 1;
  if (last - data_max / axis.step < margin) last += 1;
  axis.low = first * axis.step;
  axis.high = last * axis.step;
  for (double k = first; k <= last + eps; k += 1) axis.ticks.push_back(k * axis.step);
  return axis;
}

std::string tick_label(double value, double step) {
  const int decimals = step > 0 ? std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9))) : 0;
  if (std::abs(value) < step * 1e-9) value = 0;  // no "-0.0"
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

}  // namespace rematkit::sweep
