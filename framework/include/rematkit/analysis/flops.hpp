// Floating-point work of the passes of a gradient: each equation's equation_flops (counted the way
// ML-systems papers do; equation_flops.hpp, included here), summed per pass.
#pragma once

#include <cstdint>

#include "rematkit/core_export.hpp"
#include "rematkit/autodiff/equation_flops.hpp"
#include "rematkit/autodiff/graph.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/analysis/pass_totals.hpp"

namespace rematkit {

// The forward pass's (coefficients included), the recomputation's and the transposed equations'.
using GradientFlops = PassTotals;
REMATKIT_CORE_EXPORT GradientFlops gradient_flops(const Linearization& lin);

}  // namespace rematkit
