#include "rematkit/sweep/sweep_chart.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "rematkit/io/svg_text.hpp"
#include "rematkit/sweep/chart_axis.hpp"
#include "rematkit/sweep/chart_labels.hpp"
#include "rows_not_run.hpp"

namespace rematkit::sweep {
namespace {

constexpr double kLeft = 70, kTop = 40, kBottom = 50, kPlotWidth = 450, kPlotHeight = 370;
constexpr double kLegendGap = 40, kLegendRow = 18, kLabelFont = 10, kMarker = 4, kRing = 7;
constexpr int kTicks = 5;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}
std::string px_text(double v) { return fmt("%.1f", v); }

double peak_mib(const SweepRow& r) { return static_cast<double>(r.predicted_peak[0]) / 1048576.0; }
bool has_whisker(const SweepRow& r) { return r.max_ms > r.min_ms; }
bool has_interval(const SweepRow& r) { return r.median_high_ms > r.median_low_ms; }

// The lowest and highest step time a row draws: its median, whisker and interval.
std::pair<double, double> time_extent(const SweepRow& r) {
  double low = r.median_ms, high = r.median_ms;
  if (has_whisker(r)) low = std::min(low, r.min_ms), high = std::max(high, r.max_ms);
  if (has_interval(r)) low = std::min(low, r.median_low_ms), high = std::max(high, r.median_high_ms);
  return {low, high};
}

std::string line(double x1, double y1, double x2, double y2, const std::string& attributes) {
  return "<line x1=\"" + px_text(x1) + "\" y1=\"" + px_text(y1) + "\" x2=\"" + px_text(x2) + "\" y2=\"" + px_text(y2) +
         "\" " + attributes + "/>\n";
}
std::string text(double x, double y, const std::string& attributes, const std::string& content) {
  return "<text x=\"" + px_text(x) + "\" y=\"" + px_text(y) + "\"" + (attributes.empty() ? "" : " " + attributes) + ">" +
         xml_escape(content) + "</text>\n";
}
// A vertical min-max whisker with caps, centred on x; `kind` is its class ("whisker" on a point).
std::string whisker(double x, double top, double bottom, const std::string& color, const char* kind) {
  return std::string("<path class=\"") + kind + "\" d=\"M" + px_text(x - 3) + "," + px_text(top) + " H" + px_text(x + 3) + " M" +
         px_text(x) + "," + px_text(top) + " V" + px_text(bottom) + " M" + px_text(x - 3) + "," + px_text(bottom) +
         " H" + px_text(x + 3) + "\" fill=\"none\" stroke=\"" + color + "\" stroke-opacity=\"0.7\"/>\n";
}
// The median's confidence interval: a bar thicker than the whisker, behind the marker.
std::string interval_bar(double x, double top, double bottom, const std::string& color, const char* kind) {
  return std::string("<rect class=\"") + kind + "\" x=\"" + px_text(x - 2.5) + "\" y=\"" + px_text(top) + "\" width=\"5\" height=\"" +
         px_text(std::max(bottom - top, 0.5)) + "\" fill=\"" + color + "\" fill-opacity=\"0.45\"/>\n";
}

}  // namespace

std::string series_name(const SweepRow& r) {
  return r.backend + ", " + std::to_string(r.threads) + " thread" + (r.threads == 1 ? "" : "s");
}

std::vector<bool> pareto_front(const std::vector<std::pair<double, double>>& points) {
  std::vector<bool> front(points.size(), true);
  for (size_t i = 0; i < points.size(); ++i)
    for (size_t j = 0; j < points.size() && front[i]; ++j) {
      const auto& [xi, yi] = points[i];
      const auto& [xj, yj] = points[j];
      if (j != i && xj <= xi && yj <= yi && (xj < xi || yj < yi)) front[i] = false;
    }
  return front;
}

std::string chart_file_name(const std::string& model) {
  std::string name;
  for (char c : model) name += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  return name + ".svg";
}

std::string format_svg(const std::vector<SweepRow>& all, const std::string& model) {
  std::vector<SweepRow> rows;
  for (const SweepRow& r : rows_that_ran(all))  // a row that did not run has no time to draw
    if (r.model == model) rows.push_back(r);
  // One series per backend list and thread count, in order of appearance; policies numbered from 1.
  std::vector<std::string> series;
  std::vector<std::string> policies;
  for (const SweepRow& r : rows) {
    const std::string s = series_name(r);
    if (std::find(series.begin(), series.end(), s) == series.end()) series.push_back(s);
    if (std::find(policies.begin(), policies.end(), r.policy) == policies.end()) policies.push_back(r.policy);
  }
  auto number_of = [&](const std::string& policy) {
    return static_cast<size_t>(std::find(policies.begin(), policies.end(), policy) - policies.begin()) + 1;
  };

  // Axes fitted to what is drawn: every peak, and every median with its whisker and interval.
  double min_x = 0, max_x = 0, min_y = 0, max_y = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto [low, high] = time_extent(rows[i]);
    min_x = i == 0 ? peak_mib(rows[i]) : std::min(min_x, peak_mib(rows[i]));
    max_x = i == 0 ? peak_mib(rows[i]) : std::max(max_x, peak_mib(rows[i]));
    min_y = i == 0 ? low : std::min(min_y, low);
    max_y = i == 0 ? high : std::max(max_y, high);
  }
  const AxisScale x_axis = fit_axis(min_x, max_x, kTicks), y_axis = fit_axis(min_y, max_y, kTicks);
  auto px = [&](double mib) { return kLeft + (mib - x_axis.low) / (x_axis.high - x_axis.low) * kPlotWidth; };
  auto py = [&](double ms) { return kTop + kPlotHeight - (ms - y_axis.low) / (y_axis.high - y_axis.low) * kPlotHeight; };

  // The legend's lines, to size the picture: series, marker meanings, then the policies.
  const std::vector<std::pair<std::string, std::string>> meanings = {
      {"ring", "Pareto front (none both faster and smaller)"},
      {"dashed", "the front, joined by peak"},
      {"solid", "budget(...) rows, joined by peak"},
      {"whisker", "fastest to slowest step (min to max)"},
      {"bar", "95% interval of the median"},
  };
  const double legend_x = kLeft + kPlotWidth + kLegendGap;
  double legend_width = label_width("Policies", 12);
  for (const std::string& s : series) legend_width = std::max(legend_width, 24 + label_width(s, 12));
  for (const auto& m : meanings) legend_width = std::max(legend_width, 30 + label_width(m.second, 11));
  for (size_t p = 0; p < policies.size(); ++p)
    legend_width = std::max(legend_width, label_width(std::to_string(p + 1) + "  " + policies[p], 11));
  const double legend_rows = 3.0 + static_cast<double>(series.size() + meanings.size() + policies.size());
  const double width = legend_x + legend_width + 16;
  const double height = std::max(kTop + kPlotHeight + kBottom, kTop + 10 + legend_rows * kLegendRow + 12);

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", width) + "\" height=\"" +
                    fmt("%.0f", height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<title>" + xml_escape(model) + ": step time against peak memory</title>\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += text(kLeft, 24, "font-size=\"15\"", model + ": training step time against peak device memory");

  // Grid and ticks at the round values, then the frame's left and bottom sides over them.
  const double bottom = kTop + kPlotHeight, right = kLeft + kPlotWidth;
  svg += "<g stroke=\"#e4e4e4\">\n";
  for (double t : x_axis.ticks) svg += line(px(t), kTop, px(t), bottom, "");
  for (double t : y_axis.ticks) svg += line(kLeft, py(t), right, py(t), "");
  svg += "</g>\n<g stroke=\"#444\">\n";
  for (double t : x_axis.ticks) svg += line(px(t), bottom, px(t), bottom + 4, "");
  for (double t : y_axis.ticks) svg += line(kLeft - 4, py(t), kLeft, py(t), "");
  svg += line(kLeft, bottom, right, bottom, "") + line(kLeft, kTop, kLeft, bottom, "") + "</g>\n";
  for (double t : x_axis.ticks)
    svg += text(px(t), bottom + 17, "class=\"tick\" text-anchor=\"middle\"", tick_label(t, x_axis.step));
  for (double t : y_axis.ticks)
    svg += text(kLeft - 7, py(t) + 4, "class=\"tick\" text-anchor=\"end\"", tick_label(t, y_axis.step));
  svg += text(kLeft + kPlotWidth / 2, bottom + 38, "text-anchor=\"middle\"", "peak device memory (MiB, predicted = measured)");
  svg += "<text transform=\"translate(18," + px_text(kTop + kPlotHeight / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">median step time (ms)</text>\n";

  // Labels are placed after every series is drawn, so they avoid each other across series.
  std::vector<LabelAnchor> anchors;
  std::vector<size_t> anchor_series;
  std::vector<LabelBox> whiskers;
  for (size_t s = 0; s < series.size(); ++s) {
    const std::string color = kColors[s % std::size(kColors)];
    std::vector<const SweepRow*> points;
    std::vector<std::pair<double, double>> xy;
    for (const SweepRow& r : rows)
      if (series_name(r) == series[s]) {
        points.push_back(&r);
        xy.emplace_back(peak_mib(r), r.median_ms);
      }
    const std::vector<bool> front = pareto_front(xy);
    std::vector<std::pair<double, double>> front_points;
    for (size_t i = 0; i < xy.size(); ++i)
      if (front[i]) front_points.push_back(xy[i]);
    std::sort(front_points.begin(), front_points.end());
    std::string path;
    for (const auto& [x, y] : front_points) path += (path.empty() ? "M" : " L") + px_text(px(x)) + "," + px_text(py(y));
    if (front_points.size() > 1)
      svg += "<path class=\"pareto-front\" d=\"" + path + "\" fill=\"none\" stroke=\"" + color + "\" stroke-dasharray=\"4 3\"/>\n";
    // The budget solver's rows, budget(...), by peak: its frontier over the budgets the sweep asked.
    std::vector<std::pair<double, double>> solved;
    for (size_t i = 0; i < points.size(); ++i)
      if (points[i]->policy.rfind("budget(", 0) == 0) solved.push_back(xy[i]);
    std::sort(solved.begin(), solved.end());
    std::string solid;
    for (const auto& [x, y] : solved) solid += (solid.empty() ? "M" : " L") + px_text(px(x)) + "," + px_text(py(y));
    if (solved.size() > 1)
      svg += "<path class=\"budget-frontier\" d=\"" + solid + "\" fill=\"none\" stroke=\"" + color + "\" stroke-width=\"2\"/>\n";

    std::vector<LabelAnchor> series_anchors;
    for (size_t i = 0; i < points.size(); ++i) {
      const SweepRow& r = *points[i];
      const double cx = px(xy[i].first), cy = py(xy[i].second);
      if (has_whisker(r)) {
        svg += whisker(cx, py(r.max_ms), py(r.min_ms), color, "whisker");
        whiskers.push_back({cx - 3, py(r.max_ms), 6, py(r.min_ms) - py(r.max_ms)});
      }
      if (has_interval(r)) svg += interval_bar(cx, py(r.median_high_ms), py(r.median_low_ms), color, "interval");
      std::string tip = r.policy + " on " + series[s] + ": " + fmt("%.3f", r.median_ms) + " ms";
      if (has_interval(r)) tip += " [" + fmt("%.3f", r.median_low_ms) + ", " + fmt("%.3f", r.median_high_ms) + "]";
      if (has_whisker(r)) tip += ", min " + fmt("%.3f", r.min_ms) + ", max " + fmt("%.3f", r.max_ms);
      tip += ", " + fmt("%.2f", xy[i].first) + " MiB" + (front[i] ? " (Pareto front)" : "");
      // The title is the point's tooltip in a browser.
      svg += "<g><title>" + xml_escape(tip) + "</title><circle cx=\"" + px_text(cx) + "\" cy=\"" + px_text(cy) +
             "\" r=\"4\" fill=\"" + color + "\"/></g>\n";
      if (front[i])
        svg += "<circle cx=\"" + px_text(cx) + "\" cy=\"" + px_text(cy) + "\" r=\"" + fmt("%.0f", kRing) + "\" fill=\"none\" stroke=\"" + color +
               "\"/>\n";
      series_anchors.push_back({cx, cy, std::to_string(number_of(r.policy))});
    }
    // Markers closer than a radius hide each other: one label names them all.
    for (LabelAnchor& a : merge_coincident(series_anchors, kMarker)) {
      anchors.push_back(std::move(a));
      anchor_series.push_back(s);
    }
  }
  // Labels keep clear of the Pareto ring, the widest mark around a point, and of every whisker.
  const std::vector<LabelBox> boxes =
      place_labels(anchors, {kLeft, kTop, kPlotWidth, kPlotHeight}, kRing, kLabelFont, whiskers);
  for (size_t a = 0; a < anchors.size(); ++a)
    svg += text(boxes[a].x + 1, boxes[a].y + kLabelFont * 0.9,
                std::string("class=\"label\" font-size=\"10\" fill=\"") + kColors[anchor_series[a] % std::size(kColors)] + "\"",
                anchors[a].text);

  // The legend: series colours, what each mark means (with a sample of it), the policy numbers.
  double y = kTop + 4;
  svg += text(legend_x, y + 4, "font-weight=\"bold\"", "Series");
  for (size_t s = 0; s < series.size(); ++s) {
    y += kLegendRow;
    svg += "<circle cx=\"" + px_text(legend_x + 6) + "\" cy=\"" + px_text(y) + "\" r=\"4\" fill=\"" +
           kColors[s % std::size(kColors)] + "\"/>\n" + text(legend_x + 20, y + 4, "", series[s]);
  }
  y += kLegendRow * 1.5;
  svg += text(legend_x, y + 4, "font-weight=\"bold\"", "Marks");
  for (const auto& [mark, meaning] : meanings) {
    y += kLegendRow;
    const double mx = legend_x + 10;
    if (mark == "ring") svg += "<circle cx=\"" + px_text(mx) + "\" cy=\"" + px_text(y) + "\" r=\"7\" fill=\"none\" stroke=\"#444\"/>\n";
    if (mark == "dashed") svg += line(mx - 10, y, mx + 10, y, "stroke=\"#444\" stroke-dasharray=\"4 3\"");
    if (mark == "solid") svg += line(mx - 10, y, mx + 10, y, "stroke=\"#444\" stroke-width=\"2\"");
    if (mark == "whisker") svg += whisker(mx, y - 7, y + 7, "#444", "legend-whisker");
    if (mark == "bar") svg += interval_bar(mx, y - 5, y + 5, "#444", "legend-interval");
    svg += text(legend_x + 30, y + 4, "font-size=\"11\"", meaning);
  }
  y += kLegendRow * 1.5;
  svg += text(legend_x, y + 4, "font-weight=\"bold\"", "Policies");
  for (size_t p = 0; p < policies.size(); ++p) {
    y += kLegendRow;
    svg += text(legend_x, y + 4, "font-size=\"11\"", std::to_string(p + 1) + "  " + policies[p]);
  }
  return svg + "</svg>\n";
}

}  // namespace rematkit::sweep
