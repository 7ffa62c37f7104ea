// A cond equation traced into the flat JVP graph as a whole (cond_linearization.hpp).
#pragma once
#include <vector>

#include "rematkit/autodiff/graph.hpp"
#include "rematkit/ir/program.hpp"
#include "scan_jvp.hpp"

namespace rematkit::autodiff {

// `x` and `t`: the operands (the index first) and their tangents (kNoValue: zero).
ScanTrace trace_cond(FlatGraph& graph, const PolicyRegistry& policies, const Equation& eqn, const std::vector<ValueId>& x,
                     const std::vector<ValueId>& t, int region, int scope, int jit);

// The transpose part of the cond tangent equation `eqn`, given a cotangent per output of it.
std::vector<ValueId> transpose_cond(FlatGraph& graph, const FlatEquation& eqn, const std::vector<ValueId>& cts);

}  // namespace rematkit::autodiff
