// The bytes one device sends over the mesh in a gradient step's collectives, per pass: what the
// forward pass communicates, what the backward pass communicates again because a checkpoint
// recomputes a collective (FSDP re-gathering a layer's weights), and what the transposed
// collectives communicate. Each collective is costed as the algorithm rematkit runs
// (device_collective.hpp) and collective libraries use: over a group of n devices, psum sends
// 2(n-1)/n of its operand (reduce-scatter, then all-gather), all_gather n-1 blocks, psum_scatter
// and all_to_all (n-1)/n of the operand, ppermute the operand. On a linearization placed on the
// mesh (device_placement.hpp); a scan's collectives count once per iteration, a cond's none.
#pragma once

#include <cstdint>
#include <string>

#include "rematkit/analysis/pass_totals.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/core_export.hpp"
#include "rematkit/ir/mesh.hpp"

namespace rematkit {

// recompute: what is communicated again, the price of recomputing a collective.
using GradientCommunication = PassTotals;
REMATKIT_CORE_EXPORT GradientCommunication gradient_communication(const Linearization& lin, const Mesh& mesh);

// One collective equation's bytes sent by one device (0 for any other equation).
REMATKIT_CORE_EXPORT int64_t collective_bytes(const FlatGraph& graph, const FlatEquation& eqn, const Mesh& mesh);

// "communication per device: forward 1.5 MiB, recomputed 512 KiB, backward 2 MiB", for reports.
REMATKIT_CORE_EXPORT std::string communication_line(const GradientCommunication& c);

}  // namespace rematkit
