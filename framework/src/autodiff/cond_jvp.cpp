// jax/_src/lax/control_flow/conditionals.py: _cond_jvp (the union of the branches' nonzero output
// tangents), _cond_partial_eval with _merge_branch_residuals and _join_cond_outputs (residual
// slots shared by type, zeros where a branch has none), _cond_transpose (the index selects the
// branch whose backward pass runs), and _cond_partial_eval_custom inside a checkpoint.
#include "cond_jvp.hpp"

#include <algorithm>
#include <memory>

#include "emitter.hpp"
#include "passes.hpp"
#include "rematkit/autodiff/cond_linearization.hpp"
#include "rematkit/ir/control_flow_params.hpp"

namespace rematkit::autodiff {
ScanTrace trace_cond(FlatGraph& graph, const PolicyRegistry& policies, const Equation& eqn, const std::vector<ValueId>& x,
                     const std::vector<ValueId>& t, int region, int scope, int jit) {
  const auto branches = cond_branches(eqn.params, eqn.where);
  auto c = std::make_shared<CondLinearization>();
  for (size_t i = 1; i < t.size(); ++i) c->tangent_given.push_back(t[i] != kNoValue);
  LinearizeOptions options;
  options.policies = &policies;
  for (size_t i = 0; i < c->tangent_given.size(); ++i)
    if (c->tangent_given[i]) options.differentiate.push_back(i);
  options.differentiate_nothing = options.differentiate.empty();
  for (const auto& branch : branches) c->branches.push_back(linearize(*branch, options));
  const size_t n_out = branches[0]->outvars.size();
  c->tangent_out.assign(n_out, false);
  for (const Linearization& b : c->branches)
    for (size_t k = 0; k < n_out; ++k) c->tangent_out[k] = c->tangent_out[k] || b.output_tangents[k] != kNoValue;
  // What each branch keeps: at the top level its residuals; inside a checkpoint, what the policy
  // saves of the values its backward pass needs (the rest is computed again from the operands).
  const Policy* policy = region > 0 ? graph.regions[region].policy.get() : nullptr;
  c->operands_kept = policy != nullptr;
  for (const Linearization& b : c->branches) {
    std::vector<ValueId>& kept = c->kept.emplace_back();
    if (!policy) {
      for (const Residual& r : b.residuals) kept.push_back(r.value);
      c->recompute_eqns.emplace_back();
      continue;
    }
    std::vector<char> seen(b.graph.values.size(), 0);
    std::vector<ValueId> work;
    for (const Residual& r : b.residuals) work.push_back(r.value);
    while (!work.empty()) {
      const ValueId v = work.back();
      work.pop_back();
      if (seen[v]) continue;
      seen[v] = 1;
      const Value& value = b.graph.values[v];
      if (value.origin != ValueOrigin::kEquation) continue;  // an operand (kept) or a literal
      if (ask_policy(*policy, b.graph, value.producer).decision != Decision::kRecompute) {
        kept.push_back(v);
        continue;
      }
      for (ValueId in : b.graph.eqns[value.producer].inputs) work.push_back(in);
    }
    std::sort(kept.begin(), kept.end());  // in the branch's order
    // The forward equations that compute the rest from the operands and the kept values.
    std::vector<char> needed(b.graph.values.size(), 0), given(b.graph.values.size(), 0);
    for (ValueId v : kept) given[v] = 1;
    for (const Residual& r : b.residuals) needed[r.value] = 1;
    std::vector<int>& eqns = c->recompute_eqns.emplace_back();
    for (auto it = b.forward.rbegin(); it != b.forward.rend(); ++it) {
      const FlatEquation& e = b.graph.eqns[*it];
      if (std::none_of(e.outputs.begin(), e.outputs.end(), [&](ValueId v) { return needed[v] && !given[v]; })) continue;
      eqns.push_back(*it);
      for (ValueId v : e.inputs) needed[v] = 1;
    }
    std::reverse(eqns.begin(), eqns.end());
  }
  // _merge_branch_residuals: a branch's kept values take the first free slots of their types.
  for (size_t br = 0; br < c->branches.size(); ++br) {
    const Linearization& b = c->branches[br];
    std::vector<size_t>& mine = c->slot_of.emplace_back();
    std::vector<char> used(c->slots.size(), 0);
    for (ValueId v : c->kept[br]) {
      Type type = b.graph.values[v].type;
      type.space = MemorySpace::kDevice;
      size_t slot = 0;
      while (slot < c->slots.size() && (used[slot] || !(c->slots[slot] == type))) ++slot;
      if (slot == c->slots.size()) {
        c->slots.push_back(type);
        used.push_back(0);
      }
      used[slot] = 1;
      mine.push_back(slot);
    }
  }

  std::vector<Type> types;
  for (size_t k = 0; k < n_out; ++k) types.push_back(c->branches[0].graph.values[c->branches[0].outputs[k]].type);
  const bool any_tangent = std::find(c->tangent_given.begin(), c->tangent_given.end(), true) != c->tangent_given.end();
  if (any_tangent) types.insert(types.end(), c->slots.begin(), c->slots.end());
  Emitter em(graph, region, scope, jit, Prim::kCond, eqn.where);
  const std::vector<ValueId> fwd = em.emit_part(EqnRole::kPrimal, ControlFlowPart::kForward, nullptr, c, x, eqn.params, types);
  ScanTrace out;
  out.primals.assign(fwd.begin(), fwd.begin() + static_cast<long>(n_out));
  out.tangents.assign(n_out, kNoValue);
  if (!any_tangent) return out;

  std::vector<ValueId> inputs{x[0]};
  inputs.insert(inputs.end(), fwd.begin() + static_cast<long>(n_out), fwd.end());
  if (c->operands_kept) inputs.insert(inputs.end(), x.begin() + 1, x.end());
  for (size_t i = 1; i < t.size(); ++i)
    if (t[i] != kNoValue) inputs.push_back(t[i]);
  std::vector<Type> tangent_types;
  for (size_t k = 0; k < n_out; ++k)
    if (c->tangent_out[k]) tangent_types.push_back(types[k]);
  if (tangent_types.empty()) return out;
  const std::vector<ValueId> tangents =
      em.emit_part(EqnRole::kTangent, ControlFlowPart::kTangent, nullptr, c, inputs, eqn.params, tangent_types);
  size_t next = 0;
  for (size_t k = 0; k < n_out; ++k)
    if (c->tangent_out[k]) out.tangents[k] = tangents[next++];
  return out;
}

std::vector<ValueId> transpose_cond(FlatGraph& graph, const FlatEquation& eqn, const std::vector<ValueId>& cts) {
  const CondLinearization& c = *eqn.cond;
  // The index, the slots and, inside a checkpoint, the operands.
  const size_t n_kept = 1 + c.slots.size() + (c.operands_kept ? c.tangent_given.size() : 0);
  std::vector<ValueId> inputs(eqn.inputs.begin(), eqn.inputs.begin() + static_cast<long>(n_kept));
  inputs.insert(inputs.end(), cts.begin(), cts.end());
  std::vector<Type> types;
  for (size_t i = n_kept; i < eqn.inputs.size(); ++i) types.push_back(graph.values[eqn.inputs[i]].type);
  Emitter em(graph, eqn.region, eqn.scope, eqn.jit, Prim::kCond, eqn.where);
  return em.emit_part(EqnRole::kBackward, ControlFlowPart::kTranspose, nullptr, eqn.cond, std::move(inputs), eqn.params, types);
}

}  // namespace rematkit::autodiff
