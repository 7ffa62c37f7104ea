// How two gradients of one program differ, argument by argument: whether they are the same bytes
// (what remat promises: a policy changes what is kept, never the arithmetic) and, where they are
// not, by how much.
#pragma once

#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/autodiff/gradient_result.hpp"

namespace rematkit {

struct ArgumentDifference {
  // Every element the same bits, or neither has a gradient for the argument.
  bool identical = true;
  // The largest |a - b| over the elements: NaN where one side is NaN and the other is not,
  // infinite where only one side has a gradient; 0 for bytes that differ but compare equal (-0, 0).
  double max_abs_diff = 0;
};

// One entry per argument of `a` and `b`, which must be gradients of the same program (an internal
// Error otherwise: a different count of arguments or of elements).
REMATKIT_CORE_EXPORT std::vector<ArgumentDifference> gradient_differences(const GradientResult& a,
                                                                         const GradientResult& b);

// The largest max_abs_diff over the arguments (NaN if any is NaN).
REMATKIT_CORE_EXPORT double max_abs_difference(const std::vector<ArgumentDifference>& differences);

}  // namespace rematkit
