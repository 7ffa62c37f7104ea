// Classic remat partial evaluation (jax-checkpoint.md section 2), level by level over the tree of
// checkpoints. At each level S (the top level first, whose "phase" is the forward pass):
//  - a known value that a live backward equation inside child checkpoint C reads is recomputed in
//    C's own backward pass when C's policy answers Recompute for its producer; otherwise S's phase
//    must compute it and hand it over (a residual of C: C's inputs, Saveable or Offloadable values,
//    values from outside C);
//  - the values handed over from the top level's phase are the residuals of the forward pass.
// The backward pass of S runs S's phase, then transposes S's tangent equations in reverse; reaching
// a child checkpoint, it runs that child's backward pass in place, with the child's policy. So the
// outermost policy decides what the forward pass keeps, and inner policies decide when the
// enclosing backward pass recomputes (jax-checkpoint.md section 2.4).
//
// An effect (debug_callback) has no outputs for anything to need: every level's phase runs the
// effects it may compute, the forward pass all of them, in program order. Inside child C it runs
// again in C's backward pass unless C's policy saves it and it reads a value C saves
// (debugging.py, _debug_callback_partial_eval_custom), before C's transposition, as remat's
// rematerialized jaxpr runs first (ad_checkpoint.py, remat_transpose); what it reads is then
// recomputed or kept as any read of C's backward pass is.
#include <algorithm>
#include <map>
#include <optional>

#include "passes.hpp"
#include "rematkit/autodiff/equation_flops.hpp"
#include "rematkit/autodiff/scan_linearization.hpp"

namespace rematkit::autodiff {
namespace {

class PartialEvaluator {
 public:
  explicit PartialEvaluator(Linearization& lin) : lin_(lin), g_(lin.graph) {}

  std::vector<BackwardStep> run() {
    sites_ = equation_sites(g_);
    survey_policies(g_, sites_);
    find_live_tangents();
    lin_.decisions.assign(g_.eqns.size(), PolicyAnswer::saveable(true));
    std::vector<char> all_known(g_.eqns.size(), 0);
    for (size_t e = 0; e < g_.eqns.size(); ++e) all_known[e] = g_.is_known(g_.eqns[e]);
    evaluate_level(0, all_known, live_tangents_);
    return std::move(steps_);
  }

 private:
  void find_live_tangents() {
    std::vector<char> needed(g_.values.size(), 0);
    for (ValueId t : lin_.output_tangents)
      if (t != kNoValue) needed[t] = 1;
    for (int e = static_cast<int>(g_.eqns.size()) - 1; e >= 0; --e) {
      const FlatEquation& eqn = g_.eqns[e];
      if (eqn.role != EqnRole::kTangent) continue;
      if (std::none_of(eqn.outputs.begin(), eqn.outputs.end(), [&](ValueId v) { return needed[v]; })) continue;
      live_tangents_.push_back(e);
      for (ValueId v : eqn.inputs)
        if (g_.values[v].is_tangent) needed[v] = 1;
    }
    std::reverse(live_tangents_.begin(), live_tangents_.end());
  }

  // Checkpoint `child`'s policy on equation `e`; the top level's answers are kept for reports.
  PolicyAnswer decide(int child, int e) {
    auto [it, fresh] = cache_.try_emplace({child, e}, PolicyAnswer::saveable(true));
    if (!fresh) return it->second;
    it->second = ask_policy(*g_.regions[child].policy, g_, e, sites_[static_cast<size_t>(e)]);
    return it->second;
  }

  // Offloadable(src, dst): the value, computed in src, is kept as a copy in dst and brought back to
  // src for the backward pass (partial_eval.py, _partial_eval_jaxpr_custom_cached: JAX asserts that
  // src is where the value lives).
  MemorySpace offload_destination(int child, int e, ValueId v, const PolicyAnswer& answer) const {
    const MemorySpace lives_in = g_.values[v].type.space;
    if (answer.offload_src != lives_in)
      fail_at(g_.eqns[e].where, "policy " + g_.regions[child].policy->spec() + " offloads " +
                                    std::string(prim_name(g_.eqns[e].prim)) + "'s output from " +
                                    std::string(memory_space_name(answer.offload_src)) + " memory, but it is computed in " +
                                    std::string(memory_space_name(lives_in)) + " memory");
    return answer.offload_dst;
  }

  // Partially evaluates level `scope`: `computable` are the known equations its phase may run,
  // `tangents` the live tangent equations inside it (program order).
  void evaluate_level(int scope, const std::vector<char>& computable, const std::vector<int>& tangents) {
    const bool top = scope == 0;
    const size_t n_values = g_.values.size();
    std::vector<char> handed_over(n_values, 0);
    std::vector<std::optional<MemorySpace>> offloaded_to(n_values);
    std::vector<int> reader(n_values, -1);
    std::map<int, std::vector<char>> child_computable;
    std::map<int, std::vector<int>> child_tangents;
    auto hand_over = [&](ValueId v, int by) {
      if (g_.values[v].origin == ValueOrigin::kLiteral) return;  // literals are inlined, never kept
      handed_over[v] = 1;
      reader[v] = by;  // the last one seen is the first the backward pass runs
    };
    // A known value read by a backward equation `by` inside child checkpoint `child`.
    auto use_in_child = [&](int child, ValueId v, int by) {
      const Value& value = g_.values[v];
      if (value.origin == ValueOrigin::kEquation) {
        const int p = value.producer;
        if (computable[p] && g_.within(g_.eqns[p].scope, child)) {
          const PolicyAnswer answer = decide(child, p);
          if (top) lin_.decisions[p] = answer;
          if (answer.decision == Decision::kRecompute) {
            auto& mine = child_computable[child];
            if (mine.empty()) mine.assign(g_.eqns.size(), 0);
            mine[p] = 1;
            return;
          }
          if (answer.decision == Decision::kOffloadable) offloaded_to[v] = offload_destination(child, p, v, answer);
        }
      }
      hand_over(v, by);
    };

    // Walk back over this level's tangent equations and its children's recomputations.
    size_t next_tangent = tangents.size();
    int last = tangents.empty() ? -1 : tangents.back();
    for (int e = static_cast<int>(g_.eqns.size()) - 1; e > last; --e)
      if (computable[e] && is_effect(g_.eqns[e].prim)) last = e;
    for (int e = last; e >= 0; --e) {
      const FlatEquation& eqn = g_.eqns[e];
      if (!g_.within(eqn.scope, scope)) continue;
      const int child = g_.child_of(scope, eqn.scope);
      if (child >= 0 && computable[e] && is_effect(eqn.prim) && runs_again_in(child, e, computable)) {
        auto& mine = child_computable[child];
        if (mine.empty()) mine.assign(g_.eqns.size(), 0);
        mine[e] = 1;
        for (ValueId v : eqn.inputs) use_in_child(child, v, e);
      } else if (next_tangent > 0 && tangents[next_tangent - 1] == e) {
        --next_tangent;
        if (child >= 0) child_tangents[child].push_back(e);
        for (ValueId v : eqn.inputs) {
          if (g_.values[v].is_tangent) continue;
          if (child < 0) hand_over(v, e);
          else use_in_child(child, v, e);
        }
      } else if (child >= 0 && child_computable.count(child) && child_computable[child][e]) {
        for (ValueId v : eqn.inputs) use_in_child(child, v, e);
      }
    }

    // This level's phase: the computable equations what it hands over needs.
    std::vector<char> needed = handed_over;
    if (top)
      for (ValueId v : lin_.outputs) needed[v] = 1;
    std::vector<int> phase;
    for (int e = static_cast<int>(g_.eqns.size()) - 1; e >= 0; --e) {
      const FlatEquation& eqn = g_.eqns[e];
      if (!computable[e] || !g_.within(eqn.scope, scope)) continue;
      if (!is_effect(eqn.prim) && std::none_of(eqn.outputs.begin(), eqn.outputs.end(), [&](ValueId v) { return needed[v]; }))
        continue;
      phase.push_back(e);
      for (ValueId v : eqn.inputs) needed[v] = 1;
    }
    std::reverse(phase.begin(), phase.end());

    if (top) {
      lin_.forward = phase;
      record_residuals(handed_over, offloaded_to, reader);
    } else {
      lin_.recomputed.insert(lin_.recomputed.end(), phase.begin(), phase.end());
    }
    // A recomputation runs when the reverse pass first needs it, not all at the checkpoint's start:
    // then a recomputed value lives only from there to its last reader, so what one checkpoint
    // recomputes need not be alive all at once (Chen et al. 2016's segments, inside one checkpoint).
    // The equations and their order among themselves are the same; only their places move.
    std::vector<char> pending(g_.eqns.size(), 0);
    if (!top)
      for (int e : phase) pending[static_cast<size_t>(e)] = 1;
    auto recompute_for = [&](const std::vector<ValueId>& reads) { recompute_what(reads, pending); };
    auto recompute_rest = [&] {
      for (int e : phase)
        if (pending[static_cast<size_t>(e)]) recompute_what(g_.eqns[static_cast<size_t>(e)].outputs, pending);
    };
    for (int e : phase)  // a checkpoint's effects run again first, in program order
      if (pending[static_cast<size_t>(e)] && is_effect(g_.eqns[static_cast<size_t>(e)].prim)) {
        recompute_for(g_.eqns[static_cast<size_t>(e)].inputs);
        pending[static_cast<size_t>(e)] = 0;
        steps_.push_back(BackwardStep{true, e});
      }

    // Transpose in reverse; a child checkpoint's backward pass runs where the reverse pass reaches it.
    std::vector<char> done(g_.regions.size(), 0);
    for (auto it = tangents.rbegin(); it != tangents.rend(); ++it) {
      const int child = g_.child_of(scope, g_.eqns[*it].scope);
      if (child < 0) {
        recompute_for(g_.eqns[static_cast<size_t>(*it)].inputs);
        steps_.push_back(BackwardStep{false, *it});
      } else if (!done[child]) {
        recompute_rest();  // what the child reads of this level's values is not known here
        done[child] = 1;
        std::vector<int> inner = child_tangents[child];
        std::reverse(inner.begin(), inner.end());
        auto& inner_computable = child_computable[child];
        if (inner_computable.empty()) inner_computable.assign(g_.eqns.size(), 0);
        evaluate_level(child, inner_computable, inner);
      }
    }
    recompute_rest();
  }

  // debugging.py, _debug_callback_partial_eval_custom, with its operands known: the effect is
  // staged into checkpoint `child`'s backward pass unless `child`'s policy saves it and one of its
  // operands is not instantiated there, that is, computed inside `child` by an equation the policy
  // does not recompute (the checkpoint's own inputs, and what it recomputes, are instantiated).
  bool runs_again_in(int child, int e, const std::vector<char>& computable) {
    if (decide(child, e).decision == Decision::kRecompute) return true;
    return std::all_of(g_.eqns[e].inputs.begin(), g_.eqns[e].inputs.end(), [&](ValueId v) {
      const Value& value = g_.values[v];
      if (value.origin != ValueOrigin::kEquation) return true;
      const int p = value.producer;
      if (!computable[p] || !g_.within(g_.eqns[p].scope, child)) return true;
      return decide(child, p).decision == Decision::kRecompute;
    });
  }

  // Runs the pending recomputations that `reads` depend on, each after those it reads.
  void recompute_what(const std::vector<ValueId>& reads, std::vector<char>& pending) {
    std::vector<std::pair<int, bool>> stack;  // (equation, its inputs already visited)
    auto visit = [&](ValueId v) {
      const Value& value = g_.values[static_cast<size_t>(v)];
      if (value.origin == ValueOrigin::kEquation && pending[static_cast<size_t>(value.producer)])
        stack.emplace_back(value.producer, false);
    };
    for (ValueId v : reads) {
      visit(v);
      while (!stack.empty()) {
        auto [e, expanded] = stack.back();
        stack.pop_back();
        if (!pending[static_cast<size_t>(e)]) continue;
        if (expanded) {
          pending[static_cast<size_t>(e)] = 0;
          steps_.push_back(BackwardStep{true, e});
          continue;
        }
        stack.emplace_back(e, true);
        for (ValueId in : g_.eqns[static_cast<size_t>(e)].inputs) visit(in);
      }
    }
  }

  // Report order: constants, arguments (binder order), then equation outputs in program order.
  void record_residuals(const std::vector<char>& kept, const std::vector<std::optional<MemorySpace>>& offloaded_to,
                        const std::vector<int>& reader) {
    std::vector<ValueId> order;
    for (ValueId v : lin_.constants)
      if (kept[v]) order.push_back(v);
    for (ValueId v : lin_.arguments)
      if (kept[v]) order.push_back(v);
    for (ValueId v = 0; v < static_cast<ValueId>(g_.values.size()); ++v)
      if (kept[v] && g_.values[v].origin == ValueOrigin::kEquation) order.push_back(v);
    for (ValueId v : order) {
      Residual r;
      r.value = v;
      r.type = g_.values[v].type;
      if (offloaded_to[v]) r.type.space = *offloaded_to[v];
      r.first_reader = reader[v];
      r.region = g_.eqns[reader[v]].region;
      lin_.residuals.push_back(r);
    }
  }

  Linearization& lin_;
  const FlatGraph& g_;
  std::vector<int> live_tangents_;
  std::vector<std::string> sites_;
  std::map<std::pair<int, int>, PolicyAnswer> cache_;
  std::vector<BackwardStep> steps_;
};

}  // namespace

std::vector<BackwardStep> partial_eval(Linearization& lin) { return PartialEvaluator(lin).run(); }

namespace {

// A policy sees a custom_jvp_call's body equation run under JAX's rule as that call: JAX's forward
// program has the one custom_jvp_call equation where rematkit has its body.
struct PolicyQuestion {
  std::string_view primitive;
  Params call_params;
  const Params* params = nullptr;
  std::vector<Type> in, out;
};

PolicyQuestion question_about(const FlatGraph& g, int e) {
  const FlatEquation& eqn = g.eqns[static_cast<size_t>(e)];
  PolicyQuestion q;
  q.primitive = prim_name(eqn.prim);
  q.params = &eqn.params;
  for (ValueId v : eqn.inputs) q.in.push_back(g.values[v].type);
  for (ValueId v : eqn.outputs) q.out.push_back(g.values[v].type);
  if (eqn.custom_call >= 0) {
    const CustomCall& call = g.custom_calls[eqn.custom_call];
    q.primitive = prim_name(call.prim);
    if (!call.name.empty()) q.call_params.set("name", ParamValue::of_ident(call.name));
    q.params = nullptr;  // call_params: set once q stops moving
  }
  return q;
}

}  // namespace

void survey_policies(const FlatGraph& g, const std::vector<std::string>& sites) {
  // Per policy object, the equations of every checkpoint it governs (a nested one's too).
  std::map<const Policy*, std::vector<int>> asked;
  std::vector<const Policy*> order;
  for (size_t r = 1; r < g.regions.size(); ++r) {
    const Policy* policy = g.regions[r].policy.get();
    if (!policy) continue;
    auto [it, fresh] = asked.try_emplace(policy);
    if (fresh) order.push_back(policy);
    for (size_t e = 0; e < g.eqns.size(); ++e)
      if (g.policy_decides(g.eqns[e]) && g.within(g.eqns[e].scope, static_cast<int>(r))) it->second.push_back(static_cast<int>(e));
  }
  for (const Policy* policy : order) {
    std::vector<int>& eqns = asked[policy];
    std::sort(eqns.begin(), eqns.end());
    eqns.erase(std::unique(eqns.begin(), eqns.end()), eqns.end());
    std::vector<PolicyQuestion> questions;
    questions.reserve(eqns.size());
    for (int e : eqns) questions.push_back(question_about(g, e));
    std::vector<EquationView> views;
    views.reserve(eqns.size());
    for (size_t i = 0; i < eqns.size(); ++i) {
      const PolicyQuestion& q = questions[i];
      views.push_back(EquationView{q.primitive, q.params ? *q.params : q.call_params, q.in, q.out,
                                   sites[static_cast<size_t>(eqns[i])],
                                   static_cast<double>(equation_flops(g, g.eqns[static_cast<size_t>(eqns[i])]))});
    }
    try {
      policy->survey(views);
    } catch (const Error& err) {
      if (err.kind() != ErrorKind::kBadInput) throw;
      fail(err.what());
    }
  }
}

PolicyAnswer ask_policy(const Policy& policy, const FlatGraph& g, int e, std::string_view site) {
  const FlatEquation& eqn = g.eqns[e];
  // A scan is decided inside (scan_jvp.cpp): its forward part keeps what the policy saves of its
  // body, its recompute part runs again in the backward pass (loops.py, _partial_eval_custom).
  if (eqn.part == ControlFlowPart::kForward) return PolicyAnswer::saveable(true);
  if (eqn.part == ControlFlowPart::kRecompute) return PolicyAnswer::saveable(false);
  const PolicyQuestion q = question_about(g, e);
  try {
    return policy.decide(EquationView{q.primitive, q.params ? *q.params : q.call_params, q.in, q.out, site,
                                      static_cast<double>(equation_flops(g, eqn))});
  } catch (const Error& err) {
    if (err.kind() != ErrorKind::kBadInput) throw;
    fail_at(eqn.where, err.what());
  }
}

}  // namespace rematkit::autodiff
