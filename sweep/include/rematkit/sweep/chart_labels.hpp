// Point labels that do not overlap: labels of points at one place merged into one ("1,3"), and
// each label put at the first of a few spots around its point that is still free.
#pragma once
#include <string>
#include <vector>
#include "rematkit/sweep/export.hpp"

namespace rematkit::sweep {

// A rectangle in SVG pixels (y grows downwards): its top-left corner and size.
struct LabelBox {
  double x = 0, y = 0, width = 0, height = 0;
};
// True when the two share an area (touching edges do not count).
REMATKIT_SWEEP_EXPORT bool boxes_overlap(const LabelBox& a, const LabelBox& b);

// A label's text and the point it belongs to, in SVG pixels.
struct LabelAnchor {
  double x = 0, y = 0;
  std::string text;
};

// The anchors with those closer than `distance` pixels to an earlier one (the same place on the
// chart: their markers cover each other) folded into it, texts joined with "," and not repeated.
// In order of first appearance; a merged anchor keeps the first one's position.
REMATKIT_SWEEP_EXPORT std::vector<LabelAnchor> merge_coincident(const std::vector<LabelAnchor>& anchors, double distance);

// An estimate of a label's box size: sans-serif digits and letters are about 0.6 em wide.
REMATKIT_SWEEP_EXPORT double label_width(const std::string& text, double font_size);

// A box per anchor, in order. Each is the first of the candidate spots around its point (right,
// left, above and below at marker_radius + 2 pixels, then farther out) that stays inside `area`
// and overlaps no box placed before it, no anchor's marker (a square of marker_radius) and none of
// `obstacles` (whiskers, say); where every spot is taken, the one overlapping least.
// Deterministic: the same input, the same boxes.
REMATKIT_SWEEP_EXPORT std::vector<LabelBox> place_labels(const std::vector<LabelAnchor>& anchors, const LabelBox& area, double marker_radius,
                                   double font_size, const std::vector<LabelBox>& obstacles = {});

}  // namespace rematkit::sweep
