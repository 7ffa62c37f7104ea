// `--cost measured`: what recomputing each candidate costs on the chosen backends, timed once per
// kernel rather than estimated from its FLOPs (data movement, which FLOPs count as free, has a
// price here).
#pragma once

#include <vector>

#include "rematkit/plugin_host/backend_options.hpp"
#include "rematkit/autodiff/graph.hpp"

namespace rematkit::solver {

// Per equation of `eqns`: the median of three runs of its kernel, in nanoseconds, after one warm-up,
// on buffers of its types (zeros), bound as a step program binds it. At least 1 ns each; a
// collective 0 (it runs no kernel).
std::vector<double> time_kernels(const FlatGraph& graph, const std::vector<int>& eqns, const BackendOptions& backends);

}  // namespace rematkit::solver
