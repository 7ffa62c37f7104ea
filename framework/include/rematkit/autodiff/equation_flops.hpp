// Floating-point work of one equation, counted the way ML-systems papers do: 2*M*N*K for a matrix
// product, one per output element for arithmetic elementwise operations (transcendentals
// included), one per input element for reductions, none for data movement (broadcast, reshape,
// transpose, squeeze, select_n, conversions, stop_gradient, name). A loop's or a branch's through
// its body. Autodiff's own (remat decisions weigh it); flops.hpp sums it over a gradient's passes.
#pragma once

#include <cstdint>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/autodiff/graph.hpp"

namespace rematkit {

REMATKIT_CORE_EXPORT int64_t equation_flops(const FlatGraph& graph, const FlatEquation& eqn);
// The sum over the equations `eqns` (indices into graph.eqns).
REMATKIT_CORE_EXPORT int64_t equations_flops(const FlatGraph& graph, const std::vector<int>& eqns);

}  // namespace rematkit
