// Classic remat partial evaluation over the flat JVP graph (jax-checkpoint.md section 2.2, in its
// liveness form): a known value is a residual iff a live backward-pass equation of some region
// reads it and that region cannot recompute it: it is an argument, constant or checkpoint input
// (saved by the caller), its producer is Saveable there or belongs to another region, or it is
// Offloadable (then its host copy is the residual).
#include <algorithm>

#include "passes.hpp"

namespace rematkit::autodiff {
namespace {

std::vector<Decision> ask_policies(const FlatGraph& g) {
  std::vector<Decision> decisions(g.eqns.size(), Decision::kSaveable);
  std::vector<PolicyAnswer> answers(g.eqns.size());
  for (size_t e = 0; e < g.eqns.size(); ++e) {
    const FlatEquation& eqn = g.eqns[e];
    const PolicyPtr& policy = g.regions[eqn.region].policy;
    if (!g.is_known(eqn) || !policy) continue;  // the top level saves what its backward reads
    std::vector<Type> in, out;
    for (ValueId v : eqn.inputs) in.push_back(g.values[v].type);
    for (ValueId v : eqn.outputs) out.push_back(g.values[v].type);
    EquationView view{prim_name(eqn.prim), eqn.params, in, out};
    try {
      decisions[e] = policy->decide(view).decision;
    } catch (const Error& err) {
      if (err.kind() != ErrorKind::kBadInput) throw;
      fail_at(eqn.where, err.what());
    }
  }
  return decisions;
}

}  // namespace

std::vector<int> partial_eval(Linearization& lin) {
  const FlatGraph& g = lin.graph;
  lin.decisions = ask_policies(g);
  const int n_values = static_cast<int>(g.values.size());
  std::vector<char> tangent_needed(n_values, 0), recompute_needed(g.eqns.size(), 0);
  std::vector<int> residual_reader(n_values, -1), residual_region(n_values, 0);
  std::vector<char> offloaded(n_values, 0);
  for (ValueId t : lin.output_tangents)
    if (t != kNoValue) tangent_needed[t] = 1;

  // A known value read by a live backward equation `reader` of region `region`.
  auto use_known = [&](ValueId v, int reader, int region) {
    const Value& value = g.values[v];
    if (value.origin == ValueOrigin::kLiteral) return;  // literals are inlined, never saved
    if (value.origin == ValueOrigin::kEquation) {
      const int p = value.producer;
      if (g.eqns[p].region == region && lin.decisions[p] == Decision::kRecompute) {
        recompute_needed[p] = 1;
        return;
      }
      if (g.eqns[p].region == region && lin.decisions[p] == Decision::kOffloadable) offloaded[v] = 1;
    }
    residual_reader[v] = reader;  // the last one seen is the first the backward pass runs
    residual_region[v] = region;
  };

  std::vector<int> live_tangent;
  for (int e = static_cast<int>(g.eqns.size()) - 1; e >= 0; --e) {
    const FlatEquation& eqn = g.eqns[e];
    if (eqn.role == EqnRole::kTangent) {
      bool live = std::any_of(eqn.outputs.begin(), eqn.outputs.end(), [&](ValueId v) { return tangent_needed[v]; });
      if (!live) continue;
      live_tangent.push_back(e);
      for (ValueId v : eqn.inputs) {
        if (g.values[v].is_tangent) tangent_needed[v] = 1;
        else use_known(v, e, eqn.region);
      }
    } else if (g.is_known(eqn) && recompute_needed[e]) {
      for (ValueId v : eqn.inputs) use_known(v, e, eqn.region);
    }
  }
  std::reverse(live_tangent.begin(), live_tangent.end());

  // Report order: constants, arguments (binder order), then equation outputs in program order.
  std::vector<ValueId> kept;
  for (ValueId v : lin.constants)
    if (residual_reader[v] >= 0) kept.push_back(v);
  for (ValueId v : lin.arguments)
    if (residual_reader[v] >= 0) kept.push_back(v);
  for (ValueId v = 0; v < n_values; ++v)
    if (residual_reader[v] >= 0 && g.values[v].origin == ValueOrigin::kEquation) kept.push_back(v);
  for (ValueId v : kept) {
    Residual r;
    r.value = v;
    r.type = g.values[v].type;
    if (offloaded[v]) r.type.space = MemorySpace::kPinnedHost;
    r.first_reader = residual_reader[v];
    r.region = residual_region[v];
    lin.residuals.push_back(r);
  }

  for (size_t e = 0; e < g.eqns.size(); ++e)
    if (recompute_needed[e]) lin.recomputed.push_back(static_cast<int>(e));

  // The forward pass: the known equations that primal outputs and residuals need.
  std::vector<char> needed(n_values, 0);
  for (ValueId v : lin.outputs) needed[v] = 1;
  for (const Residual& r : lin.residuals) needed[r.value] = 1;
  for (int e = static_cast<int>(g.eqns.size()) - 1; e >= 0; --e) {
    const FlatEquation& eqn = g.eqns[e];
    if (!g.is_known(eqn)) continue;
    if (std::none_of(eqn.outputs.begin(), eqn.outputs.end(), [&](ValueId v) { return needed[v]; })) continue;
    lin.forward.push_back(e);
    for (ValueId v : eqn.inputs) needed[v] = 1;
  }
  std::reverse(lin.forward.begin(), lin.forward.end());
  return live_tangent;
}

}  // namespace rematkit::autodiff
