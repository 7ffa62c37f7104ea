#include "sgd_updates.hpp"

#include <map>

namespace rematkit {

Linearization with_sgd_updates(const Linearization& lin, const std::vector<size_t>& trained, float learning_rate) {
  Linearization out = lin;
  FlatGraph& g = out.graph;
  std::map<ValueId, size_t> definitions;  // value -> how many backward equations define it
  for (int e : lin.backward)
    for (ValueId v : g.eqns[static_cast<size_t>(e)].outputs) ++definitions[v];
  for (size_t a : trained) {
    const ValueId param = lin.arguments.at(a), grad = lin.gradients.at(a);
    if (grad == kNoValue || g.values[param].type.dtype != DType::kF32 || definitions[grad] != 1) continue;
    const FlatEquation& producer = g.eqns[static_cast<size_t>(g.values[grad].producer)];
    Value rate;
    rate.type = Type{DType::kF32, {}, MemorySpace::kDevice};
    rate.origin = ValueOrigin::kLiteral;
    rate.literal = learning_rate;
    const ValueId lr = g.add_value(rate);
    FlatEquation scale;
    scale.prim = Prim::kMul;
    scale.inputs = {grad, lr};
    scale.role = EqnRole::kBackward;
    scale.origin = producer.origin;
    scale.where = producer.where;
    FlatEquation subtract = scale;
    const ValueId scaled = g.add_equation(std::move(scale)).outputs[0];
    subtract.prim = Prim::kSub;
    subtract.inputs = {param, scaled};
    const ValueId updated = g.add_equation(std::move(subtract)).outputs[0];
    const int last = static_cast<int>(g.eqns.size()) - 1;
    out.updates.push_back(ArgumentUpdate{a, {last - 1, last}, updated});
    out.backward.push_back(last - 1);
    out.backward.push_back(last);
  }
  if (out.decisions.size() < g.eqns.size()) out.decisions.resize(g.eqns.size());
  return out;
}

}  // namespace rematkit
