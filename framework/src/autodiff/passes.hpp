// The passes of linearize(), in the order it runs them. Internal to autodiff.
#pragma once
#include <vector>

#include "rematkit/linearize.hpp"

namespace rematkit::autodiff {

// Inlines calls and applies JVP rules: fills lin.graph, constants, arguments, outputs and
// output_tangents. Checkpoint policies are resolved here (errors name the checkpoint's location).
void trace_jvp(const Program& program, const LinearizeOptions& options, Linearization& lin);

// Classic remat partial evaluation: asks each region's policy about its known equations, finds the
// live tangent equations and recomputations, the residuals and the forward pass.
// Returns the live tangent equations in program order.
std::vector<int> partial_eval(Linearization& lin);

// Transposes the live tangent equations into backward equations: fills cotangent_seeds, backward
// and gradients.
void transpose_linear(Linearization& lin, const std::vector<int>& live_tangent_eqns);

}  // namespace rematkit::autodiff
