#include "rematkit/analysis/flops.hpp"

#include "rematkit/autodiff/cond_linearization.hpp"
#include "rematkit/autodiff/scan_linearization.hpp"

namespace rematkit {

namespace {

// A backward-pass equation's work, split: a loop's or a branch's backward pass recomputes too (its
// body's own checkpoints, or a checkpoint around its inner scans), and that is recomputation.
GradientFlops backward_flops(const FlatGraph& graph, const FlatEquation& eqn, bool known) {
  GradientFlops f;
  if (eqn.part == ControlFlowPart::kTranspose && (eqn.scan || eqn.cond)) {
    auto split = [](const Linearization& body) {
      GradientFlops inner;
      for (int e : body.backward) inner += backward_flops(body.graph, body.graph.eqns[static_cast<size_t>(e)],
                                                          body.graph.is_known(body.graph.eqns[static_cast<size_t>(e)]));
      return inner;
    };
    if (eqn.scan) return split(eqn.scan->body) * eqn.scan->length;
    for (size_t i = 0; i < eqn.cond->branches.size(); ++i) {  // the costliest branch
      const Linearization& branch = eqn.cond->branches[i];
      GradientFlops b = split(branch);
      b.recompute += equations_flops(branch.graph, eqn.cond->recompute_eqns[i]);  // inside a checkpoint
      if (b.recompute + b.backward > f.recompute + f.backward) f = b;
    }
    return f;
  }
  (known ? f.recompute : f.backward) += equation_flops(graph, eqn);
  return f;
}

}  // namespace

GradientFlops gradient_flops(const Linearization& lin) {
  GradientFlops flops;
  for (int e : lin.forward) flops.forward += equation_flops(lin.graph, lin.graph.eqns[e]);
  for (int e : lin.backward) {
    const FlatEquation& eqn = lin.graph.eqns[e];
    flops += backward_flops(lin.graph, eqn, lin.graph.is_known(eqn));
  }
  return flops;
}

}  // namespace rematkit
