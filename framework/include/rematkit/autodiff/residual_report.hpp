// The residual report in jax.ad_checkpoint.print_saved_residuals format, and its --explain form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/autodiff/linearize.hpp"

namespace rematkit {

// "from the argument W1", "output of cos", "named 'a'", "output of jitted function 'f'", ...
REMATKIT_CORE_EXPORT std::string residual_origin(const Linearization& lin, const Residual& residual);

// Why it is kept: "top level (no checkpoint): ...", "dots_saveable answered Saveable for dot_general
// in the checkpoint at FILE:LINE (policy dots_saveable)", ... (what --explain prints).
REMATKIT_CORE_EXPORT std::string residual_reason(const Linearization& lin, const Residual& residual);

// The bytes of every residual, in every memory space.
REMATKIT_CORE_EXPORT int64_t residual_bytes(const Linearization& lin);

// One line per residual, in order: "TYPE ORIGIN" plus " from FILE:LINE" for equation outputs.
REMATKIT_CORE_EXPORT std::vector<std::string> residual_lines(const Linearization& lin);

// The lines, each followed (when explain) by its bytes, the backward equation that reads it and the
// policy decision that kept it, then totals and the recomputed equations.
REMATKIT_CORE_EXPORT std::string format_residual_report(const Linearization& lin, bool explain);

}  // namespace rematkit
