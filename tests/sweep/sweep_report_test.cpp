// The HTML report: self-contained (no links out, every SVG inline), every row in its table once,
// every text escaped, timelines only from memory reports, and notes for a busy machine.
#include "rematkit/sweep/sweep_report.hpp"

#include <gtest/gtest.h>

#include "support/test_support.hpp"

#include <memory>

namespace rematkit::sweep {
namespace {

using rematkit::testing::count_of;

SweepRow row(const std::string& model, const std::string& policy, const std::string& backend, int threads, double ms) {
  SweepRow r;
  r.model = model;
  r.policy = policy;
  r.backend = backend;
  r.threads = threads;
  r.median_ms = ms;
  r.min_ms = ms * 0.9;
  r.max_ms = ms * 1.2;
  r.median_low_ms = ms * 0.95;
  r.median_high_ms = ms * 1.05;
  r.predicted_peak = {static_cast<int64_t>(ms * 1048576), 0};
  return r;
}

// Two models; the first on two backend lists, with a policy whose name needs escaping.
std::vector<SweepRow> sweep_rows() {
  std::vector<SweepRow> rows;
  for (const char* backend : {"highway,reference", "reference"})
    for (const auto& [policy, ms] : std::vector<std::pair<std::string, double>>{
             {"everything_saveable", 2.0}, {"nothing_saveable", 3.0}, {"save_only_these_names('a<b')", 2.5}})
      rows.push_back(row("mlp", policy, backend, 1, ms));
  rows.push_back(row("cnn", "dots_saveable", "reference", 2, 1.0));
  rows.push_back(row("cnn", "budget(0.5)", "reference", 2, 1.5));
  return rows;
}

// The page's tables, each from "<table" to "</table>".
std::vector<std::string> tables_of(const std::string& html) {
  std::vector<std::string> tables;
  for (size_t at = html.find("<table"); at != std::string::npos; at = html.find("<table", at + 1))
    tables.push_back(html.substr(at, html.find("</table>", at) - at));
  return tables;
}

TEST(SweepReport, EveryRowIsInItsTableOnce) {
  const std::string html = format_report_html(sweep_rows(), {"sweep.yaml", "", {}});
  const std::vector<std::string> tables = tables_of(html);
  ASSERT_EQ(tables.size(), 3u);  // mlp on two backend lists, cnn on one
  for (size_t t = 0; t < 2; ++t) {
    EXPECT_EQ(count_of(tables[t], "<td class=\"policy\">everything_saveable</td>"), 1u);
    EXPECT_EQ(count_of(tables[t], "<td class=\"policy\">nothing_saveable</td>"), 1u);
    EXPECT_EQ(count_of(tables[t], "<td class=\"policy\">save_only_these_names(&apos;a&lt;b&apos;)</td>"), 1u);
    EXPECT_EQ(count_of(tables[t], "<td class=\"policy\">"), 3u);
  }
  EXPECT_EQ(count_of(tables[2], "<td class=\"policy\">dots_saveable</td>"), 1u);
  EXPECT_EQ(count_of(tables[2], "<td class=\"policy\">budget(0.5)</td>"), 1u);
  EXPECT_EQ(count_of(tables[2], "<td class=\"policy\">"), 2u);
  EXPECT_NE(html.find("<h1>rematkit sweep: sweep.yaml</h1>"), std::string::npos);
}

TEST(SweepReport, TimesAreRelativeToTheGroupsBaseline) {
  const std::string html = format_report_html(sweep_rows(), {});
  const std::vector<std::string> tables = tables_of(html);
  // mlp: everything_saveable (2.0 ms) is the baseline; nothing_saveable takes 3.0 / 2.0 = 1.50 times.
  EXPECT_NE(tables[0].find("<td>3.000 <span class=\"interval\">[2.850, 3.150]</span></td><td>1.50\u00d7</td>"),
            std::string::npos);
  EXPECT_EQ(count_of(tables[0], "<tr class=\"baseline\">"), 1u);
  // cnn has no everything_saveable: its first row, dots_saveable, is the baseline; 1.5 / 1.0.
  EXPECT_NE(tables[2].find("<tr class=\"baseline\"><td class=\"num\">1</td><td class=\"policy\">dots_saveable</td>"),
            std::string::npos);
  EXPECT_NE(tables[2].find("<td>1.50\u00d7</td>"), std::string::npos);
}

TEST(SweepReport, NothingOnThePagePointsOutside) {
  std::string html = format_report_html(sweep_rows(), {"<default sweep>", "2024-05-01", {"a note"}});
  // The one address allowed is the SVG namespace, which names a vocabulary and is never fetched.
  const std::string ns = "xmlns=\"http://www.w3.org/2000/svg\"";
  EXPECT_EQ(count_of(html, ns), 2u);  // the two charts
  for (size_t at = html.find(ns); at != std::string::npos; at = html.find(ns)) html.erase(at, ns.size());
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  for (const char* outside : {"<script", "<link", "<img", "@import", "url(", "src="})
    EXPECT_EQ(html.find(outside), std::string::npos) << outside;
  // Every SVG is inline and whole: as many opened as closed, none with a file's XML declaration.
  EXPECT_EQ(count_of(html, "<svg "), count_of(html, "</svg>"));
  EXPECT_EQ(html.find("<?xml"), std::string::npos);
  EXPECT_NE(html.find("<title>rematkit sweep: &lt;default sweep&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("2024-05-01"), std::string::npos);
}

TEST(SweepReport, EveryTextIsEscaped) {
  std::vector<SweepRow> rows = sweep_rows();
  rows[0].model = "mlp <&> \"x\"";
  const std::string html = format_report_html(rows, {"a&b.yaml", "", {"warning: <b>bold</b>"}});
  EXPECT_EQ(html.find("'a<b'"), std::string::npos);
  EXPECT_EQ(html.find("<b>bold</b>"), std::string::npos);
  EXPECT_NE(html.find("<li>warning: &lt;b&gt;bold&lt;/b&gt;</li>"), std::string::npos);
  EXPECT_NE(html.find("<h2>mlp &lt;&amp;&gt; &quot;x&quot;</h2>"), std::string::npos);
  EXPECT_NE(html.find("rematkit sweep: a&amp;b.yaml"), std::string::npos);
  EXPECT_EQ(html.find("a&b"), std::string::npos);
}

// A report with two steps: a forward step holding `bytes` of saved residuals, a backward step half.
std::shared_ptr<const MemoryReport> memory_of(int64_t bytes) {
  auto report = std::make_shared<MemoryReport>();
  for (Pass phase : {Pass::kForward, Pass::kBackward}) {
    StepMemory s;
    s.pass = phase;
    s.what = "step";
    const int64_t alive = phase == Pass::kForward ? bytes : bytes / 2;
    s.live_bytes[0] = alive;
    s.device_bytes[static_cast<size_t>(BufferKind::kSavedResidual)] = alive;
    report->steps.push_back(s);
  }
  report->peak_step = 0;
  report->predicted_peak[0] = report->live_peak[0] = bytes;
  return report;
}

TEST(SweepReport, TimelinesOnlyFromMemoryReports) {
  std::vector<SweepRow> rows = sweep_rows();
  const std::string without = format_report_html(rows, {});
  EXPECT_EQ(without.find("Memory timeline"), std::string::npos);
  EXPECT_EQ(count_of(without, "<svg "), 2u);  // the charts alone
  // Reports on mlp's rows: one timeline for its first group, a panel per policy; cnn has none.
  for (SweepRow& r : rows)
    if (r.model == "mlp") r.memory = memory_of(static_cast<int64_t>(r.median_ms * 1048576));
  const std::string with = format_report_html(rows, {});
  EXPECT_EQ(count_of(with, "<h3>Memory timeline: highway,reference, 1 thread</h3>"), 1u);
  EXPECT_EQ(count_of(with, "Memory timeline"), 1u);
  EXPECT_EQ(count_of(with, "<svg "), 3u);
  const std::string timeline = with.substr(with.find("<h3>Memory timeline"));
  EXPECT_NE(timeline.find(">everything_saveable</text>"), std::string::npos);
  EXPECT_NE(timeline.find(">nothing_saveable</text>"), std::string::npos);
  EXPECT_NE(timeline.find(">save_only_these_names(&apos;a&lt;b&apos;)</text>"), std::string::npos);
  EXPECT_LT(with.find("Memory timeline"), with.find("<h2>cnn</h2>"));  // inside mlp's section
}

TEST(SweepReport, ABusyMachineGetsANote) {
  std::vector<SweepRow> rows = sweep_rows();
  rows[1].machine_load = 0.25;  // at the threshold: not busy
  EXPECT_EQ(format_report_html(rows, {}).find("The machine was busy"), std::string::npos);
  rows[1].machine_load = 0.4;
  const std::string html = format_report_html(rows, {});
  EXPECT_NE(html.find("while 1 of 8 configurations were timed"), std::string::npos);
  // One item per group (its policies are timed together), with the group's highest load.
  EXPECT_NE(html.find("<li>mlp on highway,reference, 1 thread: 40%</li>"), std::string::npos);
  EXPECT_EQ(count_of(html, "<tr class=\"busy\">"), 1u);
}

}  // namespace
}  // namespace rematkit::sweep
