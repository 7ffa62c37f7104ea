// A sweep's results: an aligned table for the terminal, and CSV and JSON files with the same rows.
#pragma once
#include <string>
#include <vector>

#include "rematkit/sweep/sweep_runner.hpp"

namespace rematkit::sweep {

std::string format_table(const std::vector<SweepRow>& rows);
std::string format_csv(const std::vector<SweepRow>& rows);
std::string format_json(const std::vector<SweepRow>& rows);

// Writes `text` to `path` (a bad-input error naming the path if it cannot).
void write_file(const std::string& path, const std::string& text);

}  // namespace rematkit::sweep
