#include "rematkit/io/memory_timeline.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "rematkit/io/svg_text.hpp"

namespace rematkit {
namespace {

constexpr double kLeft = 80, kRight = 24, kTop = 64, kPanelWidth = 440, kPanelGap = 36, kPlotHeight = 300;
constexpr double kLegendItem = 170, kLegendRow = 20;
constexpr size_t kDevice = static_cast<size_t>(MemorySpace::kDevice);

// Per kind, bottom of the stack first (the enum's order: inputs, then the backward pass's own).
const char* const kKindColors[kNumBufferKinds] = {"#1f77b4", "#17becf", "#9467bd", "#d62728", "#ff9896",
                                                  "#ff7f0e", "#2ca02c", "#8c564b", "#7f7f7f"};
const char* const kPhaseShades[] = {"#e9f0fa", "#fdf0dc", "#ecf5e8"};  // forward, recompute, backward

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string tick_label(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

double mib(int64_t bytes) { return static_cast<double>(bytes) / 1048576.0; }

// The points of a step function over steps [0, n): value v[s] from x(s) to x(s + 1).
template <typename X, typename Y>
std::vector<std::pair<double, double>> staircase(const std::vector<double>& v, X x, Y y) {
  std::vector<std::pair<double, double>> points{{x(0), y(v[0])}};
  for (size_t s = 1; s < v.size(); ++s)
    if (v[s] != v[s - 1]) points.insert(points.end(), {{x(s), y(v[s - 1])}, {x(s), y(v[s])}});
  points.emplace_back(x(v.size()), y(v.back()));
  return points;
}

class TimelineWriter {
 public:
  explicit TimelineWriter(const std::vector<TimelinePanel>& panels) : panels_(panels) {
    double most = 0;
    for (const TimelinePanel& p : panels) {
      most = std::max(most, mib(p.report->live_peak[kDevice]));
      for (const StepMemory& s : p.report->steps)
        for (size_t k = 0; k < kNumBufferKinds; ++k) used_kinds_[k] = used_kinds_[k] || s.device_bytes[k] > 0;
      for (const StepMemory& s : p.report->steps) used_phases_[static_cast<size_t>(s.pass)] = true;
    }
    const double room = most * 1.08;  // above the highest peak, for its label
    tick_mib_ = round_tick_step(room, 5);
    top_mib_ = room > 0 ? std::ceil(room / tick_mib_ - 1e-9) * tick_mib_ : tick_mib_;
  }

  std::string svg() {
    const double width = kLeft + static_cast<double>(panels_.size()) * (kPanelWidth + kPanelGap) - kPanelGap + kRight;
    size_t legend_items = 0;
    for (bool used : used_kinds_) legend_items += used;
    for (bool used : used_phases_) legend_items += used;
    const size_t per_row = std::max<size_t>(1, static_cast<size_t>((width - kLeft) / kLegendItem));
    const double legend_top = kTop + kPlotHeight + 56;
    const double height = legend_top + static_cast<double>((legend_items + per_row - 1) / per_row) * kLegendRow + 12;
    out_ = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) +
           "\" height=\"" + num(height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    out_ += "<title>device memory alive at each step, by buffer kind</title>\n";
    out_ += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    out_ += "<text x=\"" + num(kLeft) +
            "\" y=\"24\" font-size=\"15\">Device memory alive at each step, by buffer kind</text>\n";
    out_ += "<text transform=\"translate(20," + num(kTop + kPlotHeight / 2) +
            ") rotate(-90)\" text-anchor=\"middle\">MiB alive (device)</text>\n";
    for (size_t i = 0; i < panels_.size(); ++i)
      panel(*panels_[i].report, panels_[i].title, kLeft + static_cast<double>(i) * (kPanelWidth + kPanelGap), i == 0);
    legend(legend_top, per_row);
    return out_ + "</svg>\n";
  }

 private:
  double y(double mib_value) const { return kTop + kPlotHeight - mib_value / top_mib_ * kPlotHeight; }

  void panel(const MemoryReport& r, const std::string& title, double left, bool first) {
    const size_t n = std::max<size_t>(r.steps.size(), 1);
    auto x = [&](size_t step) { return left + static_cast<double>(step) / static_cast<double>(n) * kPanelWidth; };
    const double bottom = kTop + kPlotHeight;
    out_ += "<text x=\"" + num(left) + "\" y=\"" + num(kTop - 22) + "\" font-size=\"13\">" + xml_escape(title) +
            "</text>\n";
    // The passes, shaded behind: one band per run of steps of one phase, named where there is room.
    for (size_t a = 0; a < r.steps.size();) {
      size_t b = a;
      while (b + 1 < r.steps.size() && r.steps[b + 1].pass == r.steps[a].pass) ++b;
      const size_t phase = static_cast<size_t>(r.steps[a].pass);
      out_ += "<rect x=\"" + num(x(a)) + "\" y=\"" + num(kTop) + "\" width=\"" + num(x(b + 1) - x(a)) + "\" height=\"" +
              num(kPlotHeight) + "\" fill=\"" + kPhaseShades[phase] + "\"><title>" +
              std::string(pass_name(r.steps[a].pass)) + ": steps " + std::to_string(a) + ".." +
              std::to_string(b) + "</title></rect>\n";
      if (x(b + 1) - x(a) > 64)
        out_ += "<text x=\"" + num((x(a) + x(b + 1)) / 2) + "\" y=\"" + num(kTop - 6) +
                "\" text-anchor=\"middle\" font-size=\"10\" fill=\"#666\">" +
                std::string(pass_name(r.steps[a].pass)) + "</text>\n";
      a = b + 1;
    }
    // Grid lines and ticks: MiB on the left of the first panel, steps under every panel.
    const int y_ticks = static_cast<int>(std::lround(top_mib_ / tick_mib_));
    for (int i = 0; i <= y_ticks; ++i) {
      const double t = i * tick_mib_;
      out_ += "<line x1=\"" + num(left) + "\" y1=\"" + num(y(t)) + "\" x2=\"" + num(left + kPanelWidth) + "\" y2=\"" +
              num(y(t)) + "\" stroke=\"#ccc\" stroke-width=\"0.5\"/>\n";
      if (first)
        out_ += "<text x=\"" + num(left - 6) + "\" y=\"" + num(y(t) + 4) + "\" text-anchor=\"end\">" + tick_label(t) +
                "</text>\n";
    }
    const size_t step_tick = std::max<size_t>(1, static_cast<size_t>(round_tick_step(static_cast<double>(n), 6)));
    for (size_t s = 0; s <= n; s += step_tick)
      out_ += "<line x1=\"" + num(x(s)) + "\" y1=\"" + num(bottom) + "\" x2=\"" + num(x(s)) + "\" y2=\"" + num(bottom + 4) +
              "\" stroke=\"#444\"/><text x=\"" + num(x(s)) + "\" y=\"" + num(bottom + 16) + "\" text-anchor=\"middle\">" +
              std::to_string(s) + "</text>\n";
    out_ += "<text x=\"" + num(left + kPanelWidth / 2) + "\" y=\"" + num(bottom + 34) +
            "\" text-anchor=\"middle\">step</text>\n";
    // The kinds, stacked in the enum's order.
    if (!r.steps.empty()) {
      std::vector<double> lower(r.steps.size(), 0.0);
      for (size_t k = 0; k < kNumBufferKinds; ++k) {
        std::vector<double> upper = lower;
        int64_t most = 0;
        for (size_t s = 0; s < r.steps.size(); ++s) {
          upper[s] += mib(r.steps[s].device_bytes[k]);
          most = std::max(most, r.steps[s].device_bytes[k]);
        }
        if (most == 0) continue;
        auto yy = [&](double v) { return y(v); };
        std::vector<std::pair<double, double>> outline = staircase(upper, x, yy), base = staircase(lower, x, yy);
        outline.insert(outline.end(), base.rbegin(), base.rend());
        std::string d;
        for (const auto& [px, py] : outline) d += (d.empty() ? "M" : " L") + num(px) + "," + num(py);
        out_ += "<path d=\"" + d + " Z\" fill=\"" + kKindColors[k] + "\" fill-opacity=\"0.85\"><title>" +
                std::string(buffer_kind_name(static_cast<BufferKind>(k))) + ": at most " + human_bytes(most) +
                ", " + human_bytes(r.peak_bytes[k]) + " at the peak</title></path>\n";
        lower = std::move(upper);
      }
    }
    out_ += "<g stroke=\"#444\"><line x1=\"" + num(left) + "\" y1=\"" + num(bottom) + "\" x2=\"" + num(left + kPanelWidth) +
            "\" y2=\"" + num(bottom) + "\"/><line x1=\"" + num(left) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(left) +
            "\" y2=\"" + num(bottom) + "\"/></g>\n";
    if (r.peak_step < 0) return;
    // The peak: a dashed line up to its bytes, and a label kept inside the panel.
    const StepMemory& peak = r.steps[static_cast<size_t>(r.peak_step)];
    const double px = (x(static_cast<size_t>(r.peak_step)) + x(static_cast<size_t>(r.peak_step) + 1)) / 2;
    const double py = y(mib(peak.live_bytes[kDevice]));
    const bool left_half = px < left + kPanelWidth / 2;
    out_ += "<g><title>" + xml_escape("peak: step " + std::to_string(r.peak_step) + " (" +
                                      std::string(pass_name(peak.pass)) + "), " + peak.what + ", " +
                                      std::to_string(peak.live_bytes[kDevice]) + " bytes") +
            "</title><line x1=\"" + num(px) + "\" y1=\"" + num(bottom) + "\" x2=\"" + num(px) + "\" y2=\"" + num(py) +
            "\" stroke=\"black\" stroke-dasharray=\"4 3\"/><circle cx=\"" + num(px) + "\" cy=\"" + num(py) +
            "\" r=\"4\" fill=\"black\"/><text x=\"" + num(px + (left_half ? 8 : -8)) + "\" y=\"" +
            num(std::max(py - 8, kTop + 12)) + "\" text-anchor=\"" + (left_half ? "start" : "end") + "\">peak " +
            human_bytes(peak.live_bytes[kDevice]) + ", step " + std::to_string(r.peak_step) + " (" +
            std::string(pass_name(peak.pass)) + ")</text></g>\n";
  }

  void legend(double top, size_t per_row) {
    size_t item = 0;
    auto add = [&](const std::string& color, const std::string& name) {
      const double lx = kLeft + static_cast<double>(item % per_row) * kLegendItem;
      const double ly = top + static_cast<double>(item / per_row) * kLegendRow;
      out_ += "<rect x=\"" + num(lx) + "\" y=\"" + num(ly - 10) + "\" width=\"12\" height=\"12\" fill=\"" + color +
              "\" stroke=\"#999\" stroke-width=\"0.5\"/><text x=\"" + num(lx + 18) + "\" y=\"" + num(ly) + "\">" + name +
              "</text>\n";
      ++item;
    };
    for (size_t k = 0; k < kNumBufferKinds; ++k)
      if (used_kinds_[k]) add(kKindColors[k], std::string(buffer_kind_name(static_cast<BufferKind>(k))));
    for (size_t p = 0; p < std::size(kPhaseShades); ++p)
      if (used_phases_[p]) add(kPhaseShades[p], std::string(pass_name(static_cast<Pass>(p))) + " pass");
  }

  const std::vector<TimelinePanel>& panels_;
  double top_mib_ = 1, tick_mib_ = 1;  // the y axis: its top and the distance between ticks, in MiB
  std::array<bool, kNumBufferKinds> used_kinds_{};
  std::array<bool, 3> used_phases_{};
  std::string out_;
};

}  // namespace

std::string memory_timeline_svg(const std::vector<TimelinePanel>& panels) { return TimelineWriter(panels).svg(); }

}  // namespace rematkit
