#include "loop_program.hpp"

#include <algorithm>

namespace rematkit {

const StepProgram* scan_body_program(const Step& step) {
  if (step.kind != StepKind::kLoop || !step.loop || !step.loop->scan || step.loop->bodies.size() != 1) return nullptr;
  return step.loop->bodies[0].program.get();
}

std::unique_ptr<LoopProgram> build_loop_program(const FlatGraph& graph, const FlatEquation& eqn, BackendSet& backends) {
  if (!eqn.scan && !eqn.cond) {
    auto loop = std::make_unique<LoopProgram>();
    loop->interpreted.prim = eqn.prim;
    loop->interpreted.params = eqn.params;
    loop->interpreted.where = eqn.where;
    for (ValueId v : eqn.inputs) loop->in_types.push_back(graph.values[v].type);
    for (ValueId v : eqn.outputs) loop->out_types.push_back(graph.values[v].type);
    return loop;
  }
  auto loop = std::make_unique<LoopProgram>();
  loop->scan = eqn.scan;
  loop->cond = eqn.cond;
  loop->part = eqn.part;
  auto add_body = [&](const Linearization& lin, const std::vector<ValueId>& given, const std::vector<int>& eqns,
                      const std::vector<ValueId>& results) {
    BodyPass& pass = loop->bodies.emplace_back();
    pass.program = std::make_unique<StepProgram>(build_body_program(lin, backends, given, eqns, results, pass.given));
    pass.results = pass.program->output_buffers();
    loop->workspace_bytes = std::max(loop->workspace_bytes, pass.program->layout().arena(MemorySpace::kDevice));
  };
  // The backward pass of a linearized body: from its residuals and nonzero seeds to the gradients of
  // what it differentiates.
  auto add_backward = [&](const Linearization& lin, const std::vector<bool>& differentiated) {
    std::vector<ValueId> given, results;
    for (const Residual& r : lin.residuals) given.push_back(r.value);
    for (ValueId seed : lin.cotangent_seeds)
      if (seed != kNoValue) given.push_back(seed);
    for (size_t i = 0; i < lin.gradients.size(); ++i)
      if (differentiated[i]) results.push_back(lin.gradients[i]);
    add_body(lin, given, lin.backward, results);
  };
  if (eqn.cond) {
    const CondLinearization& c = *eqn.cond;
    for (size_t b = 0; b < c.branches.size(); ++b) {
      const Linearization& branch = c.branches[b];
      if (eqn.part == ControlFlowPart::kTranspose) {
        // The kept values, the operands inside a checkpoint (what is not kept is computed again
        // first), and the nonzero seeds.
        std::vector<ValueId> given = c.kept[b], results;
        if (c.operands_kept) given.insert(given.end(), branch.arguments.begin(), branch.arguments.end());
        for (ValueId seed : branch.cotangent_seeds)
          if (seed != kNoValue) given.push_back(seed);
        for (size_t i = 0; i < branch.gradients.size(); ++i)
          if (c.tangent_given[i]) results.push_back(branch.gradients[i]);
        std::vector<int> eqns = c.recompute_eqns[b];
        eqns.insert(eqns.end(), branch.backward.begin(), branch.backward.end());
        add_body(branch, given, eqns, results);
        continue;
      }
      std::vector<ValueId> results = branch.outputs;
      results.insert(results.end(), c.kept[b].begin(), c.kept[b].end());
      add_body(branch, branch.arguments, branch.forward, results);
    }
    return loop;
  }
  const ScanLinearization& s = *eqn.scan;
  const Linearization& body = s.body;
  std::vector<ValueId> given, results;
  switch (eqn.part) {
    case ControlFlowPart::kForward:
      given = body.arguments;
      given.insert(given.end(), s.hoisted.begin(), s.hoisted.end());
      results = body.outputs;
      results.insert(results.end(), s.saved.begin(), s.saved.end());
      add_body(body, given, s.forward_eqns, results);
      break;
    case ControlFlowPart::kRecompute:
      given = body.arguments;
      given.insert(given.end(), s.hoisted.begin(), s.hoisted.end());
      given.insert(given.end(), s.saved.begin(), s.saved.end());
      results.assign(body.outputs.begin(), body.outputs.begin() + static_cast<long>(s.num_carry));
      results.insert(results.end(), s.recomputed.begin(), s.recomputed.end());
      add_body(body, given, s.recompute_eqns, results);
      break;
    case ControlFlowPart::kTranspose: add_backward(body, s.differentiated); break;
    case ControlFlowPart::kTangent: case ControlFlowPart::kNone:
      internal_error("a scan's tangent part is transposed, never run");
  }
  return loop;
}

}  // namespace rematkit
