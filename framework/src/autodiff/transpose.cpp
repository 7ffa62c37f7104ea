// Transposition of the live linear (tangent) equations into the backward pass: cotangents flow
// from the outputs to the arguments, summed where a value is used more than once.
#include <algorithm>
#include <unordered_map>

#include "passes.hpp"
#include "transpose_rules.hpp"

namespace rematkit::autodiff {
namespace {

class Transposer {
 public:
  explicit Transposer(Linearization& lin) : lin_(lin), g_(lin.graph) {}

  void run(const std::vector<BackwardStep>& steps) {
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
    const FlatEquation eqn = g_.eqns[e];  // a copy: emitting grows g_.eqns
    auto found = cts_.find(eqn.outputs[0]);
    if (found == cts_.end()) return;  // nothing downstream reads this tangent
    const ValueId ct = found->second;
    Emitter em(g_, eqn.region, eqn.scope, eqn.jit, eqn.origin, eqn.where);
    em.set_linear_role(EqnRole::kBackward);
    transpose_rule(em, g_, eqn, ct, [&](size_t i, ValueId c) { accumulate(em, eqn.inputs[i], c); });
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
};

}  // namespace

void transpose_linear(Linearization& lin, const std::vector<BackwardStep>& steps) { Transposer(lin).run(steps); }

}  // namespace rematkit::autodiff
