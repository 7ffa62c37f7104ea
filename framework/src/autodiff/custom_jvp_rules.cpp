// The rules of jax/_src/nn/functions.py: _softmax_jvp, relu6's and log1mexp's defjvps.
#include "custom_jvp_rules.hpp"

#include "jvp_rules.hpp"

namespace rematkit::autodiff {
namespace {

// The axes of the first reduce_max in `body` (or a call inside it): jnp.max(x, axis) in _softmax.
std::optional<std::vector<int64_t>> first_max_axes(const Program& body) {
  for (const Equation& eqn : body.eqns) {
    if (eqn.prim == Prim::kReduceMax) return param_ints(eqn.params, "axes", eqn.where);
    if (const Program* inner = eqn.body())
      if (auto axes = first_max_axes(*inner)) return axes;
  }
  return std::nullopt;
}

// JAX before 0.6.1 printed custom_jvp_call without name=; jax.nn.softmax's is still recognizable by
// its body, _softmax's own: reduce_max over the axes, exp of the difference, reduce_sum of the exp
// over the same axes, and the output the exp divided by that sum.
bool is_softmax_body(const Program& body, const std::vector<int64_t>& axes) {
  if (body.invars.size() != 1 || body.outvars.size() != 1 || body.outvars[0].is_literal()) return false;
  int exp_out = -1;
  bool summed = false;
  for (const Equation& eqn : body.eqns) {
    if (eqn.prim == Prim::kExp) exp_out = eqn.outputs[0];
    if (eqn.prim == Prim::kReduceSum && exp_out >= 0 && !eqn.inputs[0].is_literal() && eqn.inputs[0].var == exp_out)
      summed = param_ints(eqn.params, "axes", eqn.where) == axes;
  }
  const Equation* last = body.eqns.empty() ? nullptr : &body.eqns.back();
  return summed && last && last->prim == Prim::kDiv && last->outputs[0] == body.outvars[0].var &&
         !last->inputs[0].is_literal() && last->inputs[0].var == exp_out;
}

}  // namespace

std::optional<CustomJvpRule> find_custom_jvp_rule(const std::string& name, const Program& body,
                                                  const std::vector<Type>& operands) {
  if (operands.empty() || body.outvars.size() != 1 || !is_floating(operands[0].dtype)) return std::nullopt;
  if (name == "_softmax") {  // _softmax(x, axis, where, initial): axis is static, where a bool mask
    auto axes = first_max_axes(body);
    if (!axes) return std::nullopt;
    CustomJvpRule rule{CustomJvpRule::Kind::kSoftmax, *axes, -1};
    for (size_t i = 1; i < operands.size(); ++i)
      if (operands[i].dtype == DType::kBool) rule.where_operand = static_cast<int>(i);
    return rule;
  }
  if (operands.size() != 1) return std::nullopt;
  if (name.empty()) {  // an older JAX's unnamed call: jax.nn.softmax if the body is _softmax's
    auto axes = first_max_axes(body);
    if (axes && is_softmax_body(body, *axes)) return CustomJvpRule{CustomJvpRule::Kind::kSoftmax, *axes, -1};
    return std::nullopt;
  }
  if (name == "relu6") return CustomJvpRule{CustomJvpRule::Kind::kRelu6, {}, -1};
  if (name == "log1mexp") return CustomJvpRule{CustomJvpRule::Kind::kLog1mexp, {}, -1};
  return std::nullopt;
}

ValueId custom_jvp_tangent(Emitter& em, const CustomJvpRule& rule, const std::vector<ValueId>& x,
                           const std::vector<ValueId>& y, const std::vector<ValueId>& t) {
  const ValueId g = t[0];
  if (g == kNoValue) return kNoValue;  // only x is differentiable; where's and initial's tangents are dropped
  const DType dt = em.type(x[0]).dtype;
  switch (rule.kind) {
    case CustomJvpRule::Kind::kSoftmax:
      return softmax_tangent(em, y[0], g, rule.axes, rule.where_operand >= 0 ? x[rule.where_operand] : kNoValue);
    case CustomJvpRule::Kind::kRelu6: {  // select((x > 0) & (x < 6), g, full_like(g, 0))
      ValueId above = em.known(Prim::kGt, {x[0], em.literal(0.0, dt)});
      ValueId below = em.known(Prim::kLt, {x[0], em.literal(6.0, dt)});
      ValueId mask = em.known(Prim::kAnd, {above, below});
      return em.linear(Prim::kSelectN, {mask, em.full(0.0, x[0], EqnRole::kCoefficient), g});
    }
    case CustomJvpRule::Kind::kLog1mexp:  // g / expm1(x)
      return em.linear(Prim::kDiv, {g, em.known(Prim::kExpm1, {x[0]})});
  }
  internal_error("unknown custom JVP rule");
}

}  // namespace rematkit::autodiff
