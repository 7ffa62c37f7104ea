#include "rematkit/sweep/sweep_chart.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>

#include "rematkit/io/svg_text.hpp"

namespace rematkit::sweep {
namespace {

constexpr double kWidth = 860, kHeight = 460, kLeft = 70, kRight = 340, kTop = 40, kBottom = 50;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

// The series a row belongs to: its backend list and thread count.
std::string series_of(const SweepRow& r) {
  return r.backend + ", " + std::to_string(r.threads) + " thread" + (r.threads == 1 ? "" : "s");
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

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
  for (const SweepRow& r : all)
    if (r.model == model) rows.push_back(r);
  // One series per backend list and thread count, in order of appearance.
  std::vector<std::string> series;
  std::vector<std::string> policies;
  for (const SweepRow& r : rows) {
    const std::string s = series_of(r);
    if (std::find(series.begin(), series.end(), s) == series.end()) series.push_back(s);
    if (std::find(policies.begin(), policies.end(), r.policy) == policies.end()) policies.push_back(r.policy);
  }
  double max_x = 0, max_y = 0;
  for (const SweepRow& r : rows) {
    max_x = std::max(max_x, r.predicted_peak[0] / 1048576.0);
    max_y = std::max(max_y, r.median_ms);
  }
  max_x = max_x > 0 ? max_x * 1.1 : 1;
  max_y = max_y > 0 ? max_y * 1.1 : 1;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double mib) { return kLeft + mib / max_x * plot_w; };
  auto py = [&](double ms) { return kTop + plot_h - ms / max_y * plot_h; };

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", kWidth) + "\" height=\"" +
                    fmt("%.0f", kHeight) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<title>" + xml_escape(model) + ": step time against peak memory</title>\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + fmt("%.0f", kLeft) + "\" y=\"24\" font-size=\"15\">" + xml_escape(model) +
         ": training step time against peak device memory</text>\n";
  // Axes with five ticks each.
  svg += "<g stroke=\"#444\"><line x1=\"" + fmt("%.1f", kLeft) + "\" y1=\"" + fmt("%.1f", kTop + plot_h) + "\" x2=\"" +
         fmt("%.1f", kLeft + plot_w) + "\" y2=\"" + fmt("%.1f", kTop + plot_h) + "\"/><line x1=\"" + fmt("%.1f", kLeft) +
         "\" y1=\"" + fmt("%.1f", kTop) + "\" x2=\"" + fmt("%.1f", kLeft) + "\" y2=\"" + fmt("%.1f", kTop + plot_h) +
         "\"/></g>\n";
  for (int t = 0; t <= 5; ++t) {
    const double x = max_x * t / 5, y = max_y * t / 5;
    svg += "<text x=\"" + fmt("%.1f", px(x)) + "\" y=\"" + fmt("%.1f", kTop + plot_h + 16) + "\" text-anchor=\"middle\">" +
           fmt("%.3g", x) + "</text>\n";
    svg += "<text x=\"" + fmt("%.1f", kLeft - 6) + "\" y=\"" + fmt("%.1f", py(y) + 4) + "\" text-anchor=\"end\">" +
           fmt("%.3g", y) + "</text>\n";
  }
  svg += "<text x=\"" + fmt("%.1f", kLeft + plot_w / 2) + "\" y=\"" + fmt("%.1f", kHeight - 12) +
         "\" text-anchor=\"middle\">peak device memory (MiB, predicted = measured)</text>\n";
  svg += "<text transform=\"translate(16," + fmt("%.1f", kTop + plot_h / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">median step time (ms)</text>\n";

  for (size_t s = 0; s < series.size(); ++s) {
    const char* color = kColors[s % std::size(kColors)];
    std::vector<const SweepRow*> points;
    std::vector<std::pair<double, double>> xy;
    for (const SweepRow& r : rows)
      if (series_of(r) == series[s]) {
        points.push_back(&r);
        xy.emplace_back(r.predicted_peak[0] / 1048576.0, r.median_ms);
      }
    const std::vector<bool> front = pareto_front(xy);
    std::vector<std::pair<double, double>> front_points;
    for (size_t i = 0; i < xy.size(); ++i)
      if (front[i]) front_points.push_back(xy[i]);
    std::sort(front_points.begin(), front_points.end());
    std::string path;
    for (const auto& [x, y] : front_points) path += (path.empty() ? "M" : " L") + fmt("%.1f", px(x)) + "," + fmt("%.1f", py(y));
    if (front_points.size() > 1)
      svg += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + color + "\" stroke-dasharray=\"4 3\"/>\n";
    // The budget solver's rows, budget(...), by peak: its frontier over the budgets the sweep asked.
    std::vector<std::pair<double, double>> solved;
    for (size_t i = 0; i < points.size(); ++i)
      if (points[i]->policy.rfind("budget(", 0) == 0) solved.push_back(xy[i]);
    std::sort(solved.begin(), solved.end());
    std::string line;
    for (const auto& [x, y] : solved) line += (line.empty() ? "M" : " L") + fmt("%.1f", px(x)) + "," + fmt("%.1f", py(y));
    if (solved.size() > 1)
      svg += "<path d=\"" + line + "\" fill=\"none\" stroke=\"" + color + "\" stroke-width=\"2\"/>\n";
    for (size_t i = 0; i < points.size(); ++i) {
      const size_t label = static_cast<size_t>(std::find(policies.begin(), policies.end(), points[i]->policy) - policies.begin()) + 1;
      const std::string cx = fmt("%.1f", px(xy[i].first)), cy = fmt("%.1f", py(xy[i].second));
      // The title is the point's tooltip in a browser.
      svg += "<g><title>" +
             xml_escape(points[i]->policy + " on " + series[s] + ": " + fmt("%.3f", xy[i].second) + " ms, " +
                    fmt("%.2f", xy[i].first) + " MiB" + (front[i] ? " (Pareto front)" : "")) +
             "</title><circle cx=\"" + cx + "\" cy=\"" + cy + "\" r=\"4\" fill=\"" + color + "\"/></g>\n";
      if (front[i])
        svg += "<circle cx=\"" + cx + "\" cy=\"" + cy + "\" r=\"7\" fill=\"none\" stroke=\"" + color + "\"/>\n";
      svg += "<text x=\"" + fmt("%.1f", px(xy[i].first) + 8) + "\" y=\"" + fmt("%.1f", py(xy[i].second) - 6) +
             "\" font-size=\"10\" fill=\"" + color + "\">" + std::to_string(label) + "</text>\n";
    }
    svg += "<circle cx=\"" + fmt("%.1f", kWidth - kRight + 20) + "\" cy=\"" + fmt("%.1f", kTop + 10 + 18.0 * s) +
           "\" r=\"4\" fill=\"" + color + "\"/><text x=\"" + fmt("%.1f", kWidth - kRight + 30) + "\" y=\"" +
           fmt("%.1f", kTop + 14 + 18.0 * s) + "\">" + xml_escape(series[s]) + "</text>\n";
  }
  const double legend_top = kTop + 30 + 18.0 * static_cast<double>(series.size());
  svg += "<text x=\"" + fmt("%.1f", kWidth - kRight + 14) + "\" y=\"" + fmt("%.1f", legend_top) +
         "\">ringed and dashed: Pareto front; solid: budget(...) rows</text>\n";
  for (size_t p = 0; p < policies.size(); ++p)
    svg += "<text x=\"" + fmt("%.1f", kWidth - kRight + 14) + "\" y=\"" + fmt("%.1f", legend_top + 18 + 16.0 * p) +
           "\" font-size=\"10\">" + std::to_string(p + 1) + ": " + xml_escape(policies[p]) + "</text>\n";
  return svg + "</svg>\n";
}

}  // namespace rematkit::sweep
