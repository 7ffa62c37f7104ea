#include <cmath>
#include <functional>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "rematkit/flax/nn_remat_policy.hpp"
#include "rematkit/io/tensor_json.hpp"
#include "rematkit/io/text_file.hpp"
#include "rematkit/ir/printer.hpp"
#include "rematkit/autodiff/residual_report.hpp"

namespace rematkit::cli {
namespace {

struct MlpOptions {
  PluginOptions plugins;
  double seed = 0;
  double features = 0;
  std::string x_list;
  std::string x_file;
  std::string prng = "partitionable";
  std::string policy = "dots_with_no_batch_dims_saveable";
  bool params = false;
  bool residuals = false;
  bool program = false;
  BackendChoice backends;
};

// {"params": {"Dense_0": {"kernel": [[...]], "bias": [...]}, ...}} with every float exact.
std::string variables_to_json(const std::vector<flax::Variable>& params) {
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  nlohmann::ordered_json& tree = root["params"];
  tree = nlohmann::ordered_json::object();
  for (const flax::Variable& v : params) {
    nlohmann::ordered_json* node = &tree;
    for (size_t i = 0; i + 1 < v.path.size(); ++i) node = &(*node)[v.path[i]];
    // Nested lists in row-major order; a float prints as the shortest double that reads back to it.
    std::function<nlohmann::ordered_json(size_t, size_t&)> nest = [&](size_t dim, size_t& at) {
      if (dim == v.type.shape.size()) return nlohmann::ordered_json(static_cast<double>(v.value[at++]));
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (int64_t i = 0; i < v.type.shape[dim]; ++i) list.push_back(nest(dim + 1, at));
      return list;
    };
    size_t at = 0;
    (*node)[v.path.back()] = nest(0, at);
  }
  return root.dump();
}

// "1,2.5,-3" -> floats; every entry must be a number.
std::vector<float> parse_x_list(const std::string& text) {
  std::vector<float> x;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || item.find_first_not_of(" \t", used) != std::string::npos)
      fail("--x: '" + item + "' is not a number (write --x v1,v2,...; use --x=-1,2 for a leading minus)");
    x.push_back(static_cast<float>(v));
  }
  return x;
}

std::vector<float> read_x_file(const std::string& path) {
  return parse_json_vector(read_text_file(path, "x file"), path);
}

void run_mlp(const MlpOptions& o) {
  if (o.x_list.empty() == o.x_file.empty()) fail("give x with exactly one of --x and --x-file");
  const std::vector<float> x = o.x_file.empty() ? parse_x_list(o.x_list) : read_x_file(o.x_file);
  flax::NnRematPolicyOptions options;
  if (o.prng != "partitionable" && o.prng != "legacy")
    fail("--prng must be partitionable or legacy, got '" + o.prng + "'");
  options.prng = o.prng == "legacy" ? random::PrngMode::kLegacy : random::PrngMode::kPartitionable;
  options.policy = o.policy;
  options.backends = o.backends.backend_options(command_plugins(o.plugins));
  // Every input is checked before anything is computed.
  const flax::RematMlpSetup setup = flax::check_nn_remat_policy_inputs(o.seed, x, o.features, options);
  const flax::InitializedModule module = flax::init_remat_mlp(setup, static_cast<int64_t>(x.size()), options);
  const std::vector<float> out = flax::apply_module(module, x, options);
  Tensor output{Type{DType::kF32, {static_cast<int64_t>(out.size())}, MemorySpace::kDevice}, {out.begin(), out.end()}};
  std::cout << tensor_to_json(output) << "\n";
  if (o.params) std::cout << variables_to_json(module.params) << "\n";
  if (o.program) std::cout << print_program(module.apply) << "\n";
  if (o.residuals) {
    const flax::InitializedModule summed = flax::init_remat_mlp(setup, static_cast<int64_t>(x.size()), options, true);
    std::cout << format_residual_report(linearize(summed.apply, linearize_options(o.plugins, "")), false);
  }
  std::cout << std::flush;
}

}  // namespace

void add_mlp_command(CLI::App& app) {
  auto o = std::make_shared<MlpOptions>();
  CLI::App* cmd = app.add_subcommand("mlp", "Flax's remat'd 3-layer MLP: nn_remat_policy(seed, x, features)");
  cmd->footer(
      "Computes what Flax returns for\n"
      "  RematMLP = nn.remat(MLP, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)\n"
      "  variables = RematMLP(features).init(jax.random.PRNGKey(seed), x)\n"
      "  RematMLP(features).apply(variables, x).ravel()\n"
      "with MLP = Dense(F) -> relu -> Dense(F) -> relu -> Dense(F), and prints the (F,) output as a JSON\n"
      "array with 9 significant digits. Then, if asked: --params the variables tree as JSON (exact floats),\n"
      "--program the program rematkit runs, --residuals the residual report of the gradient of sum(output)\n"
      "with respect to x and the params.\n"
      "x: a non-empty vector of finite numbers. features: a positive integer (4 or 4.0). seed: a non-negative\n"
      "integer below 2^63; as in JAX's default (x64 off) it is narrowed to 32 bits, so a seed at or above\n"
      "2^32 gives the key [0, seed mod 2^32].");
  cmd->add_option("--seed", o->seed, "the PRNGKey seed")->required();
  cmd->add_option("--features", o->features, "F, the width of every layer")->required();
  cmd->add_option("--x", o->x_list, "x as comma-separated numbers, e.g. --x 1,2,3 (or --x=-1,2)");
  cmd->add_option("--x-file", o->x_file, "x as a JSON array of numbers");
  cmd->add_option("--prng", o->prng,
                  "partitionable (jax_threefry_partitionable, JAX >= 0.5's default) or legacy (JAX <= 0.4.38)");
  cmd->add_option("--policy", o->policy, "the checkpoint policy of nn.remat");
  add_plugin_option(cmd, o->plugins);
  add_backend_option(cmd, o->backends);
  cmd->add_flag("--params", o->params, "also print the variables tree");
  cmd->add_flag("--program", o->program, "also print the program in jaxpr syntax");
  cmd->add_flag("--residuals", o->residuals, "also print the residual report of grad(sum(output))");
  cmd->callback([o]() { run_mlp(*o); });
}

}  // namespace rematkit::cli
