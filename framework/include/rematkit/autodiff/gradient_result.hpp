// What a gradient gives back: the program's outputs and, per argument, its gradient.
#pragma once

#include <optional>
#include <vector>

#include "rematkit/interpreter/tensor.hpp"

namespace rematkit {

struct GradientResult {
  std::vector<Tensor> outputs;
  std::vector<std::optional<Tensor>> gradients;  // per argument; empty for non-floating arguments
};

}  // namespace rematkit
