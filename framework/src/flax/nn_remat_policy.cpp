#include "rematkit/flax/nn_remat_policy.hpp"

#include <cmath>

#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"

namespace rematkit::flax {
namespace {

// Keeps the reference interpreter within this machine's memory: it holds every value as a double.
constexpr double kMaxParameters = 1 << 26;

bool is_integer_value(double v) { return std::isfinite(v) && std::floor(v) == v; }

}  // namespace

RematMlpSetup check_nn_remat_policy_inputs(double seed, std::span<const float> x, double features,
                                           const NnRematPolicyOptions& options) {
  if (x.empty()) fail("x must be a non-empty vector");
  for (size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i])) fail("x[" + std::to_string(i) + "] is " + std::to_string(x[i]) + ": x must be finite");
  if (!is_integer_value(features) || features <= 0)
    fail("features must be a positive integer, got " + std::to_string(features));
  if (!is_integer_value(seed) || seed < 0) fail("seed must be a non-negative integer, got " + std::to_string(seed));
  // PRNGKey converts the seed with np.int64 first, which overflows from 2^63 on.
  if (seed >= 9223372036854775808.0) fail("seed must be below 2^63 (JAX converts it to a 64-bit integer)");
  const double d = static_cast<double>(x.size());
  if (d * features + 2 * features * features > kMaxParameters)
    fail("features " + std::to_string(static_cast<int64_t>(features)) + " makes the MLP too large (more than " +
         std::to_string(static_cast<int64_t>(kMaxParameters)) + " parameters)");
  const PluginRegistry& plugins = options.backends.plugins ? *options.backends.plugins : default_plugins();
  plugins.policies().parse(options.policy, {"policy", 0, 0});
  const std::vector<std::string> preference = preference_or_fastest(options.backends);
  if (preference.empty()) fail("no backend given");
  for (const std::string& b : preference)
    if (!plugins.backend(b)) {
      std::string known;
      for (const std::string& name : plugins.backend_names()) known += (known.empty() ? "" : ", ") + name;
      fail("unknown backend '" + b + "' (available: " + (known.empty() ? "none found" : known) + ")");
    }
  return RematMlpSetup{random::prng_key(static_cast<uint64_t>(seed)), static_cast<int64_t>(features)};
}

InitializedModule init_remat_mlp(const RematMlpSetup& setup, int64_t input_size, const NnRematPolicyOptions& options,
                                 bool sum_output) {
  auto mlp = std::make_shared<MLP>(std::vector<int64_t>{setup.features, setup.features, setup.features});
  const Remat remat_mlp(mlp, options.policy);
  const Type x_type{DType::kF32, {input_size}, MemorySpace::kDevice};
  return init_module(remat_mlp, setup.key, x_type, RngOptions{options.prng, false}, sum_output);
}

std::vector<Tensor> apply_arguments(const InitializedModule& module, std::span<const float> x) {
  std::vector<Tensor> args;
  Tensor xt{Type{DType::kF32, {static_cast<int64_t>(x.size())}, MemorySpace::kDevice}, {}};
  xt.data.assign(x.begin(), x.end());
  args.push_back(std::move(xt));
  for (size_t index : module.argument_params) {
    const Variable& v = module.params[index];
    args.push_back(Tensor{v.type, std::vector<double>(v.value.begin(), v.value.end())});
  }
  return args;
}

std::vector<float> nn_remat_policy(double seed, std::span<const float> x, double features,
                                   const NnRematPolicyOptions& options) {
  const RematMlpSetup setup = check_nn_remat_policy_inputs(seed, x, features, options);
  const InitializedModule module = init_remat_mlp(setup, static_cast<int64_t>(x.size()), options);
  return apply_module(module, x, options);
}

std::vector<float> apply_module(const InitializedModule& module, std::span<const float> x,
                                const NnRematPolicyOptions& options) {
  const PluginRegistry& plugins = options.backends.plugins ? *options.backends.plugins : default_plugins();
  LinearizeOptions linearize_options;
  linearize_options.policies = &plugins.policies();
  const Linearization lin = linearize(module.apply, linearize_options);
  BackendOptions backends = options.backends;
  backends.plugins = &plugins;
  OneShotRunner forward(lin, backends, Pass::kForward);
  const std::vector<Tensor> out = forward.run({}, apply_arguments(module, x)).outputs;
  return std::vector<float>(out.at(0).data.begin(), out.at(0).data.end());
}

}  // namespace rematkit::flax
