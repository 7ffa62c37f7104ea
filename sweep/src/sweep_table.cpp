#include "rematkit/sweep/sweep_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "rematkit/sweep/sweep_chart.hpp"
#include "rows_not_run.hpp"

namespace rematkit::sweep {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// Other processes' share of the CPU above which a row's times are doubtful.
constexpr double kBusyLoad = 0.25;
// The policy column's narrowest: narrower, cut names say too little (lines run over instead).
constexpr size_t kMinPolicyWidth = 16;
// How many rows a closing line names before it only counts the rest.
constexpr size_t kNamedRows = 5;
// A space inside a name, which wrapped() does not break a line at.
constexpr char kUnbroken = '\x1f';

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string mib(int64_t bytes) { return fmt("%.2f", static_cast<double>(bytes) / kMiB); }

std::string plural(size_t n, const std::string& noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

std::string unbroken(std::string name) {
  std::replace(name.begin(), name.end(), ' ', kUnbroken);
  return name;
}

// `text` broken at spaces into lines of at most kTableWidth: the first after `indent`, the rest
// after `hanging`. A word longer than a line runs over.
std::string wrapped(const std::string& text, const std::string& indent, const std::string& hanging) {
  std::string out, line = indent;
  bool line_has_word = false;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(' ', start), text.size());
    std::string word = text.substr(start, end - start);
    std::replace(word.begin(), word.end(), kUnbroken, ' ');
    if (line_has_word && line.size() + 1 + word.size() > kTableWidth) {
      out += line + "\n";
      line = hanging;
      line_has_word = false;
    }
    line += (line_has_word ? " " : "") + word;
    line_has_word = true;
    start = end + 1;
  }
  return out + line + "\n";
}

// The rows of one model, backend list and thread count; the baseline is everything_saveable, or
// the first row when the sweep does not list it (as for the runner's verdicts).
struct Group {
  std::vector<const SweepRow*> rows;
  size_t baseline = 0;
  std::vector<bool> pareto;  // no other row of the group both faster and smaller
};

std::vector<Group> groups_of(const std::vector<SweepRow>& rows) {
  std::vector<Group> groups;
  for (const SweepRow& r : rows) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      return g.rows[0]->model == r.model && g.rows[0]->backend == r.backend && g.rows[0]->threads == r.threads;
    });
    if (it == groups.end()) it = groups.insert(groups.end(), Group{});
    it->rows.push_back(&r);
  }
  for (Group& g : groups) {
    for (size_t i = 0; i < g.rows.size(); ++i)
      if (g.rows[i]->policy == "everything_saveable") {
        g.baseline = i;
        break;
      }
    std::vector<std::pair<double, double>> points;
    for (const SweepRow* r : g.rows) points.emplace_back(r->median_ms, static_cast<double>(r->predicted_peak[0]));
    g.pareto = pareto_front(points);
  }
  return groups;
}

std::string where(const SweepRow& r) {
  return r.model + " on " + r.backend + ", " + plural(static_cast<size_t>(r.threads), "thread");
}

// The columns of a policy's line; text is left-aligned, numbers right-aligned. Headers take two
// lines, so that a unit does not widen its column and the policy names keep the room.
enum Cell { kPareto, kPolicy, kMedian, kRatio, kInterval, kVerdict, kPeak, kPeakShare, kResidual, kRecompute, kNumCells };
struct CellColumn {
  const char *top, *bottom;
  bool text;
};
const CellColumn kCellColumns[kNumCells] = {
    {"", "", true},  // "*" on the Pareto front
    {"", "policy", true},
    {"median", "ms", false},
    {"", "time", false},  // against the baseline's
    {"95%", "interval", true},
    {"", "verdict", true},
    {"peak", "MiB", false},  // the planned device peak
    {"peak", "%", false},    // of the baseline's
    {"residual", "MiB", false},
    {"recompute", "GFLOP", false},
};
// The space before each column: the Pareto mark sits close to its policy.
size_t gap_before(size_t cell) { return cell == kPareto ? 0 : cell == kPolicy ? 1 : 2; }

// The verdict against the baseline, short: "~" reads as "no clear difference" (the legend says so).
std::string verdict_mark(const SweepRow& r, bool is_baseline) {
  if (is_baseline) return "base";
  return r.versus_baseline == "no clear difference" ? "~" : r.versus_baseline;
}

std::vector<std::string> cells_of(const Group& g, size_t i) {
  const SweepRow& r = *g.rows[i];
  const SweepRow& base = *g.rows[g.baseline];
  const bool is_baseline = i == g.baseline;
  const RelativeTime time = relative_time(r, base);
  std::vector<std::string> cells(kNumCells);
  cells[kPareto] = g.pareto[i] ? "*" : "";
  cells[kPolicy] = r.policy;  // cut to the column's width later
  cells[kMedian] = fmt("%.3f", r.median_ms);
  cells[kRatio] = std::isfinite(time.ratio) ? fmt("%.2fx", time.ratio) : "-";
  // The baseline's interval against itself would only repeat its own noise.
  if (time.has_interval && !is_baseline) cells[kInterval] = "[" + fmt("%.2f", time.low) + "-" + fmt("%.2f", time.high) + "]";
  cells[kVerdict] = verdict_mark(r, is_baseline);
  cells[kPeak] = mib(r.predicted_peak[0]);
  cells[kPeakShare] = base.predicted_peak[0] > 0 ? fmt("%.0f%%", 100.0 * r.predicted_peak[0] / base.predicted_peak[0]) : "-";
  cells[kResidual] = mib(r.residual_bytes);
  cells[kRecompute] = fmt("%.3f", r.recompute_flops / 1e9);
  return cells;
}

std::string line_of(const std::vector<std::string>& cells, const std::vector<size_t>& width) {
  std::string line;
  for (size_t k = 0; k < kNumCells; ++k) {
    const std::string pad(width[k] - std::min(width[k], cells[k].size()), ' ');
    line += std::string(gap_before(k), ' ') + (kCellColumns[k].text ? cells[k] + pad : pad + cells[k]);
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

// A measured peak other than the planned one; in bytes when the two read the same in MiB.
std::string measured_against_predicted(const std::string& what, int64_t measured, int64_t predicted) {
  if (mib(measured) != mib(predicted))
    return "measured " + what + " " + mib(measured) + " MiB, predicted " + mib(predicted) + " MiB";
  const int64_t by = measured - predicted;
  return "measured " + what + " " + std::to_string(by > 0 ? by : -by) + " bytes " + (by > 0 ? "above" : "below") +
         " the predicted " + mib(predicted) + " MiB";
}

// What is off in a row, for a line under it: what it offloads, a measured peak other than the
// planned one, gradients other than the baseline's, a busy machine.
std::string notes_of(const SweepRow& r) {
  std::vector<std::string> notes;
  if (r.predicted_peak[1] > 0) notes.push_back("offloaded " + mib(r.predicted_peak[1]) + " MiB to pinned host");
  if (r.measured_peak[0] != r.predicted_peak[0])
    notes.push_back(measured_against_predicted("peak", r.measured_peak[0], r.predicted_peak[0]));
  if (r.measured_peak[1] != r.predicted_peak[1])
    notes.push_back(measured_against_predicted("pinned-host peak", r.measured_peak[1], r.predicted_peak[1]));
  if (!(r.max_grad_diff == 0)) notes.push_back("gradients differ from the baseline's by up to " + fmt("%.3g", r.max_grad_diff));
  if (r.machine_load > kBusyLoad) notes.push_back("machine busy (" + fmt("%.0f", 100 * r.machine_load) + "% of its CPU)");
  if (r.timed_alone) notes.push_back("timed alone: the group's steps do not fit the memory limit together");
  std::string text;
  for (const std::string& n : notes) text += (text.empty() ? "" : "; ") + n;
  return text;
}

// What a group's rows show: the fastest and whether that is clear, the smallest peak, the Pareto set.
std::string summary_of(const Group& g, const std::map<std::string, std::string>& short_name) {
  auto name = [&](const SweepRow* r) { return unbroken(short_name.at(r->policy)); };
  const SweepRow& base = *g.rows[g.baseline];
  std::string text;
  size_t fastest = g.baseline;
  for (size_t i = 0; i < g.rows.size(); ++i)
    if (g.rows[i]->median_ms < g.rows[fastest]->median_ms) fastest = i;
  const SweepRow& f = *g.rows[fastest];
  if (fastest == g.baseline) {
    text = "fastest: " + name(&f) + " (the baseline)";
  } else {
    text = "fastest: " + name(&f) + ", " + fmt("%.2fx", relative_time(f, base).ratio);
    if (f.versus_baseline == "faster") text += " (clearly faster than the baseline)";
    else if (f.versus_baseline == "no clear difference") text += " (no clear difference from the baseline)";
    else if (!f.versus_baseline.empty()) text += " (" + f.versus_baseline + ")";
  }
  int64_t smallest = base.predicted_peak[0];
  for (const SweepRow* r : g.rows) smallest = std::min(smallest, r->predicted_peak[0]);
  std::string smallest_names;
  for (const SweepRow* r : g.rows)
    if (r->predicted_peak[0] == smallest) smallest_names += (smallest_names.empty() ? "" : ", ") + name(r);
  text += "; smallest peak: " + smallest_names + ", " + unbroken(mib(smallest) + " MiB");
  if (base.predicted_peak[0] > 0) text += " (" + fmt("%.0f%%", 100.0 * smallest / base.predicted_peak[0]) + ")";
  std::string front;
  for (size_t i = 0; i < g.rows.size(); ++i)
    if (g.pareto[i]) front += (front.empty() ? "" : ", ") + name(g.rows[i]);
  return text + "; Pareto set (*): " + front;
}

// "<what> in every row", or the rows where it does not hold, named (up to kNamedRows) and counted.
std::string in_every_row(const std::vector<const SweepRow*>& failing, const std::string& holds,
                         const std::string& fails, const std::map<std::string, std::string>& short_name) {
  if (failing.empty()) return holds;
  std::string text = fails + " in " + plural(failing.size(), "row") + ":";
  for (size_t i = 0; i < failing.size() && i < kNamedRows; ++i)
    text += std::string(i ? "," : "") + " " + unbroken(short_name.at(failing[i]->policy) + " (" + where(*failing[i]) + ")");
  if (failing.size() > kNamedRows) text += " and " + std::to_string(failing.size() - kNamedRows) + " more";
  return text;
}

}  // namespace

RelativeTime relative_time(const SweepRow& row, const SweepRow& baseline) {
  RelativeTime t;
  t.ratio = row.median_ms / baseline.median_ms;
  auto has_interval = [](const SweepRow& r) { return r.median_high_ms > r.median_low_ms; };
  if (has_interval(row) && has_interval(baseline) && baseline.median_low_ms > 0) {
    t.has_interval = true;
    t.low = row.median_low_ms / baseline.median_high_ms;
    t.high = row.median_high_ms / baseline.median_low_ms;
  }
  return t;
}

std::vector<std::string> shorten_names(const std::vector<std::string>& names, size_t width) {
  width = std::max<size_t>(width, 6);
  auto cut = [&](const std::string& name, const std::string& tail) { return name.substr(0, width - tail.size()) + tail; };
  std::vector<std::string> out;
  for (const std::string& name : names) out.push_back(name.size() <= width ? name : cut(name, "..."));
  // The different names behind each cut text, in order of first appearance.
  std::map<std::string, std::vector<std::string>> behind;
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<std::string>& same = behind[out[i]];
    if (names[i].size() > width && std::find(same.begin(), same.end(), names[i]) == same.end()) same.push_back(names[i]);
  }
  // One count over all of them, so two numbered names never read the same either.
  std::map<std::string, size_t> number;
  for (size_t i = 0; i < names.size(); ++i)
    if (behind[out[i]].size() > 1 && !number.count(names[i])) number.emplace(names[i], number.size() + 1);
  for (size_t i = 0; i < names.size(); ++i)
    if (number.count(names[i])) out[i] = cut(names[i], "...#" + std::to_string(number.at(names[i])));
  return out;
}

namespace {

std::string table_of_rows_that_ran(const std::vector<SweepRow>& rows) {
  const std::vector<Group> groups = groups_of(rows);
  std::vector<std::vector<std::vector<std::string>>> cells(groups.size());
  std::vector<size_t> width(kNumCells);
  for (size_t k = 0; k < kNumCells; ++k)
    width[k] = std::max(std::string(kCellColumns[k].top).size(), std::string(kCellColumns[k].bottom).size());
  for (size_t g = 0; g < groups.size(); ++g)
    for (size_t i = 0; i < groups[g].rows.size(); ++i) {
      cells[g].push_back(cells_of(groups[g], i));
      for (size_t k = 0; k < kNumCells; ++k) width[k] = std::max(width[k], cells[g].back()[k].size());
    }
  // The policy column takes what the others leave of the line, and names are cut to it.
  size_t others = 0;
  for (size_t k = 0; k < kNumCells; ++k) others += gap_before(k) + (k == kPolicy ? 0 : width[k]);
  width[kPolicy] = std::min(width[kPolicy], std::max(kMinPolicyWidth, kTableWidth - std::min(kTableWidth, others)));
  std::vector<std::string> policies;
  for (const SweepRow& r : rows) policies.push_back(r.policy);
  const std::vector<std::string> cut = shorten_names(policies, width[kPolicy]);
  std::map<std::string, std::string> short_name;
  for (size_t i = 0; i < rows.size(); ++i) short_name.emplace(rows[i].policy, cut[i]);

  std::vector<std::string> top, bottom;
  for (const CellColumn& c : kCellColumns) {
    top.push_back(c.top);
    bottom.push_back(c.bottom);
  }
  const std::string note_indent(gap_before(kPareto) + width[kPareto] + gap_before(kPolicy) + 2, ' ');
  std::string out;
  std::vector<const SweepRow*> measured_differs, gradients_differ, offloaded, busy;
  double busiest = 0, worst_gradient = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const Group& group = groups[g];
    out += (g ? "\n" : "") + where(*group.rows[0]) + "\n" + line_of(top, width) + "\n" + line_of(bottom, width) + "\n";
    for (size_t i = 0; i < group.rows.size(); ++i) {
      const SweepRow& r = *group.rows[i];
      cells[g][i][kPolicy] = short_name.at(r.policy);
      out += line_of(cells[g][i], width) + "\n";
      if (const std::string notes = notes_of(r); !notes.empty()) out += wrapped(notes, note_indent, note_indent + "  ");
      if (r.measured_peak != r.predicted_peak) measured_differs.push_back(&r);
      if (!(r.max_grad_diff == 0)) {
        gradients_differ.push_back(&r);
        // A NaN difference (a gradient that is not a number) is the worst, and stays so.
        if (std::isnan(r.max_grad_diff) || r.max_grad_diff > worst_gradient) worst_gradient = r.max_grad_diff;
      }
      if (r.predicted_peak[1] > 0) offloaded.push_back(&r);
      if (r.machine_load > kBusyLoad) {
        busy.push_back(&r);
        busiest = std::max(busiest, r.machine_load);
      }
    }
    out += wrapped(summary_of(group, short_name), "  ", "    ");
  }

  out += "\n";
  out += wrapped("time: median step time over the baseline's (everything_saveable, else the group's first policy), with "
                 "its 95% interval; verdict: faster or slower when the two medians' intervals are apart, ~ = no clear "
                 "difference; peak: the planned device peak (% of the baseline's); * = Pareto set: no other row of the "
                 "group is both faster and smaller",
                 "", "  ");
  out += wrapped(in_every_row(measured_differs, "measured peak = predicted in every row", "measured peak differs from predicted",
                              short_name) +
                     "; " +
                     in_every_row(gradients_differ, "gradients agree with the baseline's in every row (max diff 0)",
                                  "gradients differ from the baseline's (up to " + fmt("%.3g", worst_gradient) + ")",
                                  short_name) +
                     "; " +
                     (offloaded.empty() ? "nothing offloaded to pinned host"
                                        : plural(offloaded.size(), "row") + (offloaded.size() == 1 ? " offloads" : " offload") +
                                              " to pinned host (noted under each)"),
                 "", "  ");
  if (!busy.empty())
    out += wrapped("the machine was busy during " + plural(busy.size(), "row") + " (up to " + fmt("%.0f", 100 * busiest) +
                       "% of its CPU): their times are less trustworthy",
                   "", "  ");
  return out;
}

}  // namespace

std::string format_table(const std::vector<SweepRow>& rows) {
  if (rows.empty()) return "no rows\n";
  const std::vector<SweepRow> ran = rows_that_ran(rows);
  std::string out = ran.empty() ? "no configuration ran\n" : table_of_rows_that_ran(ran);
  for (const std::string& line : not_run_lines(rows)) out += line + "\n";
  return out;
}

}  // namespace rematkit::sweep
