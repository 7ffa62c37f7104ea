#include "rematkit/sweep/chart_labels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rematkit::sweep {
namespace {

double overlap_area(const LabelBox& a, const LabelBox& b) {
  const double w = std::min(a.x + a.width, b.x + b.width) - std::max(a.x, b.x);
  const double h = std::min(a.y + a.height, b.y + b.height) - std::max(a.y, b.y);
  return w > 0 && h > 0 ? w * h : 0;
}

bool inside(const LabelBox& box, const LabelBox& area) {
  return box.x >= area.x && box.y >= area.y && box.x + box.width <= area.x + area.width &&
         box.y + box.height <= area.y + area.height;
}

}  // namespace

bool boxes_overlap(const LabelBox& a, const LabelBox& b) { return overlap_area(a, b) > 0; }

std::vector<LabelAnchor> merge_coincident(const std::vector<LabelAnchor>& anchors, double distance) {
  std::vector<LabelAnchor> merged;
  std::vector<std::vector<std::string>> texts;
  for (const LabelAnchor& a : anchors) {
    size_t m = 0;
    while (m < merged.size() && std::hypot(merged[m].x - a.x, merged[m].y - a.y) >= distance) ++m;
    if (m == merged.size()) {
      merged.push_back(a);
      texts.push_back({a.text});
    } else if (std::find(texts[m].begin(), texts[m].end(), a.text) == texts[m].end()) {
      texts[m].push_back(a.text);
      merged[m].text += "," + a.text;
    }
  }
  return merged;
}

double label_width(const std::string& text, double font_size) {
  return 0.6 * font_size * static_cast<double>(text.size()) + 2;
}

std::vector<LabelBox> place_labels(const std::vector<LabelAnchor>& anchors, const LabelBox& area, double marker_radius,
                                   double font_size, const std::vector<LabelBox>& obstacles) {
  std::vector<LabelBox> avoid = obstacles;  // and every marker
  for (const LabelAnchor& a : anchors)
    avoid.push_back({a.x - marker_radius, a.y - marker_radius, 2 * marker_radius, 2 * marker_radius});
  std::vector<LabelBox> placed;
  for (const LabelAnchor& a : anchors) {
    const double w = label_width(a.text, font_size), h = font_size + 1;
    // Candidate spots in order of preference: up-right first (where readers look for a label),
    // then the other sides, then the same ring twice and three times as far out.
    std::vector<LabelBox> candidates;
    for (double ring : {1.0, 2.5, 4.0}) {
      const double gap = (marker_radius + 2) * ring;
      candidates.push_back({a.x + gap, a.y - gap - h / 2, w, h});  // up-right
      candidates.push_back({a.x + gap, a.y - h / 2, w, h});        // right
      candidates.push_back({a.x + gap, a.y + gap - h / 2, w, h});  // down-right
      candidates.push_back({a.x - gap - w, a.y - gap - h / 2, w, h});  // up-left
      candidates.push_back({a.x - gap - w, a.y - h / 2, w, h});        // left
      candidates.push_back({a.x - gap - w, a.y + gap - h / 2, w, h});  // down-left
      candidates.push_back({a.x - w / 2, a.y - gap - h, w, h});        // above
      candidates.push_back({a.x - w / 2, a.y + gap, w, h});            // below
    }
    const LabelBox* best = &candidates.front();
    double best_cost = std::numeric_limits<double>::infinity();
    for (const LabelBox& c : candidates) {
      double cost = 0;
      for (const LabelBox& p : placed) cost += overlap_area(c, p);
      for (const LabelBox& m : avoid) cost += overlap_area(c, m);
      // Outside the plot is allowed only as a last resort, but then as little outside as can be.
      if (!inside(c, area)) cost += 1e6 + c.width * c.height - overlap_area(c, area);
      if (cost < best_cost) {
        best_cost = cost;
        best = &c;
      }
      if (cost == 0) break;
    }
    placed.push_back(*best);
  }
  return placed;
}

}  // namespace rematkit::sweep
