// A sweep's report: one self-contained HTML page (inline CSS and SVG, nothing fetched, so it opens
// from a file with no server and no network). Per model: a table per backend list and thread
// count, the model's chart, and the memory timeline of its policies when the rows carry reports.
#pragma once
#include <string>
#include <vector>

#include "rematkit/sweep/sweep_runner.hpp"
#include "rematkit/sweep/export.hpp"

namespace rematkit::sweep {

struct ReportOptions {
  std::string source;              // the sweep's name in the title: its file, or "<default sweep>"
  std::string date;                // under the title when not empty ("2024-05-01 14:03")
  std::vector<std::string> notes;  // a Notes block when not empty: warnings, the command run, ...
};

// Rows timed while other processes took more than this share of the CPU get a note on the page.
constexpr double kBusyMachineLoad = 0.25;

// The page for `rows` (any number of models, in order of first appearance). Per backend list and
// thread count of a model, one table row per policy: its median with the 95% interval, the time
// relative to the group's baseline (everything_saveable, or the group's first row) and the verdict
// against it, peak, residual and recompute, and whether it is on the group's Pareto front. The
// timeline shows the first group whose rows carry memory reports, one panel per policy. Every text
// is escaped.
REMATKIT_SWEEP_EXPORT std::string format_report_html(const std::vector<SweepRow>& rows, const ReportOptions& options);

}  // namespace rematkit::sweep
