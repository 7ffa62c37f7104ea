// "Did you mean ...?": the known names closest to a misspelt one, for error messages that name a
// policy, backend or key the user probably meant.
#pragma once

#include <string>
#include <vector>

#include "rematkit/core_export.hpp"

namespace rematkit {

// Edit distance with adjacent transpositions (optimal string alignment): one typo, one edit.
REMATKIT_CORE_EXPORT size_t edit_distance(const std::string& a, const std::string& b);

// The known names within a third of `word`'s length (at least 2 edits) of it, closest first, at
// most three; ties keep `known`'s order.
REMATKIT_CORE_EXPORT std::vector<std::string> near_names(const std::string& word, const std::vector<std::string>& known);

// " (did you mean 'a'?)", " (did you mean 'a' or 'b'?)", or "" when nothing is near.
REMATKIT_CORE_EXPORT std::string did_you_mean(const std::string& word, const std::vector<std::string>& known);

}  // namespace rematkit
