// The MLP training step (forward, backward, SGD) per policy, backend list and thread count, at the
// peers' sizes (B, D, F): Dense(D,F) -> relu -> Dense(F,F) -> relu -> Dense(F,F) with a checkpoint
// per layer, loss sum(y) (the peers take sum(y^2); one elementwise op apart). Counters: GFLOP/s of
// the nominal 6*B*(D*F + 2*F^2) a step does without recomputation, as the peers count it (the data
// gets no gradient, so a step really does 2*B*D*F fewer). BM_OneDnnGemm is the yardstick in the
// same run: one plain oneDNN (B x D) x (D x F) GEMM at each size and thread count.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gemm_fixture.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/sweep/sweep_models.hpp"
#include "rematkit/runtime/training_step.hpp"

namespace {

using namespace rematkit;

struct Size {
  int64_t batch, input, width;
};
const Size kSizes[] = {{1, 64, 64}, {32, 512, 512}, {256, 1024, 1024}, {1024, 2048, 2048}};
const char* const kPolicies[] = {"everything_saveable", "dots_with_no_batch_dims_saveable", "nothing_saveable"};
const std::vector<std::string> kBackends[] = {
    {"highway", "reference"}, {"onednn", "highway", "reference"}, {"blas", "onednn", "highway", "reference"}, {"blas", "highway", "reference"}};

bool installed(const std::vector<std::string>& backends) {
  const std::vector<std::string> names = default_plugins().backend_names();
  for (const std::string& b : backends)
    if (std::find(names.begin(), names.end(), b) == names.end()) return false;
  return true;
}

// Arguments: size index, policy index, backend index, threads.
void BM_TrainingStep(benchmark::State& state) {
  if (!installed(kBackends[state.range(2)])) {
    state.SkipWithError("a backend of this list is not built");
    return;
  }
  const Size size = kSizes[state.range(0)];
  sweep::ModelSpec model;
  model.name = "mlp";
  model.mlp = sweep::MlpModel{size.input, {size.width, size.width, size.width}, size.batch, "relu", RematPlacement::kPerLayer, {}};
  const sweep::ModelInstance instance = sweep::instantiate(model, kPolicies[state.range(1)], 0);
  LinearizeOptions options;
  options.policies = &default_plugins().policies();
  options.differentiate = instance.trained;  // the params, as the peers: no gradient for the data
  const Linearization lin = linearize(instance.program, options);
  BackendOptions backends{kBackends[state.range(2)], &default_plugins()};
  backends.threads = static_cast<int>(state.range(3));
  TrainingStep step(lin, backends, instance.trained, 1e-6);
  step.set_constants(instance.constants);
  step.set_arguments(instance.arguments);
  for (auto _ : state) benchmark::DoNotOptimize(step.run());
  const double flops = 6.0 * static_cast<double>(size.batch) *
                       static_cast<double>(size.input * size.width + 2 * size.width * size.width);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_MiB"] = static_cast<double>(step.measured_peak(MemorySpace::kDevice)) / 1048576.0;
  state.SetLabel(std::string(kPolicies[state.range(1)]) + " on " + kBackends[state.range(2)][0]);
}

BENCHMARK(BM_TrainingStep)
    ->ArgNames({"size", "policy", "backend", "threads"})
    ->ArgsProduct({{0, 1, 2, 3}, {0, 1, 2}, {0, 1, 2, 3}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Arguments: size index, threads.
void BM_OneDnnGemm(benchmark::State& state) {
  const Size size = kSizes[state.range(0)];
  rematkit::bench::run_gemm(state, "onednn", 0, size.batch, size.input, size.width, static_cast<int>(state.range(1)));
}

BENCHMARK(BM_OneDnnGemm)
    ->ArgNames({"size", "threads"})
    ->ArgsProduct({{0, 1, 2, 3}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
