// JAX's own JVP rules for the jax.custom_jvp functions JAX defines and models call, so that a
// custom_jvp_call of one of them keeps what JAX keeps. A printed program carries the function's
// body but not its rule (Python code); for any other function autodiff differentiates the body.
#pragma once
#include <optional>
#include <vector>

#include "emitter.hpp"
#include "rematkit/ir/program.hpp"

namespace rematkit::autodiff {

struct CustomJvpRule {
  enum class Kind { kSoftmax, kRelu6, kLog1mexp } kind;
  std::vector<int64_t> axes;  // softmax: the axes it normalizes over
  int where_operand = -1;     // softmax: the operand holding its `where` mask, or -1
};

// JAX's rule for the custom_jvp function `name` whose body and operand types are given, or nullopt
// when rematkit has none (jax.nn.relu is the relu primitive, resolved by the parser).
std::optional<CustomJvpRule> find_custom_jvp_rule(const std::string& name, const Program& body,
                                                  const std::vector<Type>& operands);

// The output tangent by `rule`, given the call's operands `x`, its outputs `y` and the operands'
// tangents `t` (kNoValue: zero).
ValueId custom_jvp_tangent(Emitter& em, const CustomJvpRule& rule, const std::vector<ValueId>& x,
                           const std::vector<ValueId>& y, const std::vector<ValueId>& t);

}  // namespace rematkit::autodiff
