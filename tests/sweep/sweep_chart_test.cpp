// Charts: the Pareto front by its definition, and an SVG that holds every point once, on axes fitted
// to the data, with its whisker and interval, and labels merged where points coincide.
#include "rematkit/sweep/sweep_chart.hpp"

#include <gtest/gtest.h>

#include "support/test_support.hpp"

#include <algorithm>

namespace rematkit::sweep {
namespace {

using rematkit::testing::count_of;

// The texts of the <text> elements of a class, in order.
std::vector<std::string> texts_of_class(const std::string& svg, const std::string& cls) {
  std::vector<std::string> texts;
  const std::string needle = "class=\"" + cls + "\"";
  for (size_t at = svg.find(needle); at != std::string::npos; at = svg.find(needle, at + 1)) {
    const size_t open = svg.find('>', at) + 1;
    texts.push_back(svg.substr(open, svg.find("</text>", open) - open));
  }
  return texts;
}

SweepRow timed_row(const std::string& policy, double mib, double median, double min, double max) {
  SweepRow r;
  r.model = "m";
  r.policy = policy;
  r.backend = "reference";
  r.median_ms = median;
  r.min_ms = min;
  r.max_ms = max;
  r.predicted_peak = {static_cast<int64_t>(mib * 1048576), 0};
  return r;
}

TEST(SweepChart, ParetoFrontKeepsThePointsNothingBeats) {
  // (memory, time): (1, 9) and (9, 1) are extremes, (4, 4) is between them; (5, 5) is beaten by
  // (4, 4); (1, 10) is beaten by (1, 9) in time alone; a duplicate of a front point stays.
  const std::vector<std::pair<double, double>> points = {{1, 9}, {9, 1}, {4, 4}, {5, 5}, {1, 10}, {4, 4}};
  EXPECT_EQ(pareto_front(points), (std::vector<bool>{true, true, true, false, false, true}));
  EXPECT_EQ(pareto_front({}), std::vector<bool>{});
}

TEST(SweepChart, OnePointPerRowOfTheModelAndEscapedNames) {
  std::vector<SweepRow> rows;
  for (const char* policy : {"everything_saveable", "save_only_these_names('a<b')"}) {
    for (int threads : {1, 2}) {
      SweepRow r;
      r.model = "m";
      r.policy = policy;
      r.backend = "highway,reference";
      r.threads = threads;
      r.median_ms = threads == 1 ? 2.0 : 1.0;
      r.predicted_peak = {static_cast<int64_t>(1 << 20) * (policy[0] == 'e' ? 2 : 1), 0};
      rows.push_back(r);
    }
  }
  SweepRow other = rows[0];
  other.model = "another";
  rows.push_back(other);
  const std::string svg = format_svg(rows, "m");
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = svg.find(needle); at != std::string::npos; at = svg.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("r=\"4\" fill"), 4u + 2u);  // four points and two legend dots (1 and 2 threads)
  EXPECT_EQ(count("(Pareto front)"), 2u);     // per thread count, the smaller policy at the same time wins
  EXPECT_EQ(count("save_only_these_names(&apos;a&lt;b&apos;)"), 3u);  // two point titles and the legend
  EXPECT_EQ(svg.find("another"), std::string::npos);
  EXPECT_EQ(chart_file_name("mlp 3x256/relu"), "mlp_3x256_relu.svg");
}

TEST(SweepChart, TheBudgetRowsOfASeriesAreJoinedByOneSolidLine) {
  // Three budget rows and a fixed policy on one backend and thread count: one solid line through
  // the three budget points, in peak order; a single budget row draws none.
  std::vector<SweepRow> rows;
  for (const char* policy : {"budget(0.6)", "nothing_saveable", "budget(0)", "budget(1)"}) {
    SweepRow r;
    r.model = "m";
    r.policy = policy;
    r.backend = "reference";
    r.threads = 1;
    r.median_ms = 1.0;
    r.predicted_peak = {static_cast<int64_t>(1 << 20), 0};
    rows.push_back(r);
  }
  // (The legend's sample of the solid line is a <line>, not a budget-frontier path.)
  const std::string svg = format_svg(rows, "m");
  const size_t line = svg.find("class=\"budget-frontier\"");
  ASSERT_NE(line, std::string::npos);
  EXPECT_EQ(svg.find("class=\"budget-frontier\"", line + 1), std::string::npos);
  const std::string path = svg.substr(line, svg.find('>', line) - line);
  EXPECT_NE(path.find("stroke-width=\"2\""), std::string::npos) << path;
  EXPECT_EQ(std::count(path.begin(), path.end(), 'L'), 2) << path;  // M, then two L: three points
  rows.resize(2);
  EXPECT_EQ(format_svg(rows, "m").find("class=\"budget-frontier\""), std::string::npos);
}

TEST(SweepChart, AxesAreFittedToTheDataWithRoundTicks) {
  // Peaks 12.3..17.9 MiB: ticks 12..18 in steps of 2 (chart_axis_test works it out). Times: the
  // whiskers reach 0.62 and 1.87 ms, so the axis is 0.5..2.0 in steps of 0.5, not 0..1.6 * 1.1.
  std::vector<SweepRow> rows = {timed_row("a", 12.3, 0.8, 0.62, 0.9), timed_row("b", 15.0, 1.2, 1.1, 1.3),
                                timed_row("c", 17.9, 1.6, 1.5, 1.87)};
  rows[0].median_low_ms = 0.75, rows[0].median_high_ms = 0.85;
  rows[1].median_low_ms = 1.15, rows[1].median_high_ms = 1.25;
  rows[2].median_low_ms = rows[2].median_high_ms = 1.6;  // no interval: high is not above low
  const std::string svg = format_svg(rows, "m");
  EXPECT_EQ(texts_of_class(svg, "tick"), (std::vector<std::string>{"12", "14", "16", "18", "0.5", "1.0", "1.5", "2.0"}));
  // A whisker per point, an interval bar where one is set, each once more as the legend's sample.
  EXPECT_EQ(count_of(svg, "class=\"whisker\""), 3u);
  EXPECT_EQ(count_of(svg, "class=\"interval\""), 2u);
  EXPECT_EQ(count_of(svg, "class=\"legend-whisker\""), 1u);
  EXPECT_EQ(count_of(svg, "class=\"legend-interval\""), 1u);
  EXPECT_NE(svg.find("a on reference, 1 thread: 0.800 ms [0.750, 0.850], min 0.620, max 0.900, 12.30 MiB"),
            std::string::npos);
  EXPECT_NE(svg.find("95% interval of the median"), std::string::npos);
  EXPECT_NE(svg.find(">3  c</text>"), std::string::npos);  // the policy numbers with their names
}

TEST(SweepChart, OnePointStillGetsAxesAroundIt) {
  // 1 MiB and 5 ms alone: x is widened to 0.9..1.1 (steps of 0.05), y to 4.4..5.6 (steps of 0.2),
  // so the point is in the middle of the plot: x 70 + 450 / 2, y 40 + 370 / 2.
  const std::string svg = format_svg({timed_row("a", 1, 5, 0, 0)}, "m");
  EXPECT_EQ(texts_of_class(svg, "tick"), (std::vector<std::string>{"0.90", "0.95", "1.00", "1.05", "1.10", "4.4",
                                                                   "4.6", "4.8", "5.0", "5.2", "5.4", "5.6"}));
  EXPECT_NE(svg.find("cx=\"295.0\" cy=\"225.0\" r=\"4\""), std::string::npos);
  EXPECT_EQ(count_of(svg, "class=\"whisker\""), 0u);  // min and max unset: nothing to draw
}

TEST(SweepChart, PointsAtOnePlaceShareOneLabel) {
  // Policies 1 and 2 land on the same spot; 3 is elsewhere: two labels, "1,2" and "3".
  const std::string svg = format_svg({timed_row("a", 4, 2, 1.9, 2.1), timed_row("b", 4, 2, 1.9, 2.2),
                                      timed_row("c", 8, 1, 0.9, 1.1)},
                                     "m");
  EXPECT_EQ(texts_of_class(svg, "label"), (std::vector<std::string>{"1,2", "3"}));
}

}  // namespace
}  // namespace rematkit::sweep
