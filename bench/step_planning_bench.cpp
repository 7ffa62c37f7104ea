// rematkit_step_planning_bench: how long build_step_program takes to plan a training step, fusion
// search included, for the default sweep's gpt, GPT-2 small (12,1,128,768,12,50257) and the
// default CNN, under three policies and two backend lists. Counters: the fused steps chosen and
// the predicted peak, which a change to the search must leave alone.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "step_workloads.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "rematkit/sweep/sweep_models.hpp"

namespace {

using namespace rematkit;

void plan_step(benchmark::State& state, const bench::Workload& w, const std::string& policy,
               const std::vector<std::string>& preference) {
  const sweep::ModelProgram traced = sweep::model_program(w.model, policy);
  LinearizeOptions options;
  options.policies = &default_plugins().policies();
  options.differentiate = traced.trained;
  const Linearization lin = linearize(traced.program, options);
  BackendOptions backends;
  backends.preference = preference;
  backends.threads = 1;
  size_t fused = 0;
  int64_t peak = 0;
  for (auto _ : state) {
    StepProgram program = build_step_program(lin, backends, Pass::kBackward, InputMode::kResident);
    fused = program.fused_steps();
    peak = program.layout().arena(MemorySpace::kDevice);
    benchmark::DoNotOptimize(program);
  }
  state.counters["fused_steps"] = static_cast<double>(fused);
  state.counters["peak_bytes"] = static_cast<double>(peak);
}

void register_all() {
  const std::vector<std::pair<std::string, bench::Workload>> workloads{
      {"gpt_default", bench::gpt_workload("default")},
      {"gpt2_small", bench::gpt_workload("12,1,128,768,12,50257")},
      {"cnn_default", bench::cnn_workload("default")}};
  const std::vector<std::string> policies{"everything_saveable", "dots_with_no_batch_dims_saveable", "nothing_saveable"};
  const std::vector<std::pair<std::string, std::vector<std::string>>> lists{
      {"onednn,highway,reference", {"onednn", "highway", "reference"}}, {"highway,reference", {"highway", "reference"}}};
  for (const auto& [name, w] : workloads)
    for (const std::string& policy : policies)
      for (const auto& [list, preference] : lists)
        benchmark::RegisterBenchmark((name + "/" + policy + "/" + list).c_str(), plan_step, w, policy, preference)
            ->Unit(benchmark::kMillisecond)
            ->MinTime(0.5);
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
