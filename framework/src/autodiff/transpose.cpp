// Transposition of the live linear (tangent) equations into the backward pass: cotangents flow
// from the outputs to the arguments, summed where a value is used more than once.
#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "passes.hpp"
#include "rematkit/autodiff/scan_linearization.hpp"
#include "cond_jvp.hpp"
#include "scan_jvp.hpp"
#include "transpose_rules.hpp"

namespace rematkit::autodiff {
namespace {

class Transposer {
 public:
  explicit Transposer(Linearization& lin) : lin_(lin), g_(lin.graph) {}

  void run(const std::vector<BackwardStep>& steps) {
    find_split_groups(steps);
    seed_outputs();
    for (const BackwardStep& step : steps) {
      if (step.recompute) {
        lin_.backward.push_back(step.eqn);
        continue;
      }
      const size_t first = g_.eqns.size();
      transpose(step.eqn);
      for (size_t e = first; e < g_.eqns.size(); ++e) lin_.backward.push_back(static_cast<int>(e));
    }
    const size_t first = g_.eqns.size();
    collect_gradients();
    for (size_t e = first; e < g_.eqns.size(); ++e) lin_.backward.push_back(static_cast<int>(e));
  }

 private:
  void seed_outputs() {
    for (size_t i = 0; i < lin_.outputs.size(); ++i) {
      ValueId tangent = lin_.output_tangents[i];
      if (tangent == kNoValue) {
        lin_.cotangent_seeds.push_back(kNoValue);
        continue;
      }
      Value seed;
      seed.type = g_.values[lin_.outputs[i]].type;
      seed.origin = ValueOrigin::kCotangentSeed;
      seed.binder = static_cast<int>(i);
      seed.is_tangent = true;
      ValueId s = g_.add_value(std::move(seed));
      lin_.cotangent_seeds.push_back(s);
      Emitter em(g_, 0, 0, -1, Prim::kAdd, {});
      em.set_linear_role(EqnRole::kBackward);
      accumulate(em, tangent, s);
    }
  }

  void accumulate(Emitter& em, ValueId tangent, ValueId ct) {
    auto [it, inserted] = cts_.emplace(tangent, ct);
    if (!inserted) it->second = em.linear(Prim::kAdd, {it->second, ct});
  }

  void transpose(int e) {
    if (g_.eqns[e].part == ControlFlowPart::kTangent) return transpose_loop(e);
    const auto& outs = g_.eqns[e].outputs;
    if (g_.eqns[e].prim == Prim::kWhile &&  // loops.py, _while_transpose_error
        std::any_of(outs.begin(), outs.end(), [&](ValueId v) { return cts_.count(v) != 0; }))
      fail_at(g_.eqns[e].where, "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
                                "dynamic start/stop values. Try using lax.scan, or using fori_loop with static start/stop.");
    const FlatEquation eqn = g_.eqns[e];  // a copy: emitting grows g_.eqns
    if (auto group = split_group_.find(e); group != split_group_.end()) return transpose_split_piece(eqn, group->second);
    auto found = cts_.find(eqn.outputs[0]);
    if (found == cts_.end()) return;  // nothing downstream reads this tangent
    const ValueId ct = found->second;
    Emitter em(g_, eqn.region, eqn.scope, eqn.jit, eqn.origin, eqn.where);
    em.set_linear_role(EqnRole::kBackward);
    transpose_rule(em, g_, eqn, ct, [&](size_t i, ValueId c) { accumulate(em, eqn.inputs[i], c); });
  }

  // A scan's or cond's tangent part has an output per nonzero tangent; its transpose takes a cotangent for
  // each (zeros where nothing downstream read one) and gives one per tangent operand.
  void transpose_loop(int e) {
    const FlatEquation eqn = g_.eqns[e];
    if (std::none_of(eqn.outputs.begin(), eqn.outputs.end(), [&](ValueId v) { return cts_.count(v) != 0; })) return;
    Emitter em(g_, eqn.region, eqn.scope, eqn.jit, eqn.origin, eqn.where);
    em.set_linear_role(EqnRole::kBackward);
    std::vector<ValueId> cts;
    for (ValueId v : eqn.outputs) {
      auto it = cts_.find(v);
      cts.push_back(it != cts_.end() ? it->second : em.full(0.0, v, EqnRole::kBackward));
    }
    const std::vector<ValueId> in_cts = eqn.scan ? transpose_scan(g_, eqn, cts) : transpose_cond(g_, eqn, cts);
    const size_t first_tangent = eqn.inputs.size() - in_cts.size();
    for (size_t i = 0; i < in_cts.size(); ++i) accumulate(em, eqn.inputs[first_tangent + i], in_cts[i]);
  }

  // lax._split_transpose_rule concatenates the pieces' cotangents. Here a split is an equation per
  // piece (the parser's, with `output`), each of which alone transposes to its cotangent padded
  // with zeros, and the pads add up: a pass per piece over the whole operand, then the adds. Where
  // the backward pass transposes two or more pieces of one split, their cotangents wait for the
  // last of them and are concatenated there, zeros for the other pieces, as JAX does.
  struct SplitGroup {
    std::vector<int> pieces;   // the piece's equation, by its output index (-1: none the pass transposes)
    std::vector<ValueId> cts;  // its cotangent, once transposed (kNoValue: none)
    size_t in_pass = 0;        // pieces the pass transposes
    size_t transposed = 0;     // of those, transposed so far
  };

  void find_split_groups(const std::vector<BackwardStep>& steps) {
    std::map<std::tuple<ValueId, int64_t, std::vector<int64_t>>, size_t> by_split;
    std::vector<SplitGroup> groups;
    std::vector<bool> whole;
    for (const BackwardStep& step : steps) {
      const FlatEquation& eqn = g_.eqns[static_cast<size_t>(step.eqn)];
      if (step.recompute || eqn.prim != Prim::kSplit || eqn.part != ControlFlowPart::kNone || eqn.inputs.size() != 1)
        continue;
      const std::vector<int64_t> sizes = param_ints(eqn.params, "sizes", eqn.where);
      const int64_t output = eqn.params.find("output") ? param_int(eqn.params, "output", eqn.where) : 0;
      const auto key = std::make_tuple(eqn.inputs[0], param_int(eqn.params, "axis", eqn.where), sizes);
      auto [it, added] = by_split.emplace(key, groups.size());
      if (added) {
        groups.push_back(SplitGroup{std::vector<int>(sizes.size(), -1), std::vector<ValueId>(sizes.size(), kNoValue), 0, 0});
        whole.push_back(true);
      }
      SplitGroup& group = groups[it->second];
      if (output < 0 || output >= static_cast<int64_t>(sizes.size()) || group.pieces[static_cast<size_t>(output)] >= 0)
        whole[it->second] = false;  // a piece twice: each transposes alone
      else
        group.pieces[static_cast<size_t>(output)] = step.eqn;
    }
    for (size_t i = 0; i < groups.size(); ++i) {
      const std::vector<int>& pieces = groups[i].pieces;
      groups[i].in_pass = static_cast<size_t>(std::count_if(pieces.begin(), pieces.end(), [](int e) { return e >= 0; }));
      if (!whole[i] || groups[i].in_pass < 2) continue;
      split_groups_.push_back(std::move(groups[i]));
      for (int e : split_groups_.back().pieces)
        if (e >= 0) split_group_[e] = split_groups_.size() - 1;
    }
  }

  void transpose_split_piece(const FlatEquation& eqn, size_t g) {
    SplitGroup& group = split_groups_[g];
    const int64_t output = eqn.params.find("output") ? param_int(eqn.params, "output", eqn.where) : 0;
    if (auto found = cts_.find(eqn.outputs[0]); found != cts_.end()) group.cts[static_cast<size_t>(output)] = found->second;
    if (++group.transposed < group.in_pass) return;
    if (std::all_of(group.cts.begin(), group.cts.end(), [](ValueId v) { return v == kNoValue; })) return;
    Emitter em(g_, eqn.region, eqn.scope, eqn.jit, eqn.origin, eqn.where);
    em.set_linear_role(EqnRole::kBackward);
    const int64_t axis = param_int(eqn.params, "axis", eqn.where);
    const std::vector<int64_t> sizes = param_ints(eqn.params, "sizes", eqn.where);
    std::vector<ValueId> parts;
    for (size_t i = 0; i < group.pieces.size(); ++i) {
      if (group.cts[i] != kNoValue) {
        parts.push_back(group.cts[i]);
        continue;
      }
      Shape shape = em.shape(eqn.inputs[0]);
      shape[static_cast<size_t>(axis)] = sizes[i];
      parts.push_back(em.broadcast_to(em.literal(0.0, em.type(eqn.inputs[0]).dtype), shape));
    }
    accumulate(em, eqn.inputs[0], em.linear(Prim::kConcatenate, std::move(parts), concatenate_params(axis)));
  }

  void collect_gradients() {
    for (size_t i = 0; i < lin_.arguments.size(); ++i) {
      const ValueId a = lin_.arguments[i], tangent = lin_.argument_tangents[i];
      if (tangent == kNoValue) {
        lin_.gradients.push_back(kNoValue);
        continue;
      }
      auto it = cts_.find(tangent);
      if (it != cts_.end()) {
        lin_.gradients.push_back(it->second);
      } else {
        Emitter em(g_, 0, 0, -1, Prim::kAdd, {});
        lin_.gradients.push_back(em.full(0.0, a, EqnRole::kBackward));
      }
    }
  }

  Linearization& lin_;
  FlatGraph& g_;
  std::unordered_map<ValueId, ValueId> cts_;
  std::vector<SplitGroup> split_groups_;
  std::unordered_map<int, size_t> split_group_;  // a piece's equation -> its group
};

}  // namespace

void transpose_linear(Linearization& lin, const std::vector<BackwardStep>& steps) { Transposer(lin).run(steps); }

}  // namespace rematkit::autodiff
