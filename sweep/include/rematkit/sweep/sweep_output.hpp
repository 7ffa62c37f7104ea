// A sweep's results: a wide table with every column for the terminal, and CSV and JSON files with
// the same rows (the files also hold each row's timing interval, samples and where its peak comes from).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "rematkit/sweep/sweep_runner.hpp"
#include "rematkit/sweep/export.hpp"
#include "rematkit/sweep/sweep_table.hpp"  // format_table, the default view, printed with these files

namespace rematkit::sweep {

REMATKIT_SWEEP_EXPORT std::string format_wide_table(const std::vector<SweepRow>& rows);
REMATKIT_SWEEP_EXPORT std::string format_csv(const std::vector<SweepRow>& rows);
REMATKIT_SWEEP_EXPORT std::string format_json(const std::vector<SweepRow>& rows);

// The rows of a JSON file format_json wrote (a bad-input error at `source` if it is not one). The
// fields added since the first version (interval, samples, verdict, load, grid size) may be absent:
// they take SweepRow's defaults.
REMATKIT_SWEEP_EXPORT std::vector<SweepRow> parse_json_rows(const std::string& text, const std::string& source);

// The rows of shards of one sweep, in grid order. A bad-input error names a configuration two
// shards both ran, or a gap (a shard left out).
REMATKIT_SWEEP_EXPORT std::vector<SweepRow> merge_shards(const std::vector<std::pair<std::string, std::vector<SweepRow>>>& shards);

}  // namespace rematkit::sweep
