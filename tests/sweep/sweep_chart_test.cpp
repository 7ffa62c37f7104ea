// Charts: the Pareto front by its definition, and an SVG that holds every point once.
#include "rematkit/sweep/sweep_chart.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace rematkit::sweep {
namespace {

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
  const std::string svg = format_svg(rows, "m");
  const size_t line = svg.find("stroke-width=\"2\"");
  ASSERT_NE(line, std::string::npos);
  EXPECT_EQ(svg.find("stroke-width=\"2\"", line + 1), std::string::npos);
  const size_t d = svg.rfind("<path d=\"", line);
  const std::string path = svg.substr(d, line - d);
  EXPECT_EQ(std::count(path.begin(), path.end(), 'L'), 2) << path;  // M, then two L: three points
  rows.resize(2);
  EXPECT_EQ(format_svg(rows, "m").find("stroke-width=\"2\""), std::string::npos);
}

}  // namespace
}  // namespace rematkit::sweep
