// Encoding a fusion as one rk_fusion equation (plugins/include/rematkit/plugin/fusion_view.hpp):
// each part a call of its primitive on numbered operands, and which numbers are its results.
#include <algorithm>
#include <string>
#include <utility>

#include "fusion_pass.hpp"

namespace rematkit::fusion {
namespace {

ParamValue keyword(const std::string& name, ParamValue value) {
  ParamValue k;
  k.kind = ParamValue::Kind::kKeyword;
  k.text = name;
  k.items.push_back(std::move(value));
  return k;
}

bool read_outside(const PassView& pass, ValueId v, const std::vector<size_t>& parts) {
  if (pass.escapes.count(v)) return true;
  if (auto it = pass.readers.find(v); it != pass.readers.end())
    for (size_t r : it->second)
      if (std::find(parts.begin(), parts.end(), r) == parts.end()) return true;
  return false;
}

}  // namespace

// The step's operands are the values defined outside the fusion, once each, in the order first
// read; its results the values defined inside that something outside reads.
Params encode(const PassView& pass, const std::vector<size_t>& parts, FusedStep& step) {
  std::map<ValueId, int64_t> number;  // value -> its number in the fused equation
  std::set<ValueId> defined;
  for (size_t q : parts)
    for (ValueId v : pass.eqn_at(q).outputs) defined.insert(v);
  for (size_t q : parts)
    for (ValueId v : pass.eqn_at(q).inputs)
      if (!defined.count(v) && !number.count(v)) {
        number[v] = static_cast<int64_t>(step.inputs.size());
        step.inputs.push_back(v);
      }
  ParamValue calls = ParamValue::of_tuple({});
  for (size_t j = 0; j < parts.size(); ++j) {
    const FlatEquation& e = pass.eqn_at(parts[j]);
    step.eqns.push_back(pass.eqns[parts[j]]);
    number[e.outputs[0]] = static_cast<int64_t>(step.inputs.size() + j);
    std::vector<int64_t> operands;
    for (ValueId v : e.inputs) operands.push_back(number.at(v));
    const Type& type = pass.graph.values[e.outputs[0]].type;
    ParamValue call;
    call.kind = ParamValue::Kind::kCall;
    call.text = std::string(prim_name(e.prim));
    call.items.push_back(keyword("operands", ParamValue::of_ints(operands)));
    call.items.push_back(keyword("dtype", ParamValue::of_int(dtype_code(type.dtype))));
    call.items.push_back(keyword("shape", ParamValue::of_ints(type.shape)));
    for (const auto& [key, value] : e.params.entries) call.items.push_back(keyword(key, value));
    calls.items.push_back(std::move(call));
  }
  std::vector<int64_t> results;
  for (size_t q : parts) {
    const ValueId v = pass.eqn_at(q).outputs[0];
    if (!read_outside(pass, v, parts)) continue;
    results.push_back(number.at(v));
    step.outputs.push_back(v);
  }
  Params params;
  params.set("parts", std::move(calls));
  params.set("results", ParamValue::of_ints(results));
  return params;
}

}  // namespace rematkit::fusion
