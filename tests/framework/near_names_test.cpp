// Suggestions for misspelt names: edit distances worked out by hand, and what is near enough.
#include "rematkit/ir/near_names.hpp"

#include <gtest/gtest.h>

namespace rematkit {
namespace {

TEST(NearNames, EditDistanceCountsOneTypoAsOneEdit) {
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("nothing_savable", "nothing_saveable"), 1u);  // a letter left out
  EXPECT_EQ(edit_distance("highwya", "highway"), 1u);                   // two letters swapped
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);                    // the textbook case
  EXPECT_EQ(edit_distance("dots", "dots"), 0u);
}

TEST(NearNames, SuggestsTheClosestFewAndNothingFar) {
  const std::vector<std::string> known = {"everything_saveable", "nothing_saveable", "dots_saveable",
                                          "dots_with_no_batch_dims_saveable"};
  EXPECT_EQ(near_names("nothing_savable", known), std::vector<std::string>{"nothing_saveable"});
  EXPECT_EQ(did_you_mean("dots_savable", known), " (did you mean 'dots_saveable'?)");
  EXPECT_EQ(did_you_mean("gpu", {"onednn", "highway", "reference"}), "");
  // Two at one distance keep their order; "refrence" is one edit from "reference" only.
  EXPECT_EQ(did_you_mean("ab", {"ac", "ad", "xyz"}), " (did you mean 'ac' or 'ad'?)");
  EXPECT_EQ(near_names("refrence", {"onednn", "highway", "reference"}), std::vector<std::string>{"reference"});
}

}  // namespace
}  // namespace rematkit
