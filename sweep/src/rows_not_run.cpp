#include "rows_not_run.hpp"

namespace rematkit::sweep {

std::vector<SweepRow> rows_that_ran(const std::vector<SweepRow>& rows) {
  std::vector<SweepRow> ran;
  for (const SweepRow& r : rows)
    if (r.failure.empty()) ran.push_back(r);
  return ran;
}

std::vector<std::string> not_run_lines(const std::vector<SweepRow>& rows) {
  std::vector<std::string> lines;
  for (const SweepRow& r : rows)
    if (!r.failure.empty())
      lines.push_back("config " + std::to_string(r.config) + " (" + r.policy + "; " + r.model + " on " + r.backend + ", " +
                      std::to_string(r.threads) + (r.threads == 1 ? " thread" : " threads") + ") did not run: " + r.failure);
  return lines;
}

}  // namespace rematkit::sweep
