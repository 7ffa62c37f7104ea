// A scan equation traced into the flat JVP graph as a whole: its body linearized once, and the
// forward, recompute and tangent parts of scan_linearization.hpp emitted around it.
#pragma once
#include <vector>

#include "rematkit/autodiff/graph.hpp"
#include "rematkit/ir/program.hpp"

namespace rematkit::autodiff {

struct ScanTrace {
  std::vector<ValueId> primals;   // the scan's outputs: carries, then stacked ys
  std::vector<ValueId> tangents;  // per output: its tangent, or kNoValue where it is zero
};

// `x` and `t`: the operands and their tangents (kNoValue: zero). `region` is the outermost
// checkpoint around the scan (0: none), whose policy decides what the forward scan keeps.
ScanTrace trace_scan(FlatGraph& graph, const PolicyRegistry& policies, const Equation& eqn, const std::vector<ValueId>& x,
                     const std::vector<ValueId>& t, int region, int scope, int jit);

// The transpose part of the scan tangent equation `eqn` (the reverse scan), given a cotangent per
// output of it; returns the cotangent of each of its tangent operands.
std::vector<ValueId> transpose_scan(FlatGraph& graph, const FlatEquation& eqn, const std::vector<ValueId>& cts);

}  // namespace rematkit::autodiff
