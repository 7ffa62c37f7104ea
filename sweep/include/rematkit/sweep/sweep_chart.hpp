// An SVG chart per model: step time against peak memory, one point per policy for each backend
// list and thread count, the Pareto front (no other point both faster and smaller) ringed and joined.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "rematkit/sweep/sweep_runner.hpp"
#include "rematkit/sweep/export.hpp"

namespace rematkit::sweep {

// The series a row belongs to on a chart: its backend list and thread count, "reference, 2 threads".
REMATKIT_SWEEP_EXPORT std::string series_name(const SweepRow& row);

// For points (x, y) where less is better in both: true for those no other point dominates (another
// is no worse in both and better in one).
REMATKIT_SWEEP_EXPORT std::vector<bool> pareto_front(const std::vector<std::pair<double, double>>& points);

// The chart of `model`'s rows (x: predicted device peak in MiB, y: median step time in ms), on axes
// fitted to the data (chart_axis.hpp). Each point has a min-max whisker and, where the row has one,
// a bar for its median's 95% interval; points are labelled by policy number without overlaps
// (chart_labels.hpp), and a legend gives the series, what each mark means and the policies' names.
REMATKIT_SWEEP_EXPORT std::string format_svg(const std::vector<SweepRow>& rows, const std::string& model);

// A file name for a model's chart: its name with characters other than [A-Za-z0-9._-] as '_', + ".svg".
REMATKIT_SWEEP_EXPORT std::string chart_file_name(const std::string& model);

}  // namespace rematkit::sweep
