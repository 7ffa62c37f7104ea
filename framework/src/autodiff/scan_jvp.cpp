// A scan, linearized as JAX linearizes it (jax/_src/lax/control_flow/loops.py):
//  - _scan_jvp's fixpoint: a carry whose output tangent is nonzero is differentiated, and the body
//    is linearized again until the set of differentiated carries is stable;
//  - _partial_eval: the body's residuals become the scan's stacked outputs f32[L, ...]; a
//    residual that is a const or an xs is the operand itself (forwarded), and one computed from the
//    consts alone is computed once, before the loop (loop-invariant hoisting);
//  - _partial_eval_custom: inside a checkpoint, the checkpoint's policy decides each body
//    equation; what it saves is stacked by the forward scan, and the rest (the carries included) is
//    computed again by a scan in the checkpoint's backward pass;
//  - _scan_transpose: the backward pass is a scan in the other direction over the body's backward
//    pass, the consts' cotangents summed across iterations.
#include "scan_jvp.hpp"

#include <algorithm>
#include <map>
#include <memory>

#include "emitter.hpp"
#include "passes.hpp"
#include "rematkit/ir/control_flow_params.hpp"
#include "rematkit/autodiff/scan_linearization.hpp"

namespace rematkit::autodiff {
namespace {

Type stacked(Type t, int64_t length) {
  t.shape.insert(t.shape.begin(), length);
  return t;
}

class ScanTracer {
 public:
  ScanTracer(FlatGraph& graph, const PolicyRegistry& policies, const Equation& eqn, int region, int scope, int jit)
      : g_(graph), policies_(policies), eqn_(eqn), region_(region), scope_(scope), jit_(jit) {}

  ScanTrace run(const std::vector<ValueId>& x, const std::vector<ValueId>& t) {
    const ScanParams p = scan_params(eqn_.params, eqn_.where);
    auto s = std::make_shared<ScanLinearization>();
    s->length = p.length;
    s->reverse = p.reverse;
    s->num_consts = p.num_consts;
    s->num_carry = p.num_carry;
    s->num_xs = x.size() - p.num_consts - p.num_carry;
    s->num_ys = p.body->outvars.size() - p.num_carry;
    for (ValueId v : t) s->tangent_given.push_back(v != kNoValue);
    linearize_body(*p.body, *s);
    const bool any_tangent = std::find(s->tangent_given.begin(), s->tangent_given.end(), true) != s->tangent_given.end();
    if (any_tangent) place_residuals(*s, x);
    else s->forward_eqns = s->body.forward;

    ScanTrace out;
    const std::vector<ValueId> fwd = emit_forward(s, x);
    out.primals.assign(fwd.begin(), fwd.begin() + static_cast<long>(s->num_carry + s->num_ys));
    out.tangents.assign(out.primals.size(), kNoValue);
    if (!any_tangent) return out;
    std::vector<ValueId> saved_stacked(fwd.begin() + static_cast<long>(s->num_carry + s->num_ys), fwd.end());
    const std::vector<ValueId> recomputed_stacked = emit_recompute(s, x, saved_stacked);

    // The tangent part reads every residual where the backward pass will find it.
    std::vector<ValueId> inputs;
    for (const ScanResidual& r : s->residuals) {
      switch (r.kind) {
        case ScanResidual::Kind::kConst: inputs.push_back(x[r.index]); break;
        case ScanResidual::Kind::kXs: inputs.push_back(x[s->num_consts + s->num_carry + r.index]); break;
        case ScanResidual::Kind::kHoisted: inputs.push_back(hoisted_outer_[r.index]); break;
        case ScanResidual::Kind::kSaved: inputs.push_back(saved_stacked[r.index]); break;
        case ScanResidual::Kind::kRecomputed: inputs.push_back(recomputed_stacked[r.index]); break;
      }
    }
    for (size_t i = 0; i < t.size(); ++i)
      if (s->tangent_given[i]) inputs.push_back(t[i]);
    std::vector<Type> types;
    for (size_t k = 0; k < s->tangent_out.size(); ++k)
      if (s->tangent_out[k]) types.push_back(g_.values[out.primals[k]].type);
    const std::vector<ValueId> tangents = emit(EqnRole::kTangent, ControlFlowPart::kTangent, s, inputs, types);
    size_t next = 0;
    for (size_t k = 0; k < s->tangent_out.size(); ++k)
      if (s->tangent_out[k]) out.tangents[k] = tangents[next++];
    return out;
  }

 private:
  // This scan's site: where it is, and how many scans from there this graph traced before it (a
  // shared sub-program may be called twice); its body's sites start with it.
  std::string site() const {
    int earlier = 0;
    for (const FlatEquation& e : g_.eqns)
      earlier += e.prim == Prim::kScan && e.part == ControlFlowPart::kForward && e.where == eqn_.where;
    return g_.site_prefix + std::to_string(eqn_.where.line) + ":" + std::to_string(eqn_.where.column) + "#" +
           std::to_string(earlier);
  }

  // _scan_jvp's fixpoint over the carries, with the body linearized by its own checkpoints.
  void linearize_body(const Program& body, ScanLinearization& s) {
    const size_t n = s.tangent_given.size();
    s.differentiated = s.tangent_given;
    const std::string prefix = site() + "/";
    for (size_t round = 0; round <= s.num_carry; ++round) {
      LinearizeOptions options;
      options.policies = &policies_;
      options.site_prefix = prefix;
      for (size_t i = 0; i < n; ++i)
        if (s.differentiated[i]) options.differentiate.push_back(i);
      options.differentiate_nothing = options.differentiate.empty();
      s.body = linearize(body, options);
      bool changed = false;
      for (size_t j = 0; j < s.num_carry; ++j) {
        if (s.differentiated[s.num_consts + j] || s.body.output_tangents[j] == kNoValue) continue;
        s.differentiated[s.num_consts + j] = true;
        changed = true;
      }
      if (!changed) break;
    }
    s.tangent_out.assign(s.num_carry + s.num_ys, false);
    for (size_t k = 0; k < s.tangent_out.size(); ++k)
      s.tangent_out[k] = k < s.num_carry ? s.differentiated[s.num_consts + k] : s.body.output_tangents[k] != kNoValue;
  }

  enum class Arg { kNone, kConst, kCarry, kXs };
  Arg arg_kind(const ScanLinearization& s, ValueId v, size_t* index) const {
    const Value& value = s.body.graph.values[v];
    if (value.origin != ValueOrigin::kArgument) return Arg::kNone;
    const size_t b = static_cast<size_t>(value.binder);
    if (b < s.num_consts) return *index = b, Arg::kConst;
    if (b < s.num_consts + s.num_carry) return *index = b - s.num_consts, Arg::kCarry;
    return *index = b - s.num_consts - s.num_carry, Arg::kXs;
  }

  // Body equations of the forward pass that depend on the consts (and literals) alone.
  std::vector<char> loop_invariant(const ScanLinearization& s) const {
    const FlatGraph& bg = s.body.graph;
    std::vector<char> invariant_value(bg.values.size(), 0), invariant_eqn(bg.eqns.size(), 0);
    for (ValueId v = 0; v < static_cast<ValueId>(bg.values.size()); ++v) {
      size_t index = 0;
      invariant_value[v] = bg.values[v].origin == ValueOrigin::kLiteral || arg_kind(s, v, &index) == Arg::kConst;
    }
    for (int e : s.body.forward) {
      const FlatEquation& eqn = bg.eqns[e];
      if (eqn.part != ControlFlowPart::kNone) continue;  // a nested loop stays in the loop
      if (!std::all_of(eqn.inputs.begin(), eqn.inputs.end(), [&](ValueId v) { return invariant_value[v] != 0; })) continue;
      invariant_eqn[e] = 1;
      for (ValueId v : eqn.outputs) invariant_value[v] = 1;
    }
    return invariant_eqn;
  }

  // Which residuals are forwarded, hoisted, saved by the forward scan or recomputed in the backward.
  void place_residuals(ScanLinearization& s, const std::vector<ValueId>& x) {
    const FlatGraph& bg = s.body.graph;
    const std::vector<char> invariant = loop_invariant(s);
    const Policy* policy = region_ > 0 ? g_.regions[region_].policy.get() : nullptr;
    // The checkpoint around the scan decides body equations by their sites inside the body.
    const std::vector<std::string> sites = policy ? equation_sites(bg) : std::vector<std::string>{};
    auto decides = [&](int e) { return ask_policy(*policy, bg, e, sites[static_cast<size_t>(e)]).decision; };
    std::map<ValueId, size_t> hoisted_at, saved_at, recomputed_at;
    auto hoist = [&](ValueId v) {
      auto [it, fresh] = hoisted_at.try_emplace(v, s.hoisted.size());
      if (fresh) s.hoisted.push_back(v);
      return it->second;
    };
    auto save = [&](ValueId v) {
      auto [it, fresh] = saved_at.try_emplace(v, s.saved.size());
      if (fresh) s.saved.push_back(v);
      return it->second;
    };
    // Under a checkpoint, a body value is kept only where the policy saves its producer; otherwise
    // the backward pass computes it again, from what is kept.
    std::vector<char> visited(bg.values.size(), 0);
    std::vector<ValueId> work;
    auto reach = [&](ValueId v) {
      if (visited[v]) return;
      visited[v] = 1;
      work.push_back(v);
    };
    auto walk = [&] {
      while (!work.empty()) {
        const ValueId v = work.back();
        work.pop_back();
        const Value& value = bg.values[v];
        if (value.origin != ValueOrigin::kEquation) continue;  // an argument, given to every scan
        const int e = value.producer;
        if (invariant[e]) {
          hoist(v);
          continue;
        }
        if (decides(e) != Decision::kRecompute) {
          save(v);
          continue;
        }
        for (ValueId in : bg.eqns[e].inputs) reach(in);
      }
    };
    for (const Residual& r : s.body.residuals) {
      size_t index = 0;
      ScanResidual placed;
      const Arg arg = arg_kind(s, r.value, &index);
      if (arg == Arg::kConst) placed = {ScanResidual::Kind::kConst, index};
      else if (arg == Arg::kXs) placed = {ScanResidual::Kind::kXs, index};
      else if (arg == Arg::kNone && invariant[bg.values[r.value].producer])
        placed = {ScanResidual::Kind::kHoisted, hoist(r.value)};
      else if (!policy)
        placed = {ScanResidual::Kind::kSaved, save(r.value)};
      else if (arg == Arg::kNone && decides(bg.values[r.value].producer) != Decision::kRecompute)
        placed = {ScanResidual::Kind::kSaved, save(r.value)};
      else {
        auto [it, fresh] = recomputed_at.try_emplace(r.value, s.recomputed.size());
        if (fresh) s.recomputed.push_back(r.value);
        placed = {ScanResidual::Kind::kRecomputed, it->second};
        reach(r.value);
      }
      s.residuals.push_back(placed);
    }
    walk();
    if (!s.recomputed.empty())  // the recompute scan carries the carries again, from the start
      for (size_t j = 0; j < s.num_carry; ++j) reach(s.body.outputs[j]);
    walk();
    hoist_outside(s, x);

    std::vector<ValueId> given = s.hoisted;
    std::vector<ValueId> forward_results(s.body.outputs.begin(), s.body.outputs.end());
    forward_results.insert(forward_results.end(), s.saved.begin(), s.saved.end());
    s.forward_eqns = needed_eqns(s, forward_results, given);
    if (!s.recomputed.empty()) {
      given.insert(given.end(), s.saved.begin(), s.saved.end());
      std::vector<ValueId> results(s.body.outputs.begin(), s.body.outputs.begin() + static_cast<long>(s.num_carry));
      results.insert(results.end(), s.recomputed.begin(), s.recomputed.end());
      s.recompute_eqns = needed_eqns(s, results, given);
    }
  }

  // The forward equations of the body that compute `results` from the arguments and `given`, and
  // its effects (a debug print runs each iteration) with what they read.
  static std::vector<int> needed_eqns(const ScanLinearization& s, const std::vector<ValueId>& results,
                                      const std::vector<ValueId>& given) {
    const FlatGraph& bg = s.body.graph;
    std::vector<char> needed(bg.values.size(), 0), is_given(bg.values.size(), 0);
    for (ValueId v : given) is_given[v] = 1;
    for (ValueId v : results) needed[v] = 1;
    std::vector<int> eqns;
    for (auto it = s.body.forward.rbegin(); it != s.body.forward.rend(); ++it) {
      const FlatEquation& eqn = bg.eqns[*it];
      if (!is_effect(eqn.prim) &&
          std::none_of(eqn.outputs.begin(), eqn.outputs.end(), [&](ValueId v) { return needed[v] && !is_given[v]; }))
        continue;
      eqns.push_back(*it);
      for (ValueId v : eqn.inputs) needed[v] = 1;
    }
    std::reverse(eqns.begin(), eqns.end());
    return eqns;
  }

  // The loop-invariant equations the hoisted residuals need, emitted before the scan at the outer
  // level, where JAX's hoisting evaluates them.
  void hoist_outside(ScanLinearization& s, const std::vector<ValueId>& x) {
    if (s.hoisted.empty()) return;
    const FlatGraph& bg = s.body.graph;
    std::vector<char> needed(bg.values.size(), 0);
    for (ValueId v : s.hoisted) needed[v] = 1;
    std::vector<int> eqns;
    for (auto it = s.body.forward.rbegin(); it != s.body.forward.rend(); ++it) {
      const FlatEquation& eqn = bg.eqns[*it];
      if (std::none_of(eqn.outputs.begin(), eqn.outputs.end(), [&](ValueId v) { return needed[v] != 0; })) continue;
      eqns.push_back(*it);
      for (ValueId v : eqn.inputs) needed[v] = 1;
    }
    std::reverse(eqns.begin(), eqns.end());
    s.hoisted_eqns = eqns;
    std::map<ValueId, ValueId> outer;
    auto outer_of = [&](ValueId v) {
      if (auto it = outer.find(v); it != outer.end()) return it->second;
      const Value& value = bg.values[v];
      if (value.origin == ValueOrigin::kLiteral) return outer[v] = g_.add_value(value);
      size_t index = 0;
      if (arg_kind(s, v, &index) != Arg::kConst) internal_error("a hoisted scan value depends on more than the consts");
      return outer[v] = x[index];
    };
    for (int e : eqns) {
      const FlatEquation& inner = bg.eqns[e];
      FlatEquation copy;
      copy.prim = inner.prim;
      copy.params = inner.params;
      for (ValueId v : inner.inputs) copy.inputs.push_back(outer_of(v));
      copy.role = inner.role;
      copy.region = region_;
      copy.scope = scope_;
      copy.jit = jit_;
      copy.origin = inner.origin;
      copy.where = inner.where;
      const FlatEquation& added = g_.add_equation(std::move(copy));
      for (size_t k = 0; k < inner.outputs.size(); ++k) outer[inner.outputs[k]] = added.outputs[k];
    }
    for (ValueId v : s.hoisted) hoisted_outer_.push_back(outer.at(v));
  }

  std::vector<ValueId> emit(EqnRole role, ControlFlowPart part, const std::shared_ptr<ScanLinearization>& s,
                            std::vector<ValueId> inputs, const std::vector<Type>& types) {
    Emitter em(g_, region_, scope_, jit_, Prim::kScan, eqn_.where);
    return em.emit_part(role, part, s, nullptr, std::move(inputs), eqn_.params, types);
  }

  std::vector<ValueId> emit_forward(const std::shared_ptr<ScanLinearization>& s, const std::vector<ValueId>& x) {
    std::vector<ValueId> inputs = x;
    inputs.insert(inputs.end(), hoisted_outer_.begin(), hoisted_outer_.end());
    std::vector<Type> types;
    const FlatGraph& bg = s->body.graph;
    for (size_t k = 0; k < s->body.outputs.size(); ++k) {
      const Type& t = bg.values[s->body.outputs[k]].type;
      types.push_back(k < s->num_carry ? t : stacked(t, s->length));
    }
    for (ValueId v : s->saved) types.push_back(stacked(bg.values[v].type, s->length));
    return emit(EqnRole::kPrimal, ControlFlowPart::kForward, s, inputs, types);
  }

  std::vector<ValueId> emit_recompute(const std::shared_ptr<ScanLinearization>& s, const std::vector<ValueId>& x,
                                      const std::vector<ValueId>& saved_stacked) {
    if (s->recomputed.empty()) return {};
    std::vector<ValueId> inputs = x;
    inputs.insert(inputs.end(), hoisted_outer_.begin(), hoisted_outer_.end());
    inputs.insert(inputs.end(), saved_stacked.begin(), saved_stacked.end());
    std::vector<Type> types;
    for (ValueId v : s->recomputed) types.push_back(stacked(s->body.graph.values[v].type, s->length));
    return emit(EqnRole::kCoefficient, ControlFlowPart::kRecompute, s, inputs, types);
  }

  FlatGraph& g_;
  const PolicyRegistry& policies_;
  const Equation& eqn_;
  int region_, scope_, jit_;
  std::vector<ValueId> hoisted_outer_;
};

}  // namespace

ScanTrace trace_scan(FlatGraph& graph, const PolicyRegistry& policies, const Equation& eqn, const std::vector<ValueId>& x,
                     const std::vector<ValueId>& t, int region, int scope, int jit) {
  return ScanTracer(graph, policies, eqn, region, scope, jit).run(x, t);
}

std::vector<ValueId> transpose_scan(FlatGraph& graph, const FlatEquation& eqn, const std::vector<ValueId>& cts) {
  const ScanLinearization& s = *eqn.scan;
  std::vector<ValueId> inputs(eqn.inputs.begin(), eqn.inputs.begin() + static_cast<long>(s.residuals.size()));
  inputs.insert(inputs.end(), cts.begin(), cts.end());
  std::vector<Type> types;
  for (size_t i = s.residuals.size(); i < eqn.inputs.size(); ++i) types.push_back(graph.values[eqn.inputs[i]].type);
  Emitter em(graph, eqn.region, eqn.scope, eqn.jit, Prim::kScan, eqn.where);
  return em.emit_part(EqnRole::kBackward, ControlFlowPart::kTranspose, eqn.scan, nullptr, std::move(inputs), eqn.params, types);
}

}  // namespace rematkit::autodiff
