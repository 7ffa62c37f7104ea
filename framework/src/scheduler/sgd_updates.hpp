// A training step's SGD as equations of its backward pass, so that the update of a param can run
// inside the kernel that computes the param's gradient (the weight gradient's GEMM, as its
// epilogue) instead of as one more pass over both after the backward pass.
#pragma once

#include <cstddef>
#include <vector>

#include "rematkit/linearize.hpp"

namespace rematkit {

// `lin` with an update p <- p - learning_rate * g (mul, then sub: the product rounded to f32, then
// the difference, as training_step.cpp's own loop) for each f32 argument of `trained` whose gradient
// one backward equation computes, listed in Linearization::updates and appended to the backward
// pass. A step program runs each only inside the step that computes g, placed after every other
// reader of p (fusion_steps.hpp); the caller updates the rest.
Linearization with_sgd_updates(const Linearization& lin, const std::vector<size_t>& trained, float learning_rate);

}  // namespace rematkit
