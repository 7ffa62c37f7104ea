// Floating-point work of equations and of the passes of a gradient, counted the way ML-systems
// papers do: 2*M*N*K for a matrix product, one per output element for arithmetic elementwise
// operations (transcendentals included), one per input element for reductions, none for data
// movement (broadcast, reshape, transpose, squeeze, select_n, conversions, stop_gradient, name).
#pragma once

#include <cstdint>

#include "rematkit/core_export.hpp"
#include "rematkit/graph.hpp"
#include "rematkit/linearize.hpp"

namespace rematkit {

REMATKIT_CORE_EXPORT int64_t equation_flops(const FlatGraph& graph, const FlatEquation& eqn);

struct GradientFlops {
  int64_t forward = 0;     // the forward pass, coefficients included
  int64_t recompute = 0;   // what the backward pass computes again (the price of remat)
  int64_t backward = 0;    // the transposed equations
};
REMATKIT_CORE_EXPORT GradientFlops gradient_flops(const Linearization& lin);

}  // namespace rematkit
