// nn_remat_policy(seed, x, features): what Flax returns for
//   RematMLP = nn.remat(MLP, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)
//   variables = RematMLP(features).init(jax.random.PRNGKey(seed), x)
//   RematMLP(features).apply(variables, x).ravel()
// with MLP = Dense(F) -> relu -> Dense(F) -> relu -> Dense(F), computed by rematkit's own engine.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/flax/export.hpp"
#include "rematkit/flax/module.hpp"
#include "rematkit/interpreter/tensor.hpp"

namespace rematkit::flax {

struct NnRematPolicyOptions {
  random::PrngMode prng = random::PrngMode::kPartitionable;  // JAX >= 0.5's default
  std::string policy = "dots_with_no_batch_dims_saveable";    // the checkpoint's policy spec
  // Backends to run on, in order of preference (empty: the fastest installed), threads; its plugins
  // are where the policy comes from too.
  BackendOptions backends{};
};

// The checked inputs: the key and the widths. Bad input is a one-line bad-input Error:
// x must be a non-empty vector of finite values; features a positive integer value (4.0 is fine);
// seed a non-negative integer value below 2^63. JAX's default (x64 off) narrows the seed to 32 bits,
// so a seed at or above 2^32 gives the key [0, seed mod 2^32].
struct RematMlpSetup {
  random::Key key;
  int64_t features;
};
REMATKIT_FLAX_EXPORT RematMlpSetup check_nn_remat_policy_inputs(double seed, std::span<const float> x, double features,
                                           const NnRematPolicyOptions& options);

// The remat'd MLP initialized for x; `sum_output` makes its program return sum(output).
REMATKIT_FLAX_EXPORT InitializedModule init_remat_mlp(const RematMlpSetup& setup, int64_t input_size, const NnRematPolicyOptions& options,
                                 bool sum_output = false);

// The program's arguments: x, then the params in the program's order.
REMATKIT_FLAX_EXPORT std::vector<Tensor> apply_arguments(const InitializedModule& module, std::span<const float> x);

// Runs the module's program on the options' backends.
REMATKIT_FLAX_EXPORT std::vector<float> apply_module(const InitializedModule& module, std::span<const float> x,
                                const NnRematPolicyOptions& options);

// The (F,) output. Never modifies x.
REMATKIT_FLAX_EXPORT std::vector<float> nn_remat_policy(double seed, std::span<const float> x, double features,
                                   const NnRematPolicyOptions& options = {});

}  // namespace rematkit::flax
