// The compact sweep table: the default sweep's grid fits 120 columns, times are relative to the
// baseline with the ratio's interval worked out by hand, and the marks, summaries and closing lines
// name the right rows.
#include "rematkit/sweep/sweep_table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <sstream>

#include "rematkit/sweep/sweep_config.hpp"

namespace rematkit::sweep {
namespace {

constexpr int64_t kMiB = 1 << 20;

SweepRow row(const std::string& policy, double median_ms, double low_ms, double high_ms, double peak_mib) {
  SweepRow r;
  r.model = "m";
  r.policy = policy;
  r.backend = "highway,reference";
  r.median_ms = median_ms;
  r.median_low_ms = low_ms;
  r.median_high_ms = high_ms;
  r.predicted_peak = {static_cast<int64_t>(peak_mib * kMiB), 0};
  r.measured_peak = r.predicted_peak;
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The line starting with `start` and the lines wrapped from it (indented deeper), joined by spaces.
std::string joined(const std::vector<std::string>& lines, const std::string& start) {
  const auto indent = [](const std::string& l) { return l.find_first_not_of(' '); };
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].compare(0, start.size(), start) != 0) continue;
    std::string text = lines[i];
    for (size_t j = i + 1; j < lines.size() && !lines[j].empty() && indent(lines[j]) > indent(lines[i]); ++j)
      text += " " + lines[j].substr(indent(lines[j]));
    return text;
  }
  return "";
}

// A row's cells: the table's columns are two or more spaces apart.
std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  const std::regex gap(" {2,}");
  for (std::sregex_token_iterator it(line.begin(), line.end(), gap, -1), end; it != end; ++it)
    if (!it->str().empty()) cells.push_back(it->str());
  return cells;
}

// The line of `policy`'s row (after the Pareto mark and a space).
std::string line_of(const std::vector<std::string>& lines, const std::string& policy) {
  for (const std::string& line : lines)
    if (line.size() > 2 && line.compare(2, policy.size() + 2, policy + "  ") == 0) return line;
  return "";
}

// One group: the baseline, a clearly faster policy, a clearly slower one with the smallest peak,
// and one with no interval, as good in memory as the faster one but slower.
std::vector<SweepRow> one_group() {
  std::vector<SweepRow> rows = {row("everything_saveable", 10, 9.5, 10.5, 8), row("dots_saveable", 9, 8.8, 9.2, 6),
                                row("nothing_saveable", 12, 11.5, 12.5, 2), row("budget(0.5)", 10.2, 10.2, 10.2, 6)};
  rows[1].versus_baseline = "faster";
  rows[2].versus_baseline = "slower";
  rows[3].versus_baseline = "no clear difference";
  const int64_t residual_mib[] = {4, 3, 1, 3};
  const int64_t recompute_flops[] = {0, 500'000'000, 2'500'000'000, 500'000'000};
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].residual_bytes = residual_mib[i] * kMiB;
    rows[i].recompute_flops = recompute_flops[i];
  }
  return rows;
}

TEST(SweepTable, RelativeTimeAndItsInterval) {
  const std::vector<SweepRow> rows = one_group();
  // dots_saveable against everything_saveable: 9 / 10 = 0.9; the interval, conservatively, from
  // the lowest over the highest and the highest over the lowest: 8.8 / 10.5 = 0.838, 9.2 / 9.5 = 0.968.
  const RelativeTime t = relative_time(rows[1], rows[0]);
  EXPECT_DOUBLE_EQ(t.ratio, 0.9);
  ASSERT_TRUE(t.has_interval);
  EXPECT_DOUBLE_EQ(t.low, 8.8 / 10.5);
  EXPECT_DOUBLE_EQ(t.high, 9.2 / 9.5);
  // budget(0.5)'s interval is empty (10.2 to 10.2): only the ratio, 10.2 / 10 = 1.02.
  const RelativeTime none = relative_time(rows[3], rows[0]);
  EXPECT_DOUBLE_EQ(none.ratio, 1.02);
  EXPECT_FALSE(none.has_interval);

  const std::vector<std::string> lines = lines_of(format_table(rows));
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0], "m on highway,reference, 1 thread");
  // Cells: policy (with the Pareto mark), median ms, time, its interval, verdict, peak MiB, peak %
  // (6 of 8 MiB: 75%), residual MiB, recompute GFLOP (5e8 flops: 0.500).
  EXPECT_EQ(cells_of(line_of(lines, "dots_saveable")),
            (std::vector<std::string>{"* dots_saveable", "9.000", "0.90x", "[0.84-0.97]", "faster", "6.00", "75%", "3.00",
                                      "0.500"}));
  // nothing_saveable: 12 / 10 = 1.20x in [11.5 / 10.5, 12.5 / 9.5] = [1.095, 1.316]; 2 of 8 MiB.
  EXPECT_EQ(cells_of(line_of(lines, "nothing_saveable")),
            (std::vector<std::string>{"* nothing_saveable", "12.000", "1.20x", "[1.10-1.32]", "slower", "2.00", "25%",
                                      "1.00", "2.500"}));
  EXPECT_EQ(cells_of(line_of(lines, "budget(0.5)")),
            (std::vector<std::string>{"budget(0.5)", "10.200", "1.02x", "~", "6.00", "75%", "3.00", "0.500"}));
  // The baseline shows no interval against itself.
  EXPECT_EQ(cells_of(line_of(lines, "everything_saveable")),
            (std::vector<std::string>{"everything_saveable", "10.000", "1.00x", "base", "8.00", "100%", "4.00", "0.000"}));
  EXPECT_NE(joined(lines, "time: ").find("~ = no clear difference"), std::string::npos);
}

TEST(SweepTable, ParetoMarksTheRowsNothingBeatsInTimeAndPeak) {
  // (ms, MiB): dots_saveable (9, 6) beats everything_saveable (10, 8) and budget(0.5) (10.2, 6);
  // nothing_saveable (12, 2) is slower than both but smallest: dots_saveable and it are the front.
  const std::vector<std::string> lines = lines_of(format_table(one_group()));
  EXPECT_EQ(line_of(lines, "dots_saveable")[0], '*');
  EXPECT_EQ(line_of(lines, "nothing_saveable")[0], '*');
  EXPECT_EQ(line_of(lines, "everything_saveable")[0], ' ');
  EXPECT_EQ(line_of(lines, "budget(0.5)")[0], ' ');
}

TEST(SweepTable, EachGroupSaysItsFastestSmallestAndParetoSet) {
  std::vector<SweepRow> rows = one_group();
  for (SweepRow r : one_group()) {  // the same on 2 threads, where the baseline is fastest
    r.threads = 2;
    if (r.policy == "everything_saveable") r.median_ms = r.median_low_ms = r.median_high_ms = 5;
    rows.push_back(r);
  }
  const std::vector<std::string> lines = lines_of(format_table(rows));
  EXPECT_EQ(joined(lines, "  fastest: "),
            "  fastest: dots_saveable, 0.90x (clearly faster than the baseline); smallest peak: nothing_saveable, 2.00 MiB "
            "(25%); Pareto set (*): dots_saveable, nothing_saveable");
  // On 2 threads everything_saveable (5 ms, 8 MiB) is fastest, and now nothing beats dots_saveable
  // (9 ms, 6 MiB) in both: three on the front.
  const auto second = std::find(lines.begin(), lines.end(), "m on highway,reference, 2 threads");
  ASSERT_NE(second, lines.end());
  EXPECT_EQ(joined(std::vector<std::string>(second, lines.end()), "  fastest: "),
            "  fastest: everything_saveable (the baseline); smallest peak: nothing_saveable, 2.00 MiB (25%); Pareto set "
            "(*): everything_saveable, dots_saveable, nothing_saveable");
}

TEST(SweepTable, SmallestPeakNamesEveryRowThatHasIt) {
  std::vector<SweepRow> rows = one_group();
  rows[3].predicted_peak = rows[3].measured_peak = rows[2].predicted_peak;  // budget(0.5) at 2 MiB too
  EXPECT_NE(joined(lines_of(format_table(rows)), "  fastest: ").find("smallest peak: nothing_saveable, budget(0.5), 2.00 MiB (25%)"),
            std::string::npos);
}

TEST(SweepTable, TheClosingLineStatesWhatHoldsInEveryRow) {
  const std::vector<std::string> lines = lines_of(format_table(one_group()));
  EXPECT_EQ(joined(lines, "measured peak"),
            "measured peak = predicted in every row; gradients agree with the baseline's in every row (max diff 0); "
            "nothing offloaded to pinned host");
  for (const std::string& line : lines) EXPECT_EQ(line.find("busy"), std::string::npos) << line;
}

TEST(SweepTable, TheClosingLineNamesTheRowsWhereItDoesNotHold) {
  std::vector<SweepRow> rows = one_group();
  rows[2].measured_peak[0] = 3 * kMiB;          // nothing_saveable measured 3 MiB, planned 2
  rows[1].max_grad_diff = 3e-7;                 // dots_saveable's gradients off
  rows[3].predicted_peak[1] = rows[3].measured_peak[1] = 3 * kMiB / 2;  // budget(0.5) offloads 1.5 MiB
  const std::vector<std::string> lines = lines_of(format_table(rows));
  EXPECT_EQ(joined(lines, "measured peak"),
            "measured peak differs from predicted in 1 row: nothing_saveable (m on highway,reference, 1 thread); "
            "gradients differ from the baseline's (up to 3e-07) in 1 row: dots_saveable (m on highway,reference, 1 thread); "
            "1 row offloads to pinned host (noted under each)");
  // Each row says so in a line under it.
  auto note_under = [&](const std::string& policy) {
    const auto at = std::find(lines.begin(), lines.end(), line_of(lines, policy));
    return at == lines.end() || at + 1 == lines.end() ? std::string() : (at + 1)->substr((at + 1)->find_first_not_of(' '));
  };
  EXPECT_EQ(note_under("nothing_saveable"), "measured peak 3.00 MiB, predicted 2.00 MiB");
  EXPECT_EQ(note_under("dots_saveable"), "gradients differ from the baseline's by up to 3e-07");
  EXPECT_EQ(note_under("budget(0.5)"), "offloaded 1.50 MiB to pinned host");
}

TEST(SweepTable, ABusyMachineIsAWarning) {
  std::vector<SweepRow> rows = one_group();
  rows[0].machine_load = 0.1;
  rows[1].machine_load = 0.25;  // not over the line
  rows[2].machine_load = 0.3;
  rows[3].machine_load = 0.42;
  const std::vector<std::string> lines = lines_of(format_table(rows));
  EXPECT_NE(std::find(lines.begin(), lines.end(),
                      "the machine was busy during 2 rows (up to 42% of its CPU): their times are less trustworthy"),
            lines.end());
}

TEST(SweepTable, CutNamesStayDistinct) {
  const std::vector<std::string> names = {"save_if_bytes_at_least(everything_saveable, 65536)",
                                          "save_if_bytes_at_least(everything_saveable, 1024)", "budget(0.25)",
                                          "save_if_bytes_at_least(everything_saveable, 65536)"};
  // In 20 characters both long names read "save_if_bytes_at_..." (17 and "..."): numbered instead,
  // 15 characters and "...#1", "...#2"; budget(0.25) fits; a name seen again reads the same.
  EXPECT_EQ(shorten_names(names, 20), (std::vector<std::string>{"save_if_bytes_a...#1", "save_if_bytes_a...#2", "budget(0.25)",
                                                                 "save_if_bytes_a...#1"}));
  // In 48 they differ once cut ("..., 6..." and "..., 1..."): no numbers.
  EXPECT_EQ(shorten_names(names, 48)[0], "save_if_bytes_at_least(everything_saveable, 6...");
  EXPECT_EQ(shorten_names(names, 48)[1], "save_if_bytes_at_least(everything_saveable, 1...");
}

TEST(SweepTable, TheDefaultSweepsGridFitsIn120Columns) {
  const SweepConfig config = parse_sweep(default_sweep_yaml(), "<default sweep>");
  ASSERT_NE(std::find(config.policies.begin(), config.policies.end(),
                      "offload_dot_with_no_batch_dims('device', 'pinned_host')"),
            config.policies.end());
  // Plausible numbers: per model a base time, peak and recompute work; per policy (in the file's
  // order) a factor on each, so that some trade time for memory and some lose on both; 2 threads
  // nearly twice as fast. The verdicts follow from the +-3% intervals. The offloading policy
  // offloads, one row measures another peak, one has gradients off, and the machine is busy for
  // some: every kind of line shows.
  const double base_ms[] = {35.2, 18.4, 602.3, 9.8, 1.2}, base_mib[] = {12.76, 6.5, 180.1, 3.2, 0.4};
  const double base_gflop[] = {1.1, 0.4, 9.7, 0.2, 0.01};
  const double time_factor[] = {1.00, 1.25, 1.08, 1.10, 1.15, 0.98, 1.20, 1.06, 1.09};
  const double peak_factor[] = {1.00, 0.40, 0.70, 0.72, 0.55, 0.95, 0.45, 0.60, 0.62};
  const double recompute_factor[] = {0, 1.0, 0.3, 0.32, 0.3, 0.05, 0.8, 0.4, 0.42};
  std::vector<SweepRow> rows;
  for (size_t m = 0; m < config.models.size(); ++m)
    for (const std::vector<std::string>& backends : config.backends)
      for (int threads : config.threads)
        for (size_t p = 0; p < config.policies.size(); ++p) {
          const double ms = base_ms[m % 5] * time_factor[p % 9] / (threads == 1 ? 1 : 1.8);
          SweepRow r = row(config.policies[p], ms, ms * 0.97, ms * 1.03, base_mib[m % 5] * peak_factor[p % 9]);
          r.model = config.models[m].name;
          r.backend.clear();
          for (const std::string& b : backends) r.backend += (r.backend.empty() ? "" : ",") + b;
          r.threads = threads;
          const double apart = 1.03 / 0.97;  // two intervals of +-3% are apart past this ratio
          r.versus_baseline = p == 0                                ? ""
                              : time_factor[p % 9] > apart          ? "slower"
                              : time_factor[p % 9] < 1 / apart      ? "faster"
                                                                    : "no clear difference";
          r.residual_bytes = r.predicted_peak[0] / 2;
          r.recompute_flops = static_cast<int64_t>(1e9 * base_gflop[m % 5] * recompute_factor[p % 9]);
          if (config.policies[p].rfind("offload", 0) == 0) r.predicted_peak[1] = r.measured_peak[1] = 2 * kMiB;
          r.machine_load = rows.size() % 7 == 0 ? 0.4 : 0.05;
          rows.push_back(r);
        }
  rows[4].measured_peak[0] += 4096;
  rows[13].max_grad_diff = 1.5e-7;
  const std::string table = format_table(rows);
  for (const std::string& line : lines_of(table)) EXPECT_LE(line.size(), kTableWidth) << line;
  // Every group has its title, and the long name is cut, not lost.
  std::vector<std::string> titles;
  for (const SweepRow& r : rows) titles.push_back(r.model + " on " + r.backend + (r.threads == 1 ? ", 1 thread" : ", 2 threads"));
  size_t title_lines = 0, offloading = 0;
  for (const std::string& line : lines_of(table)) {
    title_lines += std::find(titles.begin(), titles.end(), line) != titles.end();
    if (line.find("offload_dot_with_no_") != std::string::npos && line.find("...") != std::string::npos) ++offloading;
  }
  EXPECT_EQ(title_lines, config.models.size() * config.backends.size() * config.threads.size());
  EXPECT_GE(offloading, title_lines);  // its row in each group
}

}  // namespace
}  // namespace rematkit::sweep
