// A configuration that did not run (SweepRow::failure: its step over the memory limit, say) has a
// row with no times. The table, the charts and the report show the rows that ran and list the
// others, each with what stopped it; CSV and JSON keep every row.
#pragma once
#include <string>
#include <vector>

#include "rematkit/sweep/sweep_runner.hpp"

namespace rematkit::sweep {

std::vector<SweepRow> rows_that_ran(const std::vector<SweepRow>& rows);

// "config 3 (nothing_saveable; mlp on highway,reference, 1 thread) did not run: WHY", one per row
// that did not run.
std::vector<std::string> not_run_lines(const std::vector<SweepRow>& rows);

}  // namespace rematkit::sweep
