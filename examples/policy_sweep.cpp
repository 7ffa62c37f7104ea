// Times one MLP under three checkpoint policies through rematkit::sweep, the C++ side of
// `rematkit sweep`: each policy's median step time with its 95% interval and its verdict against
// everything_saveable, its peak memory and what it recomputes.
//   policy_sweep [BACKENDS]     e.g. policy_sweep highway,reference   (default: reference)
#include <rematkit/plugin_host/plugin_registry.hpp>
#include <rematkit/sweep.hpp>

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

int main(int argc, char** argv) try {
  namespace sweep = rematkit::sweep;
  sweep::SweepConfig config;
  config.source = "policy_sweep";
  sweep::ModelSpec mlp;
  mlp.name = "mlp";
  mlp.mlp.input = 64;
  mlp.mlp.widths = {128, 128, 16};
  mlp.mlp.batch = 32;
  mlp.mlp.remat = rematkit::RematPlacement::kPerLayer;  // a checkpoint around each layer, where the policy decides
  config.models = {mlp};
  config.policies = {"everything_saveable", "nothing_saveable", "dots_saveable"};
  std::vector<std::string> backends;
  std::stringstream list(argc > 1 ? argv[1] : "reference");
  for (std::string name; std::getline(list, name, ',');) backends.push_back(name);
  config.backends = {backends};
  config.repetitions = 11;  // enough for a 95% interval inside the samples' range

  const rematkit::PluginRegistry& plugins = rematkit::default_plugins();
  sweep::check_sweep(config, plugins);  // an unknown policy or backend fails here, before any run
  for (const sweep::SweepRow& row : sweep::run_sweep(config, plugins).rows)
    std::printf("%-20s %8.3f ms [%.3f, %.3f]  %-19s peak %lld bytes, recompute %lld FLOP\n", row.policy.c_str(),
                row.median_ms, row.median_low_ms, row.median_high_ms,
                row.versus_baseline.empty() ? "(baseline)" : row.versus_baseline.c_str(),
                static_cast<long long>(row.predicted_peak[0]), static_cast<long long>(row.recompute_flops));
} catch (const rematkit::Error& e) {
  std::cerr << "policy_sweep: " << e.what() << "\n";
  return 2;
}
