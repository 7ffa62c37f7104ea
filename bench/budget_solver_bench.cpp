// How long `rematkit solve` takes on the transformer the issue names: 4 layers, batch 8, sequence
// 256, model 256, 4 heads, MLP 1024, per-layer remat (the sweep's transformer model). One solve per
// budget; the counters say how many times the planner judged an answer and what it settled on.
#include <benchmark/benchmark.h>

#include <chrono>

#include "rematkit/budget_solver.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/sweep_models.hpp"

namespace {

const char* kSweep = R"(models:
  - name: transformer-4
    transformer: {layers: 4, batch: 8, sequence: 256, model: 256, heads: 4, mlp: 1024, remat: per_layer}
policies: [everything_saveable]
backends: ["onednn,highway,reference"]
)";

void BM_SolveTransformer(benchmark::State& state, const char* budget) {
  const rematkit::sweep::SweepConfig config = rematkit::sweep::parse_sweep(kSweep, "<bench>");
  const rematkit::sweep::ModelInstance model = rematkit::sweep::instantiate(config.models[0], "everything_saveable", 0);
  rematkit::BudgetOptions options;
  options.budget = rematkit::parse_budget(budget, "budget");
  options.backends = config.backends[0];
  options.threads = 1;
  options.differentiate = model.trained;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const rematkit::BudgetSolution s = rematkit::solve_budget(model.program, options);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    state.counters["planner_calls"] = s.planner_calls;
    state.counters["peak_MiB"] = static_cast<double>(s.peak_bytes) / (1 << 20);
    state.counters["recompute_GFLOP"] = s.recompute_flops / 1e9;
    state.counters["optimal"] = s.proven_optimal;
  }
}
BENCHMARK_CAPTURE(BM_SolveTransformer, budget_0_25, "0.25")->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_SolveTransformer, budget_0_5, "0.5")->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_SolveTransformer, budget_0_75, "0.75")->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
