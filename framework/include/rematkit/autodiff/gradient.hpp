// Running a linearization on the reference interpreter: the forward pass keeps exactly the
// residuals, and the backward pass starts from those residuals and the output cotangents alone.
// (Running it on backends: runtime/step_runner.hpp.)
#pragma once

#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/autodiff/gradient_result.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/interpreter/tensor.hpp"

namespace rematkit {

// Evaluates the program's value and the gradient of sum(output_i * cotangent_i) with respect to
// every floating argument, on the core's interpreter. `cotangents` default to ones of each output's shape.
// (A Plan, or the runners of runtime/step_runner.hpp, run it on backends.)
REMATKIT_CORE_EXPORT GradientResult interpret_gradient(const Linearization& lin, const std::vector<Tensor>& constants,
                                                       const std::vector<Tensor>& arguments, Arithmetic arithmetic,
                                                       const std::vector<Tensor>* cotangents = nullptr);

}  // namespace rematkit
