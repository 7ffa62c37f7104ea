// Running a linearization on the reference interpreter: the forward pass keeps exactly the
// residuals, and the backward pass starts from those residuals and the output cotangents alone.
// (Running it on backends: step_runner.hpp.)
#pragma once
#include <optional>
#include <vector>

#include "rematkit/linearize.hpp"
#include "rematkit/tensor.hpp"

namespace rematkit {

// A program's outputs and, per argument, its gradient.
struct GradientResult {
  std::vector<Tensor> outputs;
  std::vector<std::optional<Tensor>> gradients;  // per argument; empty for non-floating arguments
};

// Evaluates the program's value and the gradient of sum(output_i * cotangent_i) with respect to
// every floating argument, on the core's interpreter. `cotangents` default to ones of each output's shape.
GradientResult run_gradient(const Linearization& lin, const std::vector<Tensor>& constants,
                            const std::vector<Tensor>& arguments, Arithmetic arithmetic,
                            const std::vector<Tensor>* cotangents = nullptr);

}  // namespace rematkit
