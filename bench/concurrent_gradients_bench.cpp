// K policies' gradients of one model run all at once (one oneTBB task and thread each) against the
// same K run one after another on one thread each: what `rematkit compare` and the sweep's gradient
// check do (run_gradients, concurrent_gradients.hpp). Each run builds every policy's step program and
// runs it once. The models are the default sweep's MLP and transformer; K = 2 takes
// everything_saveable and nothing_saveable, K = 4 adds dots_saveable and dots_with_no_batch_dims_saveable.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "rematkit/runtime/concurrent_gradients.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/sweep_models.hpp"

namespace {

using namespace rematkit;

const char* const kModels[] = {"mlp-relu-per-layer", "transformer-per-layer"};
const char* const kPolicies[] = {"everything_saveable", "nothing_saveable", "dots_saveable",
                                 "dots_with_no_batch_dims_saveable"};

const sweep::ModelSpec& default_sweep_model(const std::string& name) {
  static const sweep::SweepConfig config = sweep::parse_sweep(sweep::default_sweep_yaml(), "default sweep");
  for (const sweep::ModelSpec& model : config.models)
    if (model.name == name) return model;
  throw std::runtime_error("the default sweep has no model " + name);
}

// Arguments: model index, K, concurrency (0: one after another, 1: all at once).
void BM_PolicyGradients(benchmark::State& state) {
  const sweep::ModelSpec& model = default_sweep_model(kModels[state.range(0)]);
  const auto policies = static_cast<size_t>(state.range(1));
  const Concurrency concurrency = state.range(2) ? Concurrency::kAllAtOnce : Concurrency::kOneByOne;
  std::vector<sweep::ModelInstance> instances;
  std::vector<Linearization> lins;
  for (size_t p = 0; p < policies; ++p) {
    instances.push_back(sweep::instantiate(model, kPolicies[p], 0));
    LinearizeOptions options;
    options.policies = &default_plugins().policies();
    options.policy = instances.back().whole_program_policy;
    options.differentiate = instances.back().trained;
    lins.push_back(linearize(instances.back().program, options));
  }
  std::vector<const Linearization*> all;
  for (const Linearization& lin : lins) all.push_back(&lin);
  BackendOptions backends{default_plugins().fastest_backends(), &default_plugins()};
  backends.threads = 1;  // one after another: one thread each, as all at once gives each
  for (auto _ : state)
    benchmark::DoNotOptimize(run_gradients(all, instances[0].constants, instances[0].arguments, backends, concurrency));
  state.SetLabel(std::string(kModels[state.range(0)]) + ", " + std::to_string(policies) + " policies " +
                 (state.range(2) ? "all at once" : "one after another"));
}

// Each pair side by side: one after another, then all at once.
BENCHMARK(BM_PolicyGradients)
    ->ArgNames({"model", "policies", "all_at_once"})
    ->Apply([](benchmark::internal::Benchmark* b) {
      for (int model : {0, 1})
        for (int policies : {2, 4})
          for (int all_at_once : {0, 1}) b->Args({model, policies, all_at_once});
    })
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
