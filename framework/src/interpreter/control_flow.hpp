// The interpreter's scan, cond and while: each runs its sub-programs through evaluate_program.
#pragma once
#include <vector>

#include "rematkit/ir/program.hpp"
#include "rematkit/interpreter/tensor.hpp"

namespace rematkit::interpreter {

std::vector<Tensor> evaluate_control_flow(const Equation& eqn, const std::vector<Tensor>& inputs, Arithmetic arithmetic);

}  // namespace rematkit::interpreter
