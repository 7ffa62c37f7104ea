// Floating-point work of the passes of a gradient: each equation's equation_flops (counted the way
// ML-systems papers do; equation_flops.hpp, included here), summed per pass.
#pragma once

#include <cstdint>

#include "rematkit/core_export.hpp"
#include "rematkit/autodiff/equation_flops.hpp"
#include "rematkit/autodiff/graph.hpp"
#include "rematkit/autodiff/linearize.hpp"

namespace rematkit {

struct GradientFlops {
  int64_t forward = 0;     // the forward pass, coefficients included
  int64_t recompute = 0;   // what the backward pass computes again (the price of remat)
  int64_t backward = 0;    // the transposed equations
};
REMATKIT_CORE_EXPORT GradientFlops gradient_flops(const Linearization& lin);

}  // namespace rematkit
