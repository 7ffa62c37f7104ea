// The default view of a sweep on a terminal, in 120 columns. For each model, backend list and
// thread count: every policy's step time against the group's baseline with its interval, its peak
// against the baseline's, what it keeps and recomputes, and the Pareto set; then a line saying what
// the group shows. Closing lines state what holds in every row, and name the rows where it does not.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "rematkit/sweep/sweep_runner.hpp"
#include "rematkit/sweep/export.hpp"

namespace rematkit::sweep {

// The widest line of the table: a 120-column terminal shows it unwrapped.
inline constexpr size_t kTableWidth = 120;

REMATKIT_SWEEP_EXPORT std::string format_table(const std::vector<SweepRow>& rows);

// A row's median step time as a multiple of its baseline's. The interval comes from the two 95%
// intervals of the medians, conservatively: [low / baseline's high, high / baseline's low]. There is
// none when either row has none (median_high_ms <= median_low_ms).
struct RelativeTime {
  double ratio = 0;
  bool has_interval = false;
  double low = 0, high = 0;
};
REMATKIT_SWEEP_EXPORT RelativeTime relative_time(const SweepRow& row, const SweepRow& baseline);

// Each name cut to at most `width` characters (at least 6), ending in "..." where cut. Different
// names that would read the same once cut are numbered instead ("...#1", "...#2", in order of first
// appearance), so that each still tells its name apart.
REMATKIT_SWEEP_EXPORT std::vector<std::string> shorten_names(const std::vector<std::string>& names, size_t width);

}  // namespace rematkit::sweep
