// What the executor costs per step, apart from the kernels' work: a chain of 512 elementwise ops
// on a tiny tensor (f32[1] on the reference backend, f32[16] on Highway), fusion off so that each op
// is a kernel step of its own, both passes on resident inputs. Counters: steps (kernel, load and
// readout steps of the program) and time_per_step, the run's time over its steps: an upper bound of
// the per-step cost, since the kernels on one or sixteen floats do next to nothing.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <vector>

#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/runtime/step_runner.hpp"

namespace {

using namespace rematkit;

constexpr int kChain = 512;

// x -> sin -> cos -> sin -> ... (kChain ops) -> reduce_sum: each op a step forward, and its
// coefficient and transposed steps backward.
std::string chain_program(int64_t width) {
  const std::string type = "f32[" + std::to_string(width) + "]";
  std::string text = "{ lambda ; x:" + type + ". let\n";
  std::string last = "x";
  for (int i = 0; i < kChain; ++i) {
    const std::string next = "v" + std::to_string(i);
    text += "    " + next + ":" + type + " = " + (i % 2 ? "cos " : "sin ") + last + "\n";
    last = next;
  }
  return text + "    s:f32[] = reduce_sum[axes=(0,)] " + last + "\n  in (s,) }";
}

void BM_StepOverhead(benchmark::State& state) {
  const std::vector<std::string> backends = state.range(0) == 0 ? std::vector<std::string>{"reference"}
                                                                 : std::vector<std::string>{"highway", "reference"};
  const std::vector<std::string> built = default_plugins().backend_names();
  if (std::find(built.begin(), built.end(), backends.front()) == built.end()) {
    state.SkipWithError("backend not built");
    return;
  }
  const int64_t width = state.range(0) == 0 ? 1 : 16;
  const Program program = parse_program(chain_program(width), "<chain>");
  const Linearization lin = linearize(program, {});
  BackendOptions options{backends, &default_plugins()};
  options.threads = 1;
  options.fusion = BackendOptions::Fusion::kOff;
  ResidentRunner runner(lin, options);
  runner.write_argument(0, Tensor{program.vars[static_cast<size_t>(program.invars[0])].type,
                                  std::vector<double>(static_cast<size_t>(width), 0.5)});
  runner.run();  // warm
  for (auto _ : state) runner.run();
  const double steps = static_cast<double>(runner.program().steps().size());
  state.counters["steps"] = steps;
  // Seconds per step (printed with an SI prefix: 120n is 120 ns).
  state.counters["time_per_step"] =
      benchmark::Counter(steps * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel(backends.front());
}

}  // namespace

BENCHMARK(BM_StepOverhead)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
