// Running a linearization on the reference interpreter: the forward pass keeps exactly the
// residuals, and the backward pass starts from those residuals and the output cotangents alone.
#pragma once
#include <optional>
#include <vector>

#include "rematkit/linearize.hpp"
#include "rematkit/plugin_registry.hpp"
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

// Which backends run a plan's equations, and with how many threads.
struct BackendOptions {
  std::vector<std::string> preference{"reference"};  // backends to try for each equation, in order
  const PluginRegistry* plugins = nullptr;            // where they come from; default_plugins() if null
  // Threads a plan may use inside one step; 0: every core. With N > 0 the plan runs in a oneTBB
  // arena of N threads and each backend is created with the option num_threads=N (for oneDNN's
  // OpenMP team; backends that thread with oneTBB or not at all ignore it).
  int threads = 0;
};

// The program's outputs alone: the forward pass on backends.
std::vector<Tensor> run_forward(const Linearization& lin, const std::vector<Tensor>& constants,
                                const std::vector<Tensor>& arguments, const BackendOptions& backends);

// The same on backends from plugins: the forward and the backward pass are each planned once.
GradientResult run_gradient(const Linearization& lin, const std::vector<Tensor>& constants,
                            const std::vector<Tensor>& arguments, const BackendOptions& backends,
                            const std::vector<Tensor>* cotangents = nullptr);

}  // namespace rematkit
