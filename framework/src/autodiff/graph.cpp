#include "rematkit/autodiff/graph.hpp"

#include <map>
#include <utility>

namespace rematkit {

ValueId FlatGraph::add_value(Value value) {
  values.push_back(std::move(value));
  return static_cast<ValueId>(values.size()) - 1;
}

const FlatEquation& FlatGraph::add_equation(FlatEquation eqn) {
  std::vector<Type> in_types;
  for (ValueId v : eqn.inputs) {
    Type t = values.at(v).type;
    t.space = MemorySpace::kDevice;
    in_types.push_back(t);
  }
  std::vector<Type> out_types;
  try {
    out_types = infer_types(eqn.prim, eqn.params, in_types, eqn.where);
  } catch (const Error& e) {
    internal_error(std::string("autodiff built an ill-typed ") + std::string(prim_name(eqn.prim)) + ": " + e.what());
  }
  return add_equation(std::move(eqn), out_types);
}

const FlatEquation& FlatGraph::add_equation(FlatEquation eqn, const std::vector<Type>& out_types) {
  const int index = static_cast<int>(eqns.size());
  const bool tangent = eqn.role == EqnRole::kTangent || eqn.role == EqnRole::kBackward;
  for (const Type& t : out_types) {
    Value v;
    v.type = t;
    v.origin = ValueOrigin::kEquation;
    v.producer = index;
    v.is_tangent = tangent;
    eqn.outputs.push_back(add_value(std::move(v)));
  }
  eqns.push_back(std::move(eqn));
  return eqns.back();
}

int FlatGraph::child_of(int parent, int scope) const {
  for (int r = scope; r > 0; r = regions[r].parent)
    if (regions[r].parent == parent) return r;
  return -1;
}

Type device_type(const Value& v) {
  Type t = v.type;
  for (size_t d = 0; d < v.tiles.size() && d < t.shape.size(); ++d)
    if (v.tiles[d] > 1) t.shape[d] = (t.shape[d] + v.tiles[d] - 1) / v.tiles[d];
  return t;
}

std::vector<std::string> equation_sites(const FlatGraph& g) {
  std::vector<std::string> sites(g.eqns.size());
  std::map<std::pair<int, int>, int> seen;  // (line, column) -> equations named so far
  for (size_t e = 0; e < g.eqns.size(); ++e) {
    const FlatEquation& eqn = g.eqns[e];
    if (!g.policy_decides(eqn)) continue;
    const int n = seen[{eqn.where.line, eqn.where.column}]++;
    sites[e] = g.site_prefix + std::to_string(eqn.where.line) + ":" + std::to_string(eqn.where.column) + "#" + std::to_string(n);
  }
  return sites;
}

}  // namespace rematkit
