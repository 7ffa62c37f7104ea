#include "rematkit/analysis/communication.hpp"

#include "rematkit/autodiff/scan_linearization.hpp"
#include "rematkit/ir/byte_size.hpp"

namespace rematkit {
namespace {

int64_t sum_bytes(const FlatGraph& graph, const std::vector<int>& eqns, const Mesh& mesh);

// A scan's part: its body's collectives once per iteration, in the pass the part belongs to (a
// transpose's known equations are its recomputation).
GradientCommunication scan_communication(const FlatEquation& eqn, const Mesh& mesh) {
  GradientCommunication c;
  const ScanLinearization& s = *eqn.scan;
  const FlatGraph& body = s.body.graph;
  switch (eqn.part) {
    case ControlFlowPart::kForward: c.forward = sum_bytes(body, s.forward_eqns, mesh); break;
    case ControlFlowPart::kRecompute: c.recompute = sum_bytes(body, s.recompute_eqns, mesh); break;
    case ControlFlowPart::kTranspose:
      for (int e : s.body.backward) {
        const FlatEquation& inner = body.eqns[static_cast<size_t>(e)];
        (body.is_known(inner) ? c.recompute : c.backward) += collective_bytes(body, inner, mesh);
      }
      break;
    case ControlFlowPart::kTangent: case ControlFlowPart::kNone: break;
  }
  return c * s.length;
}

int64_t sum_bytes(const FlatGraph& graph, const std::vector<int>& eqns, const Mesh& mesh) {
  int64_t bytes = 0;
  for (int e : eqns) bytes += collective_bytes(graph, graph.eqns[static_cast<size_t>(e)], mesh);
  return bytes;
}

}  // namespace

int64_t collective_bytes(const FlatGraph& graph, const FlatEquation& eqn, const Mesh& mesh) {
  if (prim_family(eqn.prim) != PrimFamily::kCollective || eqn.inputs.empty() || eqn.outputs.empty()) return 0;
  const int64_t in = device_type(graph.values[eqn.inputs[0]]).bytes();
  const int64_t out = device_type(graph.values[eqn.outputs[0]]).bytes();
  if (eqn.prim == Prim::kShardMapIn) return 0;  // the device's own block
  if (eqn.prim == Prim::kShardMapOut) return out > in ? out - in : 0;  // a join: the other blocks arrive
  const int64_t n = axes_size(mesh, collective_axes(eqn.params, eqn.where), eqn.where);
  if (n <= 1) return 0;
  if (eqn.prim == Prim::kPsum || eqn.prim == Prim::kPmax || eqn.prim == Prim::kPmin) return 2 * (n - 1) * in / n;
  if (eqn.prim == Prim::kAllGather) return (n - 1) * in;
  if (eqn.prim == Prim::kReduceScatter || eqn.prim == Prim::kAllToAll) return (n - 1) * in / n;
  if (eqn.prim == Prim::kPpermute) return in;
  if (eqn.prim == Prim::kPbroadcast && eqn.params.find("source")) return in;  // without a source: a cast
  return 0;  // axis_index, pvary: nothing moves
}

GradientCommunication gradient_communication(const Linearization& lin, const Mesh& mesh) {
  GradientCommunication c;
  const FlatGraph& g = lin.graph;
  for (int e : lin.forward) {
    const FlatEquation& eqn = g.eqns[static_cast<size_t>(e)];
    if (eqn.scan) c += scan_communication(eqn, mesh);
    else c.forward += collective_bytes(g, eqn, mesh);
  }
  for (int e : lin.backward) {
    const FlatEquation& eqn = g.eqns[static_cast<size_t>(e)];
    if (eqn.scan) c += scan_communication(eqn, mesh);
    else (g.is_known(eqn) ? c.recompute : c.backward) += collective_bytes(g, eqn, mesh);
  }
  return c;
}

std::string communication_line(const GradientCommunication& c) {
  return "communication per device: forward " + human_bytes(c.forward) + ", recomputed " + human_bytes(c.recompute) +
         " (re-communicated), backward " + human_bytes(c.backward);
}

}  // namespace rematkit
