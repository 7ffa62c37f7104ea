// A training step for a program with a scalar loss: the forward pass, the backward pass, and a
// plain SGD update of the trained arguments in place (p <- p - learning_rate * dloss/dp, in f32).
#pragma once
#include <vector>

#include "rematkit/gradient_plan.hpp"

namespace rematkit {

class TrainingStep {
 public:
  // `trained`: indices of the arguments SGD updates (the params; not the data). A bad-input Error
  // if the program's output is not one f32 scalar, or a trained argument is not floating.
  TrainingStep(const Linearization& lin, const BackendOptions& backends, std::vector<size_t> trained,
               double learning_rate);

  // Runs one step on `arguments`, updating the trained ones in place; returns the loss (outputs[0])
  // and the gradients the update used.
  GradientResult run(const std::vector<Tensor>& constants, std::vector<Tensor>& arguments);

  const GradientPlan& plan() const { return plan_; }

 private:
  GradientPlan plan_;
  std::vector<size_t> trained_;
  float learning_rate_;
};

}  // namespace rematkit
