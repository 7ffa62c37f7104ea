// The interpreter's shard_map and xla_pmap: the body run once per device of a simulated mesh.
#pragma once
#include <vector>

#include "rematkit/interpreter/tensor.hpp"
#include "rematkit/ir/program.hpp"

namespace rematkit::interpreter {

std::vector<Tensor> evaluate_mapped_call(const Equation& eqn, const std::vector<Tensor>& inputs, Arithmetic arithmetic);

}  // namespace rematkit::interpreter
