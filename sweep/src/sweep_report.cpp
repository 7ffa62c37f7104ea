#include "rematkit/sweep/sweep_report.hpp"

#include <algorithm>
#include <cstdio>

#include "rematkit/io/memory_timeline.hpp"
#include "rematkit/io/svg_text.hpp"
#include "rematkit/sweep/sweep_chart.hpp"
#include "rows_not_run.hpp"

namespace rematkit::sweep {
namespace {

// Inline and small: the page must open from a file, so nothing here may point elsewhere.
constexpr const char* kStyle = R"(
body { font-family: system-ui, sans-serif; margin: 24px 32px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 19px; margin-top: 36px; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 20px 0 6px; }
p.meta, p.help { color: #555; margin: 4px 0; }
div.notes, div.load { border-left: 4px solid #888; background: #f6f6f6; padding: 6px 12px; margin: 12px 0; }
div.load { border-color: #e69500; background: #fff6e5; }
div.notes ul, div.load ul { margin: 4px 0; padding-left: 20px; }
nav a { margin-right: 14px; }
table { border-collapse: collapse; font-size: 13px; margin-bottom: 8px; }
th, td { padding: 3px 7px; border-bottom: 1px solid #e2e2e2; text-align: right; white-space: nowrap; }
th { background: #f0f0f0; font-weight: 600; white-space: normal; vertical-align: bottom; }
td.policy, th.policy { text-align: left; }
td.num, th.num { text-align: right; color: #777; }
span.interval { color: #666; }
tr.baseline td { font-weight: 600; }
tr.busy td { background: #fff6e5; }
td.faster { color: #1a7f37; }
td.slower { color: #c62828; }
td.front { color: #1f4fa0; }
div.figure { overflow-x: auto; margin: 10px 0; }
)";

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

double mib(int64_t bytes) { return static_cast<double>(bytes) / 1048576.0; }

std::string cell(const std::string& cls, const std::string& text) {
  return "<td" + (cls.empty() ? std::string() : " class=\"" + cls + "\"") + ">" + xml_escape(text) + "</td>";
}

// A model's rows, split by backend list and thread count, in order of first appearance.
struct Group {
  std::string name;
  std::vector<const SweepRow*> rows;
};
std::vector<Group> groups_of(const std::vector<const SweepRow*>& rows) {
  std::vector<Group> groups;
  for (const SweepRow* r : rows) {
    const std::string name = series_name(*r);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.name == name; });
    if (g == groups.end()) g = groups.insert(groups.end(), Group{name, {}});
    g->rows.push_back(r);
  }
  return groups;
}

const SweepRow& baseline_of(const Group& g) {
  for (const SweepRow* r : g.rows)
    if (r->policy == "everything_saveable") return *r;
  return *g.rows.front();
}

// One table row per policy of the group; `number` is the policy's number on the chart.
std::string group_table(const Group& g, const std::vector<std::string>& policies) {
  const SweepRow& baseline = baseline_of(g);
  std::vector<std::pair<double, double>> points;
  for (const SweepRow* r : g.rows) points.emplace_back(mib(r->predicted_peak[0]), r->median_ms);
  const std::vector<bool> front = pareto_front(points);
  std::string html =
      "<table>\n<tr><th class=\"num\">#</th><th class=\"policy\">policy</th><th>median ms [95% interval]</th>"
      "<th>vs baseline</th><th>verdict</th><th>peak MiB</th><th>residual MiB</th><th>recompute GFLOP</th>"
      "<th>process peak RSS MiB</th><th>Pareto</th></tr>\n";
  for (size_t i = 0; i < g.rows.size(); ++i) {
    const SweepRow& r = *g.rows[i];
    const bool is_baseline = &r == &baseline;
    std::string classes = is_baseline ? "baseline" : "";
    if (r.machine_load > kBusyMachineLoad) classes += classes.empty() ? "busy" : " busy";
    const size_t number = static_cast<size_t>(std::find(policies.begin(), policies.end(), r.policy) - policies.begin()) + 1;
    const bool interval = r.median_high_ms > r.median_low_ms;
    const std::string relative =
        is_baseline ? "baseline" : baseline.median_ms > 0 ? fmt("%.2f", r.median_ms / baseline.median_ms) + "\u00d7" : "";
    const std::string verdict = is_baseline ? "" : r.versus_baseline;
    const std::string verdict_class = verdict == "faster" ? "faster" : verdict == "slower" ? "slower" : "";
    html += "<tr" + (classes.empty() ? std::string() : " class=\"" + classes + "\"") + ">" +
            cell("num", std::to_string(number)) + cell("policy", r.policy) + "<td>" + fmt("%.3f", r.median_ms) +
            (interval ? " <span class=\"interval\">[" + fmt("%.3f", r.median_low_ms) + ", " + fmt("%.3f", r.median_high_ms) + "]</span>" : "") +
            "</td>" +
            cell("", relative) + cell(verdict_class, verdict) + cell("", fmt("%.2f", mib(r.predicted_peak[0]))) +
            cell("", fmt("%.2f", mib(r.residual_bytes))) + cell("", fmt("%.3f", static_cast<double>(r.recompute_flops) / 1e9)) +
            cell("", r.process_peak_rss > 0 ? fmt("%.0f", mib(r.process_peak_rss)) : "") +
            cell(front[i] ? "front" : "", front[i] ? "front" : "") + "</tr>\n";
  }
  return html + "</table>\n";
}

// An SVG to put inside HTML: without the XML declaration a standalone file starts with.
std::string inline_svg(std::string svg) {
  if (svg.rfind("<?xml", 0) == 0) svg.erase(0, svg.find("?>") + 2);
  return svg.erase(0, svg.find_first_not_of("\n"));
}

// The timelines of the first group with memory reports: one panel per policy that has one.
std::string timeline_section(const std::vector<Group>& groups) {
  for (const Group& g : groups) {
    std::vector<TimelinePanel> panels;
    for (const SweepRow* r : g.rows)
      if (r->memory) panels.push_back({r->policy, r->memory.get()});
    if (panels.empty()) continue;
    return "<h3>Memory timeline: " + xml_escape(g.name) + "</h3>\n<div class=\"figure timeline\">\n" +
           inline_svg(memory_timeline_svg(panels)) + "</div>\n";
  }
  return "";
}

std::string load_note(const std::vector<SweepRow>& rows) {
  // One item per model, backend list and threads: a group's policies are timed together, so they
  // share the load.
  std::string items, last;
  size_t busy = 0;
  for (const SweepRow& r : rows)
    if (r.machine_load > kBusyMachineLoad) {
      ++busy;
      const std::string group = r.model + " on " + series_name(r);
      double most = 0;
      for (const SweepRow& other : rows)
        if (other.model == r.model && series_name(other) == series_name(r)) most = std::max(most, other.machine_load);
      if (group != last) items += "<li>" + xml_escape(group + ": " + fmt("%.0f", most * 100) + "%") + "</li>\n";
      last = group;
    }
  if (busy == 0) return "";
  return "<div class=\"load\"><strong>The machine was busy.</strong> Other processes took more than " +
         fmt("%.0f", kBusyMachineLoad * 100) + "% of the CPU while " + std::to_string(busy) + " of " +
         std::to_string(rows.size()) +
         " configurations were timed (shaded in the tables): their times are likely slower and noisier than on an "
         "idle machine.\n<ul>\n" + items + "</ul></div>\n";
}

}  // namespace

std::string format_report_html(const std::vector<SweepRow>& all, const ReportOptions& given) {
  // The rows that ran are tabled and drawn; the others are notes, each saying what stopped it.
  const std::vector<SweepRow> rows = rows_that_ran(all);
  ReportOptions options = given;
  for (const std::string& line : not_run_lines(all)) options.notes.push_back(line);
  const std::string title = options.source.empty() ? "rematkit sweep" : "rematkit sweep: " + options.source;
  std::vector<std::string> models;
  for (const SweepRow& r : rows)
    if (std::find(models.begin(), models.end(), r.model) == models.end()) models.push_back(r.model);

  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + xml_escape(title) +
                     "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<h1>" + xml_escape(title) + "</h1>\n";
  std::string meta = std::to_string(rows.size()) + " configurations, " + std::to_string(models.size()) + " model" +
                     (models.size() == 1 ? "" : "s");
  if (!options.date.empty()) meta = options.date + " \u00b7 " + meta;
  html += "<p class=\"meta\">" + xml_escape(meta) + "</p>\n";
  if (!options.notes.empty()) {
    html += "<div class=\"notes\"><strong>Notes</strong>\n<ul>\n";
    for (const std::string& n : options.notes) html += "<li>" + xml_escape(n) + "</li>\n";
    html += "</ul></div>\n";
  }
  html += load_note(rows);
  html += "<p class=\"help\">Per model and per backend list and thread count: the median step time (forward and "
          "backward) with its 95% interval, the time relative to the baseline (everything_saveable, or the first "
          "policy), and the verdict: faster or slower when the two intervals do not overlap. Peak is the predicted "
          "device peak (the measured one equals it); # is the policy's number on the chart.</p>\n";
  if (models.size() > 1) {
    html += "<nav>";
    for (size_t m = 0; m < models.size(); ++m)
      html += "<a href=\"#model-" + std::to_string(m + 1) + "\">" + xml_escape(models[m]) + "</a>";
    html += "</nav>\n";
  }
  for (size_t m = 0; m < models.size(); ++m) {
    std::vector<const SweepRow*> model_rows;
    std::vector<std::string> policies;  // numbered as the chart numbers them
    for (const SweepRow& r : rows)
      if (r.model == models[m]) {
        model_rows.push_back(&r);
        if (std::find(policies.begin(), policies.end(), r.policy) == policies.end()) policies.push_back(r.policy);
      }
    const std::vector<Group> groups = groups_of(model_rows);
    html += "<section id=\"model-" + std::to_string(m + 1) + "\">\n<h2>" + xml_escape(models[m]) + "</h2>\n";
    for (const Group& g : groups) html += "<h3>" + xml_escape(g.name) + "</h3>\n" + group_table(g, policies);
    html += "<div class=\"figure chart\">\n" + inline_svg(format_svg(rows, models[m])) + "</div>\n";
    html += timeline_section(groups);
    html += "</section>\n";
  }
  return html + "</body>\n</html>\n";
}

}  // namespace rematkit::sweep
