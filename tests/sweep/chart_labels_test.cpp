// Chart labels: coincident points share one label, and labels of a cluster never overlap.
#include "rematkit/sweep/chart_labels.hpp"

#include <gtest/gtest.h>

namespace rematkit::sweep {
namespace {

bool same_box(const LabelBox& a, const LabelBox& b) {
  return a.x == b.x && a.y == b.y && a.width == b.width && a.height == b.height;
}

TEST(SweepChartLabels, BoxesOverlapOnlyWhenTheyShareArea) {
  EXPECT_TRUE(boxes_overlap({0, 0, 10, 10}, {9, 9, 10, 10}));
  EXPECT_FALSE(boxes_overlap({0, 0, 10, 10}, {10, 0, 10, 10}));  // touching edges
  EXPECT_FALSE(boxes_overlap({0, 0, 10, 10}, {0, 20, 10, 10}));
}

TEST(SweepChartLabels, PointsAtOnePlaceShareOneLabel) {
  // 1 and 3 are 1.1 px apart (under the 4 px of a marker): one label "1,3" at 1's place; 2 is 50
  // px away and keeps its own; a repeated "1" is not written twice.
  const std::vector<LabelAnchor> merged =
      merge_coincident({{100, 100, "1"}, {150, 100, "2"}, {101, 100.5, "3"}, {100, 100, "1"}}, 4);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].text, "1,3");
  EXPECT_EQ(merged[0].x, 100);
  EXPECT_EQ(merged[1].text, "2");
}

TEST(SweepChartLabels, AFreeLabelGoesUpAndRightOfItsPoint) {
  // Marker radius 4, font 10: the first spot is 6 px right and 6 px up of the point, centred on
  // that height; one character is 0.6 * 10 + 2 = 8 px wide and 10 + 1 = 11 px high.
  const std::vector<LabelBox> boxes = place_labels({{100, 100, "7"}}, {0, 0, 400, 400}, 4, 10);
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_TRUE(same_box(boxes[0], {106, 88.5, 8, 11}));
  // At the right edge of the area the right-hand spots do not fit: up-left, 6 px left of the point.
  const std::vector<LabelBox> edge = place_labels({{398, 100, "7"}}, {0, 0, 400, 400}, 4, 10);
  EXPECT_TRUE(same_box(edge[0], {398 - 6 - 8, 88.5, 8, 11}));
}

TEST(SweepChartLabels, ALabelAvoidsObstacles) {
  // A whisker 6 px wide through the up-right spot (x 106..114, y 88.5..99.5, the whisker 60..90): the next spot, right
  // of the point and centred on it, is free.
  const std::vector<LabelBox> boxes = place_labels({{100, 100, "7"}}, {0, 0, 400, 400}, 4, 10, {{108, 60, 6, 30}});
  EXPECT_TRUE(same_box(boxes[0], {106, 94.5, 8, 11}));
}

TEST(SweepChartLabels, NoTwoLabelsOfAClusterOverlap) {
  // Nine points on a 3 x 3 grid 7 px apart, each label two characters: far more label than room,
  // so most labels must move out to the farther rings.
  std::vector<LabelAnchor> cluster;
  for (int i = 0; i < 9; ++i) cluster.push_back({200 + 7.0 * (i % 3), 200 + 7.0 * (i / 3), std::to_string(10 + i)});
  const LabelBox area{0, 0, 400, 400};
  const std::vector<LabelBox> boxes = place_labels(cluster, area, 4, 10);
  ASSERT_EQ(boxes.size(), cluster.size());
  for (size_t i = 0; i < boxes.size(); ++i) {
    EXPECT_GE(boxes[i].x, area.x);
    EXPECT_LE(boxes[i].x + boxes[i].width, area.x + area.width);
    for (size_t j = i + 1; j < boxes.size(); ++j) EXPECT_FALSE(boxes_overlap(boxes[i], boxes[j])) << i << " and " << j;
    for (const LabelAnchor& a : cluster) EXPECT_FALSE(boxes_overlap(boxes[i], {a.x - 4, a.y - 4, 8, 8})) << i;
  }
  // The same input places the same way.
  const std::vector<LabelBox> again = place_labels(cluster, area, 4, 10);
  for (size_t i = 0; i < boxes.size(); ++i) EXPECT_TRUE(same_box(boxes[i], again[i]));
}

}  // namespace
}  // namespace rematkit::sweep
